/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * perf.data reader: reads a file written by offcpu or Linux perf and hands
 * its records, parsed and bounds-checked, to a callback in time order
 * (perf's FINISHED_ROUND semantics). The data section is read a chunk at
 * a time, only the chunks holding records still to be delivered (a few
 * rounds), so that files of any size (past 4 GiB too) are read in bounded
 * memory and address space; the header, attrs and the feature sections
 * read are copied in. The pointers a callback receives (strings, the
 * callchain, raw data) live until it returns.
 *
 * Every length, offset and count taken from the file is checked against
 * the file size. Errors return a negative errno and leave a one-line,
 * human-readable reason in perf_reader__error() (or the errbuf of
 * perf_reader__open() when opening fails).
 */
#ifndef OFFCPU_PERF_READER_H
#define OFFCPU_PERF_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

#include "perfdata/perf_format.h"

struct perf_reader;

/* One attr of the file, with its EVENT_DESC name (or one made up). */
struct perf_evattr {
	struct perf_event_attr attr; /* zero-extended copy */
	char name[64];
	int idx;
	bool is_offcpu;              /* "offcpu-time" (our BPF-output event) */
	bool is_wakeup;              /* "offcpu-wakeup" (record --wakeups) */
	bool is_sched_delay;         /* "sched-delay" (record --sched-delay) */
	bool is_time;                /* period is in ns (cpu-clock, task-clock and the above) */
	bool is_chain;               /* record --chains' "offcpu-switch", "offcpu-stack" and
					"chain-cpu-clock" (threads outside the targets): for report --chains */
};

struct perf_sample {
	const struct perf_evattr *evattr;
	uint16_t cpumode;            /* header.misc & PERF_RECORD_MISC_CPUMODE_MASK */
	uint64_t ip;
	uint32_t pid, tid;
	uint64_t time;
	uint64_t id;
	uint32_t cpu;
	uint64_t period;
	uint64_t nr_callchain;
	const void *callchain;       /* nr_callchain u64s, maybe unaligned: use perf_sample__ip() */
	uint32_t raw_size;
	const void *raw;
	/*
	 * offcpu-time, offcpu-wakeup and sched-delay: their payload decoded.
	 * When it holds perf's embedded sample (off.embedded), pid, tid,
	 * period, ip and callchain above are the embedded ones, as perf 6.14
	 * and newer take them.
	 */
	struct offcpu_fields off;
};

static inline uint64_t perf_sample__ip(const struct perf_sample *s, uint64_t i)
{
	uint64_t v;
	__builtin_memcpy(&v, (const char *)s->callchain + 8 * i, 8);
	return v;
}

/* A record handed to the callback; the union member matching type is set. */
struct perf_rec {
	uint32_t type;
	uint16_t misc;
	uint16_t size;
	uint64_t time;               /* 0 when the record has none */
	uint64_t file_offset;
	const void *raw;             /* the whole record, header included */
	union {
		struct perf_sample sample;                 /* PERF_RECORD_SAMPLE */
		struct { uint32_t pid, tid; const char *comm; } comm;
		struct {
			uint32_t pid, tid;
			uint64_t start, len, pgoff;
			const char *filename;
			const uint8_t *build_id; /* MMAP2 with PERF_RECORD_MISC_MMAP_BUILD_ID */
			uint8_t build_id_size;
			uint32_t prot, flags;
		} mmap;                                    /* MMAP and MMAP2 */
		struct { uint32_t pid, ppid, tid, ptid; } fork; /* FORK and EXIT */
		struct { uint64_t id, lost; } lost;
	};
};

/* Callback: return 0 to go on, a negative errno to stop the walk with it. */
typedef int (*perf_reader_cb)(void *ctx, const struct perf_rec *rec);

/* Open and validate header, attrs and feature sections. NULL on error. */
struct perf_reader *perf_reader__open(const char *path, char *errbuf, size_t errlen);
/* The same on a file image in memory (name is for messages); buf must outlive the reader. */
struct perf_reader *perf_reader__open_mem(const void *buf, size_t len, const char *name,
					  char *errbuf, size_t errlen);
void perf_reader__free(struct perf_reader *r);

/*
 * Walk every record in time order and call cb. Samples whose callchain or
 * fields do not fit their record are errors; a cut-off last record (or a
 * header that says data size 0) ends the walk with a warning.
 */
int perf_reader__process(struct perf_reader *r, perf_reader_cb cb, void *ctx);
const char *perf_reader__error(const struct perf_reader *r);
/*
 * What the reader found wrong in a file it still reads (an unfinished
 * recording, a cut-off last record): the i-th warning so far, NULL past
 * the last. Opening finds one at most, perf_reader__process() one more.
 * The reader prints nothing: its caller decides.
 */
const char *perf_reader__warning(const struct perf_reader *r, int i);

int perf_reader__nr_attrs(const struct perf_reader *r);
/* Bytes of records in the file (its data section, or up to its end when cut off). */
uint64_t perf_reader__data_size(const struct perf_reader *r);
const struct perf_evattr *perf_reader__attr(const struct perf_reader *r, int idx);

/* Features; each getter returns false when the file did not have it. */
bool perf_reader__has_feature(const struct perf_reader *r, int bit);
bool perf_reader__clockid(const struct perf_reader *r, uint64_t *res_ns);
bool perf_reader__sample_time(const struct perf_reader *r, uint64_t *first, uint64_t *last);
/* Build id of a file named in the BUILD_ID table, NULL if none. */
const uint8_t *perf_reader__build_id(const struct perf_reader *r, const char *filename,
				     size_t *size);
/* The i-th entry of the BUILD_ID table (the files samples hit): false past the last. */
bool perf_reader__build_id_at(const struct perf_reader *r, size_t i, const char **filename,
			      const uint8_t **build_id, size_t *size);
/* The vDSO image the recording carries (PERF_FEAT_OFFCPU_VDSO); false when none. */
bool perf_reader__vdso(const struct perf_reader *r, const uint8_t **build_id, size_t *build_id_size,
		       const void **image, size_t *size);
/* The offcpu section's counters: number of entries, and the i-th one. */
int perf_reader__nr_offcpu_counters(const struct perf_reader *r);
bool perf_reader__offcpu_counter(const struct perf_reader *r, int i, const char **name,
				 uint64_t *value);
/* Counts seen while processing: LOST records and unordered events. */
uint64_t perf_reader__lost(const struct perf_reader *r);
bool perf_reader__truncated(const struct perf_reader *r);
/*
 * Why the file is not whole, NULL when it is: a recording that did not
 * finish (data size 0, no feature sections), a file cut off in its data,
 * in its last record or in its feature sections (read up to the cut, with
 * a warning). What such a file lost is not known: its loss counters, if
 * any, were to come at its end. *records_whole (may be NULL): only
 * feature sections are missing, every record is there. Final after
 * perf_reader__process().
 */
const char *perf_reader__incomplete(const struct perf_reader *r, bool *records_whole);

#endif
