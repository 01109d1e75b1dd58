// SPDX-License-Identifier: GPL-2.0-only
/*
 * perf.data reader on files built byte by byte (pd_builder.h): time order
 * with FINISHED_ROUND semantics, attrs told apart by IDENTIFIER with
 * different sample_types, EVENT_DESC names, the offcpu RAW payload and
 * counters section, truncation, and the error paths.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "pd_builder.h"
#include "perfdata/perf_reader.h"

#define ST0 (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
	     PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN)
#define ST1 (ST0 | PERF_SAMPLE_RAW)

struct seen {
	uint64_t times[32];
	int types[32];
	int n;
	int raw_ok;
	int names_ok;
};

static int collect(void *ctx, const struct perf_rec *rec)
{
	struct seen *s = ctx;

	if (s->n < 32) {
		s->times[s->n] = rec->time;
		s->types[s->n] = rec->type;
		s->n++;
	}
	if (rec->type == PERF_RECORD_SAMPLE && rec->sample.evattr->is_offcpu) {
		struct offcpu_raw raw;

		assert_true(rec->sample.raw_size >= sizeof(raw));
		memcpy(&raw, rec->sample.raw, sizeof(raw));
		if (raw.state == 'D' && raw.count == 3 && raw.cgroup == 77 &&
		    rec->sample.period == 1000 * rec->sample.time)
			s->raw_ok++;
		assert_int_equal(rec->sample.nr_callchain, 2);
		assert_int_equal(perf_sample__ip(&rec->sample, 1), 0x401234);
	}
	if (rec->type == PERF_RECORD_COMM)
		s->names_ok += !strcmp(rec->comm.comm, "worker");
	return 0;
}

static void tmpname(char *buf, size_t len)
{
	snprintf(buf, len, "/tmp/offcpu-ut-reader-%d.data", getpid());
}

static void sample(struct pdb *b, int ai, uint64_t t)
{
	uint64_t ips[2] = { 0x401000 + t, 0x401234 };
	struct offcpu_raw raw = { 'D', OFFCPU_RAW_AGGREGATED, 3, 77 };

	pdb_sample(b, ai, 10, 11, t, 1000 * t, ips, 2, &raw, sizeof(raw));
}

static void build_two_attrs(const char *path)
{
	static const uint64_t st[2] = { ST0, ST1 };
	static const char *const names[2] = { "cpu-clock", OFFCPU_EVENT_NAME };
	struct pdb b;

	pdb_init(&b, 2, st, names);
	b.counter_name = "drop.ringbuf_full";
	b.counter_value = 7;
	pdb_comm(&b, 10, 11, "worker", 5);
	sample(&b, 0, 30);
	sample(&b, 1, 10);
	pdb_round(&b);
	sample(&b, 0, 20);
	sample(&b, 1, 40);
	pdb_round(&b);
	sample(&b, 1, 25); /* older than what the last round flushed */
	sample(&b, 0, 35);
	pdb_finish(&b, path);
}

static void test_round_order_and_features(void **state)
{
	char path[64], err[256];
	struct perf_reader *r;
	struct seen s = { 0 };
	static const uint64_t want[] = { 5, 10, 20, 30, 25, 35, 40 };
	const char *name;
	uint64_t val;

	tmpname(path, sizeof(path));
	build_two_attrs(path);
	r = perf_reader__open(path, err, sizeof(err));
	assert_non_null(r);
	assert_int_equal(perf_reader__nr_attrs(r), 2);
	assert_string_equal(perf_reader__attr(r, 0)->name, "cpu-clock");
	assert_string_equal(perf_reader__attr(r, 1)->name, OFFCPU_EVENT_NAME);
	assert_true(perf_reader__attr(r, 1)->is_offcpu);
	assert_true(perf_reader__attr(r, 1)->is_time);
	assert_true(perf_reader__attr(r, 0)->is_time);
	assert_false(perf_reader__attr(r, 0)->is_offcpu);
	assert_int_equal(perf_reader__nr_offcpu_counters(r), 1);
	assert_true(perf_reader__offcpu_counter(r, 0, &name, &val));
	assert_string_equal(name, "drop.ringbuf_full");
	assert_int_equal(val, 7);
	assert_int_equal(perf_reader__process(r, collect, &s), 0);
	assert_int_equal(s.n, 7);
	for (int i = 0; i < 7; i++)
		assert_int_equal(s.times[i], want[i]);
	assert_int_equal(s.raw_ok, 3);
	assert_int_equal(s.names_ok, 1);
	assert_false(perf_reader__truncated(r));
	perf_reader__free(r);
	unlink(path);
}

