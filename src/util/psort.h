/* SPDX-License-Identifier: GPL-2.0-only */
/* qsort_r on two cores. */
#ifndef OFFCPU_UTIL_PSORT_H
#define OFFCPU_UTIL_PSORT_H

#include <stddef.h>

typedef int (*psort_cmp_fn)(const void *a, const void *b, void *ctx);

/*
 * Sort v[0..n) (elements of size bytes) as qsort_r(v, n, size, cmp, ctx)
 * does, the halves sorted in two threads and then merged: for the sorts
 * at the end of a report, which run while the other core is idle. Equal
 * elements keep the order glibc's qsort_r gives them (a stable merge of
 * its stable halves). cmp must be safe to call from two threads at once.
 * Small arrays, or no memory or thread for the split, sort in this
 * thread. Never fails.
 */
void psort(void *v, size_t n, size_t size, psort_cmp_fn cmp, void *ctx);

#endif
