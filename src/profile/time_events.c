// SPDX-License-Identifier: GPL-2.0-only
/*
 * Which events a time picture (flame graph, pprof) is drawn from: periods
 * must be nanoseconds so that on-CPU and off-CPU time add up at true scale.
 */
#include <stdio.h>

#include "output/report.h"

void report__time_events(const struct session *s, const struct profile *p, const char *cmd,
			 int *cpu, int *off)
{
	const struct perf_reader *r = session__reader(s);

	*cpu = *off = -1;
	for (int i = 0; i < profile__nr_events(p); i++) {
		const struct perf_evattr *a = perf_reader__attr(r, i);

		if (!profile__event(p, i)->samples)
			continue;
		if (a->is_wakeup) {
			fprintf(stderr, "offcpu %s: event '%s' skipped: it repeats off-CPU time, by the wakers' stacks\n",
				cmd, a->name);
		} else if (a->is_sched_delay) {
			fprintf(stderr, "offcpu %s: event '%s' skipped: run-queue delay is neither on-CPU nor off-CPU time\n",
				cmd, a->name);
		} else if (a->is_offcpu) {
			if (*off < 0)
				*off = i;
		} else if (!a->is_time) {
			fprintf(stderr, "offcpu %s: event '%s' skipped: its period is not time\n", cmd,
				a->name);
		} else if (*cpu < 0) {
			*cpu = i;
		} else {
			fprintf(stderr, "offcpu %s: several on-CPU time events; using '%s', '%s' skipped\n",
				cmd, perf_reader__attr(r, *cpu)->name, a->name);
		}
	}
}
