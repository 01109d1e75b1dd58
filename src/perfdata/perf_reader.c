// SPDX-License-Identifier: GPL-2.0-only
/*
 * perf.data reader. Records are located in a first pass, queued by
 * timestamp and delivered in perf's ordered-events order: at each
 * FINISHED_ROUND, everything queued up to the largest timestamp of the
 * previous round is sorted and delivered. Only a 16-byte queue entry per
 * record of the current and previous round is kept, and the chunks of the
 * file that hold them mapped (reader_int.h).
 *
 * This file opens a file (header, attrs, feature sections) and answers
 * what callers ask of it; perf_records.c decodes records, perf_order.c
 * walks them in order (perfdata/reader_int.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perfdata/reader_int.h"
#include "util/bytes.h"
#include "util/vec.h"

#define MAX_ATTRS 4096

int reader__set_err(struct perf_reader *r, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err, sizeof(r->err), fmt, ap);
	va_end(ap);
	return ret;
}

const char *perf_reader__error(const struct perf_reader *r)
{
	return r->err;
}

int reader__warn(struct perf_reader *r, const char *fmt, ...)
{
	va_list ap;
	char *w;
	int n;

	if (r->nr_warnings == READER_MAX_WARNINGS)
		return 0;
	va_start(ap, fmt);
	n = vasprintf(&w, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	r->warnings[r->nr_warnings++] = w;
	return 0;
}

const char *perf_reader__warning(const struct perf_reader *r, int i)
{
	return i >= 0 && i < r->nr_warnings ? r->warnings[i] : NULL;
}

/* true when [off, off+len) lies inside the file (overflow-safe) */
static bool in_file(const struct perf_reader *r, uint64_t off, uint64_t len)
{
	return off <= r->file_size && len <= r->file_size - off;
}

const uint8_t *reader__meta(struct perf_reader *r, uint64_t off, uint64_t len)
{
	uint8_t *buf;
	void **m;

	if (r->mem)
		return r->mem + off;
	if (len > SIZE_MAX - 1 || !(buf = malloc(len ? len : 1))) {
		reader__set_err(r, -ENOMEM, "out of memory reading %" PRIu64 " bytes at offset %" PRIu64,
				len, off);
		return NULL;
	}
	for (uint64_t done = 0; done < len;) {
		ssize_t n = pread(r->fd, buf + done, len - done, off + done);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			reader__set_err(r, n ? -errno : -EIO, "cannot read %" PRIu64 " bytes at offset %" PRIu64 ": %s",
					len, off, n ? strerror(errno) : "the file is shorter");
			free(buf);
			return NULL;
		}
		done += n;
	}
	m = realloc(r->meta, (r->nr_meta + 1) * sizeof(*m));
	if (!m) {
		free(buf);
		reader__set_err(r, -ENOMEM, "out of memory");
		return NULL;
	}
	r->meta = m;
	m[r->nr_meta++] = buf;
	return buf;
}

/*
 * A chunk is read into a buffer, not mapped: mapping a chunk and unmapping
 * it after cost more than the copy (a page table built for each chunk,
 * and the TLB of both CPUs flushed when it goes): on a paravirtualized VM
 * the report of the offcpu 100 MB recording took 0.21-0.22 s with its
 * chunks mapped, 0.127 s read into buffers that are used again.
 *
 * The first SLAB_SLOTS buffers lie side by side in one mapping of their
 * own, advised to take transparent huge pages: each buffer's pages are
 * first touched by the read, and on 4 KiB pages that was 272 faults a
 * buffer, 2 700 of a report's 7 900 (about 10 us each on a paravirtualized
 * VM). The mapping goes back whole when the walk ends (reader__unmap_all()),
 * where buffers from a heap would stay resident in it. Spares are taken
 * last-in first-out: the buffers in use, and so the pages touched, stay at
 * the mapping's start (2 MiB pages are resident whole).
 */
#define SLOT_SIZE (CHUNK_SIZE + CHUNK_OVERLAP)
#define SLAB_SLOTS 32
#define SLAB_ALIGN (UINT64_C(2) << 20)

