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
#include "util/msg.h"

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
	uint64_t thread_start;       /* its thread's FORK time, 0 when it existed before: with
					the tid, which life of a reused tid (session__thread()) */
	char state;                  /* offcpu-time, offcpu-wakeup and sched-delay: see offcpu_raw */
	uint32_t flags;
	uint64_t count;              /* intervals summed in an offcpu-time sample, else 1 */
	uint64_t cgroup;
	int nr;
	bool no_chain;               /* the callchain was corrupt (perf drops it): frames are the ip's */
	const uint32_t *frames;      /* frame ids */
	/*
	 * Per frame, its location: the frame as one address resolved to it,
	 * with the address shown and the offset in the symbol
	 * (session__loc()). One id is one (frame, address, offset), for the
	 * whole session. NULL in samples an output makes of others (offwake).
	 */
	const uint32_t *locs;
	/*
	 * The frames' sequence interned: two samples of one session__run()
	 * have the same stack id when their frames are the same (and only
	 * then), so a consumer can key on it. 0 in samples an output makes of
	 * others, and in every sample of a session opened with no_stacks.
	 */
	uint32_t stack;
	/*
	 * In a session opened with no_stacks, the callchain's id in the chain
	 * cache (chain_cache.c), 0 when it has none: two samples of one
	 * session with the same nonzero id have the same frames (the converse
	 * need not hold), so a consumer that interns frames itself can do it
	 * once per id. The cache's generation is in the high 32 bits. 0 in
	 * samples an output makes of others.
	 */
	uint64_t chain;
	/* offcpu-wakeup: who woke the thread (0/0 and comm "[irq]" for an interrupt) */
	uint32_t waker_pid, waker_tid;
	uint32_t waker_comm;         /* interned comm id, 0 when absent */
};

typedef int (*session_sample_cb)(void *ctx, const struct rsample *rs);

struct session_opts {
	bool srcline;
	bool inlines;
	bool no_symbols;   /* skip the symbolizer (tests, raw dumps) */
	bool no_demangle;  /* names as the binary has them (perf's --no-demangle) */
	const char *kallsyms;
	/*
	 * Kernel addresses are named at the end of session__run() (kallsyms is
	 * read meanwhile in a thread of its own): until then each distinct one
	 * has a placeholder frame of its own, which session__remap() maps to
	 * its named frame. For callers that keep frames and name them after
	 * the walk (aggregated outputs), not for those that print as they go.
	 */
	bool defer_kernel;
	/*
	 * Kernel addresses are never named (a placeholder frame each, as
	 * with defer_kernel, never remapped) and kallsyms is not read: for
	 * callers that use no frames (per-thread times). What naming them
	 * would warn about is said where it would be, at the first one.
	 */
	bool no_kernel_names;
	/*
	 * Samples' frame sequences are not interned (rsample.stack stays 0):
	 * for callers that print each sample's frames and locations as they
	 * come and key on nothing (script), or that intern them elsewhere
	 * (the profile, in a thread of its own). The interned sequences are
	 * most of the memory of a recording with many distinct stacks.
	 */
	bool no_stacks;
	/*
	 * Where the warnings go (a file not as recorded, a kernel without
	 * symbols, a recording cut off), as they are found; none when unset.
	 */
	struct msg_sink msg;
};

struct session *session__new(const char *path, const struct session_opts *opts,
			     char *errbuf, size_t errlen);
void session__free(struct session *s);

/*
 * Read the whole file, calling cb for each sample (every one: filtering is
 * the callback's). Negative errno on error, session__error() says why.
 */
int session__run(struct session *s, session_sample_cb cb, void *ctx);
const char *session__error(const struct session *s);

const struct perf_reader *session__reader(const struct session *s);
/* The attr index of the event named name, or -1. */
int session__event(const struct session *s, const char *name);
/*
 * With defer_kernel, after session__run(): for each frame id (n of them)
 * the id to use instead (placeholders of kernel addresses map to their
 * named frames, every other id to itself); NULL without defer_kernel.
 */
const uint32_t *session__remap(const struct session *s, uint32_t *n);
const struct frame *session__frame(const struct session *s, uint32_t id);
/* A location of rsample.locs: the address shown (map-relative for user code) and the offset in its symbol. */
void session__loc(const struct session *s, uint32_t loc, uint64_t *addr, uint64_t *off);
uint32_t session__nr_frames(const struct session *s);
const char *session__comm(const struct session *s, uint32_t id);

/*
 * A frame that is no code: a label in an output's stacks (off-wake
 * stacks' "--" separator and waker names). Interned like every frame.
 */
int session__label_frame(struct session *s, const char *name, uint32_t *id);

/* A thread as the side-band told it, after session__run(). */
struct session_thread {
	uint32_t pid, tid;
	uint32_t comm;      /* its comm at the end */
	uint64_t fork_time; /* its FORK record, 0 when not seen (it existed before) */
	uint64_t exit_time; /* its EXIT record, 0 when not seen (it outlived the recording) */
};
/*
 * The thread tid that started at start (its FORK time, rsample.thread_start;
 * 0: it existed before the recording): a tid the kernel gave again after
 * its thread exited is another thread. When no thread of tid started then,
 * the latest one; false when tid was never seen.
 */
bool session__thread(const struct session *s, uint32_t tid, uint64_t start,
		     struct session_thread *out);
/*
 * The first and last record times of the file (perf --off-cpu's samples
 * "at the end", PERF_OFFCPU_AT_END, have none); false when no record had one.
 */
bool session__time_span(const struct session *s, uint64_t *first, uint64_t *last);

/* Counts for the report header. */
struct session_stats {
	uint64_t samples_unknown_thread;
	uint64_t lost;
	uint64_t nr_samples;
};
void session__stats(const struct session *s, struct session_stats *st);

#endif
