/* SPDX-License-Identifier: GPL-2.0-only */
/* The flame graph tree's layout, shared by the tree and its renderer only. */
#ifndef OFFCPU_FLAMEGRAPH_FG_INTERNAL_H
#define OFFCPU_FLAMEGRAPH_FG_INTERNAL_H

#include "output/flamegraph/flamegraph.h"
#include "util/htab.h"
#include "util/intern.h"

struct fg_node {
	uint32_t name, detail;   /* string ids */
	uint32_t parent;         /* UINT32_MAX for the root */
	uint32_t depth;          /* root 0 */
	uint8_t color;
	uint64_t value[FG_NR_CLASSES]; /* the paths through this node */
};

/* A node as child() looks it up. */
struct fg_node_key {
	uint32_t parent, name, detail;
	uint8_t color;
};

struct fg_tree {
	struct intern strs;  /* names and details; "" is 0, "all" 1 */
	struct htab nodes;   /* struct fg_node, by (parent, name, detail, colour); 0 is the root */
	/* the last path added: its nodes' keys and ids, root first (fg_tree__add) */
	struct fg_node_key *last;
	uint32_t *last_node;
	size_t nr_last, cap_last, cap_last_node;
};

static inline struct fg_node *fg_node(const struct fg_tree *t, size_t i)
{
	return htab__at(&t->nodes, i);
}

static inline const char *fg_str(const struct fg_tree *t, uint32_t id)
{
	return intern__at(&t->strs, id);
}

#endif
