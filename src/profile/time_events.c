// SPDX-License-Identifier: GPL-2.0-only
/*
 * Which events a time picture (flame graph, pprof) is drawn from: periods
 * must be nanoseconds so that on-CPU and off-CPU time add up at true scale.
 */
#include "profile/profile.h"

void profile__time_events(const struct profile *p, const struct session *s,
			  const struct msg_sink *ms, int *cpu, int *off)
{
	*cpu = *off = -1;
	for (int i = 0; i < profile__nr_events(p); i++) {
		const struct perf_evattr *a = profile__attr(p, s, i);

		if (!profile__event(p, i)->samples)
			continue;
		if (a->is_wakeup) {
			msg__say(ms, MSG_NOTE, "event '%s' skipped: it repeats off-CPU time, by the wakers' stacks",
				 a->name);
		} else if (a->is_sched_delay) {
			msg__say(ms, MSG_NOTE, "event '%s' skipped: run-queue delay is neither on-CPU nor off-CPU time",
				 a->name);
		} else if (a->is_offcpu) {
			if (*off < 0)
				*off = i;
		} else if (!a->is_time) {
			msg__say(ms, MSG_NOTE, "event '%s' skipped: its period is not time", a->name);
		} else if (*cpu < 0) {
			*cpu = i;
		} else {
			msg__say(ms, MSG_NOTE, "several on-CPU time events; using '%s', '%s' skipped",
				 profile__attr(p, s, *cpu)->name, a->name);
		}
	}
}
