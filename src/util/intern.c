// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/hash.h"
#include "util/intern.h"

void intern__init(struct intern *in)
{
	htab__init(&in->t, sizeof(char *));
}

void intern__free(struct intern *in)
{
	for (size_t i = 0; i < htab__n(&in->t); i++)
		free(*(char **)htab__at(&in->t, i));
	htab__free(&in->t);
}

static bool str_eq(const void *entry, const void *key)
{
	return !strcmp(*(char *const *)entry, key);
}

int intern__id(struct intern *in, const char *s, uint32_t *id)
{
	bool added;
	char **e = htab__get(&in->t, hash__str(s), str_eq, s, &added);

	if (!e)
		return -ENOMEM;
	if (added) {
		*e = strdup(s);
		if (!*e) {
			htab__unget(&in->t);
			return -ENOMEM;
		}
	}
	*id = e - (char **)in->t.v;
	return 0;
}

const char *intern__str(struct intern *in, const char *s)
{
	uint32_t id;

	return intern__id(in, s, &id) ? NULL : intern__at(in, id);
}
