// SPDX-License-Identifier: GPL-2.0-only
/*
 * Two-thread sort: qsort_r on each half, one half in a thread of its own,
 * then one merge pass. Written here: glibc has no parallel sort, and a
 * report's last steps (sorting its entries) otherwise run on one core
 * while the other waits.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/psort.h"

/* Below this many elements a thread costs more than it saves. */
#define PSORT_MIN 16384

struct half {
	void *v;
	size_t n, size;
	psort_cmp_fn cmp;
	void *ctx;
};

static void *sort_half(void *arg)
{
	struct half *h = arg;

	qsort_r(h->v, h->n, h->size, h->cmp, h->ctx);
	return NULL;
}

/* Merge the sorted runs a[0..na) and b[0..nb) into out; ties take a's first (stable). */
static void merge(const char *a, size_t na, const char *b, size_t nb, char *out, size_t size,
		  psort_cmp_fn cmp, void *ctx)
{
	const char *ea = a + na * size, *eb = b + nb * size;

	while (a < ea && b < eb) {
		if (cmp(b, a, ctx) < 0) {
			memcpy(out, b, size);
			b += size;
		} else {
			memcpy(out, a, size);
			a += size;
		}
		out += size;
	}
	memcpy(out, a, ea - a);
	memcpy(out + (ea - a), b, eb - b);
}

void psort(void *v, size_t n, size_t size, psort_cmp_fn cmp, void *ctx)
{
	struct half lo = { .v = v, .n = n / 2, .size = size, .cmp = cmp, .ctx = ctx };
	char *tmp = NULL;
	pthread_t th;

	if (n >= PSORT_MIN && size && n <= SIZE_MAX / size)
		tmp = malloc(n * size);
	if (!tmp || pthread_create(&th, NULL, sort_half, &lo)) {
		free(tmp);
		if (n)
			qsort_r(v, n, size, cmp, ctx);
		return;
	}
	qsort_r((char *)v + lo.n * size, n - lo.n, size, cmp, ctx);
	pthread_join(th, NULL);
	merge(v, lo.n, (char *)v + lo.n * size, n - lo.n, tmp, size, cmp, ctx);
	memcpy(v, tmp, n * size);
	free(tmp);
}
