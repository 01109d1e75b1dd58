// SPDX-License-Identifier: GPL-2.0-only
/*
 * stubs: spends its CPU time where symbolizers tend to give up, for the
 * naming tests: in the vDSO (clock_gettime, no system call) and through
 * PLT stubs (memset of one byte, called through the PLT: the stub's jump
 * is a visible share of each call).
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

/* one byte at a time: memset's own work is as short as its PLT stub's */
__attribute__((noinline)) static void st_plt(size_t n)
{
	for (size_t i = 0; i < 64; i++)
		memset(buf + (i & 63), (int)i, n);
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
		st_plt(n);
		sink += st_vdso();
	}
	return sink < 0;
}
