// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests of record's pure parts: number lists, the time-ordered merge,
 * the off-CPU sample encoding, and the perf.data writer read back through
 * our reader (header, attrs, EVENT_DESC, features, a killed recording).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perfdata/perf_format.h"
#include "perfdata/perf_reader.h"
#include "perfdata/perf_writer.h"
#include "record/record.h"

static char tmpdir[] = "/tmp/offcpu-unit.XXXXXX";

static void test_int_list(void **state)
{
	struct int_list l = { 0 };

	assert_int_equal(int_list__parse(&l, "3,1,7", false), 0);
	assert_int_equal(l.n, 3);
	assert_int_equal(l.v[0], 3);
	assert_int_equal(l.v[2], 7);
	assert_int_equal(int_list__parse(&l, "0-2,5", true), 0); /* appends */
	assert_int_equal(l.n, 7);
	assert_int_equal(l.v[3], 0);
	assert_int_equal(l.v[5], 2);
	assert_int_equal(l.v[6], 5);
	int_list__free(&l);
	assert_int_equal(int_list__parse(&l, "1-3", false), -EINVAL); /* no ranges for pids */
	int_list__free(&l);
	assert_int_equal(int_list__parse(&l, "", false), -EINVAL);
	assert_int_equal(int_list__parse(&l, "-1", false), -EINVAL);
	assert_int_equal(int_list__parse(&l, "1,,2", false), -EINVAL);
	assert_int_equal(int_list__parse(&l, "3-1", true), -EINVAL);
	assert_int_equal(int_list__parse(&l, "99999999999", false), -EINVAL);
	assert_int_equal(int_list__parse(&l, "12x", false), -EINVAL);
	int_list__free(&l);
	/* bounded: 17 ranges of 65537 CPUs are more than a list may hold */
	{
		char big[17 * 8 + 1] = "";

		for (int i = 0; i < 17; i++)
			strcat(big, i ? ",0-65536" : "0-65536");
		assert_int_equal(int_list__parse(&l, big, true), -EINVAL);
		int_list__free(&l);
		assert_int_equal(int_list__parse(&l, "0-65536", true), 0);
		assert_int_equal(l.n, 65537);
		int_list__free(&l);
	}
}

struct collect {
	uint64_t times[64];
	int n;
	int nr_rounds;
	uint64_t lost;
};

static int collect_cb(void *ctx, const struct perf_rec *rec)
{
	struct collect *c = ctx;

	if (rec->type == PERF_RECORD_SAMPLE && c->n < 64)
		c->times[c->n++] = rec->sample.time;
	if (rec->type == PERF_RECORD_LOST)
		c->lost += rec->lost.lost;
	return 0;
}

static struct offcpu_sample *make_sample(uint32_t tid, uint64_t period)
{
	struct offcpu_sample *s = calloc(1, sizeof(*s));

	s->pid = 100;
	s->tid = tid;
	s->period = period;
	s->count = 3;
	s->state = OFFCPU_STATE_D;
	s->ulen = 2;
	s->stack[0] = 0x401000;
	s->stack[1] = 0x401100;
	s->stack[2] = 0; /* a junk end of a frame-pointer walk is cut */
	s->klen = 1;
	s->stack[OFFCPU_MAX_STACK] = 0xffffffff81000000ULL;
	return s;
}

