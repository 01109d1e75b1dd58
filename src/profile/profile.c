// SPDX-License-Identifier: GPL-2.0-only
/*
 * Distinct-stack table: one hash lookup per sample, no per-sample memory.
 *
 * Frame sequences are interned (seqs): a stack keeps the place of its
 * sequence in profile.frames (frames_off), which stands for the sequence,
 * so stacks are keyed and compared by integers only, and stacks that
 * differ only in comm, pid or tid share their frames. A sample whose
 * stack the session interned (rsample.stack) finds its sequence through
 * an array by that id, without its frames being hashed at all; so does a
 * sample whose callchain has an id in the session's chain cache
 * (rsample.chain), through an array of the cache's generation.
 *
 * A profile by thread has hundreds of thousands of stacks, and each
 * sample's lookup would wait for memory twice (the index, the stack):
 * samples are added PENDING later than they come, their index slot and
 * then their stack fetched meanwhile, so that the waits overlap. Every
 * reader of the profile adds those still pending first (pending_flush()),
 * which cannot fail: room for them is made when they come.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "util/hash.h"
#include "util/htab.h"
#include "util/hugemem.h"
#include "util/vec.h"

#define PENDING 16

/*
 * The frames array on 2 MiB pages from 1 MiB on: it doubles as the walk
 * adds sequences and is built again whole by rehash(), and on 4 KiB pages
 * each doubling copied it and touched its new pages one by one (~10 us a
 * first touch on a paravirtualized VM).
 */
#define FRAMES_HUGE ((size_t)1 << 20)

/* A sample's stack and values, to add to the table a few samples later. */
struct pending {
	struct pstack k;     /* samples, period and count: the sample's */
	uint64_t h;          /* stack_hash(&k) */
};

struct profile {
	struct pending pending[PENDING]; /* a ring, from pending_head, pending_n of them */
	unsigned int pending_head, pending_n;
	int nr_events;
	unsigned int keep;
	struct profile_event *events;
	struct perf_evattr **attrs; /* profile__set_attr()'s copies, NULL: the file's */
	char **attrs_from;
	struct htab stacks;    /* struct pstack, by key and frames_off */
	struct htab seqs;      /* struct seq_ent: the frame sequences, by frames */
	uint32_t *frames;      /* the sequences' frames, each at its seq_ent.off */
	size_t nr_frames, cap_frames;
	struct hugemem frames_mem; /* frames once big (FRAMES_HUGE) */
	uint32_t *by_id;       /* session stack id -> its sequence's off + 1 (0: not seen) */
	size_t cap_by_id;
	uint32_t *by_chain;    /* chain id of generation chain_gen -> its sequence's off + 1 */
	size_t cap_by_chain;
	uint32_t chain_gen;
};

struct seq_ent {
	uint32_t off, nr;
};

struct seq_key {
	const uint32_t *frames;
	uint32_t nr;
	const uint32_t *all;   /* profile.frames */
};

static bool seq_eq(const void *entry, const void *key)
{
	const struct seq_ent *e = entry;
	const struct seq_key *k = key;

	return e->nr == k->nr && (!k->nr || !memcmp(k->all + e->off, k->frames, k->nr * sizeof(uint32_t)));
}

/*
 * Hash of frame ids: one multiply per pair of frames and a full mix at the
 * end (frame ids are small dense integers, well spread by the mix).
 */
static uint64_t frames_hash(const uint32_t *f, uint32_t n)
{
	uint64_t h = n;
	uint32_t i = 0;

	for (; i + 2 <= n; i += 2)
		h = (h ^ ((uint64_t)f[i] << 32 | f[i + 1])) * 0x9e3779b97f4a7c15ULL + (h >> 29);
	if (i < n)
		h = (h ^ f[i]) * 0x9e3779b97f4a7c15ULL + (h >> 29);
	return hash__mix(h);
}

/*
 * The place of the sequence fr[0..n) (h: its frames_hash()) in p->frames,
 * interned on first sight: 0 or -ENOMEM.
 */
