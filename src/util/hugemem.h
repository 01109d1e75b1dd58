/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A growable block of anonymous memory on 2 MiB pages where the kernel
 * gives them (MADV_HUGEPAGE). For big tables filled once and kept: on a
 * paravirtualized VM a 4 KiB page's first touch costs about 10 us, and
 * a table of a few MB touched page by page costs milliseconds that a
 * handful of 2 MiB faults do not. It grows by mremap(), so its contents
 * move without being copied: keep offsets in it, not pointers, while it
 * grows. Under AddressSanitizer it is realloc()'d memory, so that reads
 * past what was asked for are caught.
 */
#ifndef OFFCPU_UTIL_HUGEMEM_H
#define OFFCPU_UTIL_HUGEMEM_H

#include <stddef.h>
#include <stdint.h>

struct hugemem {
	uint8_t *p;     /* the usable bytes, len of them; NULL before the first growth */
	size_t len;
};

/*
 * Room for at least need bytes at m->p (m zeroed, {0}, at first), contents
 * kept and the new bytes zero: 0, or -ENOMEM (m unchanged). Grows to at
 * least twice its size.
 */
int hugemem__grow(struct hugemem *m, size_t need);

/*
 * Keep len bytes (the contents stay where they are): the whole 2 MiB pages
 * past them are unmapped. Nothing is given back under AddressSanitizer.
 */
void hugemem__shrink(struct hugemem *m, size_t len);

/* Give it back; m is {0} after. */
void hugemem__free(struct hugemem *m);

/*
 * An array that starts on the heap and moves to hugemem m once it needs
 * huge_from bytes (for an array built in one go, where small pages cost
 * their first touches): room for need elements of elem bytes at *arr (*cap
 * of them now, the first used of them in use, copied when it moves).
 * Doubles as vec__reserve() does. 0, or -ENOMEM with the array as it was.
 */
int hugemem__reserve(struct hugemem *m, void **arr, size_t *cap, size_t used, size_t need,
		     size_t elem, size_t huge_from);

/* Free such an array, wherever it is; *arr is NULL and m {0} after. */
void hugemem__free_array(struct hugemem *m, void **arr);

#endif
