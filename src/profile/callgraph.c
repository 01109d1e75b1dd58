// SPDX-License-Identifier: GPL-2.0-only
/* Call-graph tree; children found through one (parent, frame) hash. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/callgraph.h"
#include "util/htab.h"

struct callgraph {
	int nr_events;
	struct cg_node *nodes;
	size_t nr, cap;
	struct cg_value *vals; /* nr_events per node */
	struct htab ht;
};

struct child_key {
	const struct callgraph *cg;
	uint32_t parent, frame;
};

static bool child_eq(const void *ctx, uint32_t idx)
{
	const struct child_key *k = ctx;
	const struct cg_node *n = &k->cg->nodes[idx];

	return n->parent == k->parent && n->frame == k->frame;
}

/* Grow nodes and values together; returns the new node's index or CG_NONE. */
static uint32_t new_node(struct callgraph *cg, uint32_t parent, uint32_t frame)
{
	struct cg_node *n;

	if (cg->nr == cg->cap) {
		size_t nc = cg->cap ? cg->cap * 2 : 64;
		struct cg_node *nn = realloc(cg->nodes, nc * sizeof(*nn));
		struct cg_value *nv;

		if (!nn)
			return CG_NONE;
		cg->nodes = nn;
		nv = realloc(cg->vals, nc * cg->nr_events * sizeof(*nv));
		if (!nv)
			return CG_NONE;
		cg->vals = nv;
		cg->cap = nc;
	}
	n = &cg->nodes[cg->nr];
	n->frame = frame;
	n->parent = parent;
	n->first_child = CG_NONE;
	n->next_sibling = CG_NONE;
	memset(&cg->vals[cg->nr * cg->nr_events], 0, cg->nr_events * sizeof(struct cg_value));
	if (parent != CG_NONE) {
		n->next_sibling = cg->nodes[parent].first_child;
		cg->nodes[parent].first_child = cg->nr;
	}
	return cg->nr++;
}

struct callgraph *callgraph__new(int nr_events)
{
	struct callgraph *cg = calloc(1, sizeof(*cg));

	if (!cg)
		return NULL;
	cg->nr_events = nr_events > 0 ? nr_events : 1;
	if (new_node(cg, CG_NONE, CG_NONE) == CG_NONE) {
		callgraph__free(cg);
		return NULL;
	}
	return cg;
}

void callgraph__free(struct callgraph *cg)
{
	if (!cg)
		return;
	free(cg->nodes);
	free(cg->vals);
	htab__free(&cg->ht);
	free(cg);
}

static uint32_t child(struct callgraph *cg, uint32_t parent, uint32_t frame)
{
	struct child_key k = { cg, parent, frame };
	uint64_t h = htab__mix(((uint64_t)parent << 32) | frame);
	size_t slot;
	uint32_t idx = htab__find(&cg->ht, h, child_eq, &k, &slot);

	if (idx != HTAB_EMPTY)
		return idx;
	if (htab__reserve(&cg->ht))
		return CG_NONE;
	idx = new_node(cg, parent, frame);
	if (idx == CG_NONE)
		return CG_NONE;
	htab__find(&cg->ht, h, child_eq, &k, &slot);
	htab__put(&cg->ht, slot, h, idx);
	return idx;
}

static uint32_t add(struct callgraph *cg, uint32_t from, const uint32_t *frames, size_t n,
		    int step, int event, uint64_t samples, uint64_t period)
{
	uint32_t cur = from;
	struct cg_value *v;

	if (event < 0 || event >= cg->nr_events || from >= cg->nr)
		return CG_NONE;
	v = &cg->vals[cur * cg->nr_events + event];
	v->total += period;
	v->total_samples += samples;
	for (size_t i = 0; i < n; i++) {
		uint32_t f = step > 0 ? frames[i] : frames[n - 1 - i];

		cur = child(cg, cur, f);
		if (cur == CG_NONE)
			return CG_NONE;
		v = &cg->vals[cur * cg->nr_events + event];
		v->total += period;
		v->total_samples += samples;
	}
	v->self += period;
	v->self_samples += samples;
	return cur;
}

uint32_t callgraph__add(struct callgraph *cg, uint32_t from, const uint32_t *frames, size_t n,
			int event, uint64_t samples, uint64_t period)
{
	return add(cg, from, frames, n, 1, event, samples, period);
}

uint32_t callgraph__add_reversed(struct callgraph *cg, uint32_t from, const uint32_t *frames,
				 size_t n, int event, uint64_t samples, uint64_t period)
{
	return add(cg, from, frames, n, -1, event, samples, period);
}

size_t callgraph__nr_nodes(const struct callgraph *cg)
{
	return cg->nr;
}

const struct cg_node *callgraph__node(const struct callgraph *cg, uint32_t idx)
{
	return idx < cg->nr ? &cg->nodes[idx] : NULL;
}

const struct cg_value *callgraph__value(const struct callgraph *cg, uint32_t idx, int event)
{
	if (idx >= cg->nr || event < 0 || event >= cg->nr_events)
		return NULL;
	return &cg->vals[idx * cg->nr_events + event];
}

struct sort_ent {
	uint64_t total;
	uint32_t idx;
};

static int sort_cmp(const void *a, const void *b)
{
	const struct sort_ent *x = a, *y = b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

int callgraph__sort(struct callgraph *cg, int event)
{
	struct sort_ent *tmp = NULL;
	size_t cap = 0;

	if (event < 0 || event >= cg->nr_events)
		return -EINVAL;
	for (size_t p = 0; p < cg->nr; p++) {
		size_t n = 0;

		for (uint32_t c = cg->nodes[p].first_child; c != CG_NONE; c = cg->nodes[c].next_sibling) {
			if (n == cap) {
				size_t nc = cap ? cap * 2 : 16;
				struct sort_ent *t = realloc(tmp, nc * sizeof(*t));

				if (!t) {
					free(tmp);
					return -ENOMEM;
				}
				tmp = t;
				cap = nc;
			}
			tmp[n].total = cg->vals[c * cg->nr_events + event].total;
			tmp[n].idx = c;
			n++;
		}
		if (n < 2)
			continue;
		qsort(tmp, n, sizeof(*tmp), sort_cmp);
		cg->nodes[p].first_child = tmp[0].idx;
		for (size_t i = 0; i < n; i++)
			cg->nodes[tmp[i].idx].next_sibling = i + 1 < n ? tmp[i + 1].idx : CG_NONE;
	}
	free(tmp);
	return 0;
}
