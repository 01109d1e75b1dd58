/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Per-thread time: each sample's period to its thread, by kind of time:
 * on-CPU (cpu-clock or task-clock samples), off-CPU asleep in S and in D
 * (offcpu-time), waiting for a CPU (sched-delay). `offcpu report
 * --threads` (output/threads.h) shows it against each thread's wall time.
 */
#ifndef OFFCPU_PROFILE_THREADS_H
#define OFFCPU_PROFILE_THREADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "session/session.h"

struct threads;

/* One thread's time (ns): a thread is a tid and its start (a tid may be given again). */
struct thread_time {
	uint32_t tid, pid;
	uint64_t start;  /* rsample.thread_start: for session__thread() */
	uint64_t oncpu, sleep_s, sleep_d, rq;
	uint64_t waits;  /* off-CPU intervals (offcpu-time samples' counts) */
};

struct threads *threads__new(void);
void threads__free(struct threads *t);

/* Account one sample (filters already applied) to its thread. */
int threads__add(struct threads *t, const struct rsample *rs);

/* The threads that had samples, in order of first sample. */
size_t threads__nr(const struct threads *t);
const struct thread_time *threads__row(const struct threads *t, size_t i);
/* Whether any sample was of run-queue delay (sched-delay), of on-CPU time. */
bool threads__have_delay(const struct threads *t);
bool threads__have_cpu(const struct threads *t);

#endif
