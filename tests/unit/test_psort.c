// SPDX-License-Identifier: GPL-2.0-only
/*
 * psort (util/psort.h) against qsort_r: arrays above and below the size
 * it splits at, with many equal keys, must come out the same, element for
 * element, equal keys in the same order (each element carries its
 * original place, which the comparison does not look at).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "util/psort.h"

struct elem {
	uint32_t key;
	uint32_t place;
	char pad[40]; /* a report entry's size, not a word's */
};

static int cmp(const void *a, const void *b, void *ctx)
{
	const struct elem *x = a, *y = b;

	__atomic_fetch_add((int *)ctx, 1, __ATOMIC_RELAXED); /* the context reaches both threads */
	return x->key < y->key ? -1 : x->key > y->key;
}

static void check(size_t n, uint32_t keys)
{
	struct elem *a = calloc(n ? n : 1, sizeof(*a)), *b = calloc(n ? n : 1, sizeof(*b));
	uint64_t x = 88172645463325252ULL;
	int calls = 0, dummy = 0;

	assert_non_null(a);
	assert_non_null(b);
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		a[i].key = (uint32_t)(x % keys);
		a[i].place = (uint32_t)i;
	}
	memcpy(b, a, n * sizeof(*a));
	qsort_r(a, n, sizeof(*a), cmp, &dummy);
	psort(b, n, sizeof(*b), cmp, &calls);
	assert_memory_equal(a, b, n * sizeof(*a));
	if (n > 1)
		assert_true(calls > 0);
	free(a);
	free(b);
}

static void test_psort_small(void **state)
{
	(void)state;
	check(0, 10);
	check(1, 10);
	check(1000, 10);
}

static void test_psort_split(void **state)
{
	(void)state;
	check(100000, 7);      /* mostly ties */
	check(100001, 100000); /* mostly distinct, odd count */
	check(16384, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_psort_small),
		cmocka_unit_test(test_psort_split),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
