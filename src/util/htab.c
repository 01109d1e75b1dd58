// SPDX-License-Identifier: GPL-2.0-only
/*
 * The table's growth, insertion and re-indexing (lookups are in htab.h).
 *
 * An array (entries or index) of HTAB_HUGE bytes and more (or of the
 * table's own huge_from) lives in a hugemem block: on 4 KiB pages each
 * first touch is a fault (~10 us on a paravirtualized VM), and a growing
 * table touched them twice, once copied by realloc() and once new. A
 * hugemem block grows by mremap(), without a copy, and its pages come
 * 2 MiB at a time (a table keeps at most one partly used 2 MiB page more
 * resident than on small pages).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/htab.h"
#include "util/vec.h"

#define HTAB_HUGE ((size_t)1 << 20)

void htab__init(struct htab *t, size_t size)
{
	memset(t, 0, sizeof(*t));
	t->size = size;
}

void htab__huge_from(struct htab *t, size_t bytes)
{
	t->huge_from = bytes;
}

static size_t huge_from(const struct htab *t)
{
	return t->huge_from ? t->huge_from : HTAB_HUGE;
}

void htab__free(struct htab *t)
{
	size_t size = t->size, huge = t->huge_from;

	hugemem__free_array(&t->hv, &t->v);
	if (t->hs.p)
		hugemem__free(&t->hs);
	else
		free(t->slots);
	htab__init(t, size);
	t->huge_from = huge;
}

void htab__clear(struct htab *t)
{
	t->n = 0;
	if (t->nslots)
		memset(t->slots, 0, t->nslots * sizeof(*t->slots));
}

/* The first empty slot on h's probe path. */
static size_t free_slot(const struct htab_slot *slots, size_t nslots, uint64_t h)
{
	size_t i;

	for (i = h & (nslots - 1); slots[i].pos; i = (i + 1) & (nslots - 1))
		;
	return i;
}

/* Room in the index for one more entry: its load stays at 2/3 at most. */
static int index_reserve(struct htab *t, size_t n)
{
	size_t nslots = t->nslots ? t->nslots : 64;
	struct hugemem hs = { 0 };
	struct htab_slot *ss;

	while ((n + 1) * 3 > nslots * 2)
		nslots *= 2;
	if (nslots == t->nslots)
		return 0;
	if (nslots > (size_t)UINT32_MAX + 1)
		return -ENOMEM;
	if (nslots * sizeof(*ss) >= huge_from(t) && !hugemem__grow(&hs, nslots * sizeof(*ss)))
		ss = (struct htab_slot *)hs.p; /* zero, as mapped */
	else if (!(ss = vec__zalloc(nslots, sizeof(*ss)))) /* probed before written: see vec__zalloc */
		return -ENOMEM;
	for (size_t i = 0; i < t->nslots; i++)
		if (t->slots[i].pos)
			ss[free_slot(ss, nslots, t->slots[i].hash)] = t->slots[i];
	if (t->hs.p)
		hugemem__free(&t->hs);
	else
		free(t->slots);
	t->hs = hs;
	t->slots = ss;
	t->nslots = nslots;
	return 0;
}

/* Room in the array for n entries in all: 0 or -ENOMEM. */
static int array_reserve(struct htab *t, size_t n)
{
	return hugemem__reserve(&t->hv, &t->v, &t->cap, t->n, n, t->size, huge_from(t));
}

int htab__grow(struct htab *t, size_t n)
{
	if (!n)
		return 0;
	if (t->n + n >= UINT32_MAX - 1 || index_reserve(t, t->n + n - 1))
		return -ENOMEM;
	return array_reserve(t, t->n + n);
}

void *htab__add(struct htab *t, uint64_t h)
{
	void *e;

	if (htab__reserve(t, 1))
		return NULL;
	e = htab__at(t, t->n++);
	memset(e, 0, t->size);
	t->last = free_slot(t->slots, t->nslots, h);
	t->slots[t->last].hash = (uint32_t)h;
	t->slots[t->last].pos = t->n;
	return e;
}

/*
 * The entry added last sits in the first slot that was empty on its probe
 * path, and nothing was added after it: emptying that slot leaves every
 * other entry's probe path as it was.
 */
void htab__unget(struct htab *t)
{
	t->slots[t->last].pos = 0;
	t->n--;
}

int htab__reindex(struct htab *t, size_t n, uint64_t (*hash)(const void *entry))
{
	int err = index_reserve(t, n);

	if (err)
		return err;
	if (t->nslots)
		memset(t->slots, 0, t->nslots * sizeof(*t->slots));
	for (size_t i = 0; i < n; i++) {
		uint64_t h = hash(htab__at(t, i));
		size_t j = free_slot(t->slots, t->nslots, h);

		t->slots[j].hash = (uint32_t)h;
		t->slots[j].pos = i + 1;
	}
	return 0;
}
