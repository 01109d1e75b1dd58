/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Wait chains: why a thread waited, followed back through its wakers to
 * the work that ended the wait.
 *
 * The model is every thread's timeline: its waits one by one (off the CPU
 * in S or D until woken, then on a run queue until it runs; or, after a
 * preemption, on a run queue only), each with the stack it left the CPU
 * with and who woke it (a task and its stack, or an interrupt), and its
 * CPU samples. Between two waits a thread is on a CPU. It is read from
 * `offcpu record --chains` (offcpu-switch and offcpu-stack records of
 * every thread of the machine, CPU samples of every thread) or, for the
 * recorded threads only, from `--wakeups --off-cpu-thresh 0` (every
 * interval a direct offcpu-time sample with its offcpu-wakeup sample;
 * with --sched-delay its run-queue wait too).
 *
 * The walk of a wait W of thread X over [start, end] (end: its wakeup)
 * goes back in time from end through what W's waker Y was doing:
 *   - on a CPU: that time is Y's, split by Y's CPU samples in it (each
 *     sample's stack gets the time up to the midpoints with its
 *     neighbours); with no sample in it, the stack Y had at the wakeup
 *     (or at its next switch-out);
 *   - on a run queue: Y's, with the stack it waited with;
 *   - itself asleep in a wait W': that part goes on to W''s waker over
 *     the overlap, recursively;
 *   - a wait ended by a timer, a hard interrupt or the disk (D state and
 *     an interrupt) ends the chain at that thread's blocking stack,
 *     tagged [timer], [irq] or [io];
 *   - before a thread is known (before the recording, outside the
 *     recorded threads, past records lost): [unknown].
 * Until the window is covered. The segments tile [start, end] exactly.
 * Every recursion is into another wait over a window inside the current
 * one, walked back from its end: time only goes back. A chain deeper than
 * CHAINS_MAX_DEPTH hops ends there ([depth]), a wait met twice on one
 * path ends there ([cycle]: possible only where clocks of two CPUs make
 * two wakeups the same instant), and a wait that needs more than
 * CHAINS_MAX_SEGS segments has the rest of its window as one
 * [truncated] segment: the work per wait is bounded.
 *
 * This is a library: report --chains, its folded form, the flame graph
 * and pprof walk it (output/chains.c); a timeline can call chains__walk()
 * for each wait and draw its segments.
 */
#ifndef OFFCPU_PROFILE_CHAINS_H
#define OFFCPU_PROFILE_CHAINS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/report_opts.h"
#include "session/session.h"
#include "util/msg.h"

#define CHAINS_MAX_DEPTH 32          /* hops from the sleeper */
#define CHAINS_MAX_SEGS 100000       /* segments of one wait */
#define CHAINS_DEFAULT_MIN_NS 1000000 /* --chain-min's default: 1 ms */
#define CHAINS_NONE UINT32_MAX

/* How a wait ended: who woke it. */
enum chain_waker {
	CHAIN_WAKER_NONE,    /* not known (no waker seen) */
	CHAIN_WAKER_TASK,    /* a task: waker, waker_stack */
	CHAIN_WAKER_TIMER,   /* a timer (hrtimer, timer wheel) */
	CHAIN_WAKER_IRQ,     /* a hard interrupt, or softirq work not of the current task */
};

/* One wait of one thread (times on the recording's clock, ns). */
struct chain_wait {
	uint64_t out;         /* left the CPU */
	uint64_t wake;        /* woken: the end of the wait proper (= out after a preemption) */
	uint64_t in;          /* on a CPU again */
	uint32_t thread;      /* chains__thread() index */
	uint32_t stack;       /* the stack it left the CPU with (chains__stack), CHAINS_NONE */
	uint32_t waker;       /* thread index of the waker (a preemption: who took the CPU), CHAINS_NONE */
	uint32_t waker_stack; /* the waker's stack at the wakeup, CHAINS_NONE */
	char state;           /* 'S', 'D' (asleep), 'R' (preempted), 'N' (created: its first run) */
	uint8_t kind;         /* enum chain_waker */
	uint16_t flags;       /* CHAIN_WAIT_* */
	uint32_t order;       /* its place among the recording's switch records (their order is its thread's) */
};

