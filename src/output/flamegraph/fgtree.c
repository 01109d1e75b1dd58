// SPDX-License-Identifier: GPL-2.0-only
/*
 * The flame graph tree: nodes in one array (node 0 is the root), children
 * found through one hash on (parent, name, detail, colour), strings
 * interned. Memory grows with distinct nodes, never with added paths.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "output/flamegraph/fg_internal.h"
#include "util/htab.h"

struct str_key {
	const struct fg_tree *t;
	const char *s;
};

static bool str_eq(const void *ctx, uint32_t idx)
{
	const struct str_key *k = ctx;

	return !strcmp(k->t->strs[idx], k->s);
}

/* Interned id of s (NULL is ""); UINT32_MAX on ENOMEM. */
static uint32_t str_id(struct fg_tree *t, const char *s)
{
	struct str_key k = { t, s ? s : "" };
	uint64_t h = htab__hash_bytes(k.s, strlen(k.s), 3);
	size_t slot;
	uint32_t idx = htab__find(&t->str_ht, h, str_eq, &k, &slot);
	char **e;

	if (idx != HTAB_EMPTY)
		return idx;
	if (htab__reserve(&t->str_ht))
		return UINT32_MAX;
	e = vec__push((void **)&t->strs, &t->nr_strs, &t->cap_strs, sizeof(*e));
	if (!e)
		return UINT32_MAX;
	*e = strdup(k.s);
	if (!*e) {
		t->nr_strs--;
		return UINT32_MAX;
	}
	htab__find(&t->str_ht, h, str_eq, &k, &slot);
	htab__put(&t->str_ht, slot, h, t->nr_strs - 1);
	return t->nr_strs - 1;
}

struct node_key {
	const struct fg_tree *t;
	uint32_t parent, name, detail;
	uint8_t color;
};

static bool node_eq(const void *ctx, uint32_t idx)
{
	const struct node_key *k = ctx;
	const struct fg_node *n = &k->t->nodes[idx];

	return n->parent == k->parent && n->name == k->name && n->detail == k->detail &&
	       n->color == k->color;
}

/* The child of parent with this frame, created on first sight; UINT32_MAX on ENOMEM. */
static uint32_t child(struct fg_tree *t, uint32_t parent, const struct fg_frame *f)
{
	struct node_key k = { t, parent, str_id(t, f->name), str_id(t, f->detail), (uint8_t)f->color };
	uint64_t h;
	size_t slot;
	uint32_t idx;
	struct fg_node *n;

	if (k.name == UINT32_MAX || k.detail == UINT32_MAX)
		return UINT32_MAX;
	h = htab__mix(((uint64_t)parent << 32 | k.name) ^ htab__mix((uint64_t)k.detail << 8 | k.color));
	idx = htab__find(&t->node_ht, h, node_eq, &k, &slot);
	if (idx != HTAB_EMPTY)
		return idx;
	if (t->nr_nodes >= UINT32_MAX - 1 || htab__reserve(&t->node_ht))
		return UINT32_MAX;
	n = vec__push((void **)&t->nodes, &t->nr_nodes, &t->cap_nodes, sizeof(*n));
	if (!n)
		return UINT32_MAX;
	n->name = k.name;
	n->detail = k.detail;
	n->color = k.color;
	n->parent = parent;
	n->depth = t->nodes[parent].depth + 1;
	htab__find(&t->node_ht, h, node_eq, &k, &slot);
	htab__put(&t->node_ht, slot, h, t->nr_nodes - 1);
	return t->nr_nodes - 1;
}

struct fg_tree *fg_tree__new(void)
{
	struct fg_tree *t = calloc(1, sizeof(*t));
	struct fg_node *root;

	if (!t)
		return NULL;
	root = vec__push((void **)&t->nodes, &t->nr_nodes, &t->cap_nodes, sizeof(*root));
	if (!root || str_id(t, "") != 0 || str_id(t, "all") != 1) {
		fg_tree__free(t);
		return NULL;
	}
	root->name = 1;
	root->parent = UINT32_MAX;
	root->color = FG_COLOR_META;
	return t;
}

void fg_tree__free(struct fg_tree *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nr_strs; i++)
		free(t->strs[i]);
	free(t->strs);
	htab__free(&t->str_ht);
	free(t->nodes);
	htab__free(&t->node_ht);
	free(t);
}

/*
 * Nodes are found (or made) first and valued after, so that an ENOMEM
 * halfway leaves no partial value: totals stay the sum of their children.
 */
int fg_tree__add(struct fg_tree *t, const struct fg_frame *path, size_t n, enum fg_class cls,
		 uint64_t value)
{
	uint32_t cur = 0;

	if ((unsigned int)cls >= FG_NR_CLASSES)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		cur = child(t, cur, &path[i]);
		if (cur == UINT32_MAX)
			return -ENOMEM;
	}
	for (;; cur = t->nodes[cur].parent) {
		t->nodes[cur].value[cls] += value;
		if (cur == 0)
			break;
	}
	return 0;
}

uint64_t fg_tree__total(const struct fg_tree *t, enum fg_class cls)
{
	return (unsigned int)cls < FG_NR_CLASSES ? t->nodes[0].value[cls] : 0;
}

size_t fg_tree__nr_nodes(const struct fg_tree *t)
{
	return t->nr_nodes;
}
