/* SPDX-License-Identifier: GPL-2.0-only */
/* The flame graph tree's layout, shared by the tree and its renderer only. */
#ifndef OFFCPU_FLAMEGRAPH_FG_INTERNAL_H
#define OFFCPU_FLAMEGRAPH_FG_INTERNAL_H

#include "output/flamegraph/flamegraph.h"
#include "util/htab.h"

struct fg_node {
	uint32_t name, detail;   /* string ids */
	uint32_t parent;         /* UINT32_MAX for the root */
	uint32_t depth;          /* root 0 */
	uint8_t color;
	uint64_t value[FG_NR_CLASSES]; /* the paths through this node */
};

struct fg_tree {
	char **strs;
	size_t nr_strs, cap_strs;
	struct htab str_ht;
	struct fg_node *nodes;
	size_t nr_nodes, cap_nodes;
	struct htab node_ht;
};

#endif
