// SPDX-License-Identifier: GPL-2.0-only
/*
 * One record of a perf.data file decoded: its attr, a sample's fields in
 * sample_type order (offcpu's payload included), the side-band records'
 * fields, each checked against its record's size.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "perfdata/offcpu_payload.h"
#include "perfdata/reader_int.h"
#include "util/bytes.h"

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
	idx = reader__id_lookup(r, id);
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

/*
 * The next n bytes of a record at *p, moving *p past them; NULL when the
 * record ends first, with *what set to field (what the record is short of).
 */
static const uint8_t *take(const uint8_t **p, const uint8_t *end, uint64_t n, const char **what,
			   const char *field)
{
	const uint8_t *q = *p;

	if ((uint64_t)(end - q) < n) {
		*what = field;
		return NULL;
	}
	*p = q + n;
	return q;
}

/*
 * A sample's fixed fields, IDENTIFIER to PERIOD, in sample_type order:
 * 0, or -EINVAL with *what naming the first field the record is short of.
 */
static int sample_fixed(uint64_t st, const uint8_t **p, const uint8_t *end, struct perf_sample *s,
			const char **what)
{
	const uint8_t *q;

	if (st & PERF_SAMPLE_IDENTIFIER) {
		if (!(q = take(p, end, 8, what, "identifier")))
			return -EINVAL;
		s->id = rd64(q);
	}
	if (st & PERF_SAMPLE_IP) {
		if (!(q = take(p, end, 8, what, "ip")))
			return -EINVAL;
		s->ip = rd64(q);
	}
	if (st & PERF_SAMPLE_TID) {
		if (!(q = take(p, end, 8, what, "pid/tid")))
			return -EINVAL;
		s->pid = rd32(q);
		s->tid = rd32(q + 4);
	}
	if (st & PERF_SAMPLE_TIME) {
		if (!(q = take(p, end, 8, what, "time")))
			return -EINVAL;
		s->time = rd64(q);
	}
	if ((st & PERF_SAMPLE_ADDR) && !take(p, end, 8, what, "addr"))
		return -EINVAL;
	if (st & PERF_SAMPLE_ID) {
		if (!(q = take(p, end, 8, what, "id")))
			return -EINVAL;
		s->id = rd64(q);
	}
	if ((st & PERF_SAMPLE_STREAM_ID) && !take(p, end, 8, what, "stream id"))
		return -EINVAL;
	if (st & PERF_SAMPLE_CPU) {
		if (!(q = take(p, end, 8, what, "cpu")))
			return -EINVAL;
		s->cpu = rd32(q);
	}
	s->period = 1;
	if (st & PERF_SAMPLE_PERIOD) {
		if (!(q = take(p, end, 8, what, "period")))
			return -EINVAL;
		s->period = rd64(q);
	}
	return 0;
}

/* PERF_SAMPLE_READ's values, skipped: 0, or -EINVAL with *what set. */
static int sample_read(uint64_t rf, const uint8_t **p, const uint8_t *end, const char **what)
{
	int per = 1 + !!(rf & PERF_FORMAT_ID) + !!(rf & PERF_FORMAT_LOST);
	const uint8_t *q;
	uint64_t n = 1;

	if (rf & PERF_FORMAT_GROUP) {
		if (!(q = take(p, end, 8, what, "read group")))
			return -EINVAL;
		n = rd64(q);
	}
	n = n * per + !!(rf & PERF_FORMAT_TOTAL_TIME_ENABLED) + !!(rf & PERF_FORMAT_TOTAL_TIME_RUNNING);
	if (n > (uint64_t)(end - *p) / 8) {
		*what = "read values";
		return -EINVAL;
	}
	*p += 8 * n;
	return 0;
}