static int seq_get_hashed(struct profile *p, const uint32_t *fr, uint32_t n, uint64_t h,
			  uint32_t *off)
{
	struct seq_key k = { fr, n, p->frames };
	struct seq_ent *e = htab__find(&p->seqs, h, seq_eq, &k);
	bool added;

	if (!e) {
		/* an empty sequence takes a slot too: offsets tell sequences apart */
		if (p->nr_frames + n + 1 > UINT32_MAX ||
		    hugemem__reserve(&p->frames_mem, (void **)&p->frames, &p->cap_frames, p->nr_frames,
				     p->nr_frames + n + 1, sizeof(*p->frames), FRAMES_HUGE))
			return -ENOMEM;
		k.all = p->frames;
		e = htab__get(&p->seqs, h, seq_eq, &k, &added);
		if (!e)
			return -ENOMEM;
		e->off = p->nr_frames;
		e->nr = n;
		if (n)
			memcpy(p->frames + p->nr_frames, fr, n * sizeof(uint32_t));
		p->nr_frames += n ? n : 1;
	}
	*off = e->off;
	return 0;
}

static int seq_get(struct profile *p, const uint32_t *fr, uint32_t n, uint32_t *off)
{
	return seq_get_hashed(p, fr, n, frames_hash(fr, n), off);
}

static bool stack_eq(const void *entry, const void *key)
{
	const struct pstack *a = entry, *b = key;

	return a->frames_off == b->frames_off && a->comm == b->comm && a->event == b->event &&
	       a->pid == b->pid && a->tid == b->tid && a->cgroup == b->cgroup && a->state == b->state;
}

/* A stack's key is integers only: its sequence's place stands for its frames. */
static uint64_t stack_hash(const struct pstack *k)
{
	return hash__mix(((uint64_t)k->frames_off << 32 | k->comm) ^
			 hash__mix(((uint64_t)k->event << 40 | (uint64_t)(uint8_t)k->state << 32 | k->tid) ^
				   ((uint64_t)k->pid << 32) ^ k->cgroup * 0x9e3779b97f4a7c15ULL));
}

struct profile *profile__new(int nr_events, unsigned int keep)
{
	struct profile *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->nr_events = nr_events;
	p->keep = keep;
	htab__init(&p->stacks, sizeof(struct pstack));
	htab__init(&p->seqs, sizeof(struct seq_ent));
	p->events = calloc(nr_events > 0 ? nr_events : 1, sizeof(*p->events));
	p->attrs = calloc(nr_events > 0 ? nr_events : 1, sizeof(*p->attrs));
	p->attrs_from = calloc(nr_events > 0 ? nr_events : 1, sizeof(*p->attrs_from));
	if (!p->events || !p->attrs || !p->attrs_from) {
		profile__free(p);
		return NULL;
	}
	return p;
}

void profile__free(struct profile *p)
{
	if (!p)
		return;
	free(p->events);
	for (int i = 0; i < p->nr_events && p->attrs; i++)
		free(p->attrs[i]);
	for (int i = 0; i < p->nr_events && p->attrs_from; i++)
		free(p->attrs_from[i]);
	free(p->attrs);
	free(p->attrs_from);
	htab__free(&p->stacks);
	htab__free(&p->seqs);
	hugemem__free_array(&p->frames_mem, (void **)&p->frames);
	free(p->by_id);
	free(p->by_chain);
	free(p);
}

/*
 * The stack of key k (its frames_off set; h its stack_hash()), made on
 * first sight with zero counts; NULL on ENOMEM.
 */
static struct pstack *stack_get_hashed(struct profile *p, const struct pstack *k, uint64_t h)
{
	struct pstack *e;
	bool added;

	e = htab__get(&p->stacks, h, stack_eq, k, &added);
	if (e && added) {
		*e = *k;
		e->samples = e->period = e->count = 0;
	}
	return e;
}

/* Add the oldest pending sample to its stack (room was made for it). */
static void pending_one(struct profile *p)
{
	struct pending *d = &p->pending[p->pending_head];
	struct pstack *e;
	bool added;

	e = htab__get(&p->stacks, d->h, stack_eq, &d->k, &added);
	if (added) {
		*e = d->k;
		e->samples = e->period = e->count = 0;
	}
	e->samples += d->k.samples;
	e->period += d->k.period;
	e->count += d->k.count;
	p->pending_head = (p->pending_head + 1) % PENDING;
	p->pending_n--;
}

/*
 * Every pending sample added: the readers' first step. A reader of a
 * const profile calls it too: the profile is the same after, only in its
 * final form (it is never a const object, so the cast is sound).
 */
static void pending_flush(const struct profile *cp)
{
	struct profile *p = (struct profile *)cp;

	while (p->pending_n)
		pending_one(p);
}

/*
 * The sequence of frames with id id (> 0) in the array *by (*cap entries,
 * 0 where not seen): from the array, else interned and noted there.
 */
