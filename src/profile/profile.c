// SPDX-License-Identifier: GPL-2.0-only
/* Distinct-stack table: one hash lookup per sample, no per-sample memory. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/htab.h"
#include "profile/profile.h"

struct profile {
	int nr_events;
	unsigned int keep;
	struct profile_event *events;
	struct pstack *stacks;
	size_t nr_stacks, cap_stacks;
	uint32_t *frames;
	size_t nr_frames, cap_frames;
	struct htab ht;
};

struct stack_key {
	const struct profile *p;
	const struct pstack *k;
	const uint32_t *frames;
};

static bool stack_eq(const void *ctx, uint32_t idx)
{
	const struct stack_key *key = ctx;
	const struct pstack *a = &key->p->stacks[idx], *b = key->k;

	return a->event == b->event && a->comm == b->comm && a->pid == b->pid &&
	       a->tid == b->tid && a->cgroup == b->cgroup && a->state == b->state &&
	       a->nr == b->nr &&
	       (!a->nr || !memcmp(key->p->frames + a->frames_off, key->frames, a->nr * sizeof(uint32_t)));
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
	return htab__mix(h);
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
	free(p->stacks);
	free(p->frames);
	htab__free(&p->ht);
	free(p);
}

int profile__add(struct profile *p, const struct rsample *rs)
{
	struct pstack k = { 0 }, *e;
	struct stack_key key = { p, &k, rs->frames };
	uint64_t h;
	size_t slot;
	uint32_t idx;

	if (rs->event < 0 || rs->event >= p->nr_events)
		return 0;
	k.event = rs->event;
	k.comm = rs->comm;
	k.pid = (p->keep & (PROFILE_KEEP_PID | PROFILE_KEEP_TID)) ? rs->s->pid : 0;
	k.tid = (p->keep & PROFILE_KEEP_TID) ? rs->s->tid : 0;
	k.cgroup = (p->keep & PROFILE_KEEP_CGROUP) ? rs->cgroup : 0;
	k.state = rs->state;
	k.nr = rs->nr;
	h = stack_hash(&k, rs->frames);
	idx = htab__find(&p->ht, h, stack_eq, &key, &slot);
	if (idx == HTAB_EMPTY) {
		uint32_t off = p->nr_frames;

		if (htab__reserve(&p->ht))
			return -ENOMEM;
		while (p->nr_frames + rs->nr > p->cap_frames) {
			size_t nc = p->cap_frames ? p->cap_frames * 2 : 1024;
			uint32_t *f = realloc(p->frames, nc * sizeof(*f));

			if (!f)
				return -ENOMEM;
			p->frames = f;
			p->cap_frames = nc;
		}
		if (rs->nr)
			memcpy(p->frames + off, rs->frames, rs->nr * sizeof(uint32_t));
		p->nr_frames += rs->nr;
		e = vec__push((void **)&p->stacks, &p->nr_stacks, &p->cap_stacks, sizeof(*e));
		if (!e)
			return -ENOMEM;
		*e = k;
		e->frames_off = off;
		htab__find(&p->ht, h, stack_eq, &key, &slot);
		htab__put(&p->ht, slot, h, p->nr_stacks - 1);
	} else {
		e = &p->stacks[idx];
	}
	e->samples++;
	e->period += rs->s->period;
	e->count += rs->count;
	p->events[k.event].samples++;
	p->events[k.event].period += rs->s->period;
	return 0;
}

int profile__remap(struct profile *p, const uint32_t *map, uint32_t n)
{
	struct pstack *old = p->stacks;
	size_t nr = p->nr_stacks;
	int err = 0;

	if (!map)
		return 0;
	for (size_t i = 0; i < p->nr_frames; i++)
		if (p->frames[i] < n)
			p->frames[i] = map[p->frames[i]];
	/* stacks that now read the same are one */
	p->stacks = NULL;
	p->nr_stacks = p->cap_stacks = 0;
	htab__free(&p->ht);
	for (size_t i = 0; i < nr && !err; i++) {
		struct pstack *k = &old[i], *e;
		const uint32_t *fr = p->frames + k->frames_off;
		struct stack_key key = { p, k, fr };
		uint64_t h = stack_hash(k, fr);
		size_t slot;
		uint32_t idx = htab__find(&p->ht, h, stack_eq, &key, &slot);

		if (idx != HTAB_EMPTY) {
			e = &p->stacks[idx];
			e->samples += k->samples;
			e->period += k->period;
			e->count += k->count;
			continue;
		}
		if (htab__reserve(&p->ht)) {
			err = -ENOMEM;
			break;
		}
		e = vec__push((void **)&p->stacks, &p->nr_stacks, &p->cap_stacks, sizeof(*e));
		if (!e) {
			err = -ENOMEM;
			break;
		}
		*e = *k;
		htab__find(&p->ht, h, stack_eq, &key, &slot);
		htab__put(&p->ht, slot, h, p->nr_stacks - 1);
	}
	free(old);
	return err;
}

size_t profile__nr_stacks(const struct profile *p)
{
	return p->nr_stacks;
}

const struct pstack *profile__stack(const struct profile *p, size_t i)
{
	return i < p->nr_stacks ? &p->stacks[i] : NULL;
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
