/* SPDX-License-Identifier: GPL-2.0-only */
/* Lists of numbers from the command line: "1,5,7", with ranges "0-3,6". */
#ifndef OFFCPU_UTIL_IDLIST_H
#define OFFCPU_UTIL_IDLIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct id_list {
	uint64_t *v;
	size_t n, cap;
};

/*
 * Append the numbers of s (comma-separated, empty items skipped; with
 * ranges, A-B spans of 65536 at most): 0, -EINVAL on anything else, or
 * -ENOMEM. Appending lets an option given twice add up.
 */
int id_list__parse(struct id_list *l, const char *s, bool ranges);
bool id_list__has(const struct id_list *l, uint64_t v);
void id_list__free(struct id_list *l);

#endif
