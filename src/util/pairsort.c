// SPDX-License-Identifier: GPL-2.0-only
/*
 * Natural merge sort of u64 pairs. Written here rather than taken from
 * qsort(): the records of a perf.data round come as one sorted run per CPU
 * buffer, which a merge of runs sorts in a pass or two, where qsort's
 * comparisons through a function pointer cost most of the sort.
 */
#include <stdbool.h>
#include <string.h>

#include "util/pairsort.h"

static inline bool lt(const struct u64pair *x, const struct u64pair *y)
{
	return x->a < y->a || (x->a == y->a && x->b < y->b);
}

/* End of the ascending run starting at i. */
static size_t run_end(const struct u64pair *v, size_t i, size_t n)
{
	while (i + 1 < n && !lt(&v[i + 1], &v[i]))
		i++;
	return i + 1;
}

static void merge(const struct u64pair *x, size_t nx, const struct u64pair *y, size_t ny,
		  struct u64pair *out)
{
	size_t i = 0, j = 0;

	while (i < nx && j < ny)
		*out++ = lt(&y[j], &x[i]) ? y[j++] : x[i++];
	memcpy(out, x + i, (nx - i) * sizeof(*x));
	memcpy(out + (nx - i), y + j, (ny - j) * sizeof(*y));
}

void pairsort(struct u64pair *v, size_t n, struct u64pair *tmp)
{
	struct u64pair *src = v, *dst = tmp, *t;

	if (n < 2 || run_end(v, 0, n) == n)
		return;
	for (;;) {
		size_t i = 0, runs = 0;

		while (i < n) {
			size_t j = run_end(src, i, n), k = j < n ? run_end(src, j, n) : n;

			merge(src + i, j - i, src + j, k - j, dst + i);
			i = k;
			runs++;
		}
		t = src;
		src = dst;
		dst = t;
		if (runs == 1)
			break;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
}

#define RADIX_BITS 11
#define RADIX (1u << RADIX_BITS)

void pairsort_by_a(struct u64pair *v, size_t n, struct u64pair *tmp)
{
	struct u64pair *src = v, *dst = tmp, *t;
	uint64_t differ = 0;
	size_t count[RADIX];

	for (size_t i = 1; i < n; i++)
		differ |= v[i].a ^ v[0].a;
	for (unsigned int shift = 0; shift < 64 && differ >> shift; shift += RADIX_BITS) {
		size_t sum = 0;

		if (!((differ >> shift) & (RADIX - 1)))
			continue; /* every a has the same digit here */
		memset(count, 0, sizeof(count));
		for (size_t i = 0; i < n; i++)
			count[(src[i].a >> shift) & (RADIX - 1)]++;
		for (size_t d = 0; d < RADIX; d++) {
			size_t c = count[d];

			count[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[count[(src[i].a >> shift) & (RADIX - 1)]++] = src[i];
		t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
}