#define CHAIN_WAIT_TARGET 0x1     /* a thread the recording was of (its waits are analysed by default) */
#define CHAIN_WAIT_FROM_START 0x2 /* in progress when the recording started: out is the start */
#define CHAIN_WAIT_TO_STOP 0x4    /* still open when it stopped: wake and in are the stop */
#define CHAIN_WAIT_GAP 0x8        /* records of this thread were lost just before this wait */
#define CHAIN_WAIT_WAKE_UNSEEN 0x10 /* asleep, and the kernel hid its wakeup: no waker known */

struct chain_thread {
	uint32_t pid, tid;
	uint32_t comm;        /* session__comm() id */
	bool target;          /* a thread the recording was of */
	bool known;           /* its timeline is recorded (else every moment of it is [unknown]) */
	uint64_t from;        /* its timeline is known from here (its creation, or the recording's start) */
	uint64_t to;          /* ... up to here */
};

/* What a segment of a wait's time was. */
enum chain_seg_kind {
	CHAIN_SEG_ON_CPU,     /* running (stack: a CPU sample's, or its stack at the wakeup) */
	CHAIN_SEG_RUNQ,       /* waiting for a CPU (stack: the one it waited with) */
	CHAIN_SEG_TIMER,      /* asleep until a timer: [timer] */
	CHAIN_SEG_IRQ,        /* asleep until a hard interrupt: [irq] */
	CHAIN_SEG_IO,         /* asleep in D state until an interrupt: [io] */
	CHAIN_SEG_NO_WAKER,   /* asleep, woken by nothing recorded: [unknown] */
	CHAIN_SEG_WAKE_UNSEEN, /* asleep, its wakeup hidden from the tracer: [wakeup unseen] */
	CHAIN_SEG_UNKNOWN,    /* the thread's state is not known (outside the recording, records lost) */
	CHAIN_SEG_DEPTH,      /* asleep, its waker deeper than CHAINS_MAX_DEPTH: [depth] */
	CHAIN_SEG_CYCLE,      /* asleep in a wait met twice on the path: [cycle] */
	CHAIN_SEG_TRUNCATED,  /* the rest of a wait past CHAINS_MAX_SEGS: [truncated] */
	CHAIN_SEG__NR,
};

/*
 * A step of a chain: the thread whose time it is and its stack there. The
 * root hop is the sleeper with its blocking stack; each other hop is the
 * waker of its parent's wait (a thread woken by its parent's thread...)
 * with, for a hop that recursed, its own blocking stack, and for the last
 * hop of a segment, the segment's stack.
 */
struct chain_hop {
	uint32_t parent;      /* hop index, CHAINS_NONE for the root */
	uint32_t thread;
	uint32_t stack;       /* CHAINS_NONE when none */
	uint32_t depth;       /* 0 for the root */
};

/* A piece of a wait: [start, end) was this, on the hop's thread. */
struct chain_seg {
	uint64_t start, end;
	uint32_t hop;         /* its thread and stack, and the path to it */
	uint8_t kind;         /* enum chain_seg_kind */
	bool sampled;         /* ON_CPU: the stack is a CPU sample's (not the one at the wakeup) */
	uint32_t preempted_by; /* RUNQ after a preemption: who took the CPU (thread index), else CHAINS_NONE */
};

/* One wait walked: valid until the next chains__walk() or chains__free(). */
struct chain_walk {
	uint64_t start, end;  /* the wait (several merged, see chains__select) */
	uint32_t thread;
	const struct chain_seg *segs; /* latest first, tiling [start, end) */
	size_t nsegs;
	const struct chain_hop *hops;
	size_t nhops;
};

/* Totals of a model, for the report's header. */
struct chains_stats {
	uint64_t waits;        /* every wait of every thread */
	uint64_t threads;
	uint64_t cpu_samples;
	uint64_t summed;       /* summed offcpu-time samples, not placed in time (--wakeups recordings) */
	uint64_t gaps;         /* places where records of a thread were lost */
	uint64_t wake_unseen;  /* sleeps whose wakeup the kernel hid (no waker) */
	uint64_t unjoined;     /* offcpu-wakeup samples without their interval */
	bool switch_records;   /* read from record --chains (else --wakeups samples) */
};

struct chains;

/*
 * An empty model of the recording of session s (which must outlive it).
 * keep_sched: the scheduler's innermost frames stay in blocking stacks
 * (report's --keep-sched-frames); max_stack: frames kept per stack, 0 all.
 */
struct chains *chains__new(struct session *s, bool keep_sched, int max_stack);
void chains__free(struct chains *c);

