// SPDX-License-Identifier: GPL-2.0-only
/*
 * The flame graph tree: nodes in one array (node 0 is the root), children
 * found through one hash on (parent, name, detail, colour), strings
 * interned. Memory grows with distinct nodes, never with added paths.
 * The node table is built in one go and freed with the graph: on 2 MiB
 * pages early (HTAB_HUGE_OUTPUT).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "output/flamegraph/fg_internal.h"
#include "util/hash.h"
#include "util/vec.h"

/* Interned id of s (NULL is ""); UINT32_MAX on ENOMEM. */
static uint32_t str_id(struct fg_tree *t, const char *s)
{
	uint32_t id;

	return intern__id(&t->strs, s ? s : "", &id) ? UINT32_MAX : id;
}

int fg_tree__intern(struct fg_tree *t, const char *s, uint32_t *ref)
{
	uint32_t id = str_id(t, s);

	if (id == UINT32_MAX)
		return -ENOMEM;
	*ref = id + 1;
	return 0;
}

static bool node_eq(const void *entry, const void *key)
{
	const struct fg_node *n = entry;
	const struct fg_node_key *k = key;

	return n->parent == k->parent && n->name == k->name && n->detail == k->detail &&
	       n->color == k->color;
}

/* The key of frame f under parent; its name or detail UINT32_MAX on ENOMEM. */
static struct fg_node_key node_key(struct fg_tree *t, uint32_t parent, const struct fg_frame *f)
{
	return (struct fg_node_key){ parent, f->name_ref ? f->name_ref - 1 : str_id(t, f->name),
				     f->detail_ref ? f->detail_ref - 1 : str_id(t, f->detail),
				     (uint8_t)f->color };
}

/* The node of key k, created on first sight; UINT32_MAX on ENOMEM. */
static uint32_t child_of(struct fg_tree *t, const struct fg_node_key *kp)
{
	struct fg_node_key k = *kp;
	uint32_t parent = k.parent;
	struct fg_node *n;
	bool added;

	if (k.name == UINT32_MAX || k.detail == UINT32_MAX)
		return UINT32_MAX;
	n = htab__get(&t->nodes, hash__mix(((uint64_t)parent << 32 | k.name) ^
					   hash__mix((uint64_t)k.detail << 8 | k.color)),
		      node_eq, &k, &added);
	if (!n)
		return UINT32_MAX;
	if (added) {
		n->name = k.name;
		n->detail = k.detail;
		n->color = k.color;
		n->parent = parent;
		n->depth = parent == UINT32_MAX ? 0 : fg_node(t, parent)->depth + 1;
	}
	return n - fg_node(t, 0);
}

/* The child of parent with this frame, created on first sight; UINT32_MAX on ENOMEM. */
static uint32_t child(struct fg_tree *t, uint32_t parent, const struct fg_frame *f)
{
	struct fg_node_key k = node_key(t, parent, f);

	return child_of(t, &k);
}

struct fg_tree *fg_tree__new(void)
{
	static const struct fg_frame all = { .name = "all", .color = FG_COLOR_META };
	struct fg_tree *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	intern__init(&t->strs);
	htab__init(&t->nodes, sizeof(struct fg_node));
	htab__huge_from(&t->nodes, HTAB_HUGE_OUTPUT);
	if (str_id(t, "") != 0 || child(t, UINT32_MAX, &all) != 0) {
		fg_tree__free(t);
		return NULL;
	}
	return t;
}

void fg_tree__free(struct fg_tree *t)
{
	if (!t)
		return;
	intern__free(&t->strs);
	htab__free(&t->nodes);
	free(t->last);
	free(t->last_node);
	free(t);
}

static bool key_eq(const struct fg_node_key *a, const struct fg_node_key *b)
{
	return a->parent == b->parent && a->name == b->name && a->detail == b->detail &&
	       a->color == b->color;
}

/*
 * Nodes are found (or made) first and valued after, so that an ENOMEM
 * halfway leaves no partial value: totals stay the sum of their children.
 * The part a path shares with the one added before it (a profile's stacks
 * come mostly by thread, a thread's by its outer frames) takes the nodes
 * of that one, compared key by key, without a lookup in the node table
 * (hundreds of thousands of nodes: a lookup is a wait for memory).
 */
int fg_tree__add(struct fg_tree *t, const struct fg_frame *path, size_t n, enum fg_class cls,
		 uint64_t value)
{
	bool same = true;
	uint32_t cur = 0;

	if ((unsigned int)cls >= FG_NR_CLASSES)
		return -EINVAL;
	if (vec__reserve((void **)&t->last, &t->cap_last, n, sizeof(*t->last), 64) ||
	    vec__reserve((void **)&t->last_node, &t->cap_last_node, n, sizeof(*t->last_node), 64))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct fg_node_key k = node_key(t, cur, &path[i]);

		same = same && i < t->nr_last && key_eq(&k, &t->last[i]);
		cur = same ? t->last_node[i] : child_of(t, &k);
		if (cur == UINT32_MAX) {
			t->nr_last = 0;
			return -ENOMEM;
		}
		t->last[i] = k;
		t->last_node[i] = cur;
	}
	t->nr_last = n;
	for (;; cur = fg_node(t, cur)->parent) {
		fg_node(t, cur)->value[cls] += value;
		if (cur == 0)
			break;
	}
	return 0;
}

uint64_t fg_tree__total(const struct fg_tree *t, enum fg_class cls)
{
	return (unsigned int)cls < FG_NR_CLASSES ? fg_node(t, 0)->value[cls] : 0;
}

size_t fg_tree__nr_nodes(const struct fg_tree *t)
{
	return htab__n(&t->nodes);
}
