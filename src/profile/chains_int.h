/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The model of wait chains inside profile/: what chains.c (reading the
 * recording into it) and chain_walk.c (walking a wait through it) share.
 */
#ifndef OFFCPU_PROFILE_CHAINS_INT_H
#define OFFCPU_PROFILE_CHAINS_INT_H

#include "profile/chains.h"
#include "util/htab.h"

/* A stack of the pool: nr frame ids at frames[off], innermost first. */
struct cstack {
	uint32_t off, nr;
	uint32_t skip;     /* the scheduler's innermost frames, left out of blocking stacks */
	bool blocking;     /* some wait left the CPU with it */
};

/* The samples of one switch-in of a --wakeups recording, gathered. */
struct pend {
	uint64_t time;                /* the switch-in's: its first sample's */
	uint64_t off_time;            /* its offcpu-time sample's (and its wakeup's) */
	uint64_t off, delay;          /* ns off CPU, ns on the run queue */
	bool has_off, has_delay, has_waker;
	char state, delay_state;
	uint32_t stack, delay_stack;
	uint32_t flags;               /* OFFCPU_RAW_* of the off-CPU sample */
	uint32_t waker, waker_stack;  /* thread index, stack */
	uint8_t kind;
};

/* A thread while reading: the public part, its pending samples, its CPU samples. */
struct cthread {
	struct chain_thread pub;
	struct pend pend;
	uint32_t last_seq;            /* offcpu-switch: switch-ins at its last record */
	bool has_seq;
	uint64_t first_time, last_time; /* its first and last record's time */
	size_t w0, nw;                /* its waits in the sorted array */
	size_t s0, ns;                /* its CPU samples in the sorted array */
};

struct csample {
	uint64_t time;
	uint32_t thread;
	uint32_t stack;
};

/* A stack id of the recording (offcpu-stack records) to the pool's. */
struct rawid {
	uint32_t id;
	uint32_t stack;
};

struct chains {
	struct session *s;
	bool keep_sched;
	int max_stack;
	int ev_switch, ev_stack;      /* attr indexes, -1 when absent */
	bool switch_mode;             /* the file has offcpu-switch records */
	/* the pool of stacks */
	struct htab stacks;           /* struct cstack by frames */
	uint32_t *frames;
	size_t nframes, capframes;
	struct htab rawids;           /* struct rawid by id */
	/* threads by tid */
	struct htab threads;          /* struct cthread */
	/* waits and CPU samples */
	struct chain_wait *waits;
	size_t nwaits, capwaits;
	struct csample *samples;
	size_t nsamples, capsamples;
	struct chains_stats st;
	uint64_t file_first, file_last;
	/* the walk's scratch */
	struct chain_seg *segs;
	size_t nsegs, capsegs;
	struct chain_hop *hops;
	size_t nhops, caphops;
	const struct chain_wait *path[CHAINS_MAX_DEPTH + 2]; /* waits on the current path */
	unsigned int npath;
	bool truncated;
	int err;
};

static inline struct cstack *cstack_at(const struct chains *c, uint32_t id)
{
	return id < htab__n(&c->stacks) ? htab__at(&c->stacks, id) : NULL;
}

static inline struct cthread *cthread_at(const struct chains *c, uint32_t i)
{
	return i < htab__n(&c->threads) ? htab__at(&c->threads, i) : NULL;
}

#endif
