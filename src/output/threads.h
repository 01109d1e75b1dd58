/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `offcpu report --threads`: one row per thread, its wall time in the
 * recording and where that time went: on-CPU (cpu-clock or task-clock
 * samples), off-CPU asleep in S and in D (offcpu-time), waiting for a CPU
 * (sched-delay, with `record --sched-delay`), and the rest that none of
 * them accounts for.
 */
#ifndef OFFCPU_OUTPUT_THREADS_H
#define OFFCPU_OUTPUT_THREADS_H

#include <stdio.h>

#include "profile/threads.h"
#include "session/session.h"

struct report_opts;

/*
 * The table, after session__run(): threads that had samples, ranked by
 * o->thread_sort, with wall times from the session's side-band (see the
 * definition printed in its header); threads asleep the whole window in
 * one wait counted in one line unless o->idle. -ENODATA, with nothing
 * written, when no thread has samples.
 */
int threads__print(FILE *f, const struct threads *t, const struct session *s,
		   const struct report_opts *o);

#endif