static int seq_by_id(struct profile *p, uint32_t **by, size_t *cap, size_t id,
		     const struct rsample *rs, uint32_t *off)
{
	int err;

	if (id < *cap && (*by)[id]) {
		*off = (*by)[id] - 1;
		return 0;
	}
	if (vec__reserve_zeroed((void **)by, cap, id + 1, sizeof(**by), 4096))
		return -ENOMEM;
	err = seq_get(p, rs->frames, rs->nr, off);
	if (!err)
		(*by)[id] = *off + 1;
	return err;
}

/*
 * The sequence of a sample's frames: by its session stack id, or its
 * chain's id, when it has one. The chain ids of an older generation are
 * never seen again: the array starts again empty with each generation.
 */
static int sample_seq(struct profile *p, const struct rsample *rs, uint32_t *off)
{
	uint32_t gen = (uint32_t)(rs->chain >> 32);

	if (rs->stack)
		return seq_by_id(p, &p->by_id, &p->cap_by_id, rs->stack, rs, off);
	if (!rs->chain)
		return seq_get(p, rs->frames, rs->nr, off);
	if (gen != p->chain_gen) {
		if (p->cap_by_chain)
			memset(p->by_chain, 0, p->cap_by_chain * sizeof(*p->by_chain));
		p->chain_gen = gen;
	}
	return seq_by_id(p, &p->by_chain, &p->cap_by_chain, (uint32_t)rs->chain, rs, off);
}

int profile__add(struct profile *p, const struct rsample *rs)
{
	struct pstack k = { 0 };
	struct pending *d;

	if (rs->event < 0 || rs->event >= p->nr_events)
		return 0;
	k.event = rs->event;
	k.comm = rs->comm;
	k.pid = (p->keep & (PROFILE_KEEP_PID | PROFILE_KEEP_TID)) ? rs->s->pid : 0;
	k.tid = (p->keep & PROFILE_KEEP_TID) ? rs->s->tid : 0;
	k.cgroup = (p->keep & PROFILE_KEEP_CGROUP) ? rs->cgroup : 0;
	k.state = rs->state;
	k.nr = rs->nr;
	if (sample_seq(p, rs, &k.frames_off))
		return -ENOMEM;
	if (p->pending_n == PENDING)
		pending_one(p);
	/* room for every pending sample's stack, should each be new */
	if (htab__reserve(&p->stacks, p->pending_n + 1))
		return -ENOMEM;
	d = &p->pending[(p->pending_head + p->pending_n++) % PENDING];
	d->k = k;
	d->k.samples = 1;
	d->k.period = rs->s->period;
	d->k.count = rs->count;
	d->h = stack_hash(&k);
	htab__prefetch(&p->stacks, d->h, false);
	if (p->pending_n > PENDING / 2) /* its slot fetched a while ago: now its stack */
		htab__prefetch(&p->stacks,
			       p->pending[(p->pending_head + p->pending_n - 1 - PENDING / 2) % PENDING].h, true);
	p->events[k.event].samples++;
	p->events[k.event].period += rs->s->period;
	return 0;
}

/*
 * A stack on its way through rehash(): its key, its frames rewritten
 * (fr[0..k.nr)), the hash of its sequence, then of its key; its old
 * sequence and event (the memo's key), and whether the memo had them.
 */
struct rehash_slot {
	struct pstack k;
	uint32_t *buf, *fr;
	size_t cap;
	uint64_t h;
	struct memo_key {
		uint32_t off, nr, event;
	} old;
	bool known;
};

/*
 * A profile by thread has several stacks per sequence (pprof's: 171 000
 * stacks of 52 000 sequences on the perf 100 MB bench recording), and a
 * rewrite depends on the frames and the event alone (profile.h): the
 * rewritten sequence of each (sequence, event) is kept, and the stacks
 * after the first take it without their frames being copied, rewritten,
 * hashed and interned again.
 */
struct memo {
	struct memo_key k;
	uint32_t off, nr;    /* the rewritten sequence */
};

static bool memo_eq(const void *entry, const void *key)
{
	const struct memo_key *a = &((const struct memo *)entry)->k, *b = key;

	return a->off == b->off && a->nr == b->nr && a->event == b->event;
}

static uint64_t memo_hash(const struct memo_key *k)
{
	return hash__mix(((uint64_t)k->off << 32 | k->nr) ^ (uint64_t)k->event * 0x9e3779b97f4a7c15ULL);
}