/* Every record as delivered: (type, time, offset), and a stop after `stop_at` when set. */
struct order {
	uint64_t (*v)[3];
	size_t n, cap;
	size_t stop_at;
};

static int record_order(void *ctx, const struct perf_rec *rec)
{
	struct order *o = ctx;

	if (o->n == o->cap) {
		o->cap = o->cap ? 2 * o->cap : 1024;
		o->v = realloc(o->v, o->cap * sizeof(*o->v));
		assert_non_null(o->v);
	}
	o->v[o->n][0] = rec->type;
	o->v[o->n][1] = rec->time;
	o->v[o->n][2] = rec->file_offset;
	o->n++;
	return o->stop_at && o->n == o->stop_at ? -ECANCELED : 0;
}

static void read_order(const char *path, const char *threads, struct order *o, int want_err)
{
	char err[256];
	struct perf_reader *r;

	setenv("OFFCPU_READER_THREADS", threads, 1);
	r = perf_reader__open(path, err, sizeof(err));
	assert_non_null(r);
	assert_int_equal(perf_reader__process(r, record_order, o), want_err);
	perf_reader__free(r);
	unsetenv("OFFCPU_READER_THREADS");
}

/*
 * read_order() in threads (NULL: as the reader chooses), where the walk
 * must succeed and leave a first warning holding warning (NULL: no
 * warning at all).
 */
static void read_order_warned(const char *path, const char *threads, struct order *o,
			      const char *warning)
{
	char err[256];
	struct perf_reader *r;

	if (threads)
		setenv("OFFCPU_READER_THREADS", threads, 1);
	r = perf_reader__open(path, err, sizeof(err));
	assert_non_null(r);
	assert_int_equal(perf_reader__process(r, record_order, o), 0);
	if (warning) {
		assert_non_null(perf_reader__warning(r, 0));
		assert_non_null(strstr(perf_reader__warning(r, 0), warning));
	} else {
		assert_null(perf_reader__warning(r, 0));
	}
	perf_reader__free(r);
	unsetenv("OFFCPU_READER_THREADS");
}

/*
 * The producer in a thread of its own (the reader's pipeline) delivers
 * exactly what it delivers in the caller's thread: 300 rounds of records
 * from two "CPUs" out of order, records without a time between them; and
 * a callback that stops the walk midway stops it there in both.
 */
static void test_threaded_same_order(void **state)
{
	static const uint64_t st[2] = { ST0, ST1 };
	static const char *const names[2] = { "cpu-clock", OFFCPU_EVENT_NAME };
	struct order a = { 0 }, b = { 0 };
	char path[64];
	struct pdb pb;
	uint64_t t = 100;

	tmpname(path, sizeof(path));
	pdb_init(&pb, 2, st, names);
	pdb_comm(&pb, 10, 11, "worker", 5);
	for (int round = 0; round < 300; round++) {
		for (int i = 0; i < 20; i++)
			sample(&pb, 0, t + 2 * i);      /* CPU 0's run */
		pdb_hdr(&pb, 80, 0, 8);             /* a record without a time */
		for (int i = 0; i < 20; i++)
			sample(&pb, 1, t + 2 * i + 1);  /* CPU 1's run, interleaved in time */
		pdb_round(&pb);
		t += 30; /* overlaps the next round */
	}
	pdb_finish(&pb, path);
	read_order(path, "0", &a, 0);
	read_order(path, "1", &b, 0);
	assert_int_equal(a.n, 1 + 300 * 41);
	assert_int_equal(a.n, b.n);
	assert_memory_equal(a.v, b.v, a.n * sizeof(*a.v));
	for (size_t i = 1; i < a.n; i++)
		if (a.v[i][0] == PERF_RECORD_SAMPLE && a.v[i - 1][0] == PERF_RECORD_SAMPLE)
			assert_true(a.v[i - 1][1] <= a.v[i][1]);
	a.n = b.n = 0;
	a.stop_at = b.stop_at = 5000;
	read_order(path, "0", &a, -ECANCELED);
	read_order(path, "1", &b, -ECANCELED);
	assert_int_equal(a.n, 5000);
	assert_memory_equal(a.v, b.v, a.n * sizeof(*a.v));
	free(a.v);
	free(b.v);
	unlink(path);
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	*len = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(*len);
	assert_int_equal(fread(buf, 1, *len, f), *len);
	fclose(f);
	return buf;
}

