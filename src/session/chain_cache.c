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
 * interned. A chain's frames are those the address cache would give, in
 * the same order: resolving a chain the first time goes through it, and
 * every address of a chain found here was resolved then, so names, frame
 * ids and warnings come as before. (An address in JIT code is named from
 * the perf-PID.map of the first process it was resolved for, as without
 * this cache: the (DSO, address) table keeps that first answer for
 * every process.)
 *
 * Memory is bounded: past CHAIN_CACHE_MAX bytes the cache starts again
 * empty (a recording of ever new stacks pays the resolution of each, as
 * without the cache, and no more memory).
 *
 * In a session that interns no stacks, each chain kept has an id
 * (rsample.chain): its place in the cache's generation, and the
 * generation. Neither is ever given to another chain, so a consumer that
 * interns frames (the profile) hashes a chain's frames once per id, not
 * once per sample, and the feed to its thread sends them once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "session/session_int.h"
#include "util/hash.h"
#include "util/hugemem.h"
#include "util/vec.h"

/*
 * Small on purpose: a hit is two dependent loads (slot, record), and the
 * cache pays off only while they stay near the core. At 8 MiB the bench
 * recordings missed 20-40 % less (perf 300 MB: 181 000 misses, not
 * 228 000 at 2 MiB) and read no faster, with 6-7 MB more peak RSS: a miss
 * of a chain whose addresses are known costs about what a hit from memory
 * does. 1 MiB reads as fast as 2 (11 alternating runs of report on the
 * perf 300 MB recording) with 1 MB less: script's peak on the 100 MB ones
 * is then a quarter of perf's.
 */
#define CHAIN_CACHE_MAX (1u << 20)

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
};

/*
 * A chain as kept: this header, then its raw words (nraw), then the
 * locations of its frames (nr), then, when the session interns no stacks
 * (session_opts.no_stacks), the frames themselves (nr; otherwise they are
 * the interned stack's, at frames_off), rounded up to words, one after the
 * other in the arena, so that a hit reads one run of memory.
 */
struct chain_rec {
	uint64_t ip;
	uint32_t space;
	uint32_t nraw;
	uint32_t nr;
	uint32_t stack;      /* rsample.stack; with no_stacks, the chain's id in its generation */
	uint32_t frames_off; /* its frames in session.stack_frames (unless no_stacks) */
	uint16_t cpumode;
	bool has_ip;
	bool no_chain;
};

struct chain_slot {
	uint32_t hash;       /* the chain hash's low 32 bits */
	uint32_t rec;        /* its record's place in the arena (in words) + 1; 0 = empty */
};

struct chain_cache {
	struct htab spaces;      /* struct space_ent, by maps */
	struct chain_slot *slots; /* the chains, by hash: open addressing, at most half full */
	size_t nslots, nr_chains;
	uint64_t *arena;         /* the chains' records (in mem) */
	size_t nr_words, cap_words;
	struct hugemem mem;      /* the arena: on 4 KiB pages its 1 MiB was 256 faults, ~10 us each on a PVM guest */
	uint32_t epoch;          /* bumped at each reset: procs' space ids older are void */
};

#define REC_WORDS (sizeof(struct chain_rec) / 8)
_Static_assert(sizeof(struct chain_rec) % 8 == 0, "chain records are whole words");

static size_t cache_bytes(const struct chain_cache *c);

int chain_cache__new(struct session *s)
{
	struct chain_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	htab__init(&c->spaces, sizeof(struct space_ent));
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
	free(c->slots);
	hugemem__free(&c->mem);
	free(c);
	s->chains = NULL;
}

/* What the cache holds, in bytes (its arrays' room is kept across resets). */
static size_t cache_bytes(const struct chain_cache *c)
{
	return c->nr_words * 8 + c->nr_chains * 2 * sizeof(struct chain_slot) +
	       htab__n(&c->spaces) * (sizeof(struct space_ent) + 16);
}

/* Start again empty, keeping the memory for what comes. */
static void cache_reset(struct chain_cache *c)
{
	htab__clear(&c->spaces);
	if (c->nslots)
		memset(c->slots, 0, c->nslots * sizeof(*c->slots));
	c->nr_chains = c->nr_words = 0;
	c->epoch++;
}

struct space_key {
	const struct session *s;
	const struct proc *p;
};

