// SPDX-License-Identifier: GPL-2.0-only
/*
 * The callchain cache: a sample's raw callchain, resolved once per
 * address space. Most samples of a recording repeat a callchain seen
 * before (a system-wide recording of a busy machine: ~2 % of its samples
 * bring a new one), and a chain is resolved in one hash of its raw words
 * and one compare, where the address cache (sample.c) costs a probe per
 * frame.
 *
 * What a chain resolves to depends on the maps of its process, not on
 * which process it is: the processes forked from one parent share their
 * maps, so the key is an address space, the content of a process's maps
 * interned (with the process id when a map is JIT code, which
 * perf-PID.map names per process). A chain's frames are those the
 * address cache would give, in the same order: resolving a chain the
 * first time goes through it, and every address of a chain found here
 * was resolved then, so names, frame ids and warnings come as before.
 *
 * Memory is bounded: past CHAIN_CACHE_MAX bytes the cache starts again
 * empty (a recording of ever new stacks pays the resolution of each, as
 * without the cache, and no more memory).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "session/session_int.h"
#include "util/hash.h"
#include "util/vec.h"

#define CHAIN_CACHE_MAX (16u << 20)

/*
 * An address space: the maps of its first process (owner, an index in
 * session.procs) at that process's gen. Nothing is copied: the space is
 * found by the maps' content only while its owner's maps are still the
 * ones it was made of; the processes that took it keep it as long as
 * their own maps do not change.
 */
struct space_ent {
	uint32_t owner;
	uint32_t gen;      /* the owner's when the space was made */
	uint32_t pid;      /* the owner's, when a map is JIT code (perf-PID.map); else 0 */
};

struct chain_ent {
	uint32_t space;
	uint32_t nraw;     /* raw callchain words, at raw_off in chain_cache.raw */
	uint32_t raw_off;
	uint32_t nr;       /* resolved frames: locations at out_off in locs */
	uint32_t out_off;
	uint32_t stack;    /* rsample.stack: the frames */
	uint16_t cpumode;
	bool has_ip;
	bool no_chain;
	uint64_t ip;
};

struct chain_cache {
	struct htab spaces;    /* struct space_ent, by maps */
	struct htab chains;    /* struct chain_ent, by space and raw words */
	uint64_t *raw;         /* the chains' raw words */
	size_t nr_raw, cap_raw;
	uint32_t *locs;        /* their locations */
	size_t nr_out, cap_out;
	uint32_t epoch;        /* bumped at each reset: procs' space ids older are void */
};

static size_t cache_bytes(const struct chain_cache *c);

int chain_cache__new(struct session *s)
{
	struct chain_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	htab__init(&c->spaces, sizeof(struct space_ent));
	htab__init(&c->chains, sizeof(struct chain_ent));
	c->epoch = 1;
	s->chains = c;
	return 0;
}

void chain_cache__free(struct session *s)
{
	struct chain_cache *c = s->chains;

	if (!c)
		return;
	htab__free(&c->spaces);
	htab__free(&c->chains);
	free(c->raw);
	free(c->locs);
	free(c);
	s->chains = NULL;
}

/* What the cache holds, in bytes (its arrays' room is kept across resets). */
static size_t cache_bytes(const struct chain_cache *c)
{
	return c->nr_raw * 8 + c->nr_out * sizeof(uint32_t) +
	       htab__n(&c->spaces) * (sizeof(struct space_ent) + 24) +
	       htab__n(&c->chains) * (sizeof(struct chain_ent) + 24);
}

/* Start again empty, keeping the memory for what comes. */
static void cache_reset(struct chain_cache *c)
{
	htab__clear(&c->spaces);
	htab__clear(&c->chains);
	c->nr_raw = c->nr_out = 0;
	c->epoch++;
}

struct space_key {
	const struct session *s;
	const struct proc *p;
	uint32_t pid;
};

/* Maps compared field by field: struct map has padding. */
static bool space_eq(const void *entry, const void *key)
{
	const struct space_ent *e = entry;
	const struct space_key *k = key;
	const struct proc *o = proc_at(k->s, e->owner);

	if (o->gen != e->gen || o->n != k->p->n || e->pid != k->pid)
		return false;
	for (size_t i = 0; i < o->n; i++) {
		const struct map *a = &o->maps[i], *b = &k->p->maps[i];

		if (a->start != b->start || a->end != b->end || a->pgoff != b->pgoff || a->dso != b->dso)
			return false;
	}
	return true;
}

/* The address space of process p (its maps as they are now), interned. */
static int space_of(struct session *s, struct proc *p, uint32_t *id)
{
	struct chain_cache *c = s->chains;
	struct space_key k = { s, p, 0 };
	struct space_ent *e;
	uint64_t h;
	bool added;

	if (p->space_epoch == c->epoch && p->space_gen == p->gen) {
		*id = p->space;
		return 0;
	}
	h = p->n;
	for (size_t i = 0; i < p->n; i++) {
		const struct map *m = &p->maps[i];

		if (((const struct dso_ent *)htab__at(&s->dsos, m->dso))->anon)
			k.pid = p->pid;
		h = hash__mix(h ^ m->start) + (m->end - m->start) * 31 + m->pgoff * 7 + m->dso;
	}
	h = hash__mix(h ^ k.pid);
	e = htab__get(&c->spaces, h, space_eq, &k, &added);
	if (!e)
		return -ENOMEM;
	if (added)
		*e = (struct space_ent){ (uint32_t)(p - proc_at(s, 0)), p->gen, k.pid };
	p->space = e - (struct space_ent *)c->spaces.v;
	p->space_gen = p->gen;
	p->space_epoch = c->epoch;
	*id = p->space;
	return 0;
}

