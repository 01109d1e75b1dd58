// SPDX-License-Identifier: GPL-2.0-only
/*
 * Distinct-stack table: one hash lookup per sample, no per-sample memory.
 * A sample whose stack the session interned (rsample.stack) is found by
 * that id and its key in a second index (by_id), without its frames
 * being hashed or compared; the table itself is keyed by frames.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "util/hash.h"
#include "util/htab.h"
#include "util/vec.h"

struct profile {
	int nr_events;
	unsigned int keep;
	struct profile_event *events;
	struct htab stacks;    /* struct pstack, by key and frames */
	struct htab by_id;     /* struct id_ent: stacks by key and session stack id, until a rehash */
	uint32_t *frames;      /* the stacks' frames, each stack's at its frames_off */
	size_t nr_frames, cap_frames;
};

struct stack_key {
	const struct pstack *k;
	const uint32_t *frames;      /* the key's frames */
	const uint32_t *all_frames;  /* profile.frames, where the entries' frames are */
};

struct id_ent {
	uint32_t event, comm, pid, tid;
	uint64_t cgroup;
	uint32_t stack;       /* rsample.stack */
	char state;
	uint32_t pos;         /* the stack's in profile.stacks */
};

static bool id_eq(const void *entry, const void *key)
{
	const struct id_ent *a = entry, *b = key;

	return a->stack == b->stack && a->event == b->event && a->comm == b->comm &&
	       a->pid == b->pid && a->tid == b->tid && a->cgroup == b->cgroup && a->state == b->state;
}

static uint64_t id_hash(const struct id_ent *k)
{
	return hash__mix(((uint64_t)k->stack << 32 | k->comm) ^
			 hash__mix(((uint64_t)k->event << 40 | (uint64_t)(uint8_t)k->state << 32 | k->tid) ^
				   ((uint64_t)k->pid << 32) ^ k->cgroup * 0x9e3779b97f4a7c15ULL));
}

static bool stack_eq(const void *entry, const void *key)
{
	const struct stack_key *sk = key;
	const struct pstack *a = entry, *b = sk->k;

	return a->event == b->event && a->comm == b->comm && a->pid == b->pid &&
	       a->tid == b->tid && a->cgroup == b->cgroup && a->state == b->state &&
	       a->nr == b->nr &&
	       (!a->nr || !memcmp(sk->all_frames + a->frames_off, sk->frames, a->nr * sizeof(uint32_t)));
}

/*
 * Hash of a stack's frame ids and its key: one multiply per pair of frames
 * and a full mix at the end (every sample is hashed: it is the profile's
 * hot loop; frame ids are small dense integers, well spread by the mix).
 */
static uint64_t frames_hash(const uint32_t *f, uint32_t n, uint64_t seed)
{
	uint64_t h = seed ^ n;
	uint32_t i = 0;

	for (; i + 2 <= n; i += 2)
		h = (h ^ ((uint64_t)f[i] << 32 | f[i + 1])) * 0x9e3779b97f4a7c15ULL + (h >> 29);
	if (i < n)
		h = (h ^ f[i]) * 0x9e3779b97f4a7c15ULL + (h >> 29);
	return hash__mix(h);
}

static uint64_t stack_hash(const struct pstack *k, const uint32_t *frames)
{
	return frames_hash(frames, k->nr,
			   ((uint64_t)k->event << 32 | k->comm) ^ ((uint64_t)k->tid << 32 | k->pid) * 31 ^
				   (k->cgroup + (uint8_t)k->state) * 0x9e3779b97f4a7c15ULL);
}

struct profile *profile__new(int nr_events, unsigned int keep)
{
	struct profile *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->nr_events = nr_events;
	p->keep = keep;
	htab__init(&p->stacks, sizeof(struct pstack));
	htab__init(&p->by_id, sizeof(struct id_ent));
	p->events = calloc(nr_events > 0 ? nr_events : 1, sizeof(*p->events));
	if (!p->events) {
		free(p);
		return NULL;
	}
	return p;
}

void profile__free(struct profile *p)
{
	if (!p)
		return;
	free(p->events);
	htab__free(&p->stacks);
	htab__free(&p->by_id);
	free(p->frames);
	free(p);
}

/*
 * The stack of key k (hash h, frames fr), made on first sight. A new one
 * gets a copy of its frames in p->frames, or with in_place the frames_off
 * of k (its frames are there already: profile__remap()). NULL on ENOMEM.
 */
