// SPDX-License-Identifier: GPL-2.0-only
/*
 * The feed's batches: a ring of NR_BATCHES, filled by the caller's thread
 * one at a time, emptied into the profile by the feed's thread in the
 * same order. A batch is handed over under the lock, whole; between two
 * hand-overs each thread touches only its own batch (the filler the one
 * it fills, the folder those handed over and not given back).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile/feed.h"
#include "util/hugemem.h"
#include "util/vec.h"

/*
 * 16 batches of 4096 (4 MiB): the walk runs up to 64 Ki samples ahead of
 * the folder, whose thread shares the second core with the scan's and
 * waits its turn now and then. With 4 batches the walk of the offcpu
 * 116 MB recording waited 6.5-7.8 ms for the folder (in 5-9 waits), with
 * 16 none; report of it and of perf's 100 MB one, 25 alternating runs:
 * 0.155 -> 0.145 s and 0.128 -> 0.120 s, 2-3 MB more peak memory. 16
 * batches of 2048 were as slow as 8 of 4096: what counts is how far
 * ahead the walk may go.
 */
#define NR_BATCHES 16
#define BATCH_SAMPLES 4096
/*
 * The batches' samples come in groups of 8 batches (2 MiB, one huge
 * page), each made when the filler first reaches it: a small report
 * touches the first group only (under AddressSanitizer hugemem is zeroed
 * heap memory, and 4 MiB of it for every report made the report fuzzer
 * twice as slow; groups of 1 MiB each took a 2 MiB page, 4 MB more).
 */
#define GROUP_BATCHES 8
#define NR_GROUPS (NR_BATCHES / GROUP_BATCHES)
#define NO_FRAMES UINT32_MAX

/* What profile__add() keeps of a sample. */
struct fsample {
	int event;
	char state;
	uint32_t comm, pid, tid;
	uint32_t nr, stack;
	uint32_t frames;     /* its frames at this place of the batch's, or NO_FRAMES */
	uint64_t cgroup, period, count, chain;
};

struct fbatch {
	struct fsample *v;
	size_t n, cap;
	uint32_t *frames;
	size_t nr_frames, cap_frames;
};

struct feed {
	struct profile *p;
	int nr_events;
	bool threaded;
	pthread_t th;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct fbatch b[NR_BATCHES];
	struct hugemem vmem[NR_GROUPS]; /* the batches' samples, when they could be had */
	bool group_tried[NR_GROUPS];
	unsigned int head, full;  /* under lock: the batches handed over, from head */
	unsigned int fill;        /* the filler's batch (the filler's alone) */
	bool done;                /* under lock: no batch comes any more */
	int err;                  /* under lock: the first error of profile__add() */
	/* the filler's: the ids whose frames went over, a bit each */
	struct sent {
		uint64_t *bits;
		size_t cap;
	} sent, sent_chains;      /* session stack ids; chain ids of generation chain_gen */
	uint32_t chain_gen;
};

/* Fold one batch in (the folder's thread): 0 or profile__add()'s error. */
static int batch_fold(struct profile *p, struct fbatch *b)
{
	for (size_t i = 0; i < b->n; i++) {
		const struct fsample *fs = &b->v[i];
		struct perf_sample ps = { .pid = fs->pid, .tid = fs->tid, .period = fs->period };
		struct rsample rs = { .s = &ps, .event = fs->event, .comm = fs->comm, .state = fs->state,
				      .count = fs->count, .cgroup = fs->cgroup, .nr = (int)fs->nr,
				      .stack = fs->stack, .chain = fs->chain,
				      .frames = fs->frames == NO_FRAMES ? NULL : b->frames + fs->frames };
		int err = profile__add(p, &rs);

		if (err)
			return err;
	}
	return 0;
}

