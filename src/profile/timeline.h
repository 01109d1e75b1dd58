/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A recording as a timeline: per thread, in time order, the intervals it
 * spent waiting (off CPU in S or D, on a run queue) with their stacks, the
 * stretches between them, its CPU samples, the summed short waits, and the
 * wakeups it made. The outputs (output/timeline.h: Perfetto, speedscope)
 * draw it; nothing here knows their formats.
 *
 * What a recording can show, and how each interval is known:
 *
 *   - An off-CPU sample written one by one (a wait at or above
 *     --off-cpu-thresh; OFFCPU_RAW_DIRECT) is timed at the switch-in T with
 *     its length P, which ends at the wakeup. With --sched-delay, the
 *     run-queue wait D that followed the wakeup is a sample at the same T:
 *     the wait was [T-D-P, T-D], the run-queue wait [T-D, T], both exact.
 *     Without it (or when D was summed), D is unknown: the wait is placed
 *     at [T-P, T], ending at the switch-in (TL_WAKE_UNKNOWN), later than
 *     it was by D.
 *   - A run-queue wait written one by one (--sched-delay) after a
 *     preemption or a fork is [T-D, T].
 *   - Shorter waits are summed in the kernel per stack and written every
 *     --flush-interval, timed at the end of the last one: no wait of
 *     theirs has a time. They are kept as they are (struct tl_summed),
 *     never spread over the timeline.
 *   - What lies between a thread's waits is on CPU only when every wait of
 *     the thread was written one by one: off-CPU and run-queue waits
 *     (`record --off-cpu-thresh 0 --sched-delay`). Otherwise the stretch
 *     may hold waits nobody timed, and is flagged so (TL_MAY_RUNQ,
 *     TL_MAY_WAIT): the CPU samples then say where the thread ran.
 *   - Threads with no off-CPU or run-queue sample at all (not a target of
 *     the off-CPU recording, or a recording by perf) have only their CPU
 *     samples: nothing is known of their waits.
 *
 * The timeline's stacks are a prefix tree of the session's frames: a
 * stack id names the path from the outermost frame to its frame, so that
 * equal stacks are one id and a writer interns each once.
 */
#ifndef OFFCPU_PROFILE_TIMELINE_H
#define OFFCPU_PROFILE_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/chains.h"
#include "profile/report_opts.h"
#include "session/session.h"
#include "util/msg.h"

struct timeline;

enum tl_kind {
	TL_ONCPU,  /* between two waits of a measured thread */
	TL_OFFCPU, /* asleep: state 'S' or 'D' ('?' in perf's own recordings) */
	TL_RUNQ,   /* waiting for a CPU: state says after what (struct offcpu_raw) */
};

/* What is known of a slice beyond its kind (struct tl_slice's flags). */
#define TL_WAKE_UNKNOWN 0x01 /* off-CPU: placed to end at the switch-in (its run-queue wait unknown) */
#define TL_FROM_START   0x02 /* the wait was in progress when the recording started */
#define TL_TO_STOP      0x04 /* the wait was still going when the recording stopped */
#define TL_MAY_RUNQ     0x08 /* on-CPU: run-queue waits were not recorded one by one */
#define TL_MAY_WAIT     0x10 /* on-CPU: may hold off-CPU waits summed or not measured */
#define TL_CUT          0x20 /* cut at the window's edge (--time): the slice went on beyond it */

struct tl_slice {
	uint64_t start, end;  /* ns, CLOCK_MONOTONIC as the samples' times */
	uint64_t whole;       /* its length before a --time cut */
	uint32_t stack;       /* stack id (off-CPU, run-queue), 0 for none */
	uint32_t wake;        /* off-CPU: the wakeup that ended it (record --wakeups): index + 1, else 0 */
	uint8_t kind;         /* enum tl_kind */
	char state;
	uint16_t flags;
};

/* A CPU sample: the thread was running on cpu at time. */
struct tl_sample {
	uint64_t time, period;
	uint32_t stack;
	uint32_t cpu;
};

/* Short waits summed in the kernel (one sample): count of them, total ns, ended by time. */
struct tl_summed {
	uint64_t time, total, count;
	uint32_t stack;
	uint32_t wake;        /* their waker (record --wakeups sums waits per waker): index + 1, else 0 */
	uint8_t kind;         /* TL_OFFCPU or TL_RUNQ */
	char state;
};

/*
 * A wakeup (record --wakeups): who woke the sleeper, when (its wait's end:
 * the sleeper's switch-in when that is unknown; 0 for the waker of a sum
 * of short waits, which has no time), with the waker's stack at the
 * wakeup.
 */
struct tl_wake {
	uint64_t time;
	uint32_t sleeper;     /* thread index */
	uint32_t waker;       /* thread index; TL_NO_THREAD for an interrupt */
	uint32_t stack;
	bool irq;             /* woken from an interrupt (a timer, a device), by no thread */
	bool exact;           /* time is the wakeup's (not the sleeper's switch-in) */
};
#define TL_NO_THREAD UINT32_MAX

