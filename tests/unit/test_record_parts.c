// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests of record's pure parts: number lists, the time-ordered merge,
 * the off-CPU sample encoding, the cut of junk user frames, a name for
 * every thread sampled, the
 * perf.data writer read back through our reader (header, attrs,
 * EVENT_DESC, features, a killed recording, another user's FILE.old), the
 * recorder's signals given back, and how the summary's lines reach the
 * sink.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perfdata/offcpu_payload.h"
#include "perfdata/perf_format.h"
#include "perfdata/perf_reader.h"
#include "perfdata/perf_writer.h"
#include "record/record.h"
#include "record/recorder_int.h"

static char tmpdir[] = "/tmp/offcpu-unit.XXXXXX";

/* Open file descriptors of this process. */
static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* A sink that keeps the last message and its kind. */
struct kept_msg {
	enum msg_kind kind;
	char text[8192];
	size_t len;
	int nr;
};

static void keep_msg(void *ctx, enum msg_kind kind, const char *text)
{
	struct kept_msg *k = ctx;

	k->kind = kind;
	k->len = strlen(text);
	snprintf(k->text, sizeof(k->text), "%s", text);
	k->nr++;
}

/*
 * The summary's lines reach the sink whole: a line made of parts as one
 * message, one longer than msg__say's buffer unshortened, a line too long
 * for msg_line cut at its room without a write past it.
 */
static void test_msg_lines(void **state)
{
	struct kept_msg k = { 0 };
	const struct msg_sink ms = { keep_msg, &k };
	struct msg_line l = { .len = 0 };
	char big[3000];

	(void)state;
	msg_line__add(&l, "lost:");
	msg_line__add(&l, " %s %llu;", "ring buffer full", 12ULL);
	msg_line__add(&l, " %s %llu;", "sum map full", 3ULL);
	msg__say(&ms, MSG_SUMMARY, "%s", l.text);
	assert_int_equal(k.nr, 1);
	assert_int_equal(k.kind, MSG_SUMMARY);
	assert_string_equal(k.text, "lost: ring buffer full 12; sum map full 3;");

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	msg__say(&ms, MSG_ERROR, "cannot write %s: %s", big, "No space left on device");
	assert_int_equal(k.len, strlen("cannot write : No space left on device") + sizeof(big) - 1);
	assert_string_equal(k.text + k.len - 26, "x: No space left on device");

	l.len = 0;
	for (int i = 0; i < 3; i++)
		msg_line__add(&l, "%s", big);
	assert_int_equal(l.len, sizeof(l.text) - 1);
	assert_int_equal(strlen(l.text), sizeof(l.text) - 1);
	msg_line__add(&l, "more"); /* full: nothing added */
	assert_int_equal(l.len, sizeof(l.text) - 1);

	msg__say(NULL, MSG_ERROR, "dropped"); /* no sink: nothing said */
	assert_int_equal(k.nr, 2);
}

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

/* A sample as the BPF side sends it, and the frames of its two stacks. */
struct test_sample {
	struct offcpu_sample s;
	uint64_t stack[2 * OFFCPU_MAX_STACK]; /* ulen user frames, klen kernel ones from the middle */
	uint32_t ulen, klen;
};

static struct test_sample *make_sample(uint32_t tid, uint64_t period)
{
	struct test_sample *t = calloc(1, sizeof(*t));

	t->s.kind = OFFCPU_REC_SAMPLE;
	t->s.flags = OFFCPU_SAMPLE_SUM;
	t->s.k.who.pid = 100;
	t->s.k.who.tid = tid;
	t->s.v.period = period;
	t->s.v.count = 3;
	t->s.k.state = OFFCPU_STATE_D;
	t->ulen = 2;
	t->stack[0] = 0x401000;
	t->stack[1] = 0x401100;
	t->stack[2] = 0; /* a junk end of a frame-pointer walk is cut */
	t->klen = 1;
	t->stack[OFFCPU_MAX_STACK] = 0xffffffff81000000ULL;
	return t;
}

static size_t encode_sample(const struct test_sample *t, uint64_t time, void *rec)
{
	struct offcpu_frames u = { t->stack, t->ulen }, k = { t->stack + OFFCPU_MAX_STACK, t->klen };

	return offcpu_sample__encode(&t->s, &u, &k, time, rec);
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
		struct test_sample *s = make_sample(101 + i, 1000 * (i + 1));
		size_t len = encode_sample(s, times[i], rec);

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

/* The names the reader gets for the threads of each sample, by tid. */
struct names_seen {
	uint32_t tid[8];
	char comm[8][16];
	uint64_t time[8];
	int n;
	uint32_t sample_tid[8];
	int nr_samples;
	int comm_before_sample[8]; /* index of the sample each COMM came before */
};

static int names_cb(void *ctx, const struct perf_rec *rec)
{
	struct names_seen *ns = ctx;

	if (rec->type == PERF_RECORD_COMM && ns->n < 8) {
		ns->tid[ns->n] = rec->comm.tid;
		snprintf(ns->comm[ns->n], sizeof(ns->comm[0]), "%s", rec->comm.comm);
		ns->time[ns->n] = rec->time;
		ns->comm_before_sample[ns->n++] = ns->nr_samples;
	}
	if (rec->type == PERF_RECORD_SAMPLE && ns->nr_samples < 8)
		ns->sample_tid[ns->nr_samples++] = rec->sample.tid;
	return 0;
}

static void names_tap(void *ctx, const void *rec, size_t len)
{
	void **c = ctx;

	thread_names__record(c[0], c[1], rec, len);
}

/*
 * thread_names: a sample of a thread no COMM or FORK named gets a COMM
 * just before it, at its time: /proc's name for a thread alive (this
 * one), the start's iterator's for one gone; a thread neither knows is
 * counted; a thread named by a record or already named gets none.
 */
static void test_thread_names(void **state)
{
	static char path[128];
	struct perf_event_attr off, sw;
	uint64_t off_id = OFFCPU_ID_OFFCPU, sw_id = OFFCPU_ID_SWITCH;
	struct thread_names *tn = thread_names__new(OFFCPU_ID_OFFCPU);
	_Alignas(8) uint8_t rec[OFFCPU_PAYLOAD_MAX_SIZE];
	struct names_seen ns = { 0 };
	struct perf_writer *w;
	struct perf_reader *r;
	char err[256], me[16] = "";
	void *tap[2];
	/* tid: 101 named by COMM, 102 by FORK, self (alive), 103 gone but seen, 104 unknown */
	uint32_t self = (uint32_t)gettid(), tids[] = { 101, 102, 0, 103, 104, 0, 101 };
	struct {
		struct perf_event_header h;
		uint32_t pid, ppid, tid, ptid;
		uint64_t time;
		struct sample_id sid;
	} fork = { .h = { .type = PERF_RECORD_FORK, .size = sizeof(fork) },
		   .pid = 100, .ppid = 100, .tid = 102, .ptid = 101, .time = 10,
		   .sid = { .pid = 100, .tid = 102, .time = 10, .id = OFFCPU_ID_OFFCPU } };

	(void)state;
	tids[2] = tids[5] = self;
	assert_non_null(tn);
	assert_int_equal(proc_read("/proc/thread-self/comm", me, sizeof(me)) > 0, 1);
	me[strcspn(me, "\n")] = 0;
	offcpu_event_attr(&off);
	snprintf(path, sizeof(path), "%s/names.data", tmpdir);
	assert_int_equal(perf_writer__new(path, &w), 0);
	tap[0] = tn;
	tap[1] = w;
	perf_writer__set_tap(w, names_tap, tap);
	assert_int_equal(perf_writer__add_event(w, &off, OFFCPU_EVENT_NAME, &off_id, 1), 0);
	chain_switch_attr(&sw);
	assert_int_equal(perf_writer__add_event(w, &sw, OFFCPU_SWITCH_EVENT_NAME, &sw_id, 1), 0);
	assert_int_equal(perf_writer__begin(w), 0);
	assert_int_equal(synth__comm(w, 100, 101, "named", OFFCPU_ID_OFFCPU, 0), 0);
	assert_int_equal(thread_names__seen(tn, 100, 103, "was-here"), 0);
	assert_int_equal(thread_names__seen(tn, 100, 105, "switcher"), 0);
	assert_int_equal(perf_writer__write(w, &fork, sizeof(fork)), 0);
	for (int i = 0; i < 7; i++) {
		struct test_sample *s = make_sample(tids[i], 1000);
		size_t len;

		if (tids[i] == self)
			s->s.k.who.pid = (uint32_t)getpid();
		len = encode_sample(s, 1000 * (i + 1), rec);
		assert_int_equal(perf_writer__write(w, rec, len), 0);
		free(s);
	}
	/* an offcpu-switch record (--chains: IDENTIFIER TID TIME CPU RAW) of 105, seen */
	{
		struct offcpu_chain_switch cs = { .pid = 100, .tid = 105, .time = 8000, .state = 'S' };
		size_t len = chain_switch__encode(&cs, 0, 0, rec);

		assert_int_equal(perf_writer__write(w, rec, len), 0);
	}
	assert_int_equal(perf_writer__finish(w), 0);
	perf_writer__free(w);
	assert_int_equal(thread_names__error(tn), 0);
	assert_int_equal(thread_names__named_late(tn), 3);
	assert_int_equal(thread_names__unnamed(tn), 1);
	thread_names__free(tn);

	r = perf_reader__open(path, err, sizeof(err));
	assert_non_null(r);
	assert_int_equal(perf_reader__process(r, names_cb, &ns), 0);
	perf_reader__free(r);
	assert_int_equal(ns.nr_samples, 8);
	assert_int_equal(ns.n, 4); /* "named", then this thread's, 103's and 105's before their samples */
	assert_int_equal(ns.tid[1], self);
	assert_string_equal(ns.comm[1], me);
	assert_int_equal(ns.comm_before_sample[1], 2);
	assert_int_equal(ns.time[1], 3000);
	assert_int_equal(ns.tid[2], 103);
	assert_string_equal(ns.comm[2], "was-here");
	assert_int_equal(ns.comm_before_sample[2], 3);
	assert_int_equal(ns.time[2], 4000);
	assert_int_equal(ns.tid[3], 105);
	assert_string_equal(ns.comm[3], "switcher");
	assert_int_equal(ns.comm_before_sample[3], 7);
	assert_int_equal(ns.time[3], 8000);
}

/* The junk-frame cut: frames kept up to the first outside every executable map. */
static void test_ustack_keep(void **state)
{
	struct exec_map m[] = {
		{ .start = 0x7f0000000000ULL, .end = 0x7f0000200000ULL }, /* a library */
		{ .start = 0x400000, .end = 0x402000 },                    /* the program */
		{ .start = 0x10000000, .end = 0x50000000 },                /* JIT code, anonymous */
		{ .start = 0x20000000, .end = 0x20001000 },                /* mapped inside it later */
	};
	const uint64_t good[] = { 0x401000, 0x7f0000001234ULL, 0x30000000, 0x20000800, 0x401fff };
	/* sqlite's stack, walked by frame pointers through code without them */
	const uint64_t junk[] = { 0x401000, 0x7f0000001234ULL, 0x642e742f71732f77ULL, 0x401100 };
	const uint64_t edges[] = { 0x402000, 0x401000 };        /* end is exclusive */
	const uint64_t past_jit[] = { 0x30000000, 0x50000000 }; /* after the small map, then past */

	exec_maps__sort(m, 4);
	assert_true(m[0].start == 0x400000 && m[3].start == 0x7f0000000000ULL);
	assert_int_equal(ustack_keep(m, 4, good, 5), 5);
	assert_int_equal(ustack_keep(m, 4, junk, 4), 2);
	assert_int_equal(ustack_keep(m, 4, edges, 2), 0);
	assert_int_equal(ustack_keep(m, 4, past_jit, 2), 1);
	assert_int_equal(ustack_keep(m, 4, junk, 0), 0);
	assert_int_equal(ustack_keep(NULL, 0, junk, 4), 4); /* maps unknown: nothing cut */
	assert_false(exec_maps__covers(m, 4, 0x3fffff));
	assert_true(exec_maps__covers(m, 4, 0x7f00001fffffULL));
	assert_false(exec_maps__covers(m, 4, 0x7f0000200000ULL));
}

/* An MMAP2 record of one executable mapping of pid into h. */
static void feed_mmap2(struct dso_hits *h, uint32_t pid, uint64_t addr, uint64_t len, const char *name)
{
	uint8_t rec[256] = { 0 };
	struct perf_event_header *eh = (void *)rec;
	uint32_t prot = 4; /* PROT_EXEC */

	eh->type = PERF_RECORD_MMAP2;
	memcpy(rec + 8, &pid, 4);
	memcpy(rec + 12, &pid, 4);
	memcpy(rec + 16, &addr, 8);
	memcpy(rec + 24, &len, 8);
	memcpy(rec + 64, &prot, 4);
	strcpy((char *)rec + 72, name);
	eh->size = 72 + 64 + 40;
	dso_hits__record(h, rec, eh->size);
}

/*
 * An offcpu-switch record (--chains: IDENTIFIER TID TIME CPU RAW) is no
 * sample with a callchain. Its fields are chosen so that, read as one
 * (pid at the TIME, callchain after CPU), it would be pid 100's sample
 * with the user frame 0x401000 in this test's own binary: neither the
 * hits nor the cut may take it so. A CPU sample with that frame hits.
 */
static void test_dso_hits_switch_record(void **state)
{
	_Alignas(8) uint8_t rec[OFFCPU_SWITCH_RECORD_SIZE];
	uint64_t cpu[] = { 0x401000, 1, 100 | 100ULL << 32, 2000, 0, 1001, 2, PERF_CTX_USER, 0x401000 };
	struct offcpu_switch sw = {
		.id = OFFCPU_ID_SWITCH, .pid = 7, .tid = 7, .time = 100, .wake = 2ULL << 32,
		.waker_tid = 0xfffffe00u, .waker_stack = 0xffffffffu, .seq = 0x401000,
	};
	struct dso_hits *h = dso_hits__new();
	uint8_t before[sizeof(rec)], *feat = NULL;
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	size_t len = 0;
	uint64_t v;
	bool cut;

	(void)state;
	assert_non_null(h);
	assert_true(n > 0);
	exe[n] = 0;
	feed_mmap2(h, 100, 0x400000, 0x2000, exe);
	assert_int_equal(offcpu_payload__encode_switch(&sw, rec, sizeof(rec)), sizeof(rec));
	memcpy(&v, rec + 24, 8);
	assert_true(v == 100);     /* where a sample has its pid */
	memcpy(&v, rec + 56, 8);
	assert_true(v == 2);       /* ... and its callchain's length */
	memcpy(before, rec, sizeof(rec));
	assert_int_equal(dso_hits__record(h, rec, sizeof(rec)), 0);
	assert_int_equal(dso_hits__cut_user(h, rec, sizeof(rec), &cut), sizeof(rec));
	assert_false(cut);
	assert_memory_equal(rec, before, sizeof(rec));
	assert_int_equal(dso_hits__build_id_feature(h, &feat, &len), 0);
	assert_int_equal(len, 0); /* no DSO hit */
	free(feat);
	feat = NULL;

	/* the CPU sample hits the binary: it is in the table */
	memcpy(rec + 8, cpu, sizeof(cpu));
	((struct perf_event_header *)rec)->type = PERF_RECORD_SAMPLE;
	((struct perf_event_header *)rec)->size = 8 + sizeof(cpu);
	assert_int_equal(dso_hits__record(h, rec, 8 + sizeof(cpu)), 0);
	assert_int_equal(dso_hits__build_id_feature(h, &feat, &len), 0);
	assert_true(len > 36 && strstr((const char *)feat + 36, exe) != NULL);
	free(feat);
	dso_hits__free(h);
}

/* The RAW data of an encoded off-CPU sample of len bytes, decoded. */
static void decode_record(const uint8_t *rec, size_t len, struct offcpu_fields *f)
{
	uint64_t nr;
	uint32_t rawsz;

	memcpy(&nr, rec + 8 + 48, 8);
	memcpy(&rawsz, rec + 8 + 56 + nr * 8, 4);
	assert_true(8 + 56 + nr * 8 + 4 + rawsz == len);
	offcpu_payload__decode(OFFCPU_PAYLOAD_TIME, rec + 8 + 56 + nr * 8 + 4, rawsz, f);
}

/*
 * The cut on an encoded off-CPU sample: the junk frames out of its
 * callchain and out of the copy in its RAW data (perf >= 6.14 reads that
 * one), offcpu's own fields intact; and on a CPU sample (no RAW data).
 */
static void test_cut_user_record(void **state)
{
	_Alignas(8) uint8_t rec[8192];
	struct dso_hits *h = dso_hits__new();
	struct test_sample *s = make_sample(101, 5000);
	const struct perf_event_header *eh = (void *)rec;
	struct offcpu_fields fl;
	uint64_t nr, f, cpu[] = { 0x7f0000000123ULL, 1, 100 | 101ULL << 32, 2000, 0, 1001, 4,
				  PERF_CTX_USER, 0x7f0000000123ULL, 0x401000, 0x5a5a5a5a5a5aULL };
	size_t len, n;
	bool cut;

	assert_non_null(h);
	feed_mmap2(h, 100, 0x400000, 0x2000, "/bin/prog");
	feed_mmap2(h, 100, 0x7f0000000000ULL, 0x200000, "//anon");
	s->ulen = 5;
	s->stack[2] = 0x7f0000001000ULL;
	s->stack[3] = 0x642e742f71732f77ULL;
	s->stack[4] = 0x401200;
	len = encode_sample(s, 1000, rec);
	/* header, id ip tid time cpu period, nr; kernel marker + 1, user marker + 5 */
	memcpy(&nr, rec + 8 + 48, 8);
	assert_int_equal(nr, 8);
	decode_record(rec, len, &fl);
	assert_true(fl.embedded && fl.nr_callchain == 8);
	n = dso_hits__cut_user(h, rec, len, &cut);
	assert_true(cut);
	assert_int_equal(n, len - 2 * 2 * 8); /* two frames, in both callchains */
	assert_int_equal(eh->size, n);
	memcpy(&nr, rec + 8 + 48, 8);
	assert_int_equal(nr, 6);
	memcpy(&f, rec + 8 + 56 + 5 * 8, 8);
	assert_true(f == 0x7f0000001000ULL);
	decode_record(rec, n, &fl);
	assert_true(fl.embedded && fl.own);
	assert_int_equal(fl.nr_callchain, 6);
	assert_memory_equal(fl.callchain, rec + 8 + 56, 6 * 8);
	assert_int_equal(fl.pid, 100);
	assert_int_equal(fl.tid, 101);
	assert_int_equal(fl.period, 5000);
	assert_int_equal(fl.state, 'D');
	assert_int_equal(fl.count, 3);
	/* cut again: nothing left to cut */
	assert_int_equal(dso_hits__cut_user(h, rec, n, &cut), n);
	assert_false(cut);

	/* the first user frame is junk: the user part goes, its marker too */
	s->ulen = 1;
	s->stack[0] = 0x9000;
	len = encode_sample(s, 1000, rec);
	n = dso_hits__cut_user(h, rec, len, &cut);
	assert_true(cut);
	assert_int_equal(n, len - 2 * 2 * 8);
	memcpy(&nr, rec + 8 + 48, 8);
	assert_int_equal(nr, 2);
	decode_record(rec, n, &fl);
	assert_int_equal(fl.nr_callchain, 2);
	assert_int_equal(fl.count, 3);
	/* ... but a sample with no kernel frame keeps its one user frame */
	s->klen = 0;
	len = encode_sample(s, 1000, rec);
	assert_int_equal(dso_hits__cut_user(h, rec, len, &cut), len);
	assert_false(cut);

	/* a CPU sample: its callchain only */
	memcpy(rec + 8, cpu, sizeof(cpu));
	((struct perf_event_header *)rec)->type = PERF_RECORD_SAMPLE;
	((struct perf_event_header *)rec)->size = 8 + sizeof(cpu);
	n = dso_hits__cut_user(h, rec, 8 + sizeof(cpu), &cut);
	assert_true(cut);
	assert_int_equal(n, 8 + sizeof(cpu) - 8);
	memcpy(&nr, rec + 8 + 48, 8);
	assert_int_equal(nr, 3);

	/* a process whose maps are unknown is left alone */
	s->s.k.who.pid = 200;
	s->klen = 1;
	len = encode_sample(s, 1000, rec);
	assert_int_equal(dso_hits__cut_user(h, rec, len, &cut), len);
	assert_false(cut);
	free(s);
	dso_hits__free(h);
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

/* Write `text` to path, owned by uid. */
static void put_file(const char *path, const char *text, uid_t uid)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchown(fd, uid, (gid_t)-1), 0);
	close(fd);
}

static void assert_file(const char *path, const char *text)
{
	char buf[64] = "";
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_true(read(fd, buf, sizeof(buf) - 1) >= 0);
	close(fd);
	assert_string_equal(buf, text);
}

/*
 * FILE.old never moves or replaces another user's file: one at FILE or at
 * FILE.old owned by neither the owner asked for nor the caller is left
 * alone (-EPERM); the owner's are moved as any. Needs root (chown).
 */
static void test_writer_foreign_old(void **state)
{
	char path[128], old[140];
	struct perf_writer *w;

	if (geteuid() != 0)
		skip();
	snprintf(path, sizeof(path), "%s/f.data", tmpdir);
	snprintf(old, sizeof(old), "%s.old", path);
	/* FILE another user's */
	put_file(path, "theirs", 65534);
	assert_int_equal(perf_writer__new(path, &w), -EPERM);
	assert_file(path, "theirs");
	assert_int_equal(access(old, F_OK), -1);
	/* ... but the owner's (SUDO_UID) */
	assert_int_equal(perf_writer__new_for(path, 65534, &w), 0);
	perf_writer__free(w);
	assert_file(old, "theirs");
	/* FILE.old another user's, FILE ours: neither is touched */
	unlink(path);
	put_file(path, "mine", 0);
	assert_int_equal(perf_writer__new(path, &w), -EPERM);
	assert_file(path, "mine");
	assert_file(old, "theirs");
	unlink(path);
	unlink(old);
}

/*
 * The recorder's signals: taken (one recorder at a time), then given back
 * as they were, their self-pipe closed.
 */
static void test_signals_restored(void **state)
{
	struct sigaction before = { .sa_handler = SIG_IGN }, now, int_before;
	int fds_before = count_fds();

	/* SIGINT as the test was started: a background job of a shell without
	 * job control has it ignored, others at SIG_DFL */
	assert_int_equal(sigaction(SIGINT, NULL, &int_before), 0);
	sigemptyset(&before.sa_mask);
	assert_int_equal(sigaction(SIGHUP, &before, NULL), 0);
	assert_int_equal(recorder__setup_signals(), 0);
	assert_int_equal(recorder__setup_signals(), -EBUSY);
	assert_int_equal(sigaction(SIGINT, NULL, &now), 0);
	assert_true(now.sa_handler != SIG_DFL && now.sa_handler != SIG_IGN);
	assert_int_equal(count_fds(), fds_before + 2);
	recorder__restore_signals();
	assert_int_equal(sigaction(SIGINT, NULL, &now), 0);
	assert_true(now.sa_handler == int_before.sa_handler);
	assert_int_equal(sigaction(SIGHUP, NULL, &now), 0);
	assert_true(now.sa_handler == SIG_IGN);
	assert_int_equal(count_fds(), fds_before);
	/* and again: a second recorder in the same process */
	assert_int_equal(recorder__setup_signals(), 0);
	recorder__restore_signals();
	assert_int_equal(count_fds(), fds_before);
	signal(SIGHUP, SIG_DFL);
}

static int setup(void **state)
{
	return mkdtemp(tmpdir) ? 0 : -1;
}

/*
 * The drop counters and stats are named once (bpf/offcpu.h); readers and
 * tests look for these keys in the file's offcpu section, in this order.
 */
static void test_counter_names(void **state)
{
	static const char *const drops[] = {
		"drop.ringbuf_full",	    "drop.sum_full",		"drop.ustack_failed",
		"drop.kstack_failed",	    "drop.stack_lost",		"drop.task_storage",
		"drop.exits_full",	    "drop.unclosed",		"drop.waker_lost",
		"drop.waker_ustack_failed", "drop.waker_kstack_failed", "drop.sched_delay_storage",
		"drop.child_untraced",	    "drop.cpu_ringbuf_full",	"drop.chain_ringbuf_full",
		"drop.chain_storage",
	};
	static const char *const stats[] = {
		"kstack.walked", "kstack.cached", "kstack.checked", "kstack.stale",
		"offcpu.closed_at_wakeup", "offcpu.closed_by_sched_info", "kstack.evicted",
		"kstack.unverified", "offcpu.filtered", "sum.direct", "offcpu.queued_before_wakeup",
		"offcpu.unclosed_ran_again", "offcpu.unclosed_clock", "offcpu.closed_at_preemption",
		"offcpu.delay_closed_by_sched_info", "chain.woken_before_switch_out",
		"wakeup.woken_before_switch_out",
	};

	assert_int_equal(OFFCPU_DROP__NR, sizeof(drops) / sizeof(drops[0]));
	for (int i = 0; i < OFFCPU_DROP__NR; i++)
		assert_string_equal(offcpu_drop_key(i), drops[i]);
	assert_int_equal(OFFCPU_STAT__NR, sizeof(stats) / sizeof(stats[0]));
	for (int i = 0; i < OFFCPU_STAT__NR; i++)
		assert_string_equal(offcpu_stat_key(i), stats[i]);
	assert_string_equal(offcpu_drop_name(OFFCPU_DROP_RINGBUF), "ring buffer full");
	assert_string_equal(offcpu_drop_name(OFFCPU_DROP_CPU_RINGBUF),
			    "cpu samples (BPF ring buffer full)");
	assert_string_equal(offcpu_drop_name(OFFCPU_DROP__NR), "?");
	/* a stack that could not be read, or sent, leaves its sample in: not lost */
	assert_int_equal(offcpu_drop_loss(OFFCPU_DROP_USTACK), OFFCPU_LOSS_PART);
	assert_int_equal(offcpu_drop_loss(OFFCPU_DROP_STACK_LOST), OFFCPU_LOSS_PART);
	assert_int_equal(offcpu_drop_loss(OFFCPU_DROP_WAKER_KSTACK), OFFCPU_LOSS_PART);
	assert_int_equal(offcpu_drop_loss(OFFCPU_DROP_SUM_FULL), OFFCPU_LOSS_OFFCPU);
	assert_int_equal(offcpu_drop_loss(OFFCPU_DROP_WAKER_LOST), OFFCPU_LOSS_WAKEUP);
	assert_int_equal(offcpu_drop_loss(OFFCPU_DROP_DELAY_STORAGE), OFFCPU_LOSS_DELAY);
	assert_int_equal(offcpu_drop_loss(OFFCPU_DROP_UNCLOSED), OFFCPU_LOSS_DATA);
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
		cmocka_unit_test(test_counter_names),
		cmocka_unit_test(test_writer_merge_roundtrip),
		cmocka_unit_test(test_sample_encoding),
		cmocka_unit_test(test_ustack_keep),
		cmocka_unit_test(test_thread_names),
		cmocka_unit_test(test_cut_user_record),
		cmocka_unit_test(test_dso_hits_switch_record),
		cmocka_unit_test(test_killed_recording_readable),
		cmocka_unit_test(test_writer_old_and_abort),
		cmocka_unit_test(test_writer_foreign_old),
		cmocka_unit_test(test_signals_restored),
		cmocka_unit_test(test_msg_lines),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
