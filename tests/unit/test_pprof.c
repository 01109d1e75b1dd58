// SPDX-License-Identifier: GPL-2.0-only
/*
 * The protobuf encoder against the wire format's own examples, and pprof
 * output decoded field by field: a byte-built recording (cpu-clock and
 * offcpu-time samples of two threads) through session, profile and
 * pprof__encode(), read back with a small decoder written here from the
 * wire format and profile.proto; pprof__write's file read back through
 * zlib.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <zlib.h>

#include "pd_builder.h"
#include "output/pprof/pb.h"
#include "output/pprof/pprof.h"
#include "profile/profile.h"
#include "output/report.h"

static void expect_bytes(struct pb *b, const char *hex)
{
	char got[1024] = "";

	for (size_t i = 0; i < pb__len(b) && i < 300; i++)
		snprintf(got + 3 * i, 4, "%02x ", pb__data(b)[i]);
	if (*got)
		got[strlen(got) - 1] = 0;
	assert_string_equal(got, hex);
}

static void test_encoder(void **state)
{
	struct pb *b = pb__new();
	size_t m, m2;

	pb__uint(b, 1, 150); /* the encoding guide's first example */
	expect_bytes(b, "08 96 01");
	pb__free(b);

	b = pb__new();
	pb__uint(b, 3, 0); /* proto3 default: not written */
	pb__uint(b, 2, (uint64_t)-1); /* a negative int64 takes ten bytes */
	expect_bytes(b, "10 ff ff ff ff ff ff ff ff ff 01");
	pb__free(b);

	b = pb__new();
	pb__string(b, 2, "testing");
	pb__string(b, 6, ""); /* repeated strings are written even when empty */
	expect_bytes(b, "12 07 74 65 73 74 69 6e 67 32 00");
	pb__free(b);

	b = pb__new();
	m = pb__begin(b, 3); /* embedded message */
	pb__uint(b, 1, 150);
	pb__end(b, m);
	m = pb__begin(b, 4); /* packed repeated */
	pb__varint(b, 3);
	pb__varint(b, 270);
	pb__varint(b, 86942);
	pb__end(b, m);
	expect_bytes(b, "1a 03 08 96 01 22 06 03 8e 02 9e a7 05");
	pb__free(b);

	/* a body of 300 bytes needs a two-byte length: the body moves, intact,
	 * and the enclosing message (303 bytes: af 02) counts the extra byte */
	b = pb__new();
	m = pb__begin(b, 1);
	m2 = pb__begin(b, 2);
	for (int i = 0; i < 150; i++)
		pb__uint(b, 1, 1); /* 2 bytes each */
	pb__end(b, m2);
	pb__end(b, m);
	assert_int_equal(pb__len(b), 1 + 2 + 1 + 2 + 300);
	assert_memory_equal(pb__data(b), "\x0a\xaf\x02\x12\xac\x02\x08\x01", 8);
	assert_memory_equal(pb__data(b) + pb__len(b) - 2, "\x08\x01", 2);
	assert_int_equal(pb__error(b), 0);
	pb__free(b);
}

/*
 * The one-go writers (pb__packed_u32/u64, pb__uint_msg) write what
 * pb__begin(), the field by field calls and pb__end() write: values of
 * every varint size, bodies under and over 127 bytes, empty ones, zeros
 * left out of a message.
 */