/* Write a file with our two events; returns its path (static buffer). */
static const char *write_file(uint64_t *times, int n, bool finish)
{
	static char path[128];
	struct perf_writer *w;
	struct perf_event_attr cpu = { .size = sizeof(cpu), .type = PERF_TYPE_SOFTWARE,
				       .config = PERF_COUNT_SW_CPU_CLOCK,
				       .sample_type = cpu_sample_type(), .sample_id_all = 1 };
	struct perf_event_attr off;
	uint64_t cpu_id = 42, off_id = OFFCPU_ID_OFFCPU;
	struct merge *m = merge__new();
	_Alignas(8) uint8_t rec[OFFCPU_PAYLOAD_MAX_SIZE];
	uint64_t fts[2] = { 1, 2 };

	offcpu_event_attr(&off);
	snprintf(path, sizeof(path), "%s/w.data", tmpdir);
	assert_int_equal(perf_writer__new(path, &w), 0);
	assert_int_equal(perf_writer__add_event(w, &cpu, "cpu-clock", &cpu_id, 1), 0);
	assert_int_equal(perf_writer__add_event(w, &off, OFFCPU_EVENT_NAME, &off_id, 1), 0);
	assert_int_equal(perf_writer__begin(w), 0);
	for (int i = 0; i < n; i++) {
		struct offcpu_sample *s = make_sample(101 + i, 1000 * (i + 1));
		size_t len = offcpu_sample__encode(s, times[i], rec);

		assert_int_equal(merge__add(m, times[i], rec, len), 0);
		free(s);
	}
	/* first half of the times, then the rest: as two rounds */
	assert_int_equal(merge__flush(m, 5000, w, NULL, NULL), 0);
	assert_int_equal(merge__flush(m, UINT64_MAX, w, NULL, NULL), 0);
	assert_int_equal(merge__bytes(m), 0);
	if (finish) {
		assert_int_equal(perf_writer__set_feature_string(w, PERF_FEAT_HOSTNAME, "unit"), 0);
		assert_int_equal(perf_writer__set_feature(w, PERF_FEAT_SAMPLE_TIME, fts, sizeof(fts)), 0);
		assert_int_equal(perf_writer__finish(w), 0);
	}
	perf_writer__free(w);
	merge__free(m);
	return path;
}

static void test_writer_merge_roundtrip(void **state)
{
	uint64_t times[] = { 9000, 1000, 7000, 3000, 3000, 12000 };
	struct collect c = { 0 };
	char err[256];
	struct perf_reader *r;
	const char *path = write_file(times, 6, true);
	struct stat st;
	uint64_t first, last;

	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	r = perf_reader__open(path, err, sizeof(err));
	assert_non_null(r);
	assert_int_equal(perf_reader__nr_attrs(r), 2);
	assert_string_equal(perf_reader__attr(r, 0)->name, "cpu-clock");
	assert_string_equal(perf_reader__attr(r, 1)->name, "offcpu-time");
	assert_true(perf_reader__attr(r, 1)->is_offcpu);
	assert_int_equal(perf_reader__attr(r, 1)->attr.size, PERF_ATTR_SIZE_WRITE);
	assert_true(perf_reader__has_feature(r, PERF_FEAT_HOSTNAME));
	assert_true(perf_reader__sample_time(r, &first, &last));
	assert_int_equal(first, 1);
	assert_int_equal(last, 2);
	assert_int_equal(perf_reader__process(r, collect_cb, &c), 0);
	assert_int_equal(c.n, 6);
	for (int i = 1; i < c.n; i++)
		assert_true(c.times[i - 1] <= c.times[i]);
	assert_int_equal(c.times[0], 1000);
	assert_int_equal(c.times[5], 12000);
	perf_reader__free(r);
}

struct first_sample {
	struct perf_sample s;
	uint8_t raw[256];
	uint64_t chain[16];
	int seen;
};

static int first_cb(void *ctx, const struct perf_rec *rec)
{
	struct first_sample *f = ctx;

	if (rec->type != PERF_RECORD_SAMPLE || f->seen++)
		return 0;
	f->s = rec->sample;
	assert_true(rec->sample.nr_callchain <= 16);
	for (uint64_t i = 0; i < rec->sample.nr_callchain; i++)
		f->chain[i] = perf_sample__ip(&rec->sample, i);
	assert_true(rec->sample.raw_size <= sizeof(f->raw));
	memcpy(f->raw, rec->sample.raw, rec->sample.raw_size);
	return 0;
}

