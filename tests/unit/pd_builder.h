/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Test helper: builds small perf.data files byte by byte, independently of
 * the project's writer, so reader tests check the format itself. Up to four
 * attrs are supported with their own sample_type (all carry IDENTIFIER
 * when there are several, as perf requires), records are appended in the
 * order given, and features EVENT_DESC and offcpu are written at the end.
 */
#ifndef PD_BUILDER_H
#define PD_BUILDER_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perfdata/perf_format.h"

struct pdb {
	uint8_t *buf;
	size_t len, cap;
	struct perf_event_attr attr[4];
	uint64_t id[4];
	const char *name[4];
	int nr_attrs;
	size_t data_start;
	const char *counter_name;
	uint64_t counter_value;
};

static inline void pdb_put(struct pdb *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 4096;
		b->buf = realloc(b->buf, b->cap);
	}
	memcpy(b->buf + b->len, p, n);
	b->len += n;
}

static inline void pdb_u64(struct pdb *b, uint64_t v) { pdb_put(b, &v, 8); }
static inline void pdb_u32(struct pdb *b, uint32_t v) { pdb_put(b, &v, 4); }

static inline void pdb_init(struct pdb *b, int nr_attrs, const uint64_t *sample_type,
		     const char *const *names)
{
	memset(b, 0, sizeof(*b));
	b->nr_attrs = nr_attrs;
	for (int i = 0; i < nr_attrs; i++) {
		b->attr[i].size = PERF_ATTR_SIZE_WRITE;
		b->attr[i].type = PERF_TYPE_SOFTWARE;
		b->attr[i].config = i == 0 ? PERF_COUNT_SW_CPU_CLOCK : PERF_COUNT_SW_BPF_OUTPUT;
		b->attr[i].sample_type = sample_type[i];
		b->attr[i].sample_id_all = 1;
		b->id[i] = 100 + i;
		b->name[i] = names ? names[i] : NULL;
	}
	/* header placeholder, attrs (+ids section), ids, then data */
	uint8_t zero[104] = { 0 };
	pdb_put(b, zero, sizeof(zero));
	size_t attrs_off = b->len, ids_off = attrs_off + nr_attrs * (PERF_ATTR_SIZE_WRITE + 16);
	for (int i = 0; i < nr_attrs; i++) {
		uint8_t a[PERF_ATTR_SIZE_WRITE] = { 0 };
		memcpy(a, &b->attr[i], sizeof(b->attr[i]) < sizeof(a) ? sizeof(b->attr[i]) : sizeof(a));
		pdb_put(b, a, sizeof(a));
		pdb_u64(b, ids_off + 8 * i);
		pdb_u64(b, 8);
	}
	for (int i = 0; i < nr_attrs; i++)
		pdb_u64(b, b->id[i]);
	b->data_start = b->len;
	struct perf_file_header *h = (void *)b->buf;
	h->magic = PERF_MAGIC2;
	h->size = 104;
	h->attr_size = PERF_ATTR_SIZE_WRITE + 16;
	h->attrs.offset = attrs_off;
	h->attrs.size = nr_attrs * (PERF_ATTR_SIZE_WRITE + 16);
	h->data.offset = b->data_start;
}

static inline void pdb_hdr(struct pdb *b, uint32_t type, uint16_t misc, uint16_t size)
{
	pdb_u32(b, type);
	pdb_put(b, &misc, 2);
	pdb_put(b, &size, 2);
}

/* sample_id_all trailer for attr 0's layout (TID, TIME, IDENTIFIER bits) */
static inline size_t pdb_trailer_size(const struct pdb *b)
{
	uint64_t st = b->attr[0].sample_type;
	return 8 * (!!(st & PERF_SAMPLE_TID) + !!(st & PERF_SAMPLE_TIME) + !!(st & PERF_SAMPLE_ID) +
		    !!(st & PERF_SAMPLE_STREAM_ID) + !!(st & PERF_SAMPLE_CPU) + !!(st & PERF_SAMPLE_IDENTIFIER));
}

static inline void pdb_trailer(struct pdb *b, uint32_t pid, uint32_t tid, uint64_t time)
{
	uint64_t st = b->attr[0].sample_type;
	if (st & PERF_SAMPLE_TID) { pdb_u32(b, pid); pdb_u32(b, tid); }
	if (st & PERF_SAMPLE_TIME) pdb_u64(b, time);
	if (st & PERF_SAMPLE_ID) pdb_u64(b, b->id[0]);
	if (st & PERF_SAMPLE_STREAM_ID) pdb_u64(b, 0);
	if (st & PERF_SAMPLE_CPU) pdb_u64(b, 0);
	if (st & PERF_SAMPLE_IDENTIFIER) pdb_u64(b, b->id[0]);
}

static inline void pdb_comm(struct pdb *b, uint32_t pid, uint32_t tid, const char *comm, uint64_t time)
{
	char name[16] = { 0 };
	strncpy(name, comm, 15);
	pdb_hdr(b, PERF_RECORD_COMM, 0, 8 + 8 + 16 + pdb_trailer_size(b));
	pdb_u32(b, pid); pdb_u32(b, tid);
	pdb_put(b, name, 16);
	pdb_trailer(b, pid, tid, time);
}