struct chain_key {
	const struct chain_cache *c;
	const struct perf_sample *ps;
	uint32_t space;
	bool has_ip;
};

static bool chain_eq(const void *entry, const void *key)
{
	const struct chain_ent *e = entry;
	const struct chain_key *k = key;

	return e->space == k->space && e->nraw == k->ps->nr_callchain && e->ip == k->ps->ip &&
	       e->cpumode == k->ps->cpumode && e->has_ip == k->has_ip &&
	       !memcmp(k->c->raw + e->raw_off, k->ps->callchain, e->nraw * 8);
}

/*
 * Hash of a raw callchain and what else its frames depend on: two words
 * a multiply, a full mix at the end (every sample with a callchain is
 * hashed here).
 */
static uint64_t chain_hash(const struct perf_sample *ps, uint32_t space, bool has_ip)
{
	const uint8_t *b = ps->callchain;
	uint64_t n = ps->nr_callchain, i = 0;
	uint64_t h = (ps->ip ^ n * 0x9e3779b97f4a7c15ULL) + ((uint64_t)space << 20 | ps->cpumode << 1 | has_ip);

	for (; i + 2 <= n; i += 2) {
		uint64_t v[2];

		memcpy(v, b + 8 * i, 16);
		h = (h ^ v[0]) * 0x9e3779b97f4a7c15ULL + ((h >> 29) ^ v[1]) * 0xc2b2ae3d27d4eb4fULL;
	}
	if (i < n) {
		uint64_t v;

		memcpy(&v, b + 8 * i, 8);
		h = (h ^ v) * 0x9e3779b97f4a7c15ULL + (h >> 29);
	}
	return hash__mix(h);
}

/* Keep the chain just resolved (rs's frames, from the sample scratch); 0 or -ENOMEM. */
static int chain_add(struct session *s, struct chain_key *k, uint64_t h, struct rsample *rs)
{
	struct chain_cache *c = s->chains;
	const struct perf_sample *ps = k->ps;
	struct chain_ent *e;
	bool added;

	if (cache_bytes(c) > CHAIN_CACHE_MAX)
		return 1; /* full: kept from the next miss on, after a reset there */
	if (vec__reserve((void **)&c->raw, &c->cap_raw, c->nr_raw + ps->nr_callchain, 8, 4096))
		return -ENOMEM;
	if (vec__reserve((void **)&c->locs, &c->cap_out, c->nr_out + rs->nr, sizeof(uint32_t), 4096))
		return -ENOMEM;
	e = htab__get(&c->chains, h, chain_eq, k, &added);
	if (!e)
		return -ENOMEM;
	*e = (struct chain_ent){ .space = k->space, .nraw = ps->nr_callchain, .raw_off = c->nr_raw,
				 .nr = rs->nr, .out_off = c->nr_out, .cpumode = ps->cpumode,
				 .has_ip = k->has_ip, .no_chain = rs->no_chain, .ip = ps->ip,
				 .stack = rs->stack };
	memcpy(c->raw + c->nr_raw, ps->callchain, ps->nr_callchain * 8);
	c->nr_raw += ps->nr_callchain;
	memcpy(c->locs + c->nr_out, rs->locs, rs->nr * sizeof(uint32_t));
	c->nr_out += rs->nr;
	return 0;
}

int chain_cache__resolve(struct session *s, struct rsample *rs, struct proc *p,
			 int (*resolve)(struct session *s, struct rsample *rs, const struct proc *p))
{
	struct chain_cache *c = s->chains;
	const struct perf_sample *ps = rs->s;
	struct chain_key k = { c, ps, UINT32_MAX, ps->evattr->attr.sample_type & PERF_SAMPLE_IP };
	const struct chain_ent *e;
	uint64_t h;
	int err;

	if (p) {
		err = space_of(s, p, &k.space);
		if (err)
			return err;
	}
	h = chain_hash(ps, k.space, k.has_ip);
	e = htab__find(&c->chains, h, chain_eq, &k);
	if (e) {
		rs->nr = e->nr;
		rs->no_chain = e->no_chain;
		rs->stack = e->stack;
		rs->frames = s->stack_frames +
			     ((const struct stack_ent *)htab__at(&s->stacks, e->stack - 1))->off;
		rs->locs = c->locs + e->out_off;
		return 0;
	}
	err = resolve(s, rs, p);
	if (err)
		return err;
	err = chain_add(s, &k, h, rs);
	if (err > 0) {
		cache_reset(c);
		err = 0;
	}
	return err;
}
