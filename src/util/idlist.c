// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/idlist.h"
#include "util/vec.h"

/* One item, "A" or "A-B", into l. */
static int parse_item(struct id_list *l, const char *tok, bool ranges)
{
	char *end;
	unsigned long long a = strtoull(tok, &end, 10), b = a;

	if (end == tok)
		return -EINVAL;
	if (*end == '-' && ranges) {
		char *e2;

		b = strtoull(end + 1, &e2, 10);
		if (e2 == end + 1 || *e2 || b < a || b - a > 65536)
			return -EINVAL;
	} else if (*end) {
		return -EINVAL;
	}
	for (unsigned long long v = a;; v++) { /* b may be the largest number: no v <= b */
		uint64_t *e = vec__push((void **)&l->v, &l->n, &l->cap, sizeof(*l->v));

		if (!e)
			return -ENOMEM;
		*e = v;
		if (v == b)
			return 0;
	}
}

int id_list__parse(struct id_list *l, const char *s, bool ranges)
{
	char *dup = strdup(s), *save = NULL, *tok;
	int err = 0;

	if (!dup)
		return -ENOMEM;
	for (tok = strtok_r(dup, ",", &save); tok && !err; tok = strtok_r(NULL, ",", &save))
		err = parse_item(l, tok, ranges);
	free(dup);
	return err;
}

bool id_list__has(const struct id_list *l, uint64_t v)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i] == v)
			return true;
	return false;
}

void id_list__free(struct id_list *l)
{
	free(l->v);
	memset(l, 0, sizeof(*l));
}
