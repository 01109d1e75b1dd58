/* What every workload needs besides its own waits: the clocks its marks
 * are taken with (the checkers compare them with the recording's
 * CLOCK_MONOTONIC times, the thread's own CPU time and its time on a CPU)
 * and one way to give up. Static, so each workload keeps its own copy and
 * no frame name of a checked stack comes from here. */
#ifndef OFFCPU_WORKLOADS_WL_H
#define OFFCPU_WORKLOADS_WL_H

#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

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

/*
 * A counter of the calling thread's time on a CPU by the wall clock (perf's
 * task-clock), or -1 where perf events are not allowed. Its CPU time leaves
 * out what the hypervisor stole and IRQs took while it was current, which a
 * recorder of context switches counts as on a CPU; the task-clock keeps
 * that but leaves out the context switches themselves (10-20 us each here),
 * which the CPU time keeps. A checker takes the larger of the two as a
 * bound on the stolen time in a stretch.
 */
static inline int task_clock_open(void)
{
	struct perf_event_attr a = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(a),
		.config = PERF_COUNT_SW_TASK_CLOCK,
	};

	return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/* The counter's ns so far; 0 without one. */
static inline int64_t task_clock_ns(int fd)
{
	uint64_t v;

	if (fd < 0 || read(fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
		return 0;
	return (int64_t)v;
}

/* A step that cannot fail did: say which, with errno, and exit 1. */
static inline void die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what, strerror(errno));
	exit(1);
}

#endif