/* Every sample of the session in file order (the session's callback): 0 or -ENOMEM. */
int chains__add(struct chains *c, const struct rsample *rs);

/*
 * After session__run(): frames renamed (session__remap(), NULL when none),
 * every thread's waits and samples put in order. 0 or -ENOMEM.
 */
int chains__finish(struct chains *c, const uint32_t *remap, uint32_t nremap);

void chains__stats(const struct chains *c, struct chains_stats *st);
size_t chains__nr_threads(const struct chains *c);
const struct chain_thread *chains__thread(const struct chains *c, uint32_t i);
size_t chains__nr_waits(const struct chains *c);
/* The waits of all threads, each thread's in time order, threads one after another. */
const struct chain_wait *chains__wait(const struct chains *c, size_t i);
/* The frames of a stack, innermost first (the scheduler's left out as asked); NULL, 0 for CHAINS_NONE. */
const uint32_t *chains__stack(const struct chains *c, uint32_t stack, uint32_t *nr);

/*
 * The waits to analyse, as report selects them: waits proper (S or D) of
 * at least min_ns, of the targets unless a --pid/--tid/--comm filter of o
 * names threads, ending inside --time when given. A thread's waits with
 * the same stack separated by at most CHAINS_MERGE_NS on a CPU (a futex's
 * spurious wakeup and sleep again) count as one: each selected wait is a
 * range [first, last] of chains__wait() indexes. Returns the number of
 * ranges (in *out, the caller frees it), or a negative errno.
 */
#define CHAINS_MERGE_NS 50000
struct chain_sel {
	size_t first, last;
	uint64_t ns;           /* from the first one's out to the last one's wake */
};

/* --chain-min of o in ns (o->chain_min_ns, or its default). */
static inline uint64_t chains__min_ns(const struct report_opts *o)
{
	return o->chain_min_ns >= 0 ? (uint64_t)o->chain_min_ns : CHAINS_DEFAULT_MIN_NS;
}
long chains__select(const struct chains *c, const struct report_opts *o, uint64_t min_ns,
		    struct chain_sel **out);

/*
 * Walk the selected wait sel (its waits and what came between them, the
 * thread's own time) into segments. 0 or -ENOMEM; *w is valid until the
 * next call.
 */
int chains__walk(struct chains *c, const struct chain_sel *sel, struct chain_walk *w);

/* The name of a segment's end tag, "[timer]" ..., "[run queue]", or NULL for ON_CPU. */
const char *chain_seg__tag(enum chain_seg_kind k);

/*
 * Whether a walk's segments tile its wait: each ends where the next
 * (earlier) one starts, the first at the wait's end, the last at its
 * start. The outputs check every walk.
 */
bool chain_walk__tiles(const struct chain_walk *w);

/*
 * The selected waits' chains as a profile of event ev (profile.h): one
 * stack per distinct path, leaf first, as the folded output reads it root
 * first: the sleeper's stack, then per hop a label frame "[woken by COMM]"
 * (o->waker_by: "COMM PID", "COMM PID/TID") and that thread's stack (its
 * CPU sample's for on-CPU time, its blocking stack where it waited
 * itself), and the end's tag ("[timer]", "[run queue]"...) for all but
 * on-CPU time. ev: offcpu-time's attr index (-1: found here). Period: ns; comm, pid, tid and state: the sleeper's (keep
 * as profile__new's). *waits and *ns: what was walked; *bad: walks that did
 * not tile (none, unless the analysis is wrong). 0 or -ENOMEM.
 */
struct profile;
struct chains_totals {
	uint64_t waits, intervals, ns, segs, bad, truncated;
};
int chains__profile(struct chains *c, const struct report_opts *o, uint64_t min_ns, int ev,
		    unsigned int keep, struct profile **out, struct chains_totals *tot);

/* The label frame "[woken by ...]" of thread ti (as o->waker_by names it). 0 or -ENOMEM. */
int chains__marker(struct chains *c, uint32_t ti, enum by_key by, uint32_t *id);

/*
 * A recording read whole into a model: report__open(), every sample to
 * chains__add(), chains__finish(). The file must hold offcpu-switch
 * records (record --chains) or offcpu-wakeup samples (record --wakeups);
 * else an error saying how to record. 0, or a negative errno with err set.
 */
int chains__read(const struct report_opts *o, const struct msg_sink *ms, struct session **sp,
		 struct chains **cp, char *err, size_t errlen);

#endif