static void spit(const char *path, const uint8_t *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	fclose(f);
}

/* Patch a built file, then expect open or process to fail with msg. */
static void expect_fail(void (*patch)(uint8_t *buf, size_t *len), const char *msg, bool at_open)
{
	char path[64], err[256] = "";
	struct perf_reader *r;
	struct seen s = { 0 };
	uint8_t *buf;
	size_t len;

	tmpname(path, sizeof(path));
	build_two_attrs(path);
	buf = slurp(path, &len);
	patch(buf, &len);
	spit(path, buf, len);
	free(buf);
	r = perf_reader__open(path, err, sizeof(err));
	if (at_open) {
		assert_null(r);
		if (!strstr(err, msg))
			fail_msg("error '%s' does not say '%s'", err, msg);
	} else {
		assert_non_null(r);
		assert_true(perf_reader__process(r, collect, &s) < 0);
		if (!strstr(perf_reader__error(r), msg))
			fail_msg("error '%s' does not say '%s'", perf_reader__error(r), msg);
		perf_reader__free(r);
	}
	unlink(path);
}

static uint64_t data_off(const uint8_t *buf)
{
	uint64_t v;
	memcpy(&v, buf + 40, 8);
	return v;
}

/* first sample record: after the COMM (its size is in its header) */
static uint64_t first_sample(const uint8_t *buf)
{
	uint16_t size;
	memcpy(&size, buf + data_off(buf) + 6, 2);
	return data_off(buf) + size;
}

static void p_magic(uint8_t *b, size_t *l) { (void)l; memcpy(b, "PERFILE1", 8); }
static void p_attr_size(uint8_t *b, size_t *l) { uint64_t v = 3; (void)l; memcpy(b + 16, &v, 8); }
static void p_attrs_range(uint8_t *b, size_t *l) { uint64_t v = *l; memcpy(b + 24, &v, 8); }
static void p_data_range(uint8_t *b, size_t *l) { uint64_t v = *l + 1; memcpy(b + 40, &v, 8); }
static void p_size0(uint8_t *b, size_t *l) { uint16_t z = 0; (void)l; memcpy(b + first_sample(b) + 6, &z, 2); }
static void p_past_end(uint8_t *b, size_t *l)
{
	uint16_t big = 0xfff8;
	(void)l;
	memcpy(b + first_sample(b) + 6, &big, 2);
}
static void p_callchain(uint8_t *b, size_t *l)
{
	uint64_t nr = 1000;
	(void)l;
	/* IDENTIFIER IP TID TIME CPU PERIOD, then the callchain length */
	memcpy(b + first_sample(b) + 8 + 6 * 8, &nr, 8);
}
static void p_feature(uint8_t *b, size_t *l)
{
	uint64_t off, size, bad = *l;
	memcpy(&off, b + 40, 8);
	memcpy(&size, b + 48, 8);
	memcpy(b + off + size, &bad, 8); /* EVENT_DESC offset at the end of the file */
}

static void test_errors(void **state)
{
	expect_fail(p_magic, "bad magic", true);
	expect_fail(p_attr_size, "attr size 3", true);
	expect_fail(p_attrs_range, "attr section", true);
	expect_fail(p_size0, "has size 0", false);
	expect_fail(p_past_end, "runs past the end", false);
	expect_fail(p_callchain, "callchain of 1000 entries", false);
	(void)p_data_range;
}