/*
 * Rehash's lookups wait for memory (each stack's sequence slot, then its
 * stack slot, in tables of hundreds of thousands): each stack is rewritten
 * and its sequence's slot fetched REHASH_AHEAD stacks before its sequence
 * is interned, which fetches its stack's slot REHASH_AHEAD stacks before
 * the stack is added, so that the waits overlap.
 */
#define REHASH_AHEAD 8
#define REHASH_RING (2 * REHASH_AHEAD)

/*
 * Stage 1 of stack i: its rewritten sequence from the memo (when given
 * one), else its frames copied, mapped and rewritten into sl. 0 or
 * -ENOMEM.
 */
static int rehash_rewrite(struct profile *p, struct rehash_slot *sl, const uint32_t *old_frames,
			  size_t i, profile_rewrite_fn fn, void *ctx, const uint32_t *map, uint32_t nmap,
			  const struct htab *memo)
{
	uint32_t before;

	sl->k = *(const struct pstack *)htab__at(&p->stacks, i);
	sl->old = (struct memo_key){ sl->k.frames_off, sl->k.nr, sl->k.event };
	sl->known = false;
	if (memo) {
		const struct memo *m = htab__find(memo, memo_hash(&sl->old), memo_eq, &sl->old);

		if (m) {
			sl->k.frames_off = m->off;
			sl->k.nr = m->nr;
			sl->known = true;
			return 0;
		}
	}
	before = sl->k.frames_off;
	if (vec__reserve((void **)&sl->buf, &sl->cap, sl->k.nr ? sl->k.nr : 1, sizeof(*sl->buf), 64))
		return -ENOMEM;
	if (sl->k.nr)
		memcpy(sl->buf, old_frames + sl->k.frames_off, sl->k.nr * sizeof(*sl->buf));
	for (uint32_t j = 0; map && j < sl->k.nr; j++)
		if (sl->buf[j] < nmap)
			sl->buf[j] = map[sl->buf[j]];
	if (fn)
		fn(ctx, &sl->k, sl->buf);
	sl->fr = sl->buf + (sl->k.frames_off - before);
	sl->h = frames_hash(sl->fr, sl->k.nr);
	htab__prefetch(&p->seqs, sl->h, false);
	return 0;
}

/* Note the rewritten sequence of sl's old one and event: 0 or -ENOMEM. */
static int memo_keep(struct htab *memo, const struct rehash_slot *sl)
{
	bool added;
	struct memo *m = htab__get(memo, memo_hash(&sl->old), memo_eq, &sl->old, &added);

	if (!m)
		return -ENOMEM;
	*m = (struct memo){ sl->old, sl->k.frames_off, sl->k.nr };
	return 0;
}

/*
 * Every stack again, in its order, after its frames changed: fn (when
 * set) rewrites a copy of each stack's frames (it may shorten the stack or
 * move its start), map (when set) replaces frame ids; the result is
 * interned as a sequence of its own, and stacks that now read the same
 * are one (the first one's place, the counts summed). The table is
 * rebuilt in place (htab__clear()): stack i is read before the i-th
 * addition, so a profile of many stacks is never held twice.
 */
