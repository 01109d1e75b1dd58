/* What every workload needs besides its own waits: the two clocks its
 * marks are taken with (the checkers compare them with the recording's
 * CLOCK_MONOTONIC times and the thread's own CPU time) and one way to give
 * up. Static, so each workload keeps its own copy and no frame name of a
 * checked stack comes from here. */
#ifndef OFFCPU_WORKLOADS_WL_H
#define OFFCPU_WORKLOADS_WL_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline int64_t wl_clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Wall time, in the recording's clock. */
static inline int64_t mono_ns(void)
{
	return wl_clock_ns(CLOCK_MONOTONIC);
}

/* The calling thread's CPU time. */
static inline int64_t cpu_ns(void)
{
	return wl_clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* A step that cannot fail did: say which, with errno, and exit 1. */
static inline void die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what, strerror(errno));
	exit(1);
}

#endif
