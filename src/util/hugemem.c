// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "util/hugemem.h"

#define HUGE_ALIGN ((size_t)2 << 20)

#if defined(__SANITIZE_ADDRESS__)
#define HUGEMEM_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HUGEMEM_MALLOC 1
#endif
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
		m->p = m->map = p;
		m->len = m->map_len = len;
		return 0;
	}
#else
	{
		/*
		 * Whole 2 MiB pages, and room to put p on a 2 MiB boundary: a
		 * 2 MiB page is given only to an aligned range advised whole.
		 */
		size_t map_len;

		len = (len + HUGE_ALIGN - 1) & ~(HUGE_ALIGN - 1);
		map_len = len + HUGE_ALIGN;
		uint8_t *map, *p;

		if (m->map)
			map = mremap(m->map, m->map_len, map_len, MREMAP_MAYMOVE);
		else
			map = mmap(NULL, map_len, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (map == MAP_FAILED)
			return -ENOMEM;
		/* moved by mremap: the contents keep their offset in the mapping */
		p = m->map ? map + (m->p - (uint8_t *)m->map) :
			     (uint8_t *)(((uintptr_t)map + HUGE_ALIGN - 1) & ~(uintptr_t)(HUGE_ALIGN - 1));
		madvise(p, len, MADV_HUGEPAGE); /* a hint: no error matters */
		m->map = map;
		m->map_len = map_len;
		m->p = p;
		m->len = map_len - (size_t)(p - map);
		return 0;
	}
#endif
}

void hugemem__free(struct hugemem *m)
{
#ifdef HUGEMEM_MALLOC
	free(m->map);
#else
	if (m->map)
		munmap(m->map, m->map_len);
#endif
	memset(m, 0, sizeof(*m));
}
