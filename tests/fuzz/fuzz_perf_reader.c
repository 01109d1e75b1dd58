// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzz target: the perf.data reader (src/perfdata/perf_reader.c) on a file
 * image in heap memory, so that AddressSanitizer sees a read one byte past
 * the image. Every record handed out is read whole (callchain, raw data,
 * strings, build ids) and every feature getter is called: what the reader
 * vouches for must be inside the image.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "perfdata/perf_reader.h"

static volatile uint64_t sink;

struct walk {
	const struct perf_reader *r;
	size_t nr;
};

static int on_rec(void *ctx, const struct perf_rec *rec)
{
	const uint8_t *p = rec->raw, *bid;
	uint64_t sum = rec->time + rec->file_offset;
	struct walk *w = ctx;
	size_t bsz = 0;

	for (size_t i = 0; i < rec->size; i++)
		sum += p[i];
	switch (rec->type) {
	case PERF_RECORD_SAMPLE: {
		const struct perf_sample *s = &rec->sample;

		sum += s->evattr->attr.type + strlen(s->evattr->name);
		for (uint64_t i = 0; i < s->nr_callchain; i++)
			sum += perf_sample__ip(s, i);
		for (uint32_t i = 0; i < s->raw_size; i++)
			sum += ((const uint8_t *)s->raw)[i];
		sum += s->ip + s->pid + s->tid + s->period + s->cpu + s->id + s->cpumode;
		break;
	}
	case PERF_RECORD_COMM:
		sum += strlen(rec->comm.comm) + rec->comm.pid;
		break;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		sum += strlen(rec->mmap.filename) + rec->mmap.start + rec->mmap.len + rec->mmap.pgoff;
		for (int i = 0; rec->mmap.build_id && i < rec->mmap.build_id_size; i++)
			sum += rec->mmap.build_id[i];
		bid = perf_reader__build_id(w->r, rec->mmap.filename, &bsz);
		for (size_t i = 0; bid && i < bsz; i++)
			sum += bid[i];
		break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		sum += rec->fork.pid + rec->fork.ppid;
		break;
	case PERF_RECORD_LOST:
		sum += rec->lost.lost;
		break;
	}
	sink += sum;
	/* stop a walk that goes on too long, as a caller may */
	return ++w->nr > 100000 ? -1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* an exact-size heap copy: the byte after it is a redzone */
	uint8_t *img = malloc(size ? size : 1);
	struct perf_reader *r;
	char err[256];
	uint64_t a, b;
	struct walk w = { 0 };

	if (!img)
		return 0;
	memcpy(img, data, size);
	r = perf_reader__open_mem(img, size, "fuzz.data", err, sizeof(err));
	if (!r) {
		if (!memchr(err, 0, sizeof(err)))
			abort();
		free(img);
		return 0;
	}
	for (int i = 0; i < perf_reader__nr_attrs(r); i++) {
		const struct perf_evattr *ea = perf_reader__attr(r, i);

		sink += ea->attr.sample_type + strlen(ea->name);
	}
	for (int i = 0; i < perf_reader__nr_offcpu_counters(r); i++) {
		const char *name;

		if (perf_reader__offcpu_counter(r, i, &name, &a))
			sink += strlen(name) + a;
	}
	for (int bit = 0; bit < 256; bit++)
		sink += perf_reader__has_feature(r, bit);
	if (perf_reader__clockid(r, &a))
		sink += a;
	if (perf_reader__sample_time(r, &a, &b))
		sink += a + b;
	w.r = r;
	perf_reader__process(r, on_rec, &w);
	sink += strlen(perf_reader__error(r)) + perf_reader__lost(r) + perf_reader__truncated(r);
	perf_reader__free(r);
	free(img);
	return 0;
}
