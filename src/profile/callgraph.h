/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Call graph: a tree of frames (session frame ids) with, per node and per
 * event, self and total values (samples and period). Paths are added root
 * first; the same frame under the same parent is one node. The report's
 * call graphs, and later flame graphs and pprof, are walks of this tree.
 */
#ifndef OFFCPU_REPORT_CALLGRAPH_H
#define OFFCPU_REPORT_CALLGRAPH_H

#include <stddef.h>
#include <stdint.h>

#define CG_NONE UINT32_MAX
#define CG_ROOT 0

struct callgraph;

struct cg_node {
	uint32_t frame;        /* CG_NONE for the root */
	uint32_t parent;
	uint32_t first_child;  /* CG_NONE when a leaf */
	uint32_t next_sibling; /* CG_NONE when last */
};

struct cg_value {
	uint64_t self, total;                 /* period */
	uint64_t self_samples, total_samples;
};

struct callgraph *callgraph__new(int nr_events);
void callgraph__free(struct callgraph *cg);

/*
 * Add a path of n frames below node `from` (CG_ROOT for the top), outermost
 * first: every node on it gains total, the last one gains self too.
 * Returns the last node, or CG_NONE on ENOMEM.
 */
uint32_t callgraph__add(struct callgraph *cg, uint32_t from, const uint32_t *frames, size_t n,
			int event, uint64_t samples, uint64_t period);

/* The same with the frames given innermost first (as samples store them). */
uint32_t callgraph__add_reversed(struct callgraph *cg, uint32_t from, const uint32_t *frames,
				 size_t n, int event, uint64_t samples, uint64_t period);

size_t callgraph__nr_nodes(const struct callgraph *cg);
const struct cg_node *callgraph__node(const struct callgraph *cg, uint32_t idx);
const struct cg_value *callgraph__value(const struct callgraph *cg, uint32_t idx, int event);

/* Order every node's children by total of `event`, largest first. */
int callgraph__sort(struct callgraph *cg, int event);

#endif