static int rehash(struct profile *p, profile_rewrite_fn fn, void *ctx, const uint32_t *map,
		  uint32_t nmap)
{
	struct rehash_slot ring[REHASH_RING] = { 0 };
	uint32_t *old_frames = p->frames;
	struct hugemem old_mem = p->frames_mem;
	struct htab memo;
	bool use_memo;
	size_t n, nseqs, nframes;
	int err = 0;

	pending_flush(p);
	n = htab__n(&p->stacks);
	nseqs = htab__n(&p->seqs);
	nframes = p->nr_frames;
	use_memo = n > 2 * nseqs; /* else most lookups would miss */
	htab__init(&memo, sizeof(struct memo));
	htab__clear(&p->stacks);
	htab__free(&p->seqs);
	p->frames = NULL;
	p->nr_frames = p->cap_frames = 0;
	p->frames_mem = (struct hugemem){ 0 };
	/*
	 * Rewriting only shortens and merges: the new tables at most as big as
	 * the old ones, sized so at once (growing them was copies, re-indexing
	 * and first touches of pages).
	 */
	if (htab__reserve(&p->seqs, nseqs) || (use_memo && htab__reserve(&memo, nseqs)) ||
	    hugemem__reserve(&p->frames_mem, (void **)&p->frames, &p->cap_frames, 0, nframes + 1,
			     sizeof(*p->frames), FRAMES_HUGE))
		err = -ENOMEM;
	free(p->by_id); /* session stack and chain ids no longer name these sequences */
	p->by_id = NULL;
	p->cap_by_id = 0;
	free(p->by_chain);
	p->by_chain = NULL;
	p->cap_by_chain = 0;
	/*
	 * At step i: stack i - 2 AHEAD added (its slot is stack i's next),
	 * stack i - AHEAD's sequence interned, stack i rewritten. Stack i is
	 * read after i - 2 AHEAD + 1 additions: before the i-th.
	 */
	for (size_t i = 0; i < n + 2 * REHASH_AHEAD && !err; i++) {
		struct rehash_slot *sl;

		if (i >= 2 * REHASH_AHEAD) {
			struct pstack *e;

			sl = &ring[(i - 2 * REHASH_AHEAD) % REHASH_RING];
			e = stack_get_hashed(p, &sl->k, sl->h);
			if (!e) {
				err = -ENOMEM;
				break;
			}
			e->samples += sl->k.samples;
			e->period += sl->k.period;
			e->count += sl->k.count;
		}
		if (i >= REHASH_AHEAD && i - REHASH_AHEAD < n) {
			sl = &ring[(i - REHASH_AHEAD) % REHASH_RING];
			if (!sl->known) {
				err = seq_get_hashed(p, sl->fr, sl->k.nr, sl->h, &sl->k.frames_off);
				if (!err && use_memo)
					err = memo_keep(&memo, sl);
			}
			sl->h = stack_hash(&sl->k);
			htab__prefetch(&p->stacks, sl->h, false);
		}
		if (!err && i < n)
			err = rehash_rewrite(p, &ring[i % REHASH_RING], old_frames, i, fn, ctx, map, nmap,
					     use_memo ? &memo : NULL);
	}
	htab__free(&memo);
	if (err)
		htab__clear(&p->stacks); /* half rebuilt: the caller frees it */
	for (int i = 0; i < REHASH_RING; i++)
		free(ring[i].buf);
	hugemem__free_array(&old_mem, (void **)&old_frames);
	return err;
}

int profile__remap(struct profile *p, const uint32_t *map, uint32_t n)
{
	return map ? rehash(p, NULL, NULL, map, n) : 0;
}

int profile__rewrite(struct profile *p, profile_rewrite_fn fn, void *ctx)
{
	return rehash(p, fn, ctx, NULL, 0);
}

int profile__remap_rewrite(struct profile *p, const uint32_t *map, uint32_t n, profile_rewrite_fn fn,
			   void *ctx)
{
	return map || fn ? rehash(p, fn, ctx, map, n) : 0;
}

size_t profile__nr_stacks(const struct profile *p)
{
	pending_flush(p);
	return htab__n(&p->stacks);
}

const struct pstack *profile__stack(const struct profile *p, size_t i)
{
	pending_flush(p);
	return i < htab__n(&p->stacks) ? htab__at(&p->stacks, i) : NULL;
}

/* Never NULL: a profile of stacks without frames has no array (fuzzing found NULL + 0). */
const uint32_t *profile__frames(const struct profile *p, const struct pstack *st)
{
	static const uint32_t none[1];

	return p->frames ? p->frames + st->frames_off : none;
}

const struct profile_event *profile__event(const struct profile *p, int event)
{
	return event >= 0 && event < p->nr_events ? &p->events[event] : NULL;
}

int profile__set_attr(struct profile *p, int event, const struct perf_evattr *a, const char *from)
{
	struct perf_evattr *c;
	char *f;

	if (event < 0 || event >= p->nr_events)
		return -EINVAL;
	c = malloc(sizeof(*c));
	f = strdup(from ? from : "");
	if (!c || !f) {
		free(c);
		free(f);
		return -ENOMEM;
	}
	*c = *a;
	free(p->attrs[event]);
	free(p->attrs_from[event]);
	p->attrs[event] = c;
	p->attrs_from[event] = f;
	return 0;
}

const struct perf_evattr *profile__attr(const struct profile *p, const struct session *s, int event)
{
	if (event >= 0 && event < p->nr_events && p->attrs[event])
		return p->attrs[event];
	return perf_reader__attr(session__reader(s), event);
}

const char *profile__attr_from(const struct profile *p, int event)
{
	return event >= 0 && event < p->nr_events && p->attrs_from[event] && p->attrs_from[event][0]
		       ? p->attrs_from[event] : NULL;
}

int profile__nr_events(const struct profile *p)
{
	return p->nr_events;
}
