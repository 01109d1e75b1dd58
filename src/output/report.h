/* SPDX-License-Identifier: GPL-2.0-only */
/* Options and outputs of `offcpu report` and `offcpu script`. */
#ifndef OFFCPU_REPORT_REPORT_H
#define OFFCPU_REPORT_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/profile.h"
#include "session/session.h"

enum sort_key { SK_COMM, SK_PID, SK_TID, SK_DSO, SK_SYM, SK_STATE, SK_CGROUP, SK_MAX };

enum graph_mode { GRAPH_DEFAULT, GRAPH_CALLER, GRAPH_CALLEE, GRAPH_NONE };

struct id_list {
	uint64_t *v;
	size_t n;
};

struct report_opts {
	const char *input;
	int children;            /* -1 default (on), 0 off, 1 on */
	enum sort_key sort[SK_MAX];
	int nr_sort;
	double percent_limit;
	enum graph_mode graph;
	double graph_min;        /* hide call-graph branches below this % */
	bool srcline, inlines;
	bool folded;
	const char *pprof;       /* --pprof FILE */
	bool wakeups;            /* --wakeups: off-wake stacks (the aggregate joins them) */
	bool waker_ids;          /* --wakeups: wakers named "comm pid/tid", not comm */
	bool threads;            /* --threads: per-thread time table */
	bool no_symbols;
	const char *event;       /* only this event (name, before any ':') */
	struct id_list pids, tids, cpus;
	char **comms;
	size_t nr_comms;
	uint64_t time_start, time_end; /* ns; end 0 = open */
};

/* Defaults of every option (input ./perf.data); report_opts__free() releases the lists. */
void report_opts__init(struct report_opts *o);
void report_opts__free(struct report_opts *o);

/*
 * The filters shared by every command that reads a file (--pid, --tid,
 * --comm, --cpu/-C, --time, as `--opt V` or `--opt=V`), parsed from
 * argv[*i]: 1 when it was one (*i moves past its value), 0 when argv[*i] is
 * not a filter, negative errno after a message on stderr.
 */
int report__parse_filter(int argc, char **argv, int *i, struct report_opts *o);
void report__filter_usage(FILE *f);

/*
 * Open o->input and fold every sample that passes the filters into a new
 * profile (keep: PROFILE_KEEP_* flags). On success the caller owns *sp and
 * *pp; on error both are untouched and a message naming cmd is printed.
 * With o->wakeups the profile holds the offcpu-time samples and, as event
 * offcpu-wakeup, the off-wake stacks (report/offwake.h); a file without
 * that event is an error.
 */
int report__aggregate(const struct report_opts *o, unsigned int keep, const char *cmd,
		      struct session **sp, struct profile **pp);

/* The attr index of the event named name, or -1. */
int report__event_index(const struct session *s, const char *name);

/* true when the sample passes --pid/--tid/--comm/--cpu/--time/--event */
bool report__match(const struct report_opts *o, const struct session *s, const struct rsample *rs);
/* true when the event passes --event */
bool report__event_match(const struct report_opts *o, const struct perf_evattr *a);

/*
 * The events of a time picture (flame graph, pprof), by attr index, -1 when
 * absent: *off the off-CPU event (offcpu-time), *cpu the first other event
 * whose period is nanoseconds (cpu-clock, task-clock; not offcpu-wakeup or
 * sched-delay). Only events with samples count; others with samples are
 * named on stderr as skipped.
 */
void report__time_events(const struct session *s, const struct profile *p, const char *cmd,
			 int *cpu, int *off);

/* "1.23 s", "45.6 ms", "789 us", "12 ns" */
void report__fmt_ns(char *buf, size_t len, uint64_t ns);

int report_stdio__print(FILE *f, const struct session *s, const struct profile *p,
			const struct report_opts *o);
int folded__print(FILE *f, const struct session *s, const struct profile *p,
		  const struct report_opts *o);
void frame__fput(FILE *f, const struct frame *fr, const char *inl, const char *kern);
int script__run(FILE *f, struct session *s, const struct report_opts *o);

#endif
