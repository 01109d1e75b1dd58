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
#include "util/pairsort.h"

#define USER_TYPE_START 64 /* perf's own record types start here */
#define READER_MAX_WARNINGS 4

/*
 * The data section is read a chunk at a time ("mapped": read into a
 * buffer, see reader__map_chunk()): chunk i holds the file from
 * i << CHUNK_SHIFT on, CHUNK_OVERLAP bytes past its end, so that a record
 * that starts in it (at most 64 KiB long: its size is 16 bits) lies in it
 * whole. Only the chunks holding records still to be delivered are mapped:
 * the reader's address space and resident memory stay near the size of a
 * few rounds, whatever the size of the file. A chunk is 1 MiB: a chunk
 * still mapped for one pending record is resident whole, and with 2 MiB
 * ones perf's rounds (a few hundred KiB) kept 8 MiB mapped where 1 MiB
 * ones keep 5 (script's peak on a 100 MB recording 41 -> 37-38 MB).
 */
#define CHUNK_SHIFT 20
#define CHUNK_SIZE (UINT64_C(1) << CHUNK_SHIFT)
#define CHUNK_OVERLAP (UINT64_C(1) << 16)


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

struct id_slot {
	uint64_t id;           /* 0: empty */
	int idx;               /* the attr's */
};

struct perf_reader {
	int fd;
	const uint8_t *mem;    /* the file image of perf_reader__open_mem(), else NULL */
	uint64_t file_size;
	const uint8_t **chunks; /* chunk i's mapping (see CHUNK_SHIFT), NULL when not mapped */
	uint32_t *chunk_pending; /* records of chunk i found and not yet delivered */
	uint32_t *chunk_inflight; /* ... of them in batches handed to the consumer */
	size_t nr_chunks;
	uint8_t **spare;       /* buffers of chunks let go, for the next ones */
	size_t nr_spare, cap_spare;
	uint8_t *slab;         /* the first buffers, side by side (reader__map_chunk) */
	size_t slab_len;
	void **meta;           /* header parts read from the file (reader__meta) */
	size_t nr_meta;
	struct perf_file_header hdr;
	uint64_t data_start, data_end;
	bool data_to_eof;      /* header said data size 0 */
	bool truncated;
	const char *incomplete; /* perf_reader__incomplete() */
	bool features_cut;      /* ... only its feature sections */
	struct attr_priv *attrs;
	int nr_attrs;
	struct id_slot *ids;   /* sample id -> attr: open addressing, read-only after opening */
	size_t ids_mask;
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
/*
 * Does the file say its records are in time order? offcpu's recorder
 * writes them so, and counts any it could not (records.out_of_order, in
 * its feature section): 0 there, in a file whose features were read.
 */
bool reader__says_time_ordered(const struct perf_reader *r);
/* The index of the attr of sample id id, or -1. */
static inline int reader__id_lookup(const struct perf_reader *r, uint64_t id)
{
	size_t i;

	if (!id || !r->ids)
		return -1;
	for (i = (id * 0x9e3779b97f4a7c15ULL >> 32) & r->ids_mask; r->ids[i].id; i = (i + 1) & r->ids_mask)
		if (r->ids[i].id == id)
			return r->ids[i].idx;
	return -1;
}

/*
 * len bytes of the file at off (in_file() checked by the caller), in
 * memory until perf_reader__free(): NULL with the reason set when they
 * cannot be read.
 */
const uint8_t *reader__meta(struct perf_reader *r, uint64_t off, uint64_t len);
/*
 * Bring in ("map") the chunk holding offset off of the data section: read
 * into a spare buffer, or a new one. 0 or a negative errno (no reason set).
 */
int reader__map_chunk(struct perf_reader *r, uint64_t off);
/*
 * Ask the kernel to read [off, off + len) of the file into its page cache
 * now, in the background (nothing for a file image in memory).
 */
void reader__readahead(struct perf_reader *r, uint64_t off, uint64_t len);
/* Let chunk i go ("unmap"): its buffer becomes a spare (nothing for a file image in memory). */
void reader__unmap_chunk(struct perf_reader *r, size_t i);
/* Every chunk let go: their buffers go back to the system. */
void reader__unmap_all(struct perf_reader *r);
/* The record at off, in a mapped chunk. */
static inline const uint8_t *reader__rec(const struct perf_reader *r, uint64_t off)
{
	return r->chunks[off >> CHUNK_SHIFT] + (off & (CHUNK_SIZE - 1));
}

/* perf_records.c */
/* Decode the record at off and hand it to cb: cb's return, or a negative errno. */
int reader__deliver(struct perf_reader *r, uint64_t off, perf_reader_cb cb, void *ctx);
/* The time of the record at off (type, size read from its header), or UINT64_MAX without one. */
uint64_t reader__record_time(struct perf_reader *r, uint64_t off, uint32_t type, uint16_t size);

#endif
