/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A small open-addressing hash index: slots hold (hash, u32 index into the
 * caller's own array). The caller owns the entries and compares keys, so
 * one index type serves threads, DSOs, addresses, frames and stacks.
 */
#ifndef OFFCPU_REPORT_HTAB_H
#define OFFCPU_REPORT_HTAB_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HTAB_EMPTY UINT32_MAX

struct htab {
	uint64_t *hashes;
	uint32_t *slots;
	size_t cap; /* power of two, or 0 */
	size_t n;
};

static inline uint64_t htab__mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x7fb5d329728ea185ULL;
	x ^= x >> 27;
	x *= 0x81dadef4bc2dd44dULL;
	x ^= x >> 33;
	return x;
}

static inline uint64_t htab__hash_bytes(const void *p, size_t n, uint64_t seed)
{
	const uint8_t *b = p;
	uint64_t h = seed ^ (n * 0x9e3779b97f4a7c15ULL);

	while (n >= 8) {
		uint64_t v;
		memcpy(&v, b, 8);
		h = htab__mix(h ^ v) + 0x9e3779b97f4a7c15ULL;
		b += 8;
		n -= 8;
	}
	if (n) {
		uint64_t v = 0;
		memcpy(&v, b, n);
		h = htab__mix(h ^ v ^ ((uint64_t)n << 56));
	}
	return htab__mix(h);
}

static inline void htab__free(struct htab *t)
{
	free(t->hashes);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

/*
 * Find the slot for hash h: returns the entry index for which eq() says
 * the key matches, or HTAB_EMPTY with *slot set to where it would go.
 */
static inline uint32_t htab__find(const struct htab *t, uint64_t h,
				  bool (*eq)(const void *ctx, uint32_t idx), const void *ctx,
				  size_t *slot)
{
	size_t mask = t->cap - 1;

	*slot = 0;
	if (!t->cap)
		return HTAB_EMPTY;
	for (size_t i = h & mask;; i = (i + 1) & mask) {
		if (t->slots[i] == HTAB_EMPTY) {
			*slot = i;
			return HTAB_EMPTY;
		}
		if (t->hashes[i] == h && eq(ctx, t->slots[i]))
			return t->slots[i];
	}
}

/* Grow to keep the load under 1/2; slot positions found before are void. */
static inline int htab__reserve(struct htab *t)
{
	size_t cap;
	uint64_t *hs;
	uint32_t *ss;

	if (t->cap && (t->n + 1) * 2 <= t->cap)
		return 0;
	cap = t->cap ? t->cap * 2 : 64;
	hs = malloc(cap * sizeof(*hs));
	ss = malloc(cap * sizeof(*ss));
	if (!hs || !ss) {
		free(hs);
		free(ss);
		return -ENOMEM;
	}
	memset(ss, 0xff, cap * sizeof(*ss));
	for (size_t i = 0; i < t->cap; i++) {
		size_t j;

		if (t->slots[i] == HTAB_EMPTY)
			continue;
		for (j = t->hashes[i] & (cap - 1); ss[j] != HTAB_EMPTY; j = (j + 1) & (cap - 1))
			;
		hs[j] = t->hashes[i];
		ss[j] = t->slots[i];
	}
	free(t->hashes);
	free(t->slots);
	t->hashes = hs;
	t->slots = ss;
	t->cap = cap;
	return 0;
}

/* Insert idx under hash h; call htab__reserve() first, then find the slot. */
static inline void htab__put(struct htab *t, size_t slot, uint64_t h, uint32_t idx)
{
	t->hashes[slot] = h;
	t->slots[slot] = idx;
	t->n++;
}

/* Grow a caller's array by one element; returns the new element or NULL. */
static inline void *vec__push(void **arr, size_t *n, size_t *cap, size_t elem)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		void *p = realloc(*arr, nc * elem);

		if (!p)
			return NULL;
		*arr = p;
		*cap = nc;
	}
	memset((char *)*arr + *n * elem, 0, elem);
	return (char *)*arr + (*n)++ * elem;
}

#endif
