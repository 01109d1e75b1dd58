// SPDX-License-Identifier: GPL-2.0-only
/*
 * perf-PID.map files written by JITs: "START SIZE name" per line, hex with
 * or without 0x, the name being the rest of the line. Later lines win over
 * earlier ones at the same start (code re-JITted in place).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/sym_internal.h"
#include "util/hex.h"
#include "util/vec.h"

#define PERFMAP_FILE_MAX (1u << 30)

struct perfmap {
	char *buf; /* owned copy, names point into it */
	struct sym_entry *e;
	size_t nr;
};

static const char *hex_field(const char *p, const char *end, uint64_t *out)
{
	uint64_t v;

	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (end - p >= 2 && p[0] == '0' && (p[1] | 0x20) == 'x')
		p += 2;
	p = hex_parse(p, end, &v);
	if (!p || p == end || (*p != ' ' && *p != '\t'))
		return NULL;
	*out = v;
	return p;
}

static int perfmap__line(struct perfmap *m, char *p, char *end, size_t *cap)
{
	uint64_t start, size;
	const char *q;
	char *name;
	struct sym_entry *e;

	q = hex_field(p, end, &start);
	if (!q)
		return 0;
	q = hex_field(q, end, &size);
	if (!q || !size || start + size < start)
		return 0;
	while (q < end && (*q == ' ' || *q == '\t'))
		q++;
	name = p + (q - p);
	while (end > name && (end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
		*--end = '\0';
	if (name == end)
		return 0;
	if (vec__reserve((void **)&m->e, cap, m->nr + 1, sizeof(*m->e), 256))
		return -ENOMEM;
	e = &m->e[m->nr];
	e->start = start;
	e->size = size;
	e->name = name;
	e->module = NULL;
	e->bind = 0;
	e->seq = (uint32_t)m->nr;
	m->nr++;
	return 0;
}

/* The newcomer at an already seen start replaces it: it was written later. */
static int perfmap__prefer(const struct sym_entry *a, const struct sym_entry *b)
{
	return a->seq > b->seq;
}

/* Parse a perf map image; malformed lines are skipped. NULL only when out of memory. */
struct perfmap *perfmap__parse(const char *buf, size_t len)
{
	struct perfmap *m = calloc(1, sizeof(*m));
	size_t cap = 0;
	char *p, *end, *nl;

	if (!m)
		return NULL;
	m->buf = malloc(len + 1);
	if (!m->buf)
		goto cleanup;
	memcpy(m->buf, buf, len);
	m->buf[len] = '\0';
	p = m->buf;
	end = m->buf + len;
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		*nl = '\0';
		/* An embedded NUL ends the line for the name's sake. */
		if (m->nr >= UINT32_MAX - 1 || perfmap__line(m, p, p + strlen(p), &cap) < 0)
			goto cleanup;
		p = nl + 1;
	}
	m->nr = sym_entries__finish(m->e, m->nr, 0, perfmap__prefer);
	return m;
cleanup:
	perfmap__free(m);
	return NULL;
}

struct perfmap *perfmap__load(const char *path, int *err)
{
	struct perfmap *m;
	char *buf;
	size_t len;
	int ret;

	ret = sym_read_file(path, PERFMAP_FILE_MAX, &buf, &len);
	if (ret < 0) {
		*err = ret;
		return NULL;
	}
	m = perfmap__parse(buf, len);
	free(buf);
	*err = m ? 0 : -ENOMEM;
	return m;
}

void perfmap__free(struct perfmap *m)
{
	if (!m)
		return;
	free(m->e);
	free(m->buf);
	free(m);
}

size_t perfmap__nr(const struct perfmap *m)
{
	return m->nr;
}

/* Entries may overlap (a big stub around small ones): look back a little past
 * the nearest start so a containing entry is still found. */
const struct sym_entry *perfmap__find(const struct perfmap *m, uint64_t addr)
{
	const struct sym_entry *e = sym_entries__find(m->e, m->nr, addr);
	size_t i, n;

	if (e || !m->nr)
		return e;
	for (i = sym_entries__upto(m->e, m->nr, addr), n = 0; i-- > 0 && n < 16; n++)
		if (addr - m->e[i].start < m->e[i].size)
			return &m->e[i];
	return NULL;
}
