// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "util/hugemem.h"
#include "util/vec.h"

#define HUGE_ALIGN ((size_t)2 << 20)

#if defined(__SANITIZE_ADDRESS__)
#define HUGEMEM_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HUGEMEM_MALLOC 1
#endif
#endif

#ifndef HUGEMEM_MALLOC
/*
 * len bytes (whole 2 MiB pages) mapped at a 2 MiB boundary, one mapping:
 * a 2 MiB page is given only to an aligned range advised whole, and
 * mremap() moves only what lies in one mapping. NULL when refused.
 */
static uint8_t *map_aligned(size_t len)
{
	uint8_t *map = mmap(NULL, len + HUGE_ALIGN, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uint8_t *p;

	if (map == MAP_FAILED)
		return NULL;
	p = (uint8_t *)(((uintptr_t)map + HUGE_ALIGN - 1) & ~(uintptr_t)(HUGE_ALIGN - 1));
	if (p > map)
		munmap(map, (size_t)(p - map));
	if (p + len < map + len + HUGE_ALIGN)
		munmap(p + len, (size_t)(map + len + HUGE_ALIGN - (p + len)));
	return p;
}
#endif

int hugemem__grow(struct hugemem *m, size_t need)
{
	size_t len;

	if (need <= m->len)
		return 0;
	len = m->len * 2 > need ? m->len * 2 : need;
	if (len > SIZE_MAX - 2 * HUGE_ALIGN)
		return -ENOMEM;
#ifdef HUGEMEM_MALLOC
	{
		uint8_t *p = realloc(m->p, len); /* not rounded up: a read past need is caught */

		if (!p)
			return -ENOMEM;
		memset(p + m->len, 0, len - m->len); /* as mmap's pages are */
		m->p = p;
		m->len = len;
		return 0;
	}
#else
	{
		uint8_t *p;

		len = (len + HUGE_ALIGN - 1) & ~(HUGE_ALIGN - 1);
		p = map_aligned(len);
		if (!p)
			return -ENOMEM;
		/*
		 * The pages move to the new place, 2 MiB ones whole (both places
		 * are aligned), and the room after them is new, zero pages.
		 */
		if (m->p && mremap(m->p, m->len, len, MREMAP_MAYMOVE | MREMAP_FIXED, p) != p) {
			munmap(p, len);
			return -ENOMEM;
		}
		madvise(p, len, MADV_HUGEPAGE); /* a hint: no error matters */
		m->p = p;
		m->len = len;
		return 0;
	}
#endif
}

void hugemem__shrink(struct hugemem *m, size_t len)
{
#ifdef HUGEMEM_MALLOC
	(void)m;
	(void)len;
#else
	len = len ? (len + HUGE_ALIGN - 1) & ~(HUGE_ALIGN - 1) : HUGE_ALIGN; /* never empty */
	if (len >= m->len)
		return;
	munmap(m->p + len, m->len - len);
	m->len = len;
#endif
}

void hugemem__free(struct hugemem *m)
{
#ifdef HUGEMEM_MALLOC
	free(m->p);
#else
	if (m->p)
		munmap(m->p, m->len);
#endif
	memset(m, 0, sizeof(*m));
}

int hugemem__reserve(struct hugemem *m, void **arr, size_t *cap, size_t used, size_t need,
		     size_t elem, size_t huge_from)
{
	if (need <= *cap)
		return 0;
	if (!elem || need > SIZE_MAX / elem)
		return -ENOMEM;
	if (m->p) { /* on hugemem already: grown where it is or moved whole */
		if (hugemem__grow(m, need * elem))
			return -ENOMEM;
	} else if (need * elem < huge_from || hugemem__grow(m, need * elem)) {
		return vec__reserve(arr, cap, need, elem, 16); /* small, or no block to be had */
	} else { /* from the heap, once */
		if (used)
			memcpy(m->p, *arr, used * elem);
		free(*arr);
	}
	*arr = m->p;
	*cap = m->len / elem;
	return 0;
}

void hugemem__free_array(struct hugemem *m, void **arr)
{
	if (m->p)
		hugemem__free(m);
	else
		free(*arr);
	*arr = NULL;
}
