// SPDX-License-Identifier: GPL-2.0-only
/*
 * perf.data reader. The file is mapped read-only; records are located in a
 * first pass, queued by timestamp and delivered in perf's ordered-events
 * order: at each FINISHED_ROUND, everything queued up to the largest
 * timestamp of the previous round is sorted and delivered. Only a 16-byte
 * queue entry per record of the current and previous round is kept.
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

#include "perfdata/perf_reader.h"
#include "util/bytes.h"
#include "util/hash.h"
#include "util/htab.h"
#include "util/pairsort.h"

#define MAX_ATTRS 4096
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
	struct attr_priv *attrs;
	int nr_attrs;
	struct htab ids;       /* sample id -> attr (struct id_ent) */
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

static int set_err(struct perf_reader *r, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int set_err(struct perf_reader *r, int ret, const char *fmt, ...)
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

/* Keep a warning for perf_reader__warning(); the reader never prints. */
static void warn(struct perf_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void warn(struct perf_reader *r, const char *fmt, ...)
{
	va_list ap;
	char *w;

	if (r->nr_warnings == READER_MAX_WARNINGS)
		return;
	va_start(ap, fmt);
	if (vasprintf(&w, fmt, ap) >= 0)
		r->warnings[r->nr_warnings++] = w;
	va_end(ap);
}

const char *perf_reader__warning(const struct perf_reader *r, int i)
{
	return i >= 0 && i < r->nr_warnings ? r->warnings[i] : NULL;
}

/* true when [off, off+len) lies inside the mapping (overflow-safe) */
static bool in_file(const struct perf_reader *r, uint64_t off, uint64_t len)
{
	return off <= r->map_size && len <= r->map_size - off;
}

struct id_ent {
	uint64_t id;
	int idx; /* the attr's */
};

static bool id_eq(const void *entry, const void *key)
{
	return ((const struct id_ent *)entry)->id == *(const uint64_t *)key;
}

/* Sample id -> attr; an id listed twice belongs to the last attr listing it. 0 or -ENOMEM. */
static int id_insert(struct perf_reader *r, uint64_t id, int idx)
{
	struct id_ent *e;
	bool added;

	if (!id)
		return 0;
	e = htab__get(&r->ids, hash__mix(id), id_eq, &id, &added);
	if (!e)
		return -ENOMEM;
	e->id = id;
	e->idx = idx;
	return 0;
}

static int id_lookup(const struct perf_reader *r, uint64_t id)
{
	const struct id_ent *e = id ? htab__find(&r->ids, hash__mix(id), id_eq, &id) : NULL;

	return e ? e->idx : -1;
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
		return set_err(r, -EINVAL, "EVENT_DESC section too short");
	nr = rd32(p);
	asz = rd32(p + 4);
	p += 8;
	if (asz < PERF_ATTR_SIZE_VER0 || asz > 4096)
		return set_err(r, -EINVAL, "EVENT_DESC attr size %u out of range", asz);
	for (uint32_t i = 0; i < nr; i++) {
		uint32_t nr_ids;
		const char *name;

		if ((uint64_t)(end - p) < (uint64_t)asz + 4)
			return set_err(r, -EINVAL, "EVENT_DESC entry %u runs past its section", i);
		p += asz;
		nr_ids = rd32(p);
		p += 4;
		name = feat_string(&p, end);
		if (!name)
			return set_err(r, -EINVAL, "EVENT_DESC entry %u has a bad name", i);
		if ((uint64_t)(end - p) / 8 < nr_ids)
			return set_err(r, -EINVAL, "EVENT_DESC entry %u: %u ids run past its section",
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
			return set_err(r, -EINVAL, "BUILD_ID record of size %u out of range", size);
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
		return set_err(r, -EINVAL, "offcpu section too short");
	nr = rd32(p);
	p += 4;
	if (nr > (uint64_t)(end - p) / 16)
		return set_err(r, -EINVAL, "offcpu section: %u counters do not fit", nr);
	r->counters = calloc(nr ? nr : 1, sizeof(*r->counters));
	if (!r->counters)
		return -ENOMEM;
	for (uint32_t i = 0; i < nr; i++) {
		uint32_t len;
		const char *name;

		if (end - p < 4)
			return set_err(r, -EINVAL, "offcpu counter %u runs past its section", i);
		len = rd32(p);
		if (!len || (uint64_t)(end - p - 4) < (uint64_t)len + 8)
			return set_err(r, -EINVAL, "offcpu counter %u runs past its section", i);
		name = (const char *)p + 4;
		if (!memchr(name, 0, len))
			return set_err(r, -EINVAL, "offcpu counter %u has an unterminated name", i);
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
static int parse_features(struct perf_reader *r)
{
	uint64_t tab = r->hdr.data.offset + r->hdr.data.size;
	int nr = 0, k = 0, err;

	for (int i = 0; i < PERF_FEAT_BITS / 64; i++)
		nr += popcount64(r->hdr.adds_features[i]);
	if (!nr)
		return 0;
	if (!in_file(r, tab, (uint64_t)nr * 16))
		return set_err(r, -EINVAL, "feature table at offset %" PRIu64 " (%d entries) is past the end of the file",
			       tab, nr);
	for (int bit = 0; bit < PERF_FEAT_BITS; bit++) {
		uint64_t off, size;
		const uint8_t *p, *end;

		if (!(r->hdr.adds_features[bit / 64] & (1ULL << (bit % 64))))
			continue;
		off = rd64(r->map + tab + 16 * k);
		size = rd64(r->map + tab + 16 * k + 8);
		k++;
		if (!in_file(r, off, size))
			return set_err(r, -EINVAL, "feature %d section (offset %" PRIu64 ", size %" PRIu64 ") is out of range",
				       bit, off, size);
		p = r->map + off;
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
				return set_err(r, -EINVAL, "vDSO section too short");
			memcpy(&h, p, sizeof(h));
			if (h.size > size - sizeof(h) || h.build_id_size > sizeof(h.build_id))
				return set_err(r, -EINVAL, "vDSO section: image of %" PRIu64 " bytes does not fit",
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
	return 0;
}

static int parse_attrs(struct perf_reader *r)
{
	const struct perf_file_header *h = &r->hdr;
	uint64_t asz = h->attr_size;

	if (asz < PERF_ATTR_SIZE_VER0 + 16 || asz > 4096 + 16)
		return set_err(r, -EINVAL, "attr size %" PRIu64 " in the header is out of range", asz);
	if (!in_file(r, h->attrs.offset, h->attrs.size))
		return set_err(r, -EINVAL, "attr section (offset %" PRIu64 ", size %" PRIu64 ") is out of range",
			       h->attrs.offset, h->attrs.size);
	if (h->attrs.size % asz || !h->attrs.size)
		return set_err(r, -EINVAL, "attr section size %" PRIu64 " is not a multiple of attr size %" PRIu64,
			       h->attrs.size, asz);
	r->nr_attrs = h->attrs.size / asz;
	if (r->nr_attrs > MAX_ATTRS)
		return set_err(r, -EINVAL, "too many attrs (%d)", r->nr_attrs);
	r->attrs = calloc(r->nr_attrs, sizeof(*r->attrs));
	if (!r->attrs)
		return -ENOMEM;
	for (int i = 0; i < r->nr_attrs; i++) {
		const uint8_t *p = r->map + h->attrs.offset + i * asz;
		struct perf_file_section ids;
		size_t n = asz - 16;

		if (n > sizeof(r->attrs[i].pub.attr))
			n = sizeof(r->attrs[i].pub.attr);
		memcpy(&r->attrs[i].pub.attr, p, n);
		memcpy(&ids, p + asz - 16, 16);
		if (ids.size % 8 || !in_file(r, ids.offset, ids.size))
			return set_err(r, -EINVAL, "ids of attr %d (offset %" PRIu64 ", size %" PRIu64 ") are out of range",
				       i, ids.offset, ids.size);
		r->attrs[i].pub.idx = i;
		r->attrs[i].sample_type = r->attrs[i].pub.attr.sample_type;
		r->attrs[i].sample_id_all = r->attrs[i].pub.attr.sample_id_all;
		r->attrs[i].id_trailer_size =
			r->attrs[i].sample_id_all ? trailer_size(r->attrs[i].sample_type) : 0;
		default_name(&r->attrs[i].pub);
		classify(&r->attrs[i].pub);
	}
	htab__init(&r->ids, sizeof(struct id_ent));
	for (int i = 0; i < r->nr_attrs; i++) {
		const uint8_t *p = r->map + h->attrs.offset + i * asz;
		struct perf_file_section ids;

		memcpy(&ids, p + asz - 16, 16);
		for (uint64_t j = 0; j < ids.size / 8; j++) {
			uint64_t id = rd64(r->map + ids.offset + 8 * j);
			struct perf_evattr *a = &r->attrs[i].pub;

			if (id_insert(r, id, i))
				return -ENOMEM;
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

/* Header, attrs and features of the mapped file; the one check of both openers. */
static int reader__init(struct perf_reader *r, const char *path)
{
	int err;

	if (r->map_size < sizeof(struct perf_file_header))
		return set_err(r, -EINVAL, "%s: file too small for a perf.data header (%zu bytes)",
			       path, r->map_size);
	memcpy(&r->hdr, r->map, sizeof(r->hdr));
	if (r->hdr.magic != PERF_MAGIC2)
		return set_err(r, -EINVAL, "%s: not a perf.data file (bad magic %#" PRIx64 ")",
			       path, r->hdr.magic);
	if (r->hdr.size != sizeof(struct perf_file_header))
		return set_err(r, -EINVAL, "%s: header size %" PRIu64 " is not %zu", path,
			       r->hdr.size, sizeof(struct perf_file_header));
	err = parse_attrs(r);
	if (err)
		return err;
	if (r->hdr.data.offset < sizeof(struct perf_file_header) || r->hdr.data.offset > r->map_size)
		return set_err(r, -EINVAL, "data section offset %" PRIu64 " is out of range",
			       r->hdr.data.offset);
	r->data_start = r->hdr.data.offset;
	if (!r->hdr.data.size) {
		r->data_to_eof = true;
		r->data_end = r->map_size;
		warn(r, "%s: header says data size 0 (interrupted recording?); reading records up to the end of the file",
		     path);
	} else if (!in_file(r, r->data_start, r->hdr.data.size)) {
		r->data_to_eof = true;
		r->data_end = r->map_size;
		warn(r, "%s: data section (size %" PRIu64 ") runs past the end of the file; file truncated? reading what is there",
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
		r->data_end = r->map_size;
		warn(r, "%s: no feature sections: the recording did not finish (recorder killed or disk full?); reading the records written",
		     path);
	} else {
		r->data_end = r->data_start + r->hdr.data.size;
		err = parse_features(r);
		if (err)
			return err;
	}
	return 0;
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
 * block or never end): opened non-blocking, checked, then mapped.
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
		set_err(r, -errno, "cannot open %s: %s", path, strerror(errno));
		return reader__fail(r, path, errbuf, errlen);
	}
	if (fstat(r->fd, &st) < 0) {
		set_err(r, -errno, "cannot stat %s: %s", path, strerror(errno));
		return reader__fail(r, path, errbuf, errlen);
	}
	if (!S_ISREG(st.st_mode)) {
		set_err(r, -EINVAL, "%s: not a regular file", path);
		return reader__fail(r, path, errbuf, errlen);
	}
	if ((uint64_t)st.st_size < sizeof(struct perf_file_header)) {
		set_err(r, -EINVAL, "%s: file too small for a perf.data header (%lld bytes)", path,
			(long long)st.st_size);
		return reader__fail(r, path, errbuf, errlen);
	}
	r->map_size = st.st_size;
	r->map = mmap(NULL, r->map_size, PROT_READ, MAP_PRIVATE, r->fd, 0);
	if (r->map == MAP_FAILED) {
		r->map = NULL;
		set_err(r, -errno, "cannot map %s: %s", path, strerror(errno));
		return reader__fail(r, path, errbuf, errlen);
	}
	madvise((void *)r->map, r->map_size, MADV_SEQUENTIAL);
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
	r->borrowed = true;
	r->map = buf;
	r->map_size = len;
	if (reader__init(r, name))
		return reader__fail(r, name, errbuf, errlen);
	return r;
}

void perf_reader__free(struct perf_reader *r)
{
	if (!r)
		return;
	if (r->map && !r->borrowed)
		munmap((void *)r->map, r->map_size);
	if (r->fd >= 0)
		close(r->fd);
	for (size_t i = 0; i < r->nr_bids; i++)
		free(r->bids[i].filename);
	for (int i = 0; i < r->nr_counters; i++)
		free(r->counters[i].name);
	free(r->counters);
	free(r->bids);
	free(r->attrs);
	htab__free(&r->ids);
	free(r->q);
	for (int i = 0; i < r->nr_warnings; i++)
		free(r->warnings[i]);
	free(r);
}

/*
 * Which attr a record belongs to: the only one, or the one its id names.
 * All attrs of a file put the id at the same place (perf requires it), so
 * attr 0's layout finds it.
 */
static struct attr_priv *record_attr(struct perf_reader *r, const uint8_t *rec, uint16_t size,
				     uint32_t type)
{
	const struct attr_priv *a0 = &r->attrs[0];
	uint64_t st = a0->sample_type, id;
	int pos, idx;

	if (r->nr_attrs == 1)
		return &r->attrs[0];
	if (type == PERF_RECORD_SAMPLE) {
		if (st & PERF_SAMPLE_IDENTIFIER)
			pos = 8;
		else if (st & PERF_SAMPLE_ID)
			pos = 8 + 8 * (!!(st & PERF_SAMPLE_IP) + !!(st & PERF_SAMPLE_TID) +
				       !!(st & PERF_SAMPLE_TIME) + !!(st & PERF_SAMPLE_ADDR));
		else
			return &r->attrs[0];
	} else {
		if (!a0->sample_id_all)
			return &r->attrs[0];
		if (st & PERF_SAMPLE_IDENTIFIER)
			pos = size - 8;
		else if (st & PERF_SAMPLE_ID)
			pos = size - 8 * (1 + !!(st & PERF_SAMPLE_STREAM_ID) + !!(st & PERF_SAMPLE_CPU));
		else
			return &r->attrs[0];
	}
	if (pos < 8 || pos + 8 > size)
		return NULL;
	id = rd64(rec + pos);
	/* synthesized records carry id 0: they belong to the first attr, as in perf */
	if (!id)
		return &r->attrs[0];
	idx = id_lookup(r, id);
	if (idx < 0)
		return type == PERF_RECORD_SAMPLE ? NULL : &r->attrs[0];
	return &r->attrs[idx];
}

/*
 * Decode an off-CPU sample's payload; perf's embedded sample (offcpu-time)
 * stands in for the sample's own pid, tid, period and callchain, as in perf
 * 6.14 and newer, with the first frame as ip.
 */
static void offcpu_sample(struct perf_sample *s)
{
	const struct perf_evattr *a = s->evattr;
	enum offcpu_payload_event ev = a->is_offcpu ? OFFCPU_PAYLOAD_TIME :
				       a->is_wakeup ? OFFCPU_PAYLOAD_WAKEUP : OFFCPU_PAYLOAD_DELAY;

	offcpu_payload__decode(ev, s->raw, s->raw_size, &s->off);
	if (!s->off.embedded)
		return;
	s->pid = s->off.pid;
	s->tid = s->off.tid;
	s->period = s->off.period;
	s->nr_callchain = s->off.nr_callchain;
	s->callchain = s->off.callchain;
	s->ip = 0;
	for (uint64_t i = 0; i < s->nr_callchain; i++) {
		uint64_t ip = perf_sample__ip(s, i);

		if (ip < PERF_CTX_MAX) {
			s->ip = ip;
			break;
		}
	}
}

/* Parse a sample's fields up to RAW; errors name the record's offset. */
static int parse_sample(struct perf_reader *r, const struct attr_priv *a, const uint8_t *rec,
			uint16_t size, uint64_t off, struct perf_sample *s)
{
	const uint8_t *p = rec + 8, *end = rec + size;
	uint64_t st = a->sample_type;

#define NEED(n, what)                                                                         \
	do {                                                                                  \
		if ((uint64_t)(end - p) < (uint64_t)(n))                                      \
			return set_err(r, -EINVAL, "sample at offset %" PRIu64 " (size %u) too short for its %s", \
				       off, size, what);                                      \
	} while (0)

	memset(s, 0, sizeof(*s));
	s->evattr = &a->pub;
	s->cpumode = rd32(rec + 4) & PERF_RECORD_MISC_CPUMODE_MASK;
	if (st & PERF_SAMPLE_IDENTIFIER) {
		NEED(8, "identifier");
		s->id = rd64(p); p += 8;
	}
	if (st & PERF_SAMPLE_IP) {
		NEED(8, "ip");
		s->ip = rd64(p); p += 8;
	}
	if (st & PERF_SAMPLE_TID) {
		NEED(8, "pid/tid");
		s->pid = rd32(p); s->tid = rd32(p + 4); p += 8;
	}
	if (st & PERF_SAMPLE_TIME) {
		NEED(8, "time");
		s->time = rd64(p); p += 8;
	}
	if (st & PERF_SAMPLE_ADDR) {
		NEED(8, "addr");
		p += 8;
	}
	if (st & PERF_SAMPLE_ID) {
		NEED(8, "id");
		s->id = rd64(p); p += 8;
	}
	if (st & PERF_SAMPLE_STREAM_ID) {
		NEED(8, "stream id");
		p += 8;
	}
	if (st & PERF_SAMPLE_CPU) {
		NEED(8, "cpu");
		s->cpu = rd32(p); p += 8;
	}
	if (st & PERF_SAMPLE_PERIOD) {
		NEED(8, "period");
		s->period = rd64(p); p += 8;
	} else {
		s->period = 1;
	}
	if (st & PERF_SAMPLE_READ) {
		uint64_t rf = a->pub.attr.read_format, n;
		int per = 1 + !!(rf & PERF_FORMAT_ID) + !!(rf & PERF_FORMAT_LOST);

		if (rf & PERF_FORMAT_GROUP) {
			NEED(8, "read group");
			n = rd64(p); p += 8;
		} else {
			n = 1;
		}
		n = n * per + !!(rf & PERF_FORMAT_TOTAL_TIME_ENABLED) +
		    !!(rf & PERF_FORMAT_TOTAL_TIME_RUNNING);
		if (n > (uint64_t)(end - p) / 8)
			NEED(UINT64_MAX, "read values");
		p += 8 * n;
	}
	if (st & PERF_SAMPLE_CALLCHAIN) {
		uint64_t nr;

		NEED(8, "callchain length");
		nr = rd64(p); p += 8;
		if (nr > (uint64_t)(end - p) / 8)
			return set_err(r, -EINVAL, "sample at offset %" PRIu64 ": callchain of %" PRIu64 " entries is longer than its record (size %u)",
				       off, nr, size);
		s->nr_callchain = nr;
		s->callchain = p;
		p += 8 * nr;
	}
	if (st & PERF_SAMPLE_RAW) {
		uint32_t rs;

		NEED(4, "raw size");
		rs = rd32(p); p += 4;
		if (rs > end - p)
			return set_err(r, -EINVAL, "sample at offset %" PRIu64 ": raw data of %u bytes is longer than its record",
				       off, rs);
		s->raw_size = rs;
		s->raw = p;
	}
#undef NEED
	if (s->raw && (a->pub.is_offcpu || a->pub.is_wakeup || a->pub.is_sched_delay))
		offcpu_sample(s);
	return 0;
}

/* A NUL-terminated string at p inside [p, end), else NULL. */
static const char *rec_string(const uint8_t *p, const uint8_t *end)
{
	if (p >= end || !memchr(p, 0, end - p))
		return NULL;
	return (const char *)p;
}

/*
 * Parse the record at off into *out. Returns 0, or a negative errno with
 * the reason set. Unknown record types are passed with only the header.
 */
static int parse_record(struct perf_reader *r, uint64_t off, struct perf_rec *out)
{
	const uint8_t *rec = r->map + off, *p = rec + 8, *end;
	struct attr_priv *a;
	const char *s;

	memset(out, 0, sizeof(*out)); /* union members not in the record read as 0 (build_id NULL) */
	out->type = rd32(rec);
	memcpy(&out->misc, rec + 4, 2);
	memcpy(&out->size, rec + 6, 2);
	out->file_offset = off;
	out->raw = rec;
	end = rec + out->size;
	if (out->type >= USER_TYPE_START)
		return 0;
	a = record_attr(r, rec, out->size, out->type);
	if (!a) {
		r->unknown_id++;
		out->type = UINT32_MAX; /* skipped by the caller */
		return 0;
	}
	if (out->type == PERF_RECORD_SAMPLE) {
		int err = parse_sample(r, a, rec, out->size, off, &out->sample);

		out->time = out->sample.time;
		return err;
	}
	if (a->sample_id_all) {
		const uint8_t *t;

		if (out->size < 8 + a->id_trailer_size)
			return set_err(r, -EINVAL, "record at offset %" PRIu64 " (type %u) too short for its sample_id trailer",
				       off, out->type);
		end = rec + out->size - a->id_trailer_size;
		t = end;
		if (a->sample_type & PERF_SAMPLE_TID)
			t += 8;
		if (a->sample_type & PERF_SAMPLE_TIME)
			out->time = rd64(t);
	}
#define NEED(n)                                                                               \
	do {                                                                                  \
		if (end - p < (n))                                                            \
			return set_err(r, -EINVAL, "record at offset %" PRIu64 " (type %u, size %u) is too short", \
				       off, out->type, out->size);                            \
	} while (0)
	switch (out->type) {
	case PERF_RECORD_COMM:
		NEED(8);
		out->comm.pid = rd32(p);
		out->comm.tid = rd32(p + 4);
		s = rec_string(p + 8, end);
		if (!s)
			return set_err(r, -EINVAL, "COMM record at offset %" PRIu64 " has no terminated name", off);
		out->comm.comm = s;
		break;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		NEED(32);
		out->mmap.pid = rd32(p);
		out->mmap.tid = rd32(p + 4);
		out->mmap.start = rd64(p + 8);
		out->mmap.len = rd64(p + 16);
		out->mmap.pgoff = rd64(p + 24);
		p += 32;
		if (out->type == PERF_RECORD_MMAP2) {
			NEED(32);
			if (out->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
				out->mmap.build_id_size = p[0] > 20 ? 20 : p[0];
				out->mmap.build_id = p + 4;
			}
			out->mmap.prot = rd32(p + 24);
			out->mmap.flags = rd32(p + 28);
			p += 32;
		}
		s = rec_string(p, end);
		if (!s)
			return set_err(r, -EINVAL, "MMAP record at offset %" PRIu64 " has no terminated file name", off);
		out->mmap.filename = s;
		break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		NEED(16);
		out->fork.pid = rd32(p);
		out->fork.ppid = rd32(p + 4);
		out->fork.tid = rd32(p + 8);
		out->fork.ptid = rd32(p + 12);
		if (!out->time && end - p >= 24)
			out->time = rd64(p + 16);
		break;
	case PERF_RECORD_LOST:
		NEED(16);
		out->lost.id = rd64(p);
		out->lost.lost = rd64(p + 8);
		break;
	}
#undef NEED
	return 0;
}

static int deliver(struct perf_reader *r, uint64_t off, perf_reader_cb cb, void *ctx)
{
	struct perf_rec rec;
	int err = parse_record(r, off, &rec);

	if (err)
		return err;
	if (rec.type == UINT32_MAX)
		return 0;
	if (rec.type == PERF_RECORD_LOST)
		r->lost += rec.lost.lost;
	return cb(ctx, &rec);
}

/*
 * Timestamp of a record for ordering, or UINT64_MAX when it has none
 * (such records are delivered at once, as perf does).
 */
static uint64_t record_time(struct perf_reader *r, uint64_t off, uint32_t type, uint16_t size)
{
	const uint8_t *rec = r->map + off;
	struct attr_priv *a;

	if (type >= USER_TYPE_START)
		return UINT64_MAX;
	a = record_attr(r, rec, size, type);
	if (!a)
		return UINT64_MAX;
	if (!(a->sample_type & PERF_SAMPLE_TIME))
		return UINT64_MAX;
	if (type == PERF_RECORD_SAMPLE) {
		uint64_t st = a->sample_type;
		int pos = 8 + 8 * (!!(st & PERF_SAMPLE_IDENTIFIER) + !!(st & PERF_SAMPLE_IP) +
				   !!(st & PERF_SAMPLE_TID));

		return pos + 8 <= size ? rd64(rec + pos) : UINT64_MAX;
	}
	if (!a->sample_id_all || size < 8 + a->id_trailer_size)
		return UINT64_MAX;
	return rd64(rec + size - a->id_trailer_size + 8 * !!(a->sample_type & PERF_SAMPLE_TID));
}

/*
 * Records are located, timed and sorted by a producer (a thread of its own
 * when one can be started) that hands batches of record offsets, in
 * delivery order, to the caller's thread, which parses them and calls back:
 * the scan of the file (and its page faults) and the sorting run beside
 * the callback's work on the second core. A batch is what the sequential
 * walk would deliver between two FINISHED_ROUNDs: the records without a
 * time found in the round, then the queued records the round's end lets
 * go, in (time, file order).
 */
struct batch {
	uint64_t *offs;
	size_t n, cap;
	uint64_t low;       /* no later batch points below: pages under it can go */
	struct batch *next;
};

#define PIPE_MAX_BATCHES 8

struct pipe {
	struct perf_reader *r;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct batch *head, *tail, *free; /* ready batches, oldest first; spares */
	int nready;
	bool done;          /* the producer has ended (perr says how) */
	uint64_t consumed;  /* every record below this offset is delivered (pages may go) */
	bool stop;          /* the consumer wants no more */
	int perr;
	char perr_msg[256];
	/* producer state */
	uint64_t pos, round_max, prev_limit;
	bool have_prev;
	struct u64pair *tmp;
	size_t tmpcap;
};

static int batch_put(struct batch *b, uint64_t off)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 4096;
		uint64_t *o = realloc(b->offs, cap * sizeof(*o));

		if (!o)
			return -ENOMEM;
		b->offs = o;
		b->cap = cap;
	}
	b->offs[b->n++] = off;
	return 0;
}

/* Move the queued records with time <= limit, sorted, into b. */
static int take_queued(struct perf_reader *r, struct pipe *pp, uint64_t limit, struct batch *b)
{
	size_t n = 0;
	int err;

	if (!r->nq)
		return 0;
	if (pp->tmpcap < r->nq) {
		struct u64pair *t = realloc(pp->tmp, r->qcap * sizeof(*t));

		if (!t)
			return -ENOMEM;
		pp->tmp = t;
		pp->tmpcap = r->qcap;
	}
	pairsort(r->q, r->nq, pp->tmp);
	while (n < r->nq && r->q[n].a <= limit) {
		err = batch_put(b, r->q[n].b);
		if (err)
			return err;
		n++;
	}
	memmove(r->q, r->q + n, (r->nq - n) * sizeof(*r->q));
	r->nq -= n;
	return 0;
}

static int produce_err(struct pipe *pp, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int produce_err(struct pipe *pp, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(pp->perr_msg, sizeof(pp->perr_msg), fmt, ap);
	va_end(ap);
	return err;
}

/*
 * Scan on to the next FINISHED_ROUND that lets records go (or the end)
 * and fill b. Returns 1 when more batches follow, 0 at the end, negative
 * errno on a damaged file (with what was found before it in b).
 */
static int produce(struct perf_reader *r, struct pipe *pp, struct batch *b)
{
	int err;

	b->n = 0;
	while (pp->pos < r->data_end) {
		uint64_t pos = pp->pos, t;
		uint32_t type;
		uint16_t size;

		if (r->data_end - pos < 8) {
			r->truncated = true;
			break;
		}
		type = rd32(r->map + pos);
		memcpy(&size, r->map + pos + 6, 2);
		if (size < 8) {
			if (r->data_to_eof && size == 0 && type == 0) {
				/* zero fill after the last record of an interrupted file */
				r->truncated = true;
				break;
			}
			return produce_err(pp, -EINVAL, "record at offset %" PRIu64 " has size %u (smaller than its header)",
					   pos, size);
		}
		if (size > r->data_end - pos) {
			if (r->data_to_eof) {
				r->truncated = true;
				break;
			}
			return produce_err(pp, -EINVAL, "record at offset %" PRIu64 " (size %u) runs past the end of the data section at %" PRIu64,
					   pos, size, r->data_end);
		}
		pp->pos += size;
		if (type == PERF_RECORD_FINISHED_ROUND_) {
			bool ready = pp->have_prev;

			if (ready) {
				err = take_queued(r, pp, pp->prev_limit, b);
				if (err)
					return err;
				b->low = pos;
				for (size_t i = 0; i < r->nq; i++)
					if (r->q[i].b < b->low)
						b->low = r->q[i].b;
			}
			pp->prev_limit = pp->round_max;
			pp->have_prev = true;
			if (ready)
				return 1;
			continue;
		}
		t = record_time(r, pos, type, size);
		if (t == UINT64_MAX) {
			err = batch_put(b, pos);
			if (err)
				return err;
			continue;
		}
		if (r->nq == r->qcap) {
			size_t cap = r->qcap ? 2 * r->qcap : 4096;
			struct u64pair *q = realloc(r->q, cap * sizeof(*q));

			if (!q)
				return -ENOMEM;
			r->q = q;
			r->qcap = cap;
		}
		r->q[r->nq].a = t;
		r->q[r->nq].b = pos;
		r->nq++;
		if (t > pp->round_max)
			pp->round_max = t;
	}
	if (r->truncated)
		warn(r, "the last record is cut off at offset %" PRIu64 "; reporting the %" PRIu64 " bytes of whole records before it",
		     pp->pos, pp->pos - r->data_start);
	b->low = r->data_end;
	err = take_queued(r, pp, UINT64_MAX, b);
	return err ? err : 0;
}

/*
 * Give back the mapped pages below low that no record still to deliver
 * points into, so the resident size stays near the size of a few rounds,
 * not of the file.
 */
static void release_pages(struct perf_reader *r, uint64_t low)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t lo = r->released, hi = low / pg * pg;

	/* in 8 MiB steps: each call costs every CPU running a thread of ours a TLB flush */
	if (r->borrowed || hi <= lo + (8u << 20))
		return;
	madvise((void *)(r->map + lo), hi - lo, MADV_DONTNEED);
	r->released = hi;
}

/*
 * A batch to fill: a spare one, or a new one. The pages of the records
 * delivered so far are given back here, by the producer: the TLB flush
 * that costs then waits on this thread, not on the one doing the work.
 */
static struct batch *batch_get(struct pipe *pp)
{
	struct batch *b;
	uint64_t consumed;

	pthread_mutex_lock(&pp->mu);
	b = pp->free;
	if (b)
		pp->free = b->next;
	consumed = pp->consumed;
	pthread_mutex_unlock(&pp->mu);
	release_pages(pp->r, consumed);
	return b ? b : calloc(1, sizeof(*b));
}

static void *producer(void *arg)
{
	struct pipe *pp = arg;
	int ret;

	do {
		struct batch *b = batch_get(pp);

		ret = b ? produce(pp->r, pp, b) : -ENOMEM;
		pthread_mutex_lock(&pp->mu);
		if (b) {
			b->next = NULL;
			if (pp->tail)
				pp->tail->next = b;
			else
				pp->head = b;
			pp->tail = b;
			pp->nready++;
		}
		if (ret <= 0) {
			pp->done = true;
			pp->perr = ret;
		}
		pthread_cond_broadcast(&pp->cv);
		while (ret > 0 && pp->nready >= PIPE_MAX_BATCHES && !pp->stop)
			pthread_cond_wait(&pp->cv, &pp->mu);
		if (pp->stop)
			ret = 0;
		pthread_mutex_unlock(&pp->mu);
	} while (ret > 0);
	return NULL;
}

/* The next batch, waiting for the producer; NULL when there are no more. */
static struct batch *batch_next(struct pipe *pp)
{
	struct batch *b;

	pthread_mutex_lock(&pp->mu);
	while (!pp->head && !pp->done)
		pthread_cond_wait(&pp->cv, &pp->mu);
	b = pp->head;
	if (b) {
		pp->head = b->next;
		if (!pp->head)
			pp->tail = NULL;
		pp->nready--;
		pthread_cond_broadcast(&pp->cv);
	}
	pthread_mutex_unlock(&pp->mu);
	return b;
}

static void batch_free(struct batch *b)
{
	while (b) {
		struct batch *n = b->next;

		free(b->offs);
		free(b);
		b = n;
	}
}

/*
 * A thread pays for itself from about a megabyte of records on; below, the
 * producer runs in the caller's thread, a batch at a time.
 * OFFCPU_READER_THREADS=1 or 0 forces either (tests).
 */
static bool use_thread(const struct perf_reader *r)
{
	const char *env = getenv("OFFCPU_READER_THREADS");

	if (env && *env)
		return *env == '1';
	return r->data_end - r->data_start >= (1u << 20);
}

int perf_reader__process(struct perf_reader *r, perf_reader_cb cb, void *ctx)
{
	struct pipe pp = { .r = r, .pos = r->data_start };
	bool threaded;
	struct batch *b;
	pthread_t th;
	int err = 0;

	pthread_mutex_init(&pp.mu, NULL);
	pthread_cond_init(&pp.cv, NULL);
	threaded = use_thread(r) && !pthread_create(&th, NULL, producer, &pp);
	for (;;) {
		if (threaded) {
			b = batch_next(&pp);
		} else { /* one batch at a time, in this thread */
			b = pp.done ? NULL : batch_get(&pp);
			if (b) {
				pp.perr = produce(r, &pp, b);
				pp.done = pp.perr <= 0;
			} else if (!pp.done) {
				pp.perr = -ENOMEM;
				pp.done = true;
			}
		}
		if (!b)
			break;
		for (size_t i = 0; i < b->n && !err; i++)
			err = deliver(r, b->offs[i], cb, ctx);
		pthread_mutex_lock(&pp.mu);
		if (!err && b->low > pp.consumed)
			pp.consumed = b->low;
		b->next = pp.free;
		pp.free = b;
		if (err)
			pp.stop = true;
		pthread_cond_broadcast(&pp.cv);
		pthread_mutex_unlock(&pp.mu);
		if (err)
			break;
	}
	if (threaded)
		pthread_join(th, NULL);
	if (!err && pp.perr < 0) {
		err = pp.perr;
		if (pp.perr_msg[0])
			snprintf(r->err, sizeof(r->err), "%s", pp.perr_msg);
	}
	batch_free(pp.head);
	batch_free(pp.free);
	free(pp.tmp);
	pthread_mutex_destroy(&pp.mu);
	pthread_cond_destroy(&pp.cv);
	return err;
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