static void test_encoder_one_go(void **state)
{
	static const uint32_t fields[] = { 1, 2, 3, 15, 16, 2047 };
	uint64_t x = 0x9e3779b97f4a7c15ULL;

	(void)state;
	for (int round = 0; round < 400; round++) {
		struct pb *a = pb__new(), *b = pb__new();
		uint32_t v32[100];
		uint64_t v64[100], vals[6];
		size_t n = (size_t)round % 100, m;

		for (size_t i = 0; i < n; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			v64[i] = round % 3 ? x >> (x % 64) : 0;
			v32[i] = (uint32_t)(v64[i] >> (x % 32));
		}
		for (size_t i = 0; i < 6; i++)
			vals[i] = i < n ? v64[i] : 0;
		m = pb__begin(a, 4);
		for (size_t i = 0; i < n; i++)
			pb__varint(a, v32[i]);
		pb__end(a, m);
		m = pb__begin(a, 5);
		for (size_t i = 0; i < n; i++)
			pb__varint(a, v64[i]);
		pb__end(a, m);
		m = pb__begin(a, 3);
		for (size_t i = 0; i < 6; i++)
			pb__uint(a, fields[i], vals[i]);
		pb__end(a, m);
		pb__packed_u32(b, 4, v32, n);
		pb__packed_u64(b, 5, v64, n);
		pb__uint_msg(b, 3, 6, fields, vals);
		assert_int_equal(pb__len(a), pb__len(b));
		assert_memory_equal(pb__data(a), pb__data(b), pb__len(a));
		pb__free(a);
		pb__free(b);
	}
}

/* ---- a small protobuf reader for the checks ---- */

struct field {
	uint32_t num;
	int wt;
	uint64_t v;          /* varint */
	const uint8_t *p;    /* length-delimited */
	size_t len;
};

static uint64_t rd_varint(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;

	for (int s = 0; *p < end && s < 64; s += 7) {
		uint8_t c = *(*p)++;

		v |= (uint64_t)(c & 0x7f) << s;
		if (!(c & 0x80))
			return v;
	}
	fail_msg("truncated varint");
	return 0;
}

/* Next field of a message; false at its end. Only wire types 0 and 2 are expected. */
static bool next_field(const uint8_t **p, const uint8_t *end, struct field *f)
{
	uint64_t tag;

	if (*p >= end)
		return false;
	tag = rd_varint(p, end);
	f->num = tag >> 3;
	f->wt = tag & 7;
	if (f->wt == 0) {
		f->v = rd_varint(p, end);
	} else if (f->wt == 2) {
		f->len = rd_varint(p, end);
		assert_true(f->len <= (size_t)(end - *p));
		f->p = *p;
		*p += f->len;
	} else {
		fail_msg("unexpected wire type %d", f->wt);
	}
	return true;
}

#define MAXN 64

struct decoded {
	const char *str[MAXN];
	char strbuf[MAXN][128];
	int nstr;
	uint64_t st_type[MAXN], st_unit[MAXN];
	int nst;
	struct { uint64_t loc[8]; int nloc; int64_t val[8]; int nval;
		 uint64_t lkey[4], lstr[4], lnum[4]; int nlab; } sample[MAXN];
	int nsample;
	struct { uint64_t id, filename, build_id, has_functions; } map[MAXN];
	int nmap;
	struct { uint64_t id, mapping, address, function, line; } loc[MAXN];
	int nloc;
	struct { uint64_t id, name, system_name; } fn[MAXN];
	int nfn;
	uint64_t default_sample_type, period_type_type, period;
};

