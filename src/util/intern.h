/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * String interning: one copy of each distinct string, with a dense id
 * (its order of arrival) and a stable address, both valid until
 * intern__free(). Equal strings have equal ids and addresses, so callers
 * compare and hash them as integers.
 */
#ifndef OFFCPU_UTIL_INTERN_H
#define OFFCPU_UTIL_INTERN_H

#include <stddef.h>
#include <stdint.h>

#include "util/htab.h"

struct intern {
	struct htab t; /* entries: char * (owned) */
};

void intern__init(struct intern *in);
void intern__free(struct intern *in);

/* The id of s, added on first sight: 0, or -ENOMEM. */
int intern__id(struct intern *in, const char *s, uint32_t *id);
/* The interned copy of s, or NULL (ENOMEM). */
const char *intern__str(struct intern *in, const char *s);

static inline size_t intern__n(const struct intern *in)
{
	return htab__n(&in->t);
}

/* The string of an id below intern__n(). */
static inline const char *intern__at(const struct intern *in, uint32_t id)
{
	return *(char **)htab__at(&in->t, id);
}

#endif
