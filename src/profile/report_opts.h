/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What a read of a recording was asked: the file and how to name its
 * frames (for the session), which samples count (the filters, applied by
 * whoever consumes the session's samples: profile/filter.h), what is
 * aggregated, and how the outputs show it (sort keys, call graphs, limits).
 * The commands fill it from their options; each layer reads its part.
 */
#ifndef OFFCPU_PROFILE_REPORT_OPTS_H
#define OFFCPU_PROFILE_REPORT_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/idlist.h"

enum sort_key { SK_COMM, SK_PID, SK_TID, SK_DSO, SK_SYM, SK_STATE, SK_CGROUP, SK_MAX };

/* What rows are per (--by): a comm, a process, a thread. */
enum by_key { BY_COMM, BY_PID, BY_TID };

enum graph_mode { GRAPH_DEFAULT, GRAPH_CALLER, GRAPH_CALLEE, GRAPH_NONE };

/* What --threads ranks its rows by (--sort off|S|D|on|runq|wall), most first. */
enum thread_sort { TS_OFF, TS_S, TS_D, TS_ON, TS_RUNQ, TS_WALL, TS_MAX };

struct report_opts {
	const char *input;
	/* the session */
	bool srcline, inlines;
	bool no_symbols;
	bool no_demangle;        /* C++ and Rust names as they are in the binary */
	/* the filters */
	const char *event;       /* only this event (name, before any ':') */
	struct id_list pids, tids, cpus;
	char **comms;
	size_t nr_comms;
	uint64_t time_start, time_end; /* ns; end 0 = open */
	/* the aggregation */
	bool wakeups;            /* off-wake stacks (profile/offwake.h) join the profile */
	enum by_key waker_by;    /* wakers named "comm", "comm pid" or "comm pid/tid" */
	bool keep_sched_frames;  /* the scheduler's frames stay in off-CPU stacks (profile/trim.h) */
	int max_stack;           /* the innermost frames kept per stack; 0: all */
	int64_t chain_min_ns;    /* --chain-min: the waits --chains analyses; -1: its default */
	/* the outputs */
	enum { HEADER_SHORT, HEADER_FULL, HEADER_ONLY } header; /* the report's header: counters */
	bool quiet;              /* -q: no "#" lines, no warnings */
	bool verbose;            /* -v: the full header, DSOs by path */
	bool show_nr;            /* -n: a Samples column */
	int by;                  /* --by: an enum by_key, -1 the output's default */
	int limit;               /* --threads rows shown; 0 all */
	int thread_sort;         /* --threads --sort: an enum thread_sort, -1 not given (off) */
	bool idle;               /* --threads: list the threads asleep the whole window in one wait */
	int children;            /* -1 default (off: see stdio.c), 0 off, 1 on */
	enum sort_key sort[SK_MAX];
	int nr_sort;
	bool sort_given;         /* --sort with report's keys (not the default) */
	double percent_limit;
	enum graph_mode graph;
	double graph_min;        /* hide call-graph branches below this % */
};

/* Defaults of every option (input ./perf.data); report_opts__free() releases the lists. */
void report_opts__init(struct report_opts *o);
void report_opts__free(struct report_opts *o);

#endif
