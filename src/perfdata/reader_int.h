/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The perf.data reader's parts, shared by its files only:
 *   perf_reader.c   opening: the header, attrs and feature sections; what
 *                   callers ask of a file
 *   perf_records.c  one record at a file offset decoded (samples, side-band)
 *   perf_order.c    the walk: records located, timed and delivered in
 *                   perf's ordered-events order (perf_reader__process)
 */
#ifndef OFFCPU_PERFDATA_READER_INT_H
#define OFFCPU_PERFDATA_READER_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "perfdata/perf_reader.h"
#include "util/htab.h"
#include "util/pairsort.h"

#define USER_TYPE_START 64 /* perf's own record types start here */
#define READER_MAX_WARNINGS 4


struct buildid_ent {
	char *filename;
	uint8_t id[20];
	uint8_t size;
};

struct counter_ent {
	char *name;
	uint64_t value;
};

struct attr_priv {
	struct perf_evattr pub;
	uint64_t sample_type;
	bool sample_id_all;
	int id_trailer_size; /* bytes of sample_id_all trailer on non-samples */
};

struct perf_reader {
	int fd;
	const uint8_t *map;
	size_t map_size;
	bool borrowed;         /* map is the caller's memory (open_mem): never unmapped */
	struct perf_file_header hdr;
	uint64_t data_start, data_end;
	bool data_to_eof;      /* header said data size 0 */
	bool truncated;
	const char *incomplete; /* perf_reader__incomplete() */
	bool features_cut;      /* ... only its feature sections */
	struct attr_priv *attrs;
	int nr_attrs;
	struct htab ids;       /* sample id -> attr (struct id_ent, perf_reader.c) */
	struct buildid_ent *bids;
	size_t nr_bids;
	struct counter_ent *counters;
	int nr_counters;
	bool has_clockid, has_sample_time;
	const uint8_t *vdso;   /* in the mapping */
	uint64_t vdso_size;
	uint8_t vdso_bid[24];
	uint32_t vdso_bid_size;
	uint64_t clock_res, first_time, last_time;
	uint64_t lost;
	uint64_t unknown_id;
	uint64_t released;     /* pages below this offset were given back */
	struct u64pair *q;  /* queued records: (time, file offset) */
	size_t nq, qcap;
	char err[256];
	char *warnings[READER_MAX_WARNINGS]; /* perf_reader__warning() */
	int nr_warnings;
};

/* Set the reader's error message; returns ret. */
int reader__set_err(struct perf_reader *r, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Keep a warning for perf_reader__warning() (the reader never prints): 0 or -ENOMEM. */
int reader__warn(struct perf_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The index of the attr of sample id id, or -1. */
int reader__id_lookup(const struct perf_reader *r, uint64_t id);

/* perf_records.c */
/* Decode the record at off and hand it to cb: cb's return, or a negative errno. */
int reader__deliver(struct perf_reader *r, uint64_t off, perf_reader_cb cb, void *ctx);
/* The time of the record at off (type, size read from its header), or UINT64_MAX without one. */
uint64_t reader__record_time(struct perf_reader *r, uint64_t off, uint32_t type, uint16_t size);

#endif
