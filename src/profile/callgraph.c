// SPDX-License-Identifier: GPL-2.0-only
/*
 * Call-graph tree; children found through one (parent, frame) hash. A
 * node's values follow it in the same table entry, so that a tree is one
 * array and its index, on 2 MiB pages early (HTAB_HUGE_OUTPUT): a
 * report's graph of 40 000 nodes, built on 4 KiB pages with the values in
 * an array of their own, was 15 ms of a 200 ms report, most of it first
 * touches of pages as the arrays doubled.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/callgraph.h"
#include "util/hash.h"
#include "util/htab.h"
#include "util/vec.h"

struct callgraph {
	int nr_events;
	struct htab nodes; /* struct cg_node then nr_events struct cg_value, by (parent, frame) */
};

struct child_key {
	uint32_t parent, frame;
};

static bool child_eq(const void *entry, const void *key)
{
	const struct cg_node *n = entry;
	const struct child_key *k = key;

	return n->parent == k->parent && n->frame == k->frame;
}

static inline struct cg_node *node_at(const struct callgraph *cg, uint32_t i)
{
	return htab__at(&cg->nodes, i);
}

static inline struct cg_value *val_at(const struct callgraph *cg, uint32_t i, int event)
{
	return (struct cg_value *)(node_at(cg, i) + 1) + event;
}

/* The child of parent for frame, made on first sight (with its values); CG_NONE on ENOMEM. */
static uint32_t child(struct callgraph *cg, uint32_t parent, uint32_t frame)
{
	struct child_key k = { parent, frame };
	struct cg_node *n;
	uint32_t idx;
	bool added;

	n = htab__get(&cg->nodes, hash__mix(((uint64_t)parent << 32) | frame), child_eq, &k, &added);
	if (!n)
		return CG_NONE;
	idx = (uint32_t)(((char *)n - (char *)cg->nodes.v) / cg->nodes.size);
	if (!added)
		return idx;
	n->frame = frame; /* its values are zero, as htab__get() adds an entry */
	n->parent = parent;
	n->first_child = CG_NONE;
	n->next_sibling = CG_NONE;
	if (parent != CG_NONE) {
		n->next_sibling = node_at(cg, parent)->first_child;
		node_at(cg, parent)->first_child = idx;
	}
	return idx;
}

struct callgraph *callgraph__new(int nr_events)
{
	struct callgraph *cg = calloc(1, sizeof(*cg));

	if (!cg)
		return NULL;
	cg->nr_events = nr_events > 0 ? nr_events : 1;
	htab__init(&cg->nodes, sizeof(struct cg_node) + (size_t)cg->nr_events * sizeof(struct cg_value));
	htab__huge_from(&cg->nodes, HTAB_HUGE_OUTPUT);
	if (child(cg, CG_NONE, CG_NONE) != CG_ROOT) {
		callgraph__free(cg);
		return NULL;
	}
	return cg;
}

void callgraph__free(struct callgraph *cg)
{
	if (!cg)
		return;
	htab__free(&cg->nodes);
	free(cg);
}

static uint32_t add(struct callgraph *cg, uint32_t from, const uint32_t *frames, size_t n,
		    int step, int event, uint64_t samples, uint64_t period)
{
	uint32_t cur = from;
	struct cg_value *v;

	if (event < 0 || event >= cg->nr_events || from >= htab__n(&cg->nodes))
		return CG_NONE;
	v = val_at(cg, cur, event);
	v->total += period;
	v->total_samples += samples;
	for (size_t i = 0; i < n; i++) {
		uint32_t f = step > 0 ? frames[i] : frames[n - 1 - i];

		cur = child(cg, cur, f);
		if (cur == CG_NONE)
			return CG_NONE;
		v = val_at(cg, cur, event);
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
	return htab__n(&cg->nodes);
}

const struct cg_node *callgraph__node(const struct callgraph *cg, uint32_t idx)
{
	return idx < htab__n(&cg->nodes) ? node_at(cg, idx) : NULL;
}

const struct cg_value *callgraph__value(const struct callgraph *cg, uint32_t idx, int event)
{
	if (idx >= htab__n(&cg->nodes) || event < 0 || event >= cg->nr_events)
		return NULL;
	return val_at(cg, idx, event);
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
	for (size_t p = 0; p < htab__n(&cg->nodes); p++) {
		size_t n = 0;

		for (uint32_t c = node_at(cg, p)->first_child; c != CG_NONE; c = node_at(cg, c)->next_sibling) {
			if (vec__reserve((void **)&tmp, &cap, n + 1, sizeof(*tmp), 16)) {
				free(tmp);
				return -ENOMEM;
			}
			tmp[n].total = val_at(cg, c, event)->total;
			tmp[n].idx = c;
			n++;
		}
		if (n < 2)
			continue;
		qsort(tmp, n, sizeof(*tmp), sort_cmp);
		node_at(cg, p)->first_child = tmp[0].idx;
		for (size_t i = 0; i < n; i++)
			node_at(cg, tmp[i].idx)->next_sibling = i + 1 < n ? tmp[i + 1].idx : CG_NONE;
	}
	free(tmp);
	return 0;
}