static void decode(const uint8_t *p, size_t len, struct decoded *d)
{
	const uint8_t *end = p + len;
	struct field f, g, h;

	memset(d, 0, sizeof(*d));
	while (next_field(&p, end, &f)) {
		const uint8_t *q = f.p, *qe = f.p + f.len;

		switch (f.num) {
		case 1: /* sample_type */
			while (next_field(&q, qe, &g))
				(g.num == 1 ? d->st_type : d->st_unit)[d->nst] = g.v;
			d->nst++;
			break;
		case 2: { /* sample */
			typeof(d->sample[0]) *s = &d->sample[d->nsample++];

			while (next_field(&q, qe, &g)) {
				const uint8_t *r = g.p, *re = g.p + g.len;

				if (g.num == 1)
					while (r < re)
						s->loc[s->nloc++] = rd_varint(&r, re);
				else if (g.num == 2)
					while (r < re)
						s->val[s->nval++] = (int64_t)rd_varint(&r, re);
				else if (g.num == 3) {
					while (next_field(&r, re, &h))
						(h.num == 1 ? s->lkey : h.num == 2 ? s->lstr : s->lnum)[s->nlab] = h.v;
					s->nlab++;
				}
			}
			break;
		}
		case 3:
			while (next_field(&q, qe, &g)) {
				if (g.num == 1) d->map[d->nmap].id = g.v;
				if (g.num == 5) d->map[d->nmap].filename = g.v;
				if (g.num == 6) d->map[d->nmap].build_id = g.v;
				if (g.num == 7) d->map[d->nmap].has_functions = g.v;
			}
			d->nmap++;
			break;
		case 4:
			while (next_field(&q, qe, &g)) {
				if (g.num == 1) d->loc[d->nloc].id = g.v;
				if (g.num == 2) d->loc[d->nloc].mapping = g.v;
				if (g.num == 3) d->loc[d->nloc].address = g.v;
				if (g.num == 4) {
					const uint8_t *r = g.p;

					while (next_field(&r, g.p + g.len, &h))
						*(h.num == 1 ? &d->loc[d->nloc].function : &d->loc[d->nloc].line) = h.v;
				}
			}
			d->nloc++;
			break;
		case 5:
			while (next_field(&q, qe, &g)) {
				if (g.num == 1) d->fn[d->nfn].id = g.v;
				if (g.num == 2) d->fn[d->nfn].name = g.v;
				if (g.num == 3) d->fn[d->nfn].system_name = g.v;
			}
			d->nfn++;
			break;
		case 6:
			assert_true(d->nstr < MAXN && f.len < 128);
			memcpy(d->strbuf[d->nstr], f.p, f.len);
			d->strbuf[d->nstr][f.len] = 0;
			d->str[d->nstr] = d->strbuf[d->nstr];
			d->nstr++;
			break;
		case 11:
			while (next_field(&q, qe, &g))
				if (g.num == 1)
					d->period_type_type = g.v;
			break;
		case 12: d->period = f.v; break;
		case 14: d->default_sample_type = f.v; break;
		}
	}
}

static const char *S(const struct decoded *d, uint64_t i)
{
	assert_true(i < (uint64_t)d->nstr);
	return d->str[i];
}

static uint64_t label(const struct decoded *d, int si, const char *key, bool str)
{
	for (int i = 0; i < d->sample[si].nlab; i++)
		if (!strcmp(S(d, d->sample[si].lkey[i]), key))
			return str ? d->sample[si].lstr[i] : d->sample[si].lnum[i];
	fail_msg("sample %d has no label %s", si, key);
	return 0;
}

/* ---- a recording, encoded and decoded ---- */

#define ST (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
	    PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN)

static int add(void *ctx, const struct rsample *rs)
{
	return profile__add(ctx, rs);
}