/* Parse a sample's fields up to RAW into s, zeroed by the caller; errors name the record's offset. */
static int parse_sample(struct perf_reader *r, const struct attr_priv *a, const uint8_t *rec,
			uint16_t size, uint64_t off, struct perf_sample *s)
{
	const uint8_t *p = rec + 8, *end = rec + size, *q;
	uint64_t st = a->sample_type;
	const char *what = NULL;

	s->evattr = &a->pub;
	s->cpumode = rd32(rec + 4) & PERF_RECORD_MISC_CPUMODE_MASK;
	if (sample_fixed(st, &p, end, s, &what))
		goto too_short;
	if ((st & PERF_SAMPLE_READ) && sample_read(a->pub.attr.read_format, &p, end, &what))
		goto too_short;
	if (st & PERF_SAMPLE_CALLCHAIN) {
		uint64_t nr;

		if (!(q = take(&p, end, 8, &what, "callchain length")))
			goto too_short;
		nr = rd64(q);
		if (nr > (uint64_t)(end - p) / 8)
			return reader__set_err(r, -EINVAL, "sample at offset %" PRIu64 ": callchain of %" PRIu64 " entries is longer than its record (size %u)",
				       off, nr, size);
		s->nr_callchain = nr;
		s->callchain = p;
		p += 8 * nr;
	}
	if (st & PERF_SAMPLE_RAW) {
		uint32_t rs;

		if (!(q = take(&p, end, 4, &what, "raw size")))
			goto too_short;
		rs = rd32(q);
		if (rs > end - p)
			return reader__set_err(r, -EINVAL, "sample at offset %" PRIu64 ": raw data of %u bytes is longer than its record",
				       off, rs);
		s->raw_size = rs;
		s->raw = p;
	}
	if (s->raw && (a->pub.is_offcpu || a->pub.is_wakeup || a->pub.is_sched_delay))
		offcpu_sample(s);
	return 0;
too_short:
	return reader__set_err(r, -EINVAL, "sample at offset %" PRIu64 " (size %u) too short for its %s",
			       off, size, what);
}

/* A NUL-terminated string at p inside [p, end), else NULL. */
static const char *rec_string(const uint8_t *p, const uint8_t *end)
{
	if (p >= end || !memchr(p, 0, end - p))
		return NULL;
	return (const char *)p;
}

/*
 * The fields of a side-band record (COMM, MMAP/MMAP2, FORK/EXIT, LOST) in
 * [p, end), its sample_id trailer left out; other types have none. 0, or
 * -EINVAL with the reason set.
 */
static int parse_sideband(struct perf_reader *r, uint64_t off, const uint8_t *p, const uint8_t *end,
			  struct perf_rec *out)
{
	const char *s;

	switch (out->type) {
	case PERF_RECORD_COMM:
		if (end - p < 8)
			goto too_short;
		out->comm.pid = rd32(p);
		out->comm.tid = rd32(p + 4);
		s = rec_string(p + 8, end);
		if (!s)
			return reader__set_err(r, -EINVAL, "COMM record at offset %" PRIu64 " has no terminated name", off);
		out->comm.comm = s;
		break;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		if (end - p < 32)
			goto too_short;
		out->mmap.pid = rd32(p);
		out->mmap.tid = rd32(p + 4);
		out->mmap.start = rd64(p + 8);
		out->mmap.len = rd64(p + 16);
		out->mmap.pgoff = rd64(p + 24);
		p += 32;
		if (out->type == PERF_RECORD_MMAP2) {
			if (end - p < 32)
				goto too_short;
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
			return reader__set_err(r, -EINVAL, "MMAP record at offset %" PRIu64 " has no terminated file name", off);
		out->mmap.filename = s;
		break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		if (end - p < 16)
			goto too_short;
		out->fork.pid = rd32(p);
		out->fork.ppid = rd32(p + 4);
		out->fork.tid = rd32(p + 8);
		out->fork.ptid = rd32(p + 12);
		if (!out->time && end - p >= 24)
			out->time = rd64(p + 16);
		break;
	case PERF_RECORD_LOST:
		if (end - p < 16)
			goto too_short;
		out->lost.id = rd64(p);
		out->lost.lost = rd64(p + 8);
		break;
	}
	return 0;
too_short:
	return reader__set_err(r, -EINVAL, "record at offset %" PRIu64 " (type %u, size %u) is too short",
			       off, out->type, out->size);
}

/*
 * Parse the record at off into *out. Returns 0, or a negative errno with
 * the reason set. Unknown record types are passed with only the header.
 */
static int parse_record(struct perf_reader *r, uint64_t off, struct perf_rec *out)
{
	const uint8_t *rec = reader__rec(r, off), *p = rec + 8, *end;
	struct attr_priv *a;

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
			return reader__set_err(r, -EINVAL, "record at offset %" PRIu64 " (type %u) too short for its sample_id trailer",
				       off, out->type);
		end = rec + out->size - a->id_trailer_size;
		t = end;
		if (a->sample_type & PERF_SAMPLE_TID)
			t += 8;
		if (a->sample_type & PERF_SAMPLE_TIME)
			out->time = rd64(t);
	}
	return parse_sideband(r, off, p, end, out);
}

int reader__deliver(struct perf_reader *r, uint64_t off, perf_reader_cb cb, void *ctx)
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
uint64_t reader__record_time(struct perf_reader *r, uint64_t off, uint32_t type, uint16_t size)
{
	const uint8_t *rec = reader__rec(r, off);
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