/* data size 0 and a cut last record: whole records read, flag set */
static void test_truncated(void **state)
{
	char path[64], err[256];
	struct perf_reader *r;
	struct seen s = { 0 };
	uint8_t *buf;
	size_t len;
	uint64_t zero = 0, doff, dsize;

	tmpname(path, sizeof(path));
	build_two_attrs(path);
	buf = slurp(path, &len);
	doff = data_off(buf);
	memcpy(&dsize, buf + 48, 8);
	memcpy(buf + 48, &zero, 8);
	for (int i = 0; i < 4; i++)
		memcpy(buf + 72 + 8 * i, &zero, 8);
	spit(path, buf, doff + dsize - 20); /* the last sample loses 20 bytes */
	free(buf);
	r = perf_reader__open(path, err, sizeof(err));
	assert_non_null(r);
	assert_int_equal(perf_reader__process(r, collect, &s), 0);
	assert_true(perf_reader__truncated(r));
	{
		bool whole = true;

		assert_non_null(perf_reader__incomplete(r, &whole));
		assert_false(whole);
	}
	assert_int_equal(s.n, 6);
	/* names fall back to type/config when EVENT_DESC is gone */
	assert_string_equal(perf_reader__attr(r, 0)->name, "cpu-clock");
	assert_string_equal(perf_reader__attr(r, 1)->name, "bpf-output");
	perf_reader__free(r);
	unlink(path);
}

/* The image of path read whole into memory, then walked as perf_reader__open_mem() does. */
static void read_order_mem(const char *path, struct order *o)
{
	char err[256];
	struct perf_reader *r;
	size_t len;
	uint8_t *buf = slurp(path, &len);

	r = perf_reader__open_mem(buf, len, "mem.data", err, sizeof(err));
	assert_non_null(r);
	assert_int_equal(perf_reader__process(r, record_order, o), 0);
	perf_reader__free(r);
	free(buf);
}

/* A sample whose callchain is nr frames long (records of many sizes). */
static void long_sample(struct pdb *b, int ai, uint64_t t, int nr)
{
	uint64_t ips[64];

	for (int i = 0; i < nr; i++)
		ips[i] = 0x401000 + 16 * i + t % 7;
	pdb_sample(b, ai, 10, 11, t, 1000, ips, nr, NULL, 0);
}

/*
 * The data section is mapped a 2 MiB chunk at a time: 8 MB of records of
 * sizes from 32 to 540 bytes in 3000 rounds (records cross the chunks'
 * boundaries) are delivered the same from the file in one thread, in
 * two, and from the file's image in memory (no mapping at all).
 */
static void test_chunks(void **state)
{
	static const uint64_t st[2] = { ST0, ST0 };
	static const char *const names[2] = { "cpu-clock", "task-clock" };
	struct order a = { 0 }, b = { 0 }, c = { 0 };
	char path[64];
	struct pdb pb;
	uint64_t t = 100;
	int n = 0;

	tmpname(path, sizeof(path));
	pdb_init(&pb, 2, st, names);
	for (int round = 0; round < 3000; round++) {
		for (int i = 0; i < 8; i++, n++)
			long_sample(&pb, i & 1, t + 3 * i, 1 + n * 37 % 64);
		pdb_round(&pb);
		t += 20;
	}
	pdb_finish(&pb, path);
	assert_true(pb.len > 6 << 20);
	read_order(path, "0", &a, 0);
	read_order(path, "1", &b, 0);
	read_order_mem(path, &c);
	assert_int_equal(a.n, 3000 * 8);
	assert_int_equal(b.n, a.n);
	assert_int_equal(c.n, a.n);
	assert_memory_equal(a.v, b.v, a.n * sizeof(*a.v));
	assert_memory_equal(a.v, c.v, a.n * sizeof(*a.v));
	for (size_t i = 1; i < a.n; i++)
		assert_true(a.v[i - 1][1] <= a.v[i][1]);
	free(a.v);
	free(b.v);
	free(c.v);
	free(pb.buf);
	unlink(path);
}