/* The encoded sample, as a perf reader sees it. */
static void test_sample_encoding(void **state)
{
	uint64_t times[] = { 5555 };
	struct first_sample f = { 0 };
	struct offcpu_raw raw;
	char err[256];
	struct perf_reader *r = perf_reader__open(write_file(times, 1, true), err, sizeof(err));

	assert_non_null(r);
	assert_int_equal(perf_reader__process(r, first_cb, &f), 0);
	assert_int_equal(f.seen, 1);
	assert_int_equal(f.s.pid, 100);
	assert_int_equal(f.s.tid, 101);
	assert_int_equal(f.s.time, 5555);
	assert_int_equal(f.s.period, 1000);
	assert_int_equal(f.s.id, OFFCPU_ID_OFFCPU);
	assert_int_equal(f.s.ip, 0xffffffff81000000ULL);
	/* kernel marker, 1 kernel frame, user marker, 2 user frames (junk cut) */
	assert_int_equal(f.s.nr_callchain, 5);
	assert_true(f.chain[0] == PERF_CTX_KERNEL);
	assert_true(f.chain[2] == PERF_CTX_USER);
	assert_true(f.chain[4] == 0x401100);
	assert_true((f.s.raw_size + 4) % 8 == 0);
	/* the payload: perf's embedded sample (pid, tid, period, callchain, cgroup), then ours */
	{
		uint32_t ids[2];
		uint64_t v[3];

		assert_true(f.s.raw_size >= 8 * (4 + 5) + sizeof(raw));
		memcpy(ids, f.raw, 8);
		memcpy(v, f.raw + 8, 16);
		assert_int_equal(ids[0], 100);
		assert_int_equal(ids[1], 101);
		assert_int_equal(v[0], 1000);
		assert_int_equal(v[1], 5);
		for (int i = 0; i < 5; i++) {
			memcpy(&v[2], f.raw + 24 + 8 * i, 8);
			assert_true(v[2] == f.chain[i]);
		}
		memcpy(&raw, f.raw + 24 + 8 * 5 + 8, sizeof(raw));
	}
	assert_int_equal(raw.state, 'D');
	assert_int_equal(raw.count, 3);
	assert_int_equal(raw.flags, OFFCPU_RAW_AGGREGATED);
	assert_true(f.s.off.embedded && f.s.off.own);
	assert_int_equal(f.s.off.state, 'D');
	assert_int_equal(f.s.off.count, 3);
	perf_reader__free(r);
}

/* A recorder killed midway: header patched at each round, no features. */
static void test_killed_recording_readable(void **state)
{
	uint64_t times[] = { 100, 200, 300 };
	struct collect c = { 0 };
	char err[256];
	struct perf_reader *r = perf_reader__open(write_file(times, 3, false), err, sizeof(err));

	assert_non_null(r);
	assert_int_equal(perf_reader__process(r, collect_cb, &c), 0);
	assert_int_equal(c.n, 3);
	perf_reader__free(r);
}

/* An existing file becomes FILE.old; abort() puts it back. */
static void test_writer_old_and_abort(void **state)
{
	char path[128], old[140];
	struct perf_writer *w;
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/o.data", tmpdir);
	snprintf(old, sizeof(old), "%s.old", path);
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "previous", 8), 8);
	close(fd);
	assert_int_equal(perf_writer__new(path, &w), 0);
	assert_int_equal(stat(old, &st), 0);
	assert_int_equal(st.st_size, 8);
	perf_writer__abort(w);
	perf_writer__free(w);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 8);
	assert_int_equal(stat(old, &st), -1);
	/* a path in a missing directory fails with the errno */
	snprintf(path, sizeof(path), "%s/missing/x.data", tmpdir);
	assert_int_equal(perf_writer__new(path, &w), -ENOENT);
}

static int setup(void **state)
{
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_int_list),
		cmocka_unit_test(test_writer_merge_roundtrip),
		cmocka_unit_test(test_sample_encoding),
		cmocka_unit_test(test_killed_recording_readable),
		cmocka_unit_test(test_writer_old_and_abort),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