static struct pstack *stack_get(struct profile *p, const struct pstack *k, uint64_t h,
				const uint32_t *fr, bool in_place)
{
	struct stack_key key = { k, fr, p->frames };
	struct pstack *e = htab__find(&p->stacks, h, stack_eq, &key);
	bool added;

	if (e)
		return e;
	if (!in_place && vec__reserve((void **)&p->frames, &p->cap_frames, p->nr_frames + k->nr,
				      sizeof(*p->frames), 1024))
		return NULL;
	key.all_frames = p->frames;
	e = htab__get(&p->stacks, h, stack_eq, &key, &added);
	if (!e)
		return NULL;
	*e = *k;
	e->samples = e->period = e->count = 0;
	if (!in_place) {
		e->frames_off = p->nr_frames;
		if (k->nr)
			memcpy(p->frames + p->nr_frames, fr, k->nr * sizeof(uint32_t));
		p->nr_frames += k->nr;
	}
	return e;
}

/* The stack of key k found by the sample's stack id, or else by its frames (then noted by id). */
static struct pstack *stack_by_id(struct profile *p, const struct pstack *k, const struct rsample *rs)
{
	struct id_ent ik = { k->event, k->comm, k->pid, k->tid, k->cgroup, rs->stack, k->state, 0 };
	uint64_t h = id_hash(&ik);
	struct id_ent *ie = htab__find(&p->by_id, h, id_eq, &ik);
	struct pstack *e;
	bool added;

	if (ie)
		return htab__at(&p->stacks, ie->pos);
	e = stack_get(p, k, stack_hash(k, rs->frames), rs->frames, false);
	if (!e)
		return NULL;
	ik.pos = e - (struct pstack *)p->stacks.v;
	ie = htab__get(&p->by_id, h, id_eq, &ik, &added);
	if (!ie)
		return NULL;
	*ie = ik;
	return e;
}

int profile__add(struct profile *p, const struct rsample *rs)
{
	struct pstack k = { 0 }, *e;

	if (rs->event < 0 || rs->event >= p->nr_events)
		return 0;
	k.event = rs->event;
	k.comm = rs->comm;
	k.pid = (p->keep & (PROFILE_KEEP_PID | PROFILE_KEEP_TID)) ? rs->s->pid : 0;
	k.tid = (p->keep & PROFILE_KEEP_TID) ? rs->s->tid : 0;
	k.cgroup = (p->keep & PROFILE_KEEP_CGROUP) ? rs->cgroup : 0;
	k.state = rs->state;
	k.nr = rs->nr;
	if (rs->stack)
		e = stack_by_id(p, &k, rs);
	else
		e = stack_get(p, &k, stack_hash(&k, rs->frames), rs->frames, false);
	if (!e)
		return -ENOMEM;
	e->samples++;
	e->period += rs->s->period;
	e->count += rs->count;
	p->events[k.event].samples++;
	p->events[k.event].period += rs->s->period;
	return 0;
}

/*
 * Every stack again through stack_get() after its frames changed in place
 * (fn, when set, may shorten a stack or move its start), so that stacks
 * that now read the same are one.
 */
static int rehash(struct profile *p, profile_rewrite_fn fn, void *ctx)
{
	struct htab old = p->stacks;
	int err = 0;

	htab__free(&p->by_id); /* positions and frames change */
	htab__init(&p->stacks, sizeof(struct pstack));
	for (size_t i = 0; i < htab__n(&old) && !err; i++) {
		struct pstack k = *(const struct pstack *)htab__at(&old, i);
		struct pstack *e;

		if (fn)
			fn(ctx, &k, p->frames ? p->frames + k.frames_off : NULL);
		e = stack_get(p, &k, stack_hash(&k, profile__frames(p, &k)), profile__frames(p, &k), true);
		if (!e) {
			err = -ENOMEM;
			break;
		}
		e->samples += k.samples;
		e->period += k.period;
		e->count += k.count;
	}
	htab__free(&old);
	return err;
}

int profile__remap(struct profile *p, const uint32_t *map, uint32_t n)
{
	if (!map)
		return 0;
	for (size_t i = 0; i < p->nr_frames; i++)
		if (p->frames[i] < n)
			p->frames[i] = map[p->frames[i]];
	return rehash(p, NULL, NULL);
}

int profile__rewrite(struct profile *p, profile_rewrite_fn fn, void *ctx)
{
	return rehash(p, fn, ctx);
}

size_t profile__nr_stacks(const struct profile *p)
{
	return htab__n(&p->stacks);
}

const struct pstack *profile__stack(const struct profile *p, size_t i)
{
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

int profile__nr_events(const struct profile *p)
{
	return p->nr_events;
}