/*
 * The critical path of a wait (profile/chains.h; recordings made with
 * --chains, or --wakeups --off-cpu-thresh 0): the wait itself
 * (TL_CRIT_WAIT), then the pieces its time is made of, in time order,
 * tiling it: whose time each was (the sleeper's waker, its waker's...),
 * what it was (on CPU, waiting for a CPU, asleep until a timer...) and
 * the stack there.
 */
#define TL_CRIT_WAIT 0xff
struct tl_crit {
	uint64_t start, end;
	uint32_t thread;      /* the piece's thread (the wait's: the sleeper); TL_NO_THREAD unknown */
	uint32_t stack;       /* its stack there (the wait's: where it blocked) */
	uint8_t kind;         /* enum chain_seg_kind, or TL_CRIT_WAIT */
	uint8_t depth;        /* hops from the sleeper */
	char state;           /* TL_CRIT_WAIT: 'S' or 'D' */
	bool sampled;         /* on CPU: the stack is a CPU sample's (else the one at the wakeup) */
};

struct tl_thread {
	uint32_t pid, tid;
	const char *comm;     /* its last name */
	uint64_t start, end;  /* its life inside the window (and --time) */
	bool measured;        /* it has off-CPU or run-queue samples: its slices are derived */
	bool waker_only;      /* no sample passed the filters: a track for the wakeups it made */
	/* its summed waits, in total (before --time) */
	uint64_t summed_off, summed_off_ns, summed_runq, summed_runq_ns;
};

/* What the recording holds, for the outputs' notes. */
struct tl_info {
	uint64_t start, end;       /* the window drawn: the recording's, cut to --time */
	bool offcpu;               /* an offcpu-time event with samples */
	bool sched_delay;          /* a sched-delay event */
	bool wakeups;              /* an offcpu-wakeup event */
	uint64_t thresh_ns;        /* --off-cpu-thresh of the recording, UINT64_MAX when not said */
	const char *cpu_event;     /* the event of the CPU samples, NULL when none */
	uint64_t lost;             /* samples the recording says it lost (LOST records, drops) */
	uint64_t overlaps;         /* waits left out: they overlapped another of their thread */
	uint64_t unjoined;         /* wakeup samples without their off-CPU sample */
	bool chains;               /* critical paths analysed (record --chains, or --wakeups --off-cpu-thresh 0) */
	uint64_t crit_waits;       /* waits of --chain-min or more analysed */
	uint64_t crit_bad;         /* walks whose pieces did not tile their wait (none, unless the analysis is wrong) */
};

/*
 * Read o->input into a timeline: samples that pass the filters (--pid,
 * --tid, --comm, --cpu as report; --time cuts the timeline rather than
 * selecting samples by their time), stacks trimmed of the scheduler's
 * frames as report does (o->keep_sched_frames, o->max_stack); with a
 * recording that lets profile/chains.h follow waits through their wakers,
 * the critical path of each wait of o->chain_min_ns or more, as report
 * --chains selects them. The caller
 * owns *tp. 0, or a negative errno with a message in err (empty when it
 * is only "out of memory"); notes to ms.
 */
int timeline__read(const struct report_opts *o, const struct msg_sink *ms, struct timeline **tp,
		   char *err, size_t errlen);
void timeline__free(struct timeline *tl);

const struct tl_info *timeline__info(const struct timeline *tl);
struct session *timeline__session(const struct timeline *tl);

/* Threads in order of pid, then tid. */
uint32_t timeline__nr_threads(const struct timeline *tl);
const struct tl_thread *timeline__thread(const struct timeline *tl, uint32_t i);
/* A thread's slices (kinds mixed, in time order, none overlapping), samples, summed waits. */
const struct tl_slice *timeline__slices(const struct timeline *tl, uint32_t i, size_t *n);
const struct tl_sample *timeline__samples(const struct timeline *tl, uint32_t i, size_t *n);
const struct tl_summed *timeline__summed(const struct timeline *tl, uint32_t i, size_t *n);
/* The critical paths of thread i's waits: each wait, then its pieces. */
const struct tl_crit *timeline__critical(const struct timeline *tl, uint32_t i, size_t *n);
/* The wakeups thread i made inside the window, in time order: indexes for timeline__wake(). */
const uint32_t *timeline__wakes_by(const struct timeline *tl, uint32_t i, size_t *n);
const struct tl_wake *timeline__wake(const struct timeline *tl, uint32_t idx);
/* Every wakeup read (indexes 0 .. n - 1), those outside --time included. */
size_t timeline__nr_wakes(const struct timeline *tl);

/*
 * Stacks: ids 1 .. timeline__nr_stacks(); each id is one frame (a session
 * frame id, session__frame()) below its parent's path (parent 0: the
 * outermost frame).
 */
uint32_t timeline__nr_stacks(const struct timeline *tl);
void timeline__stack_node(const struct timeline *tl, uint32_t id, uint32_t *parent, uint32_t *frame);
/* The depth of stack id (its number of frames). */
uint32_t timeline__stack_depth(const struct timeline *tl, uint32_t id);
/*
 * The innermost frame of stack id that names where the thread blocked:
 * its leaf, which is after the scheduler's frames unless they were kept.
 * Returns the session frame id, or UINT32_MAX for stack 0.
 */
uint32_t timeline__stack_leaf(const struct timeline *tl, uint32_t id);

#endif
