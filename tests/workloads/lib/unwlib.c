// SPDX-License-Identifier: GPL-2.0-only
/*
 * unwlib: the library unwindmix dlopens once recording runs (built with -O2
 * -fomit-frame-pointer as libunwlib.so): ul_block waits n times ms ms in
 * ul_block_inner, under ul_block_outer. Its stacks have the library's
 * frames and its caller's (um_call_lib) only when its table is loaded.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <time.h>

#define UL_FRAME __attribute__((noipa))

static inline void ul_done(void)
{
	__asm__ volatile("" ::: "memory");
}

UL_FRAME void ul_block_inner(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	ul_done();
}

UL_FRAME int ul_block_outer(int n, int ms)
{
	for (int i = 0; i < n; i++)
		ul_block_inner(ms);
	ul_done();
	return n;
}

int ul_block(int n, int ms)
{
	int r = ul_block_outer(n, ms);

	ul_done();
	return r;
}