/* Maps compared field by field: struct map has padding. */
static bool space_eq(const void *entry, const void *key)
{
	const struct space_ent *e = entry;
	const struct space_key *k = key;
	const struct proc *o = proc_at(k->s, e->owner);

	if (o->gen != e->gen || o->n != k->p->n)
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
	struct space_key k = { s, p };
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

		h = hash__mix(h ^ m->start) + (m->end - m->start) * 31 + m->pgoff * 7 + m->dso;
	}
	h = hash__mix(h);
	e = htab__get(&c->spaces, h, space_eq, &k, &added);
	if (!e)
		return -ENOMEM;
	if (added)
		*e = (struct space_ent){ (uint32_t)(p - proc_at(s, 0)), p->gen };
	p->space = e - (struct space_ent *)c->spaces.v;
	p->space_gen = p->gen;
	p->space_epoch = c->epoch;
	*id = p->space;
	return 0;
}

struct chain_key {
	const struct perf_sample *ps;
	uint32_t space;
	bool has_ip;
};

static bool chain_eq(const struct chain_rec *e, const struct chain_key *k)
{
	return e->space == k->space && e->nraw == k->ps->nr_callchain && e->ip == k->ps->ip &&
	       e->cpumode == k->ps->cpumode && e->has_ip == k->has_ip &&
	       !memcmp(e + 1, k->ps->callchain, e->nraw * 8);
}

/*
 * Hash of a raw callchain and what else its frames depend on. Every
 * sample with a callchain is hashed here, so the words go through four
 * independent multiply lanes (a chain of 16 words is 4 multiplies deep,
 * not 16), folded and mixed at the end.
 */
static uint64_t chain_hash(const struct perf_sample *ps, uint32_t space, bool has_ip)
{
	const uint8_t *b = ps->callchain;
	uint64_t n = ps->nr_callchain, i = 0;
	uint64_t h0 = (ps->ip ^ n * 0x9e3779b97f4a7c15ULL) + ((uint64_t)space << 20 | ps->cpumode << 1 | has_ip);
	uint64_t h1 = 0x243f6a8885a308d3ULL, h2 = 0x13198a2e03707344ULL, h3 = 0xa4093822299f31d0ULL;

	for (; i + 4 <= n; i += 4) {
		uint64_t v[4];

		memcpy(v, b + 8 * i, 32);
		h0 = (h0 ^ v[0]) * 0x9e3779b97f4a7c15ULL;
		h1 = (h1 ^ v[1]) * 0xc2b2ae3d27d4eb4fULL;
		h2 = (h2 ^ v[2]) * 0x165667b19e3779f9ULL;
		h3 = (h3 ^ v[3]) * 0xd6e8feb86659fd93ULL;
	}
	for (; i < n; i++) {
		uint64_t v;

		memcpy(&v, b + 8 * i, 8);
		h1 = (h1 ^ v) * 0x9e3779b97f4a7c15ULL;
	}
	return hash__mix(h0 ^ (h1 >> 29 | h1 << 35) ^ (h2 >> 17 | h2 << 47) ^ (h3 >> 41 | h3 << 23));
}

static inline struct chain_rec *rec_at(const struct chain_cache *c, uint32_t slot_rec)
{
	return (struct chain_rec *)(c->arena + slot_rec - 1);
}

/* The chain of key k (hash h), or NULL. */
static const struct chain_rec *chain_find(const struct chain_cache *c, const struct chain_key *k,
					  uint64_t h)
{
	size_t mask = c->nslots - 1;

	if (!c->nslots)
		return NULL;
	for (size_t i = h & mask; c->slots[i].rec; i = (i + 1) & mask)
		if (c->slots[i].hash == (uint32_t)h && chain_eq(rec_at(c, c->slots[i].rec), k))
			return rec_at(c, c->slots[i].rec);
	return NULL;
}