/* The slab's buffers as spares (once per walk): 0, or -ENOMEM (then buffers come from malloc). */
static int slab_make(struct perf_reader *r)
{
	size_t len = SLAB_SLOTS * SLOT_SIZE + SLAB_ALIGN;
	uint8_t *p, *base;

	if (r->slab || vec__reserve((void **)&r->spare, &r->cap_spare, r->nr_spare + SLAB_SLOTS,
				    sizeof(*r->spare), 16))
		return -ENOMEM;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	r->slab = p;
	r->slab_len = len;
	base = (uint8_t *)(((uintptr_t)p + SLAB_ALIGN - 1) & ~(uintptr_t)(SLAB_ALIGN - 1));
	madvise(base, SLAB_SLOTS * SLOT_SIZE, MADV_HUGEPAGE); /* a hint: no error matters */
	for (size_t k = SLAB_SLOTS; k-- > 0;)
		r->spare[r->nr_spare++] = base + k * SLOT_SIZE;
	return 0;
}

static bool in_slab(const struct perf_reader *r, const uint8_t *p)
{
	return r->slab && p >= r->slab && p < r->slab + r->slab_len;
}

int reader__map_chunk(struct perf_reader *r, uint64_t off)
{
	size_t i = off >> CHUNK_SHIFT, done = 0;
	uint64_t start = (uint64_t)i << CHUNK_SHIFT, len;
	bool spare;
	uint8_t *p;

	if (r->chunks[i])
		return 0;
	if (r->mem) {
		r->chunks[i] = r->mem + start;
		return 0;
	}
	len = r->file_size - start;
	if (len > CHUNK_SIZE + CHUNK_OVERLAP)
		len = CHUNK_SIZE + CHUNK_OVERLAP;
	if (!r->nr_spare && !r->slab)
		slab_make(r); /* no slab: malloc'd buffers */
	spare = r->nr_spare > 0;
	p = spare ? r->spare[--r->nr_spare] : malloc(SLOT_SIZE);
	if (!p)
		return -ENOMEM;
	while (done < len) {
		ssize_t n = pread(r->fd, p + done, len - done, (off_t)(start + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int err = n ? -errno : -EIO; /* EIO: the file got shorter */

			if (spare)
				r->nr_spare++; /* back where it was */
			else
				free(p);
			return err;
		}
		done += (size_t)n;
	}
	r->chunks[i] = p;
	return 0;
}

void reader__readahead(struct perf_reader *r, uint64_t off, uint64_t len)
{
	if (!r->mem && off < r->file_size)
		posix_fadvise(r->fd, (off_t)off, (off_t)len, POSIX_FADV_WILLNEED); /* a hint: no error matters */
}

void reader__unmap_chunk(struct perf_reader *r, size_t i)
{
	uint8_t *p = (uint8_t *)r->chunks[i];

	if (!p)
		return;
	r->chunks[i] = NULL;
	if (r->mem)
		return;
	if (!vec__reserve((void **)&r->spare, &r->cap_spare, r->nr_spare + 1, sizeof(*r->spare), 16))
		r->spare[r->nr_spare++] = p;
	else if (!in_slab(r, p))
		free(p);
	/* else: a slab buffer the list has no room for stays unused until the slab goes */
}

void reader__unmap_all(struct perf_reader *r)
{
	for (size_t i = 0; r->chunks && i < r->nr_chunks; i++)
		reader__unmap_chunk(r, i);
	for (size_t i = 0; i < r->nr_spare; i++)
		if (!in_slab(r, r->spare[i]))
			free(r->spare[i]);
	r->nr_spare = 0;
	if (r->slab)
		munmap(r->slab, r->slab_len);
	r->slab = NULL;
}

/*
 * Sample id -> attr; an id listed twice belongs to the last attr listing
 * it. The table is sized once for n ids: 0 or -ENOMEM.
 */
static int ids_init(struct perf_reader *r, uint64_t n)
{
	size_t slots = 16;

	while (slots < 2 * n) {
		if (slots > SIZE_MAX / 4 / sizeof(*r->ids))
			return -ENOMEM;
		slots *= 2;
	}
	r->ids = calloc(slots, sizeof(*r->ids));
	r->ids_mask = slots - 1;
	return r->ids ? 0 : -ENOMEM;
}

static void id_insert(struct perf_reader *r, uint64_t id, int idx)
{
	size_t i;

	if (!id)
		return;
	for (i = (id * 0x9e3779b97f4a7c15ULL >> 32) & r->ids_mask; r->ids[i].id && r->ids[i].id != id;
	     i = (i + 1) & r->ids_mask)
		;
	r->ids[i].id = id;
	r->ids[i].idx = idx;
}

static int popcount64(uint64_t x)
{
	return __builtin_popcountll(x);
}

/* Bytes of the sample_id_all trailer a non-sample record carries. */
static int trailer_size(uint64_t st)
{
	int n = 0;

	n += !!(st & PERF_SAMPLE_TID);
	n += !!(st & PERF_SAMPLE_TIME);
	n += !!(st & PERF_SAMPLE_ID);
	n += !!(st & PERF_SAMPLE_STREAM_ID);
	n += !!(st & PERF_SAMPLE_CPU);
	n += !!(st & PERF_SAMPLE_IDENTIFIER);
	return n * 8;
}

/* Name for an attr EVENT_DESC did not name, from its type and config. */
static void default_name(struct perf_evattr *a)
{
	static const char *const sw[] = {
		"cpu-clock", "task-clock", "page-faults", "context-switches",
		"cpu-migrations", "minor-faults", "major-faults", "alignment-faults",
		"emulation-faults", "dummy", "bpf-output", "cgroup-switches",
	};
	static const char *const hw[] = {
		"cycles", "instructions", "cache-references", "cache-misses",
		"branches", "branch-misses", "bus-cycles", "stalled-cycles-frontend",
		"stalled-cycles-backend", "ref-cycles",
	};
	const struct perf_event_attr *at = &a->attr;

	if (at->type == PERF_TYPE_SOFTWARE && at->config < sizeof(sw) / sizeof(sw[0]))
		snprintf(a->name, sizeof(a->name), "%s", sw[at->config]);
	else if (at->type == PERF_TYPE_HARDWARE && at->config < sizeof(hw) / sizeof(hw[0]))
		snprintf(a->name, sizeof(a->name), "%s", hw[at->config]);
	else
		snprintf(a->name, sizeof(a->name), "raw:%u:%#llx", at->type,
			 (unsigned long long)at->config);
}

static void classify(struct perf_evattr *a)
{
	const struct perf_event_attr *at = &a->attr;
	size_t n = strcspn(a->name, ":");

	a->is_offcpu = !strncmp(a->name, OFFCPU_EVENT_NAME, n) && n == strlen(OFFCPU_EVENT_NAME);
	a->is_wakeup = !strncmp(a->name, OFFCPU_WAKEUP_EVENT_NAME, n) &&
		       n == strlen(OFFCPU_WAKEUP_EVENT_NAME);
	a->is_sched_delay = !strncmp(a->name, OFFCPU_SCHED_DELAY_EVENT_NAME, n) &&
			    n == strlen(OFFCPU_SCHED_DELAY_EVENT_NAME);
	a->is_chain = (!strncmp(a->name, OFFCPU_SWITCH_EVENT_NAME, n) &&
			n == strlen(OFFCPU_SWITCH_EVENT_NAME)) ||
		      (!strncmp(a->name, OFFCPU_STACK_EVENT_NAME, n) && n == strlen(OFFCPU_STACK_EVENT_NAME)) ||
		      (!strncmp(a->name, OFFCPU_CHAIN_CPU_EVENT_NAME, n) &&
		       n == strlen(OFFCPU_CHAIN_CPU_EVENT_NAME));
	a->is_time = a->is_offcpu || a->is_wakeup || a->is_sched_delay ||
		     (at->type == PERF_TYPE_SOFTWARE &&
		      (at->config == PERF_COUNT_SW_CPU_CLOCK || at->config == PERF_COUNT_SW_TASK_CLOCK));
}

/*
 * A feature string: u32 length (incl. NUL, padded) then bytes. Advances
 * *p; returns NULL when it does not fit in [*p, end) or is unterminated.
 */
static const char *feat_string(const uint8_t **p, const uint8_t *end)
{
	uint32_t len;
	const char *s;

	if (end - *p < 4)
		return NULL;
	len = rd32(*p);
	if ((uint64_t)(end - *p - 4) < len || !len)
		return NULL;
	s = (const char *)*p + 4;
	if (!memchr(s, 0, len))
		return NULL;
	*p += 4 + len;
	return s;
}

static int parse_event_desc(struct perf_reader *r, const uint8_t *p, const uint8_t *end)
{
	uint32_t nr, asz;

	if (end - p < 8)
		return reader__set_err(r, -EINVAL, "EVENT_DESC section too short");
	nr = rd32(p);
	asz = rd32(p + 4);
	p += 8;
	if (asz < PERF_ATTR_SIZE_VER0 || asz > 4096)
		return reader__set_err(r, -EINVAL, "EVENT_DESC attr size %u out of range", asz);
	for (uint32_t i = 0; i < nr; i++) {
		uint32_t nr_ids;
		const char *name;

		if ((uint64_t)(end - p) < (uint64_t)asz + 4)
			return reader__set_err(r, -EINVAL, "EVENT_DESC entry %u runs past its section", i);
		p += asz;
		nr_ids = rd32(p);
		p += 4;
		name = feat_string(&p, end);
		if (!name)
			return reader__set_err(r, -EINVAL, "EVENT_DESC entry %u has a bad name", i);
		if ((uint64_t)(end - p) / 8 < nr_ids)
			return reader__set_err(r, -EINVAL, "EVENT_DESC entry %u: %u ids run past its section",
				       i, nr_ids);
		p += 8ULL * nr_ids;
		if ((int)i < r->nr_attrs && *name) {
			snprintf(r->attrs[i].pub.name, sizeof(r->attrs[i].pub.name), "%s", name);
			classify(&r->attrs[i].pub);
		}
	}
	return 0;
}

static int parse_build_ids(struct perf_reader *r, const uint8_t *p, const uint8_t *end)
{
	while (end - p >= 8) {
		uint16_t size;
		const char *fn;
		size_t fnmax;
		struct buildid_ent *b;

		memcpy(&size, p + 6, 2);
		if (size < 8 + 4 + 24 || size > end - p)
			return reader__set_err(r, -EINVAL, "BUILD_ID record of size %u out of range", size);
		fn = (const char *)p + 36;
		fnmax = size - 36;
		if (!fnmax || !memchr(fn, 0, fnmax)) {
			p += size;
			continue;
		}
		b = realloc(r->bids, (r->nr_bids + 1) * sizeof(*b));
		if (!b)
			return -ENOMEM;
		r->bids = b;
		b = &r->bids[r->nr_bids];
		b->filename = strdup(fn);
		if (!b->filename)
			return -ENOMEM;
		memcpy(b->id, p + 12, 20);
		{
			uint16_t misc;
			memcpy(&misc, p + 4, 2);
			b->size = (misc & (1 << 15)) ? p[32] : 20;
			if (b->size > 20 || !b->size)
				b->size = 20;
		}
		r->nr_bids++;
		p += size;
	}
	return 0;
}

static int parse_offcpu(struct perf_reader *r, const uint8_t *p, const uint8_t *end)
{
	uint32_t nr;

	if (end - p < 4)
		return reader__set_err(r, -EINVAL, "offcpu section too short");
	nr = rd32(p);
	p += 4;
	if (nr > (uint64_t)(end - p) / 16)
		return reader__set_err(r, -EINVAL, "offcpu section: %u counters do not fit", nr);
	r->counters = calloc(nr ? nr : 1, sizeof(*r->counters));
	if (!r->counters)
		return -ENOMEM;
	for (uint32_t i = 0; i < nr; i++) {
		uint32_t len;
		const char *name;

		if (end - p < 4)
			return reader__set_err(r, -EINVAL, "offcpu counter %u runs past its section", i);
		len = rd32(p);
		if (!len || (uint64_t)(end - p - 4) < (uint64_t)len + 8)
			return reader__set_err(r, -EINVAL, "offcpu counter %u runs past its section", i);
		name = (const char *)p + 4;
		if (!memchr(name, 0, len))
			return reader__set_err(r, -EINVAL, "offcpu counter %u has an unterminated name", i);
		r->counters[r->nr_counters].name = strdup(name);
		if (!r->counters[r->nr_counters].name)
			return -ENOMEM;
		r->counters[r->nr_counters].value = rd64(p + 4 + len);
		r->nr_counters++;
		p += 4 + len + 8;
	}
	return 0;
}

/* Walk the feature table after the data section and parse what we use. */
static int parse_features(struct perf_reader *r, const char *path)
{
	uint64_t tab = r->hdr.data.offset + r->hdr.data.size;
	int nr = 0, k = 0, err, cut = -1, ncut = 0;
	const uint8_t *t;

	for (int i = 0; i < PERF_FEAT_BITS / 64; i++)
		nr += popcount64(r->hdr.adds_features[i]);
	if (!nr)
		return 0;
	if (!in_file(r, tab, (uint64_t)nr * 16)) {
		/* the data is whole: what follows it was cut off (a copy stopped short) */
		r->incomplete = "its feature sections are cut off";
		r->features_cut = true;
		return reader__warn(r, "%s: the feature table at offset %" PRIu64 " (%d entries) is past the end of the file: the file is cut off after its data; its features (build ids, event names, loss counters) are not read",
				    path, tab, nr);
	}
	t = reader__meta(r, tab, (uint64_t)nr * 16);
	if (!t)
		return -EIO;
	for (int bit = 0; bit < PERF_FEAT_BITS; bit++) {
		uint64_t off, size;
		const uint8_t *p, *end;

		if (!(r->hdr.adds_features[bit / 64] & (1ULL << (bit % 64))))
			continue;
		off = rd64(t + 16 * k);
		size = rd64(t + 16 * k + 8);
		k++;
		if (!in_file(r, off, size)) {
			/* a file cut after its data (the sections past the cut), or a bad entry: not read */
			if (cut < 0)
				cut = bit;
			ncut++;
			continue;
		}
		if (bit != PERF_FEAT_EVENT_DESC && bit != PERF_FEAT_BUILD_ID && bit != PERF_FEAT_CLOCKID &&
		    bit != PERF_FEAT_SAMPLE_TIME && bit != PERF_FEAT_OFFCPU && bit != PERF_FEAT_OFFCPU_VDSO)
			continue; /* not read */
		p = reader__meta(r, off, size);
		if (!p)
			return -EIO;
		end = p + size;
		err = 0;
		switch (bit) {
		case PERF_FEAT_EVENT_DESC:
			err = parse_event_desc(r, p, end);
			break;
		case PERF_FEAT_BUILD_ID:
			err = parse_build_ids(r, p, end);
			break;
		case PERF_FEAT_CLOCKID:
			if (size >= 8) {
				r->has_clockid = true;
				r->clock_res = rd64(p);
			}
			break;
		case PERF_FEAT_SAMPLE_TIME:
			if (size >= 16) {
				r->has_sample_time = true;
				r->first_time = rd64(p);
				r->last_time = rd64(p + 8);
			}
			break;
		case PERF_FEAT_OFFCPU:
			err = parse_offcpu(r, p, end);
			break;
		case PERF_FEAT_OFFCPU_VDSO: {
			struct perf_vdso_image h;

			if (size < sizeof(h))
				return reader__set_err(r, -EINVAL, "vDSO section too short");
			memcpy(&h, p, sizeof(h));
			if (h.size > size - sizeof(h) || h.build_id_size > sizeof(h.build_id))
				return reader__set_err(r, -EINVAL, "vDSO section: image of %" PRIu64 " bytes does not fit",
					       h.size);
			r->vdso = p + sizeof(h);
			r->vdso_size = h.size;
			r->vdso_bid_size = h.build_id_size;
			memcpy(r->vdso_bid, h.build_id, sizeof(h.build_id));
			break;
		}
		}
		if (err)
			return err;
	}
	if (cut < 0)
		return 0;
	r->incomplete = "its feature sections are cut off";
	r->features_cut = true;
	return reader__warn(r, "%s: %d feature section(s) past the end of the file, from feature %d on: the file is cut off after its data; those features are not read",
			    path, ncut, cut);
}

static int parse_attrs(struct perf_reader *r)
{
	const struct perf_file_header *h = &r->hdr;
	uint64_t asz = h->attr_size, nr_ids = 0;
	const uint8_t *sec;

	if (asz < PERF_ATTR_SIZE_VER0 + 16 || asz > 4096 + 16)
		return reader__set_err(r, -EINVAL, "attr size %" PRIu64 " in the header is out of range", asz);
	if (!in_file(r, h->attrs.offset, h->attrs.size))
		return reader__set_err(r, -EINVAL, "attr section (offset %" PRIu64 ", size %" PRIu64 ") is out of range",
			       h->attrs.offset, h->attrs.size);
	if (h->attrs.size % asz || !h->attrs.size)
		return reader__set_err(r, -EINVAL, "attr section size %" PRIu64 " is not a multiple of attr size %" PRIu64,
			       h->attrs.size, asz);
	if (h->attrs.size / asz > MAX_ATTRS)
		return reader__set_err(r, -EINVAL, "too many attrs (%" PRIu64 ")", h->attrs.size / asz);
	r->nr_attrs = h->attrs.size / asz;
	r->attrs = calloc(r->nr_attrs, sizeof(*r->attrs));
	if (!r->attrs)
		return -ENOMEM;
	sec = reader__meta(r, h->attrs.offset, h->attrs.size);
	if (!sec)
		return -EIO;
	for (int i = 0; i < r->nr_attrs; i++) {
		const uint8_t *p = sec + i * asz;
		struct perf_file_section ids;
		size_t n = asz - 16;

		if (n > sizeof(r->attrs[i].pub.attr))
			n = sizeof(r->attrs[i].pub.attr);
		memcpy(&r->attrs[i].pub.attr, p, n);
		memcpy(&ids, p + asz - 16, 16);
		if (ids.size % 8 || !in_file(r, ids.offset, ids.size))
			return reader__set_err(r, -EINVAL, "ids of attr %d (offset %" PRIu64 ", size %" PRIu64 ") are out of range",
				       i, ids.offset, ids.size);
		nr_ids += ids.size / 8;
		r->attrs[i].pub.idx = i;
		r->attrs[i].sample_type = r->attrs[i].pub.attr.sample_type;
		r->attrs[i].sample_id_all = r->attrs[i].pub.attr.sample_id_all;
		r->attrs[i].id_trailer_size =
			r->attrs[i].sample_id_all ? trailer_size(r->attrs[i].sample_type) : 0;
		default_name(&r->attrs[i].pub);
		classify(&r->attrs[i].pub);
	}
	if (ids_init(r, nr_ids))
		return -ENOMEM;
	for (int i = 0; i < r->nr_attrs; i++) {
		const uint8_t *p = sec + i * asz, *q;
		struct perf_file_section ids;

		memcpy(&ids, p + asz - 16, 16);
		if (!ids.size)
			continue;
		q = reader__meta(r, ids.offset, ids.size);
		if (!q)
			return -EIO;
		for (uint64_t j = 0; j < ids.size / 8; j++) {
			uint64_t id = rd64(q + 8 * j);
			struct perf_evattr *a = &r->attrs[i].pub;

			id_insert(r, id, i);
			/* until EVENT_DESC says otherwise */
			if (id == OFFCPU_EVENT_ID && a->attr.type == PERF_TYPE_SOFTWARE &&
			    a->attr.config == PERF_COUNT_SW_BPF_OUTPUT) {
				snprintf(a->name, sizeof(a->name), "%s", OFFCPU_EVENT_NAME);
				classify(a);
			}
		}
	}
	return 0;
}

/* Header, attrs and features of the file; the one check of both openers. */
static int reader__init(struct perf_reader *r, const char *path)
{
	int err;

	const uint8_t *h;

	if (r->file_size < sizeof(struct perf_file_header))
		return reader__set_err(r, -EINVAL, "%s: file too small for a perf.data header (%" PRIu64 " bytes)",
			       path, r->file_size);
	h = reader__meta(r, 0, sizeof(r->hdr));
	if (!h)
		return -EIO;
	memcpy(&r->hdr, h, sizeof(r->hdr));
	if (r->hdr.magic != PERF_MAGIC2)
		return reader__set_err(r, -EINVAL, "%s: not a perf.data file (bad magic %#" PRIx64 ")",
			       path, r->hdr.magic);
	if (r->hdr.size != sizeof(struct perf_file_header))
		return reader__set_err(r, -EINVAL, "%s: header size %" PRIu64 " is not %zu", path,
			       r->hdr.size, sizeof(struct perf_file_header));
	err = parse_attrs(r);
	if (err)
		return err;
	if (r->hdr.data.offset < sizeof(struct perf_file_header) || r->hdr.data.offset > r->file_size)
		return reader__set_err(r, -EINVAL, "data section offset %" PRIu64 " is out of range",
			       r->hdr.data.offset);
	r->data_start = r->hdr.data.offset;
	if (!r->hdr.data.size) {
		r->data_to_eof = true;
		r->data_end = r->file_size;
		r->incomplete = "the recording did not finish (its header says data size 0)";
		err = reader__warn(r, "%s: header says data size 0 (interrupted recording?); reading records up to the end of the file",
				   path);
	} else if (!in_file(r, r->data_start, r->hdr.data.size)) {
		r->data_to_eof = true;
		r->data_end = r->file_size;
		r->incomplete = "the file is cut off (its data section runs past its end)";
		err = reader__warn(r, "%s: data section (size %" PRIu64 ") runs past the end of the file; file truncated? reading what is there",
				   path, r->hdr.data.size);
	} else if (!(r->hdr.adds_features[0] | r->hdr.adds_features[1] | r->hdr.adds_features[2] |
		     r->hdr.adds_features[3])) {
		/*
		 * Features are written last: a file without any is a recording
		 * that did not finish (its recorder killed). The header's data
		 * size is the last round it patched; records written after it
		 * are read too, up to a cut-off last one.
		 */
		r->data_to_eof = true;
		r->data_end = r->file_size;
		r->incomplete = "the recording did not finish (the file has no feature sections)";
		err = reader__warn(r, "%s: no feature sections: the recording did not finish (recorder killed or disk full?); reading the records written",
				   path);
	} else {
		r->data_end = r->data_start + r->hdr.data.size;
		err = parse_features(r, path);
	}
	if (err)
		return err;
	r->nr_chunks = (r->data_end >> CHUNK_SHIFT) + 1;
	r->chunks = calloc(r->nr_chunks, sizeof(*r->chunks));
	r->chunk_pending = calloc(r->nr_chunks, sizeof(*r->chunk_pending));
	r->chunk_inflight = calloc(r->nr_chunks, sizeof(*r->chunk_inflight));
	return r->chunks && r->chunk_pending && r->chunk_inflight ? 0 : -ENOMEM;
}

/* Every message names the file once; r is freed. */
static struct perf_reader *reader__fail(struct perf_reader *r, const char *path, char *errbuf,
					size_t errlen)
{
	if (!strncmp(r->err, path, strlen(path)))
		snprintf(errbuf, errlen, "%s", r->err);
	else
		snprintf(errbuf, errlen, "%s: %s", path, r->err);
	perf_reader__free(r);
	return NULL;
}

/*
 * Only a regular file is read (a FIFO or a device named as input would
 * block or never end): opened non-blocking and checked. Its data section
 * is read a chunk at a time as the walk goes (perf_order.c).
 */
struct perf_reader *perf_reader__open(const char *path, char *errbuf, size_t errlen)
{
	struct perf_reader *r = calloc(1, sizeof(*r));
	struct stat st;

	if (!r) {
		snprintf(errbuf, errlen, "%s: out of memory", path);
		return NULL;
	}
	r->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (r->fd < 0) {
		reader__set_err(r, -errno, "cannot open %s: %s", path, strerror(errno));
		return reader__fail(r, path, errbuf, errlen);
	}
	if (fstat(r->fd, &st) < 0) {
		reader__set_err(r, -errno, "cannot stat %s: %s", path, strerror(errno));
		return reader__fail(r, path, errbuf, errlen);
	}
	if (!S_ISREG(st.st_mode)) {
		reader__set_err(r, -EINVAL, "%s: not a regular file", path);
		return reader__fail(r, path, errbuf, errlen);
	}
	if ((uint64_t)st.st_size < sizeof(struct perf_file_header)) {
		reader__set_err(r, -EINVAL, "%s: file too small for a perf.data header (%lld bytes)", path,
			(long long)st.st_size);
		return reader__fail(r, path, errbuf, errlen);
	}
	r->file_size = st.st_size;
	posix_fadvise(r->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	if (reader__init(r, path))
		return reader__fail(r, path, errbuf, errlen);
	return r;
}

struct perf_reader *perf_reader__open_mem(const void *buf, size_t len, const char *name,
					  char *errbuf, size_t errlen)
{
	struct perf_reader *r = calloc(1, sizeof(*r));

	if (!r) {
		snprintf(errbuf, errlen, "%s: out of memory", name);
		return NULL;
	}
	r->fd = -1;
	r->mem = buf;
	r->file_size = len;
	if (reader__init(r, name))
		return reader__fail(r, name, errbuf, errlen);
	return r;
}

void perf_reader__free(struct perf_reader *r)
{
	if (!r)
		return;
	reader__unmap_all(r);
	free(r->chunks);
	free(r->spare);
	free(r->chunk_pending);
	free(r->chunk_inflight);
	for (size_t i = 0; i < r->nr_meta; i++)
		free(r->meta[i]);
	free(r->meta);
	if (r->fd >= 0)
		close(r->fd);
	for (size_t i = 0; i < r->nr_bids; i++)
		free(r->bids[i].filename);
	for (int i = 0; i < r->nr_counters; i++)
		free(r->counters[i].name);
	free(r->counters);
	free(r->bids);
	free(r->attrs);
	free(r->ids);
	free(r->q);
	for (int i = 0; i < r->nr_warnings; i++)
		free(r->warnings[i]);
	free(r);
}

uint64_t perf_reader__data_size(const struct perf_reader *r)
{
	return r->data_end - r->data_start;
}

int perf_reader__nr_attrs(const struct perf_reader *r)
{
	return r->nr_attrs;
}

const struct perf_evattr *perf_reader__attr(const struct perf_reader *r, int idx)
{
	return idx >= 0 && idx < r->nr_attrs ? &r->attrs[idx].pub : NULL;
}

bool perf_reader__has_feature(const struct perf_reader *r, int bit)
{
	if (bit < 0 || bit >= PERF_FEAT_BITS || r->data_to_eof)
		return false;
	return r->hdr.adds_features[bit / 64] & (1ULL << (bit % 64));
}

bool perf_reader__clockid(const struct perf_reader *r, uint64_t *res_ns)
{
	if (r->has_clockid && res_ns)
		*res_ns = r->clock_res;
	return r->has_clockid;
}

bool perf_reader__sample_time(const struct perf_reader *r, uint64_t *first, uint64_t *last)
{
	if (r->has_sample_time) {
		*first = r->first_time;
		*last = r->last_time;
	}
	return r->has_sample_time;
}

const uint8_t *perf_reader__build_id(const struct perf_reader *r, const char *filename,
				     size_t *size)
{
	for (size_t i = 0; i < r->nr_bids; i++)
		if (!strcmp(r->bids[i].filename, filename)) {
			*size = r->bids[i].size;
			return r->bids[i].id;
		}
	return NULL;
}

bool perf_reader__build_id_at(const struct perf_reader *r, size_t i, const char **filename,
			      const uint8_t **build_id, size_t *size)
{
	if (i >= r->nr_bids)
		return false;
	*filename = r->bids[i].filename;
	*build_id = r->bids[i].id;
	*size = r->bids[i].size;
	return true;
}

bool perf_reader__vdso(const struct perf_reader *r, const uint8_t **build_id, size_t *build_id_size,
		       const void **image, size_t *size)
{
	if (!r->vdso || !r->vdso_size)
		return false;
	*build_id = r->vdso_bid;
	*build_id_size = r->vdso_bid_size;
	*image = r->vdso;
	*size = r->vdso_size;
	return true;
}

bool reader__says_time_ordered(const struct perf_reader *r)
{
	if (r->incomplete || r->data_to_eof)
		return false;
	for (int i = 0; i < r->nr_counters; i++)
		if (!strcmp(r->counters[i].name, "records.out_of_order"))
			return !r->counters[i].value;
	return false;
}

int perf_reader__nr_offcpu_counters(const struct perf_reader *r)
{
	return r->nr_counters;
}

bool perf_reader__offcpu_counter(const struct perf_reader *r, int i, const char **name,
				 uint64_t *value)
{
	if (i < 0 || i >= r->nr_counters)
		return false;
	*name = r->counters[i].name;
	*value = r->counters[i].value;
	return true;
}

uint64_t perf_reader__lost(const struct perf_reader *r)
{
	return r->lost;
}

bool perf_reader__truncated(const struct perf_reader *r)
{
	return r->truncated;
}

const char *perf_reader__incomplete(const struct perf_reader *r, bool *records_whole)
{
	if (records_whole)
		*records_whole = r->incomplete && r->features_cut && !r->truncated;
	return r->incomplete;
}
