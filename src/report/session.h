/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A reading session: perf.data records (in time order) drive a process
 * model — threads with their comm, per-process memory maps, DSOs — and
 * every sample is turned into a resolved stack of interned frames that a
 * consumer (aggregation, script) receives through a callback. Each distinct
 * (DSO, address) is symbolized once; frames are interned, so consumers can
 * key on small integers.
 */
#ifndef OFFCPU_REPORT_SESSION_H
#define OFFCPU_REPORT_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "perfdata/perf_reader.h"

struct session;

/* One function-level frame (an inlined function is its own frame). */
struct frame {
	const char *sym;       /* NULL when unknown */
	const char *dso;       /* full path, "[kernel.kallsyms]", module, or "[unknown]" */
	const char *dso_short; /* basename of dso */
	uint64_t addr;         /* unknown symbol: address shown instead (map-relative) */
	const char *srcfile;   /* --srcline only */
	unsigned int line;
	bool kernel;
	bool inlined;
};

/* One resolved sample; arrays are leaf first and valid during the callback. */
struct rsample {
	const struct perf_sample *s; /* pid, tid, cpu, time, period, evattr */
	int event;                   /* attr index */
	uint32_t comm;               /* interned comm id: session__comm() */
	char state;                  /* 'S'/'D' for offcpu-time, 0 otherwise */
	uint32_t flags;
	uint64_t count;              /* intervals summed in an offcpu-time sample, else 1 */
	uint64_t cgroup;
	int nr;
	const uint32_t *frames;      /* frame ids */
	const uint64_t *addrs;       /* address shown by script (map-relative for user) */
	const uint64_t *offs;        /* offset in the symbol */
};

typedef int (*session_sample_cb)(void *ctx, const struct rsample *rs);

struct session_opts {
	bool srcline;
	bool inlines;
	bool no_symbols;   /* skip the symbolizer (tests, raw dumps) */
	const char *kallsyms;
};

struct session *session__new(const char *path, const struct session_opts *opts,
			     char *errbuf, size_t errlen);
void session__free(struct session *s);

/* Read the whole file, calling cb for each sample. Negative errno on error. */
int session__run(struct session *s, session_sample_cb cb, void *ctx);
const char *session__error(const struct session *s);

const struct perf_reader *session__reader(const struct session *s);
const struct frame *session__frame(const struct session *s, uint32_t id);
uint32_t session__nr_frames(const struct session *s);
const char *session__comm(const struct session *s, uint32_t id);

/* Counts for the report header. */
struct session_stats {
	uint64_t samples_unknown_thread;
	uint64_t lost;
	uint64_t nr_samples;
};
void session__stats(const struct session *s, struct session_stats *st);

#endif