static void test_profile(void **state)
{
	static const uint64_t st[2] = { ST, ST | PERF_SAMPLE_RAW };
	static const char *const names[2] = { "cpu-clock", OFFCPU_EVENT_NAME };
	struct offcpu_raw raw = { 'S', OFFCPU_RAW_AGGREGATED, 2, 0 };
	uint64_t run[2] = { 0x401100, 0x401200 }, wait[2] = { 0x401300, 0x401200 };
	struct session_opts so = { .no_symbols = true };
	struct report_opts o;
	struct session *s;
	struct profile *p;
	struct pb *b = pb__new();
	struct decoded *d = calloc(1, sizeof(*d));
	char path[64], err[256];
	struct pdb pb;
	int cpu_s = -1, off_s = -1;

	snprintf(path, sizeof(path), "/tmp/offcpu-ut-pprof-%d.data", getpid());
	pdb_init(&pb, 2, st, names);
	pdb_comm(&pb, 10, 10, "worker", 1);
	pdb_comm(&pb, 10, 11, "helper", 1);
	pdb_mmap2(&pb, 10, 0x400000, 0x10000, 0, "/nonexistent/app", 2);
	for (int i = 0; i < 3; i++)
		pdb_sample(&pb, 0, 10, 10, 1000 + i, 1000000, run, 2, NULL, 0);
	pdb_sample(&pb, 1, 10, 11, 2000, 5000, wait, 2, &raw, sizeof(raw));
	pdb_finish(&pb, path);

	s = session__new(path, &so, err, sizeof(err));
	assert_non_null(s);
	p = profile__new(2, PROFILE_KEEP_PID | PROFILE_KEEP_TID);
	assert_int_equal(session__run(s, add, p), 0);
	report_opts__init(&o);
	o.input = path;
	assert_int_equal(pprof__encode(b, NULL, s, p, 0, 1, &o), 0);
	decode(pb__data(b), pb__len(b), d);

	assert_true(d->nstr > 0);
	assert_string_equal(d->str[0], "");
	assert_int_equal(d->nst, 4);
	assert_string_equal(S(d, d->st_type[0]), "samples");
	assert_string_equal(S(d, d->st_unit[0]), "count");
	assert_string_equal(S(d, d->st_type[1]), "cpu");
	assert_string_equal(S(d, d->st_unit[1]), "nanoseconds");
	assert_string_equal(S(d, d->st_type[2]), "off_cpu");
	assert_string_equal(S(d, d->st_unit[2]), "nanoseconds");
	assert_string_equal(S(d, d->st_type[3]), "off_cpu_intervals");
	assert_string_equal(S(d, d->default_sample_type), "off_cpu");
	assert_string_equal(S(d, d->period_type_type), "cpu");

	assert_int_equal(d->nsample, 2);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(d->sample[i].nval, 4);
		if (d->sample[i].val[1])
			cpu_s = i;
		else
			off_s = i;
	}
	assert_true(cpu_s >= 0 && off_s >= 0);
	/* three cpu-clock samples of 1 ms; one aggregated sample of two intervals */
	assert_int_equal(d->sample[cpu_s].val[0], 3);
	assert_int_equal(d->sample[cpu_s].val[1], 3000000);
	assert_int_equal(d->sample[cpu_s].val[2], 0);
	assert_int_equal(d->sample[off_s].val[0], 2);
	assert_int_equal(d->sample[off_s].val[2], 5000);
	assert_int_equal(d->sample[off_s].val[3], 2);
	assert_int_equal(label(d, cpu_s, "pid", false), 10);
	assert_int_equal(label(d, cpu_s, "tid", false), 10);
	assert_string_equal(S(d, label(d, cpu_s, "comm", true)), "worker");
	assert_int_equal(label(d, off_s, "tid", false), 11);
	assert_string_equal(S(d, label(d, off_s, "comm", true)), "helper");
	assert_string_equal(S(d, label(d, off_s, "state", true)), "S");

	/* leaf first; the shared caller is one location; no symbols: [app] at map-relative addresses */
	assert_int_equal(d->sample[cpu_s].nloc, 2);
	assert_int_equal(d->sample[off_s].nloc, 2);
	assert_int_equal(d->sample[cpu_s].loc[1], d->sample[off_s].loc[1]);
	assert_int_equal(d->nloc, 3);
	for (int i = 0; i < d->nloc; i++) {
		uint64_t want = d->loc[i].id == d->sample[cpu_s].loc[0] ? 0x1100 :
				d->loc[i].id == d->sample[off_s].loc[0] ? 0x1300 : 0x1200;

		assert_int_equal(d->loc[i].address, want);
		assert_int_equal(d->loc[i].mapping, 1);
		assert_true(d->loc[i].function >= 1 && d->loc[i].function <= (uint64_t)d->nfn);
	}
	assert_int_equal(d->nfn, 1); /* every frame is "[app]" without symbols */
	assert_string_equal(S(d, d->fn[0].name), "[app]");
	assert_int_equal(d->nmap, 1);
	assert_int_equal(d->map[0].id, 1);
	assert_string_equal(S(d, d->map[0].filename), "/nonexistent/app");
	assert_int_equal(d->map[0].has_functions, 1);

	/* only one of the events */
	pb__free(b);
	b = pb__new();
	assert_int_equal(pprof__encode(b, NULL, s, p, 0, -1, &o), 0);
	decode(pb__data(b), pb__len(b), d);
	assert_int_equal(d->nsample, 1);
	assert_string_equal(S(d, d->default_sample_type), "cpu");

	report_opts__free(&o);
	profile__free(p);
	session__free(s);
	pb__free(b);
	free(d);
	free(pb.buf);
	unlink(path);
}