static inline void pdb_mmap2(struct pdb *b, uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
		      const char *file, uint64_t time)
{
	char name[64] = { 0 };
	strncpy(name, file, 63);
	pdb_hdr(b, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, 8 + 8 + 24 + 24 + 8 + 64 + pdb_trailer_size(b));
	pdb_u32(b, pid); pdb_u32(b, pid);
	pdb_u64(b, start); pdb_u64(b, len); pdb_u64(b, pgoff);
	uint8_t z[24] = { 0 };
	pdb_put(b, z, 24);
	pdb_u32(b, 5 /* PROT_READ|PROT_EXEC */); pdb_u32(b, 2);
	pdb_put(b, name, 64);
	pdb_trailer(b, pid, pid, time);
}

static inline void pdb_round(struct pdb *b)
{
	pdb_hdr(b, PERF_RECORD_FINISHED_ROUND_, 0, 8);
}

/* A sample of attr ai; fields written per that attr's sample_type. */
static inline void pdb_sample(struct pdb *b, int ai, uint32_t pid, uint32_t tid, uint64_t time,
		       uint64_t period, const uint64_t *ips, int nr, const void *raw, uint32_t raw_size)
{
	uint64_t st = b->attr[ai].sample_type;
	size_t size = 8;

	size += 8 * (!!(st & PERF_SAMPLE_IDENTIFIER) + !!(st & PERF_SAMPLE_IP) + !!(st & PERF_SAMPLE_TID) +
		     !!(st & PERF_SAMPLE_TIME) + !!(st & PERF_SAMPLE_CPU) + !!(st & PERF_SAMPLE_PERIOD));
	if (st & PERF_SAMPLE_CALLCHAIN)
		size += 8 + 8 * nr;
	size_t raw_pad = 0;
	if (st & PERF_SAMPLE_RAW) {
		raw_pad = (8 - (4 + raw_size) % 8) % 8;
		size += 4 + raw_size + raw_pad;
	}
	pdb_hdr(b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, size);
	if (st & PERF_SAMPLE_IDENTIFIER) pdb_u64(b, b->id[ai]);
	if (st & PERF_SAMPLE_IP) pdb_u64(b, nr ? ips[0] : 0);
	if (st & PERF_SAMPLE_TID) { pdb_u32(b, pid); pdb_u32(b, tid); }
	if (st & PERF_SAMPLE_TIME) pdb_u64(b, time);
	if (st & PERF_SAMPLE_CPU) pdb_u64(b, 1);
	if (st & PERF_SAMPLE_PERIOD) pdb_u64(b, period);
	if (st & PERF_SAMPLE_CALLCHAIN) {
		pdb_u64(b, nr);
		for (int i = 0; i < nr; i++)
			pdb_u64(b, ips[i]);
	}
	if (st & PERF_SAMPLE_RAW) {
		uint8_t z[8] = { 0 };
		pdb_u32(b, raw_size + raw_pad);
		pdb_put(b, raw, raw_size);
		pdb_put(b, z, raw_pad);
	}
}

static inline void pdb_string(struct pdb *b, const char *s)
{
	uint32_t len = (strlen(s) + 1 + 63) / 64 * 64;
	char *tmp = calloc(1, len);
	strcpy(tmp, s);
	pdb_u32(b, len);
	pdb_put(b, tmp, len);
	free(tmp);
}

/* Close the data section, write the features, and save to path. */
static inline void pdb_finish(struct pdb *b, const char *path)
{
	struct perf_file_header *h = (void *)b->buf;
	size_t data_end = b->len;
	int nfeat = 1 + !!b->counter_name;

	h->data.size = data_end - b->data_start;
	h->adds_features[PERF_FEAT_EVENT_DESC / 64] |= 1ULL << (PERF_FEAT_EVENT_DESC % 64);
	if (b->counter_name)
		h->adds_features[PERF_FEAT_OFFCPU / 64] |= 1ULL << (PERF_FEAT_OFFCPU % 64);
	/* table placeholder */
	size_t tab = b->len;
	uint8_t z[32] = { 0 };
	pdb_put(b, z, 16 * nfeat);
	size_t ed = b->len;
	pdb_u32(b, b->nr_attrs);
	pdb_u32(b, PERF_ATTR_SIZE_WRITE);
	for (int i = 0; i < b->nr_attrs; i++) {
		uint8_t a[PERF_ATTR_SIZE_WRITE] = { 0 };
		memcpy(a, &b->attr[i], sizeof(b->attr[i]) < sizeof(a) ? sizeof(b->attr[i]) : sizeof(a));
		pdb_put(b, a, sizeof(a));
		pdb_u32(b, 1);
		pdb_string(b, b->name[i] ? b->name[i] : "");
		pdb_u64(b, b->id[i]);
	}
	size_t ed_end = b->len, oc = 0, oc_end = 0;
	if (b->counter_name) {
		oc = b->len;
		pdb_u32(b, 1);
		uint32_t len = (strlen(b->counter_name) + 1 + 7) / 8 * 8;
		char *tmp = calloc(1, len);
		strcpy(tmp, b->counter_name);
		pdb_u32(b, len);
		pdb_put(b, tmp, len);
		free(tmp);
		pdb_u64(b, b->counter_value);
		oc_end = b->len;
	}
	h = (void *)b->buf;
	uint64_t sec[4] = { ed, ed_end - ed, oc, oc_end - oc };
	memcpy(b->buf + tab, sec, 16 * nfeat);
	FILE *f = fopen(path, "wb");
	fwrite(b->buf, 1, b->len, f);
	fclose(f);
	free(b->buf);
	b->buf = NULL;
}

#endif
