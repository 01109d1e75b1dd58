// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/vec.h"

int vec__grow(void **arr, size_t *cap, size_t need, size_t elem, size_t min)
{
	size_t nc = *cap ? *cap : min;
	void *p;

	if (need <= *cap)
		return 0;
	while (nc < need) {
		if (nc > SIZE_MAX / 2 / elem)
			return -ENOMEM;
		nc *= 2;
	}
	if (nc > SIZE_MAX / elem)
		return -ENOMEM;
	p = realloc(*arr, nc * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = nc;
	return 0;
}

int vec__grow_zeroed(void **arr, size_t *cap, size_t need, size_t elem, size_t min)
{
	size_t old = *cap;

	if (vec__grow(arr, cap, need, elem, min))
		return -ENOMEM;
	memset((char *)*arr + old * elem, 0, (*cap - old) * elem);
	return 0;
}

void *vec__zalloc(size_t n, size_t elem)
{
	size_t bytes;
	void *p;

	if (elem && n > SIZE_MAX / elem)
		return NULL;
	bytes = n * elem;
	p = malloc(bytes ? bytes : 1);
	if (p)
		memset(p, 0, bytes);
	return p;
}

void *vec__push(void **arr, size_t *n, size_t *cap, size_t elem)
{
	void *e;

	if (vec__reserve(arr, cap, *n + 1, elem, 16))
		return NULL;
	e = (char *)*arr + *n * elem;
	memset(e, 0, elem);
	(*n)++;
	return e;
}