/* The folder: each batch handed over, in order, until the last. */
static void *folder(void *arg)
{
	struct feed *f = arg;

	pthread_setname_np(pthread_self(), "offcpu-profile"); /* in top and in profiles */
	pthread_mutex_lock(&f->lock);
	for (;;) {
		struct fbatch *b;
		int err;

		while (!f->full && !f->done)
			pthread_cond_wait(&f->cond, &f->lock);
		if (!f->full)
			break;
		b = &f->b[f->head];
		pthread_mutex_unlock(&f->lock);
		err = f->err ? 0 : batch_fold(f->p, b); /* f->err is only ever set here */
		pthread_mutex_lock(&f->lock);
		if (err && !f->err)
			f->err = err;
		b->n = b->nr_frames = 0;
		f->head = (f->head + 1) % NR_BATCHES;
		f->full--;
		pthread_cond_broadcast(&f->cond);
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

/*
 * The samples of group g's batches on a 2 MiB page, tried once, when the
 * filler first reaches the group: on 4 KiB pages 1 MiB of them took 256
 * faults of the walk's thread at first, ~10 us each on a paravirtualized
 * VM. Without the memory they grow on the heap.
 */
static void group_map(struct feed *f, int g)
{
	struct hugemem *m = &f->vmem[g];

	if (f->group_tried[g])
		return;
	f->group_tried[g] = true;
	if (hugemem__grow(m, GROUP_BATCHES * BATCH_SAMPLES * sizeof(struct fsample)))
		return;
	for (int i = 0; i < GROUP_BATCHES; i++) {
		f->b[g * GROUP_BATCHES + i].v = (struct fsample *)m->p + i * BATCH_SAMPLES;
		f->b[g * GROUP_BATCHES + i].cap = BATCH_SAMPLES;
	}
}

/* OFFCPU_PROFILE_THREADS=0/1 says; else a thread when there is a second CPU. */
static bool use_thread(void)
{
	const char *env = getenv("OFFCPU_PROFILE_THREADS");

	if (env && *env)
		return *env == '1';
	return sysconf(_SC_NPROCESSORS_ONLN) > 1;
}

struct feed *feed__new(struct profile *p)
{
	struct feed *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->p = p;
	f->nr_events = profile__nr_events(p);
	if (!use_thread())
		return f;
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
	group_map(f, 0);
	f->threaded = !pthread_create(&f->th, NULL, folder, f);
	if (!f->threaded) { /* no thread: at once, in the caller's */
		pthread_mutex_destroy(&f->lock);
		pthread_cond_destroy(&f->cond);
	}
	return f;
}

/* Hand the filled batch over and wait for the next one to be free: 0 or the folder's error. */
static int batch_send(struct feed *f)
{
	int err;

	pthread_mutex_lock(&f->lock);
	f->full++;
	pthread_cond_broadcast(&f->cond);
	while (f->full == NR_BATCHES)
		pthread_cond_wait(&f->cond, &f->lock);
	err = f->err;
	pthread_mutex_unlock(&f->lock);
	f->fill = (f->fill + 1) % NR_BATCHES;
	if (f->fill % GROUP_BATCHES == 0)
		group_map(f, (int)(f->fill / GROUP_BATCHES));
	return err;
}

/* Whether id's frames went over already, marked so now: 0/1, or -ENOMEM. */
static int sent_before(struct sent *st, uint32_t id)
{
	size_t w = id / 64;

	if (vec__reserve_zeroed((void **)&st->bits, &st->cap, w + 1, sizeof(*st->bits), 1024))
		return -ENOMEM;
	if (st->bits[w] & (1ULL << (id % 64)))
		return 1;
	st->bits[w] |= 1ULL << (id % 64);
	return 0;
}

/*
 * Whether rs's frames must go over: the profile reads them for a sample
 * without a stack or chain id and for the first of each id (profile.c's
 * sample_seq()), so this mirrors that. 0/1, or -ENOMEM.
 */
static int frames_needed(struct feed *f, const struct rsample *rs)
{
	uint32_t gen = (uint32_t)(rs->chain >> 32);
	int before;

	if (rs->stack)
		before = sent_before(&f->sent, rs->stack);
	else if (!rs->chain)
		return 1;
	else {
		if (gen != f->chain_gen && f->sent_chains.cap)
			memset(f->sent_chains.bits, 0, f->sent_chains.cap * sizeof(*f->sent_chains.bits));
		f->chain_gen = gen;
		before = sent_before(&f->sent_chains, (uint32_t)rs->chain);
	}
	return before < 0 ? before : !before;
}

int feed__add(struct feed *f, const struct rsample *rs)
{
	struct fbatch *b;
	struct fsample *fs;
	int need;

	if (!f->threaded)
		return profile__add(f->p, rs);
	if (rs->event < 0 || rs->event >= f->nr_events)
		return 0; /* as profile__add(): and its frames do not count as sent */
	b = &f->b[f->fill];
	if (vec__reserve((void **)&b->v, &b->cap, b->n + 1, sizeof(*b->v), BATCH_SAMPLES))
		return -ENOMEM;
	need = frames_needed(f, rs);
	if (need < 0)
		return need;
	fs = &b->v[b->n];
	*fs = (struct fsample){ .event = rs->event, .state = rs->state, .comm = rs->comm,
				.pid = rs->s->pid, .tid = rs->s->tid, .nr = (uint32_t)rs->nr,
				.stack = rs->stack, .frames = NO_FRAMES, .cgroup = rs->cgroup,
				.period = rs->s->period, .count = rs->count, .chain = rs->chain };
	if (need && rs->nr > 0) {
		if (vec__reserve((void **)&b->frames, &b->cap_frames, b->nr_frames + rs->nr,
				 sizeof(*b->frames), 4096))
			return -ENOMEM; /* its stack id is marked sent: the caller stops on this */
		memcpy(b->frames + b->nr_frames, rs->frames, rs->nr * sizeof(*b->frames));
		fs->frames = (uint32_t)b->nr_frames;
		b->nr_frames += rs->nr;
	}
	b->n++;
	return b->n == BATCH_SAMPLES ? batch_send(f) : 0;
}

int feed__finish(struct feed *f)
{
	int err = 0;

	if (!f)
		return 0;
	if (f->threaded) {
		pthread_mutex_lock(&f->lock);
		if (f->b[f->fill].n)
			f->full++;
		f->done = true;
		pthread_cond_broadcast(&f->cond);
		pthread_mutex_unlock(&f->lock);
		pthread_join(f->th, NULL);
		err = f->err;
		pthread_mutex_destroy(&f->lock);
		pthread_cond_destroy(&f->cond);
	}
	for (int i = 0; i < NR_BATCHES; i++) {
		if (!f->vmem[i / GROUP_BATCHES].p)
			free(f->b[i].v);
		free(f->b[i].frames);
	}
	for (int g = 0; g < NR_GROUPS; g++)
		hugemem__free(&f->vmem[g]);
	free(f->sent.bits);
	free(f->sent_chains.bits);
	free(f);
	return err;
}