/*
 * Rounds of 3 MB (as offcpu's own, a second of records each): the chunks
 * of a round waiting for its end are unmapped as the scan goes on and
 * mapped again when their records go out; 20 rounds are delivered the
 * same in one thread, in two and from memory, in time order.
 */
static void test_big_rounds(void **state)
{
	static const uint64_t st[2] = { ST0, ST0 };
	static const char *const names[2] = { "cpu-clock", "task-clock" };
	struct order a = { 0 }, b = { 0 }, c = { 0 };
	char path[64];
	struct pdb pb;
	uint64_t t = 1000;
	int n = 0;

	tmpname(path, sizeof(path));
	pdb_init(&pb, 2, st, names);
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < 9000; i++, n++)
			long_sample(&pb, i & 1, t++, 1 + n * 13 % 64);
		pdb_round(&pb);
	}
	pdb_finish(&pb, path);
	assert_true(pb.len > 40 << 20);
	read_order(path, "0", &a, 0);
	read_order(path, "1", &b, 0);
	read_order_mem(path, &c);
	assert_int_equal(a.n, n);
	assert_int_equal(b.n, a.n);
	assert_int_equal(c.n, a.n);
	assert_memory_equal(a.v, b.v, a.n * sizeof(*a.v));
	assert_memory_equal(a.v, c.v, a.n * sizeof(*a.v));
	for (size_t i = 1; i < a.n; i++)
		assert_true(a.v[i - 1][1] < a.v[i][1]);
	free(a.v);
	free(b.v);
	free(c.v);
	free(pb.buf);
	unlink(path);
}

/*
 * A file without FINISHED_ROUND whose records run backwards in time: past
 * the window (OFFCPU_READER_WINDOW, 2 MiB here) what is queued goes out
 * sorted, with a warning, so that memory stays bounded; every record is
 * delivered, each window in time order, in one thread as in two.
 */
static void test_window(void **state)
{
	static const uint64_t st[1] = { ST0 };
	static const char *const names[1] = { "cpu-clock" };
	struct order a = { 0 }, b = { 0 };
	char path[64];
	struct pdb pb;
	size_t breaks = 0;
	const int n = 40000;

	tmpname(path, sizeof(path));
	pdb_init(&pb, 1, st, names);
	for (int i = 0; i < n; i++)
		long_sample(&pb, 0, 1000000 - i, 16);
	pdb_finish(&pb, path);
	assert_true(pb.len > 6 << 20);
	setenv("OFFCPU_READER_WINDOW", "2097152", 1);
	read_order(path, "0", &a, 0);
	read_order(path, "1", &b, 0);
	read_order_warned(path, NULL, &b, "out of time order over more than 2 MiB");
	unsetenv("OFFCPU_READER_WINDOW");
	assert_int_equal(a.n, n);
	assert_int_equal(b.n, 2 * n);
	assert_memory_equal(a.v, b.v, a.n * sizeof(*a.v));
	for (size_t i = 1; i < a.n; i++)
		breaks += a.v[i - 1][1] > a.v[i][1];
	/* a few windows, each sorted: as many breaks of the order as windows less one */
	assert_true(breaks >= 2 && breaks <= 8);
	free(a.v);
	free(b.v);
	free(pb.buf);
	unlink(path);
}

/*
 * A file that says its records are in time order (offcpu's feature:
 * records.out_of_order 0) is delivered as it is, in file order, in one
 * thread as in two: what its rounds would give (the same file without the
 * counter, ties in file order). One that says so but is not: from the
 * first record older than the one before, the rounds order the rest, with
 * a warning; every record is delivered. Its records go as found: 6 MB of
 * them without a FINISHED_ROUND are not held in a window (no warning with
 * a 2 MiB one), as those of a file that does not say so are.
 */
static void build_ordered(const char *path, const char *counter, uint64_t value, int back_at)
{
	static const uint64_t st[2] = { ST0, ST1 };
	static const char *const names[2] = { "cpu-clock", OFFCPU_EVENT_NAME };
	struct pdb b;

	pdb_init(&b, 2, st, names);
	b.counter_name = counter;
	b.counter_value = value;
	for (int i = 0; i < 30000; i++) {
		sample(&b, i & 1, i == back_at ? 100 : 1000 + i / 3); /* ties, three by three */
		if (i % 1000 == 999)
			pdb_round(&b);
	}
	pdb_finish(&b, path);
}