/*
 * pprof__write: a profile of 40 000 stacks (about 2 MB encoded, so its
 * samples go to the gzip stream in pieces while the rest is encoded) read
 * back through zlib is byte for byte what pprof__encode() makes in memory;
 * an unwritable place is an error, with no file left behind.
 */
static void test_write(void **state)
{
	static const uint64_t st[1] = { ST };
	static const char *const names[1] = { "cpu-clock" };
	struct session_opts so = { .no_symbols = true };
	char path[64], out[64], err[256];
	size_t cap = 8u << 20;
	unsigned char *back = malloc(cap);
	struct pb *b = pb__new();
	struct report_opts o;
	struct session *s;
	struct profile *p;
	struct pdb pb;
	gzFile gz;
	int got;

	(void)state;
	assert_non_null(back);
	snprintf(path, sizeof(path), "/tmp/offcpu-ut-pprof-w-%d.data", getpid());
	snprintf(out, sizeof(out), "/tmp/offcpu-ut-pprof-w-%d.pb.gz", getpid());
	pdb_init(&pb, 1, st, names);
	pdb_comm(&pb, 10, 10, "worker", 1);
	pdb_mmap2(&pb, 10, 0x400000, 0x100000, 0, "/nonexistent/app", 2);
	for (uint64_t i = 0; i < 40000; i++) {
		uint64_t ips[2] = { 0x400000 + 16 * i, 0x4ff000 };

		pdb_sample(&pb, 0, 10, 10, 1000 + i, 1000000, ips, 2, NULL, 0);
	}
	pdb_finish(&pb, path);
	s = session__new(path, &so, err, sizeof(err));
	assert_non_null(s);
	p = profile__new(1, PROFILE_KEEP_PID | PROFILE_KEEP_TID);
	assert_int_equal(session__run(s, add, p), 0);
	report_opts__init(&o);
	o.input = path;
	assert_int_equal(pprof__encode(b, NULL, s, p, 0, -1, &o), 0);
	assert_true(pb__len(b) > (1u << 20) && pb__len(b) < cap);

	assert_int_equal(pprof__write(out, s, p, &o, NULL, err, sizeof(err)), 0);
	gz = gzopen(out, "rb");
	assert_non_null(gz);
	assert_int_equal(gzdirect(gz), 0); /* really compressed */
	got = gzread(gz, back, (unsigned int)cap);
	gzclose(gz);
	assert_int_equal(got, (int)pb__len(b));
	assert_memory_equal(back, pb__data(b), pb__len(b));
	unlink(out);

	/* an unwritable place: an error, and no file left behind */
	assert_int_equal(pprof__write("/nonexistent-dir/x.pb.gz", s, p, &o, NULL, err, sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "cannot write /nonexistent-dir/x.pb.gz"));

	report_opts__free(&o);
	profile__free(p);
	session__free(s);
	pb__free(b);
	free(back);
	free(pb.buf);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encoder),
		cmocka_unit_test(test_encoder_one_go),
		cmocka_unit_test(test_profile),
		cmocka_unit_test(test_write),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
