/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Growable arrays kept as the caller's own (T *arr, size_t n, size_t cap):
 * room is made geometrically, so n appends cost O(n) copies in all.
 */
#ifndef OFFCPU_UTIL_VEC_H
#define OFFCPU_UTIL_VEC_H

#include <stddef.h>

/* vec__reserve() when there is no room yet: the array reallocated. */
int vec__grow(void **arr, size_t *cap, size_t need, size_t elem, size_t min);

/*
 * Make room for need elements of elem bytes in *arr (*cap of them now),
 * doubling from at least min. 0, or -ENOMEM with *arr as it was. Inline:
 * the hot loops call it for every sample, and almost always there is room.
 */
static inline int vec__reserve(void **arr, size_t *cap, size_t need, size_t elem, size_t min)
{
	return need <= *cap ? 0 : vec__grow(arr, cap, need, elem, min);
}

/* vec__reserve_zeroed() when there is no room yet: grown, the new room zeroed. */
int vec__grow_zeroed(void **arr, size_t *cap, size_t need, size_t elem, size_t min);

/*
 * vec__reserve() for an array indexed by id (a table of "seen" marks or
 * ids + 1): the room it adds is zeroed. 0, or -ENOMEM with *arr as it was.
 * Inline like vec__reserve(): the profile and the feed check a sample's
 * id with it.
 */
static inline int vec__reserve_zeroed(void **arr, size_t *cap, size_t need, size_t elem, size_t min)
{
	return need <= *cap ? 0 : vec__grow_zeroed(arr, cap, need, elem, min);
}

/*
 * n zeroed elements of elem bytes, every page written now; NULL on
 * ENOMEM or overflow. For hash tables' slot arrays: calloc leaves a large
 * block's pages unmapped, so a table probed before it is written maps
 * each page to the zero page, then faults it again at the first write
 * (copy on write), which flushes the TLB of every CPU the process's
 * threads run on.
 */
void *vec__zalloc(size_t n, size_t elem);

/* Append one zeroed element: its address, or NULL (ENOMEM). */
void *vec__push(void **arr, size_t *n, size_t *cap, size_t elem);

#endif
