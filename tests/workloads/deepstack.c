// SPDX-License-Identifier: GPL-2.0-only
/*
 * deepstack: one wide, shallow tower and one deep, narrow stack, the shape
 * that made tall flame graphs open on an empty screen (the browser case of
 * test_flamegraph.sh).
 *
 *   deepstack [-d SECS] [-D DEPTH] [-s US]
 *
 * Until SECS seconds (default 1.5) have passed, one thread:
 *   - sleeps 10 ms in wl_tower_1 -> ... -> wl_tower_6 (the wide tower,
 *     off-CPU, about 99 % of the time);
 *   - then recurses DEPTH levels (default 128) in wl_deep and spins US
 *     microseconds (default 100) at the bottom: about 1 % of the time,
 *     on-CPU, in a stack as deep as a stack sample holds (127 frames).
 * At the end it prints what it did on one line: cycles, the time it spun at
 * the bottom and the time it asked to sleep.
 *
 * Frame pointers: Debian's libc has none, and a frame-pointer walk from
 * inside it skips its immediate caller: wl_tower_6 calls nanosleep through
 * the one-line wl_call_nanosleep (the frame that is skipped), as in
 * waitmix. The spin reads CLOCK_MONOTONIC through the vDSO, no system call,
 * so that its samples stay on the CPU in wl_deep's stack.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "wl.h"

#define US 1000LL
#define MS 1000000LL

static volatile uint64_t sink; /* work after each call: no frame is a tail call */

static int __attribute__((noinline)) wl_call_nanosleep(const struct timespec *ts)
{
	return nanosleep(ts, NULL);
}

static void __attribute__((noinline)) wl_tower_6(void)
{
	struct timespec ts = { .tv_nsec = 10 * MS };

	wl_call_nanosleep(&ts);
	sink++;
}

static void __attribute__((noinline)) wl_tower_5(void) { wl_tower_6(); sink++; }
static void __attribute__((noinline)) wl_tower_4(void) { wl_tower_5(); sink++; }
static void __attribute__((noinline)) wl_tower_3(void) { wl_tower_4(); sink++; }
static void __attribute__((noinline)) wl_tower_2(void) { wl_tower_3(); sink++; }
static void __attribute__((noinline)) wl_tower_1(void) { wl_tower_2(); sink++; }

/* Spin ns at the bottom of depth frames of wl_deep; the time spun. */
static int64_t __attribute__((noinline)) wl_deep(int depth, int64_t ns)
{
	int64_t t0, t;

	if (depth > 1) {
		t = wl_deep(depth - 1, ns);
		sink++;
		return t;
	}
	t0 = mono_ns();
	while ((t = mono_ns()) - t0 < ns)
		sink++;
	return t - t0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: deepstack [-d SECS] [-D DEPTH] [-s US]\n");
}

int main(int argc, char **argv)
{
	double secs = 1.5;
	int depth = 128, c;
	int64_t spin = 100 * US, spun = 0, end;
	long cycles = 0;

	while ((c = getopt(argc, argv, "d:D:s:h")) != -1) {
		switch (c) {
		case 'd': secs = atof(optarg); break;
		case 'D': depth = atoi(optarg); break;
		case 's': spin = atoll(optarg) * US; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (secs <= 0 || depth < 1 || depth > 100000 || spin < 0) {
		usage(stderr);
		return 2;
	}
	end = mono_ns() + (int64_t)(secs * 1e9);
	while (mono_ns() < end) {
		wl_tower_1();
		spun += wl_deep(depth, spin);
		cycles++;
	}
	printf("deepstack: %ld cycles, %.3f ms spun %d frames deep, %.3f ms asked to sleep\n",
	       cycles, spun / 1e6, depth, cycles * 10.0);
	return 0;
}
