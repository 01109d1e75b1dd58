// SPDX-License-Identifier: GPL-2.0-only
/*
 * Records arrive from several sources (one perf ring per CPU, the BPF ring
 * buffer, the drained sums) each in its own order. They are queued here and
 * written oldest first, up to a time below which every source is known to
 * be complete, so that the file is in time order as perf expects.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "perfdata/perf_writer.h"
#include "record/record.h"
#include "util/vec.h"

struct merge_ent {
	uint64_t time;
	uint64_t seq; /* arrival order: ties keep it */
	size_t off;
	size_t len;
};

struct merge {
	struct merge_ent *ents;
	size_t nr, cap;
	uint8_t *data;
	size_t used, size;
	uint64_t seq;
	uint64_t last_written;
	uint64_t late;
};

struct merge *merge__new(void)
{
	return calloc(1, sizeof(struct merge));
}

void merge__free(struct merge *m)
{
	if (!m)
		return;
	free(m->ents);
	free(m->data);
	free(m);
}

int merge__add(struct merge *m, uint64_t time, const void *rec, size_t len)
{
	if (vec__reserve((void **)&m->ents, &m->cap, m->nr + 1, sizeof(*m->ents), 4096) ||
	    vec__reserve((void **)&m->data, &m->size, m->used + len, 1, 1 << 20))
		return -ENOMEM;
	memcpy(m->data + m->used, rec, len);
	m->ents[m->nr++] = (struct merge_ent){ time, m->seq++, m->used, len };
	m->used += len;
	return 0;
}

static int ent_cmp(const void *a, const void *b)
{
	const struct merge_ent *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int merge__flush(struct merge *m, uint64_t upto, struct perf_writer *w,
		 int (*on_rec)(void *ctx, void *rec, size_t *len), void *ctx)
{
	size_t i, keep = 0, kept_bytes = 0;
	uint8_t *rest = NULL;
	int err = 0;

	if (m->nr) /* qsort takes no NULL array, even empty */
		qsort(m->ents, m->nr, sizeof(*m->ents), ent_cmp);
	for (i = 0; i < m->nr && m->ents[i].time <= upto; i++) {
		void *rec = m->data + m->ents[i].off;
		size_t len = m->ents[i].len;

		if (m->ents[i].time < m->last_written)
			m->late++;
		else
			m->last_written = m->ents[i].time;
		if (on_rec && !on_rec(ctx, rec, &len))
			continue;
		err = perf_writer__write(w, rec, len);
		if (err)
			return err;
	}
	/* compact what stays queued */
	for (size_t j = i; j < m->nr; j++)
		kept_bytes += m->ents[j].len;
	if (kept_bytes) {
		rest = malloc(kept_bytes);
		if (!rest)
			return -ENOMEM;
	}
	for (size_t j = i, off = 0; j < m->nr; j++) {
		memcpy(rest + off, m->data + m->ents[j].off, m->ents[j].len);
		m->ents[keep] = m->ents[j];
		m->ents[keep].off = off;
		off += m->ents[j].len;
		keep++;
	}
	if (rest) {
		memcpy(m->data, rest, kept_bytes);
		free(rest);
	}
	m->used = kept_bytes;
	m->nr = keep;
	if (i)
		err = perf_writer__finished_round(w);
	return err;
}

size_t merge__bytes(const struct merge *m)
{
	return m->used;
}

uint64_t merge__late(const struct merge *m)
{
	return m->late;
}
