// SPDX-License-Identifier: GPL-2.0-only
/*
 * stubs: spends its CPU time where symbolizers tend to give up, for the
 * naming tests: in the vDSO (clock_gettime, no system call) and through
 * PLT stubs: memset of one byte, and st_id of libstublib.so
 * (tests/workloads/lib/stublib.c), a function as short as its stub, both
 * called through the PLT, so that the stubs' jumps are a visible share of
 * each call.
 *
 *   stubs [SECONDS]     default 0.5
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char buf[64];

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int st_id(int x); /* libstublib.so */

/*
 * one byte at a time: memset's own work is short, but its stub's jump took
 * 0 to 24 of 2 500 samples (a 0.5 s run at 4999 Hz); st_id's stub is half
 * of each call to it.
 */
__attribute__((noinline)) static int st_plt(size_t n)
{
	int sum = 0;

	for (size_t i = 0; i < 64; i++) {
		memset(buf + (i & 63), (int)i, n);
		for (int j = 0; j < 16; j++)
			sum += st_id(j);
	}
	return sum;
}

__attribute__((noinline)) static double st_vdso(void)
{
	double t = 0;

	for (int i = 0; i < 16; i++)
		t += now();
	return t;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 0.5, end = now() + secs, sink = 0;
	size_t n = argc > 2 ? 2 : 1; /* not a constant: memset is called, not inlined */

	while (now() < end) {
		sink += st_plt(n);
		sink += st_vdso();
	}
	return sink < 0;
}
