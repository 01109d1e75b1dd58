/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Binary search, written once: the partition point of a sorted array.
 * Every lookup in a sorted table (symbols by address, maps by address,
 * processes by pid, unwind tables by file) asks the same question: how
 * many leading elements come before the key. A caller says it with a
 * predicate on an index; "found" is then a look at that index.
 */
#ifndef OFFCPU_UTIL_BSEARCH_H
#define OFFCPU_UTIL_BSEARCH_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The first index i in [0, n) for which after(ctx, i) is true, n when it is
 * true for none. after() must be false, then true, along the array (false
 * for the elements before the key, true from it on). Inline, so that the
 * predicate, a static function of the caller, is inlined too.
 */
static inline size_t bsearch_first(size_t n, bool (*after)(const void *ctx, size_t i),
				   const void *ctx)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (after(ctx, mid))
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

#endif
