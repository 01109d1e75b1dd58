/* SPDX-License-Identifier: GPL-2.0-only */
/* Sorting (key, tiebreak) pairs that arrive as a few sorted runs. */
#ifndef OFFCPU_UTIL_PAIRSORT_H
#define OFFCPU_UTIL_PAIRSORT_H

#include <stddef.h>
#include <stdint.h>

struct u64pair {
	uint64_t a, b;
};

/*
 * Sort v[0..n) by (a, b) ascending, with tmp (n entries) as scratch.
 * A natural merge sort: it merges the ascending runs already there, so
 * input made of k sorted runs costs n * log2(k) moves, nothing when sorted.
 */
void pairsort(struct u64pair *v, size_t n, struct u64pair *tmp);

/*
 * Sort v[0..n) by a ascending, equal a's in the order they came, with tmp
 * (n entries) as scratch. An LSD radix sort over the bits where the a's
 * differ: for input in no order (a symbol table's hash order), where a
 * merge sort mispredicts a branch every other move.
 */
void pairsort_by_a(struct u64pair *v, size_t n, struct u64pair *tmp);

#endif