/* Room in the index for one more chain (at most half full): 0 or -ENOMEM. */
static int slots_reserve(struct chain_cache *c)
{
	size_t n = c->nslots ? c->nslots : 1024;
	struct chain_slot *ss;

	while ((c->nr_chains + 1) * 2 > n)
		n *= 2;
	if (n == c->nslots)
		return 0;
	ss = vec__zalloc(n, sizeof(*ss)); /* probed before written: see vec__zalloc */
	if (!ss)
		return -ENOMEM;
	for (size_t i = 0; i < c->nslots; i++) {
		size_t j;

		if (!c->slots[i].rec)
			continue;
		for (j = c->slots[i].hash & (n - 1); ss[j].rec; j = (j + 1) & (n - 1))
			;
		ss[j] = c->slots[i];
	}
	free(c->slots);
	c->slots = ss;
	c->nslots = n;
	return 0;
}

/* Room in the arena for n words in all: 0 or -ENOMEM. */
static int arena_reserve(struct chain_cache *c, size_t n)
{
	if (n <= c->cap_words)
		return 0;
	if (n > SIZE_MAX / 8 || hugemem__grow(&c->mem, n * 8))
		return -ENOMEM;
	c->arena = (uint64_t *)c->mem.p;
	c->cap_words = c->mem.len / 8;
	return 0;
}

/* Keep the chain just resolved (rs's frames, from the sample scratch); 0, 1 when full, or -ENOMEM. */
static int chain_add(struct session *s, struct chain_key *k, uint64_t h, struct rsample *rs)
{
	struct chain_cache *c = s->chains;
	const struct perf_sample *ps = k->ps;
	bool own_frames = s->opts.no_stacks;
	size_t words = REC_WORDS + ps->nr_callchain + ((own_frames ? 2 : 1) * rs->nr + 1) / 2, i;
	struct chain_rec *e;
	uint32_t *locs;

	if (cache_bytes(c) > CHAIN_CACHE_MAX)
		return 1; /* full: kept from the next miss on, after a reset there */
	if (c->nr_words + words >= UINT32_MAX || slots_reserve(c) ||
	    arena_reserve(c, c->nr_words + words))
		return -ENOMEM;
	e = (struct chain_rec *)(c->arena + c->nr_words);
	*e = (struct chain_rec){ .ip = ps->ip, .space = k->space, .nraw = ps->nr_callchain, .nr = rs->nr,
				 .stack = own_frames ? (uint32_t)c->nr_chains + 1 : rs->stack,
				 .frames_off = own_frames ? 0 :
					       ((const struct stack_ent *)htab__at(&s->stacks, rs->stack - 1))->off,
				 .cpumode = ps->cpumode, .has_ip = k->has_ip, .no_chain = rs->no_chain };
	memcpy(e + 1, ps->callchain, ps->nr_callchain * 8);
	locs = (uint32_t *)(c->arena + c->nr_words + REC_WORDS + ps->nr_callchain);
	memcpy(locs, rs->locs, rs->nr * sizeof(uint32_t));
	if (own_frames)
		memcpy(locs + rs->nr, rs->frames, rs->nr * sizeof(uint32_t));
	for (i = h & (c->nslots - 1); c->slots[i].rec; i = (i + 1) & (c->nslots - 1))
		;
	c->slots[i] = (struct chain_slot){ (uint32_t)h, (uint32_t)c->nr_words + 1 };
	c->nr_words += words;
	c->nr_chains++;
	if (own_frames)
		rs->chain = (uint64_t)c->epoch << 32 | e->stack;
	return 0;
}

int chain_cache__resolve(struct session *s, struct rsample *rs, struct proc *p,
			 int (*resolve)(struct session *s, struct rsample *rs, const struct proc *p))
{
	struct chain_cache *c = s->chains;
	const struct perf_sample *ps = rs->s;
	struct chain_key k = { ps, UINT32_MAX, ps->evattr->attr.sample_type & PERF_SAMPLE_IP };
	const struct chain_rec *e;
	uint64_t h;
	int err;

	if (p) {
		err = space_of(s, p, &k.space);
		if (err)
			return err;
	}
	h = chain_hash(ps, k.space, k.has_ip);
	e = chain_find(c, &k, h);
	if (e) {
		rs->nr = e->nr;
		rs->no_chain = e->no_chain;
		if (s->opts.no_stacks)
			rs->chain = (uint64_t)c->epoch << 32 | e->stack;
		else
			rs->stack = e->stack;
		rs->locs = (const uint32_t *)((const uint64_t *)(e + 1) + e->nraw);
		rs->frames = s->opts.no_stacks ? rs->locs + e->nr : s->stack_frames + e->frames_off;
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
