/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The hash table of every part: entries of one size in one growable array,
 * in the order they were added (so positions are small dense ids), found
 * by key through an open-addressing index of (hash, position). The caller
 * hashes (util/hash.h) and says what "equal" means; the table copies no
 * key and frees nothing an entry points to.
 *
 * Written here rather than taken from libbpf's hashmap.h: that header is
 * not installed by libbpf-dev (bpftool and perf carry copies), and it maps
 * a key to one pointer-sized value, where every user here wants its
 * entries in an array, in insertion order, addressed by position.
 *
 * Lookups are inline, so that the compiler inlines eq() at each call site
 * (the profile looks up every sample of a file). Adding grows the array
 * and the index: entry addresses taken before an htab__get() are void
 * after it.
 */
#ifndef OFFCPU_UTIL_HTAB_H
#define OFFCPU_UTIL_HTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/hugemem.h"

/*
 * A slot of the index: the low 32 bits of its entry's hash (the index is
 * never larger than 2^32 slots, so they place the entry) and the entry's
 * position + 1, 0 for an empty slot. Eight bytes, so that a probe reads
 * one cache line.
 */
struct htab_slot {
	uint32_t hash;
	uint32_t pos;
};

struct htab {
	void *v;          /* n entries, size bytes each */
	size_t n, cap, size;
	struct htab_slot *slots; /* the index, at most 2/3 full */
	size_t nslots;    /* a power of two, or 0 */
	size_t last;      /* the slot htab__get() filled last */
	struct hugemem hv, hs; /* v and slots once big (huge_from), else on the heap */
	size_t huge_from;      /* bytes from which an array lives in hugemem; 0: 1 MiB */
};

/* true when entry (in the table) has the key the caller looks for. */
typedef bool (*htab_eq_fn)(const void *entry, const void *key);

/* An empty table of entries of size bytes (no allocation). */
void htab__init(struct htab *t, size_t size);
void htab__free(struct htab *t);
/*
 * Put the arrays on 2 MiB pages from bytes on, not from 1 MiB (before the
 * first addition): for a table built in one go and soon freed, where first
 * touches of small pages would cost more than the resident memory saved.
 */
void htab__huge_from(struct htab *t, size_t bytes);
/*
 * The bytes for an output's tables, built after the walk and freed with
 * the output (a report's entries and call graph, the flame graph's nodes):
 * on 4 KiB pages their first touches (~10 us each on a paravirtualized VM)
 * were up to half of a report's time after the walk.
 */
#define HTAB_HUGE_OUTPUT ((size_t)64 << 10)
/*
 * Forget every entry; memory is kept for the next ones. The entries stay
 * in the array where they were until additions (which start again at
 * position 0) overwrite them: a caller may read entry i after clearing as
 * long as fewer than i + 1 entries were added since (rebuilding a table in
 * place, each old entry read before it adds at most one).
 */
void htab__clear(struct htab *t);

static inline size_t htab__n(const struct htab *t)
{
	return t->n;
}

static inline void *htab__at(const struct htab *t, size_t i)
{
	return (char *)t->v + i * t->size;
}

/* The entry equal to key under hash h, or NULL. */
static inline void *htab__find(const struct htab *t, uint64_t h, htab_eq_fn eq, const void *key)
{
	size_t mask = t->nslots - 1;

	if (!t->nslots)
		return NULL;
	for (size_t i = h & mask; t->slots[i].pos; i = (i + 1) & mask) {
		void *e = htab__at(t, t->slots[i].pos - 1);

		if (t->slots[i].hash == (uint32_t)h && eq(e, key))
			return e;
	}
	return NULL;
}

/* htab__reserve() when the array or the index has no room yet. */
int htab__grow(struct htab *t, size_t n);

/*
 * Room for n more entries, so that the next n htab__get() cannot fail: 0
 * or -ENOMEM. Inline: the profile asks before every sample.
 */
static inline int htab__reserve(struct htab *t, size_t n)
{
	size_t want = t->n + n;

	return want * 3 <= t->nslots * 2 && want <= t->cap && want < UINT32_MAX - 1 ? 0 :
	       htab__grow(t, n);
}

/*
 * For a lookup of hash h a moment later: fetch its index slot (and with
 * entry, the entry the slot's first match names) into the cache now, so
 * that lookups of a stream of keys overlap their memory waits.
 */
static inline void htab__prefetch(const struct htab *t, uint64_t h, bool entry)
{
	size_t mask = t->nslots - 1;

	if (!t->nslots)
		return;
	if (!entry) {
		__builtin_prefetch(&t->slots[h & mask]);
		return;
	}
	for (size_t i = h & mask; t->slots[i].pos; i = (i + 1) & mask)
		if (t->slots[i].hash == (uint32_t)h) {
			__builtin_prefetch(htab__at(t, t->slots[i].pos - 1));
			return;
		}
}

/* A new entry of hash h, zeroed, at the end of the array: NULL on ENOMEM. */
void *htab__add(struct htab *t, uint64_t h);

/*
 * The entry equal to key, or else a new one, zeroed, at the end of the
 * array (*added tells which; the caller fills it in). NULL on ENOMEM.
 */
static inline void *htab__get(struct htab *t, uint64_t h, htab_eq_fn eq, const void *key,
			      bool *added)
{
	void *e = htab__find(t, h, eq, key);

	*added = false;
	if (e)
		return e;
	e = htab__add(t, h);
	*added = e != NULL;
	return e;
}

/* Take back the entry the last htab__get() added (the caller could not fill it). */
void htab__unget(struct htab *t);

/*
 * Index the first n entries again, under hash(entry), after the caller
 * reordered the array (sorted it); later entries stay in the array but
 * are found no more. 0 or -ENOMEM.
 */
int htab__reindex(struct htab *t, size_t n, uint64_t (*hash)(const void *entry));

#endif