static void test_time_ordered_file(void **state)
{
	struct order a = { 0 }, b = { 0 }, c = { 0 }, d = { 0 };
	char path[64];

	tmpname(path, sizeof(path));
	build_ordered(path, "records.out_of_order", 0, -1);
	read_order(path, "0", &a, 0);
	read_order(path, "1", &b, 0);
	build_ordered(path, "drop.ringbuf_full", 0, -1);
	read_order(path, "1", &c, 0);
	assert_int_equal(a.n, 30000);
	assert_int_equal(b.n, 30000);
	assert_int_equal(c.n, 30000);
	assert_memory_equal(a.v, b.v, a.n * sizeof(*a.v));
	assert_memory_equal(a.v, c.v, a.n * sizeof(*a.v));
	for (size_t i = 1; i < a.n; i++)
		assert_true(a.v[i - 1][2] < a.v[i][2]);

	/* the same, one record at 100 in the middle: the file's word is not kept */
	build_ordered(path, "records.out_of_order", 0, 15000);
	read_order_warned(path, "1", &d, "older than the one before");
	assert_int_equal(d.n, 30000);
	/* what went before the break in file order; the record at 100 with its round, first */
	for (size_t i = 1; i < 15000; i++)
		assert_true(d.v[i - 1][2] < d.v[i][2]);
	assert_int_equal(d.v[15000][1], 100);
	free(a.v);
	free(b.v);
	free(c.v);
	free(d.v);

	setenv("OFFCPU_READER_WINDOW", "2097152", 1);
	for (int says = 0; says < 2; says++) {
		static const uint64_t st[1] = { ST0 };
		static const char *const names[1] = { "cpu-clock" };
		struct order e = { 0 };
		struct pdb pb;

		pdb_init(&pb, 1, st, names);
		pb.counter_name = says ? "records.out_of_order" : "drop.ringbuf_full";
		for (int i = 0; i < 40000; i++)
			long_sample(&pb, 0, 1000 + i, 16);
		pdb_finish(&pb, path);
		read_order_warned(path, NULL, &e, says ? NULL : "out of time order over more than");
		assert_int_equal(e.n, 40000);
		free(e.v);
		free(pb.buf);
	}
	unsetenv("OFFCPU_READER_WINDOW");
	unlink(path);
}

/*
 * A feature section past the end of the file (the data whole, what follows
 * cut): read, with a warning, every record; the features from there on are
 * not (EVENT_DESC's names fall back to type and config).
 */
static void test_features_cut(void **state)
{
	char path[64], err[256];
	struct perf_reader *r;
	struct seen s = { 0 }, whole_s = { 0 };
	uint8_t *buf;
	size_t len;
	bool whole = false;

	(void)state;
	tmpname(path, sizeof(path));
	build_two_attrs(path);
	r = perf_reader__open(path, err, sizeof(err));
	assert_non_null(r);
	assert_int_equal(perf_reader__process(r, collect, &whole_s), 0);
	assert_null(perf_reader__incomplete(r, NULL));
	perf_reader__free(r);
	buf = slurp(path, &len);
	p_feature(buf, &len);
	spit(path, buf, len);
	free(buf);
	r = perf_reader__open(path, err, sizeof(err));
	assert_non_null(r);
	assert_non_null(perf_reader__warning(r, 0));
	assert_non_null(strstr(perf_reader__warning(r, 0), "past the end of the file"));
	assert_int_equal(perf_reader__process(r, collect, &s), 0);
	assert_int_equal(s.n, whole_s.n);
	assert_non_null(perf_reader__incomplete(r, &whole));
	assert_true(whole);
	assert_string_equal(perf_reader__attr(r, 0)->name, "cpu-clock");
	perf_reader__free(r);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_order_and_features),
		cmocka_unit_test(test_threaded_same_order),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_chunks),
		cmocka_unit_test(test_big_rounds),
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_time_ordered_file),
		cmocka_unit_test(test_features_cut),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
