// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests of `record --wakeups` / `--sched-delay` samples and of the
 * reports that read them: a file with the four events (cpu-clock,
 * offcpu-time, offcpu-wakeup, sched-delay) and FORK/EXIT side-band, written
 * with the recorder's own encoders and writer, read back through the
 * reader and the session: raw fields, off-wake joining (as folded lines
 * and as flame graph paths), and the --threads accounting.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output/flamegraph/flamegraph.h"
#include "perfdata/perf_format.h"
#include "perfdata/perf_reader.h"
#include "perfdata/perf_writer.h"
#include "record/record.h"
#include "profile/offwake.h"
#include "profile/profile.h"
#include "output/report.h"
#include "output/threads.h"

#define CPU_ID 42
#define PID 100
#define SLEEPER 101
#define WAKER 102

#include "pw_records.h"

static char path[64];

/* An encoded sample: the encoders return its size, put() reads it back. */
static void put_encoded(struct perf_writer *w, const uint8_t *rec, size_t len)
{
	assert_int_equal(len, ((const struct perf_event_header *)rec)->size);
	put(w, rec);
}

static const uint64_t sleeper_ustack[] = { 0x401100, 0x401200 };
static const uint64_t sleeper_kstack[] = { 0xffffffff81000100ULL };
static const uint64_t waker_ustack[] = { 0x402000 };
static const uint64_t waker_kstack[] = { 0xffffffff81000200ULL, 0xffffffff81000300ULL };

static struct offcpu_sample *sample(uint32_t tid, uint32_t state, uint64_t period)
{
	struct offcpu_sample *s = calloc(1, sizeof(*s));

	s->kind = OFFCPU_REC_SAMPLE; /* direct */
	s->k.who.pid = PID;
	s->k.who.tid = tid;
	s->k.state = state;
	s->v.period = period;
	s->v.count = 1;
	return s;
}

static size_t encode(const struct offcpu_sample *s, uint64_t time, void *rec)
{
	struct offcpu_frames u = { sleeper_ustack, 2 }, k = { sleeper_kstack, 1 };

	return offcpu_sample__encode(s, &u, &k, time, rec);
}

/*
 * The sleeper lives from 1000 to 8000 ns: 2000 on CPU, 3000 asleep (S, woken
 * by the waker), 500 + 1000 waiting for a CPU; 500 unaccounted.
 */
static void build(bool orphan_wakeup)
{
	struct perf_event_attr cpu = { .size = sizeof(cpu), .type = PERF_TYPE_SOFTWARE,
				       .config = PERF_COUNT_SW_CPU_CLOCK,
				       .sample_type = cpu_sample_type(), .sample_id_all = 1 };
	struct perf_event_attr off;
	uint64_t ids[4] = { CPU_ID, OFFCPU_ID_OFFCPU, OFFCPU_ID_WAKEUP, OFFCPU_ID_SCHED_DELAY };
	struct offcpu_frames wu = { waker_ustack, 1 }, wkk = { waker_kstack, 2 };
	struct offcpu_sample *s;
	struct perf_writer *w;
	_Alignas(8) uint8_t rec[OFFCPU_PAYLOAD_MAX_SIZE];

	snprintf(path, sizeof(path), "/tmp/offcpu-ut-wakeups-%d.data", getpid());
	unlink(path);
	offcpu_event_attr(&off);
	assert_int_equal(perf_writer__new(path, &w), 0);
	assert_int_equal(perf_writer__add_event(w, &cpu, "cpu-clock", &ids[0], 1), 0);
	assert_int_equal(perf_writer__add_event(w, &off, OFFCPU_EVENT_NAME, &ids[1], 1), 0);
	assert_int_equal(perf_writer__add_event(w, &off, OFFCPU_WAKEUP_EVENT_NAME, &ids[2], 1), 0);
	assert_int_equal(perf_writer__add_event(w, &off, OFFCPU_SCHED_DELAY_EVENT_NAME, &ids[3], 1), 0);
	assert_int_equal(perf_writer__begin(w), 0);
	task_event(w, PERF_RECORD_FORK, SLEEPER, 1000);
	comm(w, SLEEPER, "sleeper", 1000);
	comm(w, WAKER, "waker", 1000);
	cpu_sample(w, SLEEPER, 1500, 2000);

	s = sample(SLEEPER, OFFCPU_STATE_S | OFFCPU_WAKER, 3000);
	s->k.waker.pid = PID;
	s->k.waker.tid = WAKER;
	snprintf(s->v.wcomm, sizeof(s->v.wcomm), "waker");
	if (!orphan_wakeup)
		put_encoded(w, rec, encode(s, 5000, rec));
	put_encoded(w, rec, offcpu_waker__encode(s, &wu, &wkk, 5000, rec));
	free(s);
	s = sample(SLEEPER, OFFCPU_SCHED_DELAY | OFFCPU_STATE_S, 500);
	put_encoded(w, rec, encode(s, 5000, rec));
	free(s);
	s = sample(SLEEPER, OFFCPU_SCHED_DELAY, 1000);
	s->flags = OFFCPU_SAMPLE_SUM;
	put_encoded(w, rec, encode(s, 7000, rec));
	free(s);
	task_event(w, PERF_RECORD_EXIT, SLEEPER, 8000);
	assert_int_equal(perf_writer__finished_round(w), 0);
	assert_int_equal(perf_writer__finish(w), 0);
	perf_writer__free(w);
}

struct seen {
	struct session *s;
	struct offwake *ow;
	struct profile *p;
	struct threads *th;
	int wakeups, delays, joined;
	char delay_states[4];
};

static int on_sample(void *ctx, const struct rsample *rs)
{
	struct seen *v = ctx;
	const struct perf_evattr *a = rs->s->evattr;
	struct rsample j;
	int n;

	if (a->is_wakeup) {
		v->wakeups++;
		assert_int_equal(rs->s->tid, SLEEPER);
		assert_int_equal(rs->s->period, 3000);
		assert_int_equal(rs->state, 'S');
		assert_int_equal(rs->waker_pid, PID);
		assert_int_equal(rs->waker_tid, WAKER);
		assert_string_equal(session__comm(v->s, rs->waker_comm), "waker");
		assert_int_equal(rs->nr, 3); /* the waker's two kernel frames and one user frame */
	}
	if (a->is_sched_delay && v->delays < 4)
		v->delay_states[v->delays++] = rs->state;
	n = offwake__join(v->ow, rs, &j);
	assert_true(n >= 0);
	if (n) {
		v->joined++;
		assert_int_equal(profile__add(v->p, &j), 0);
	}
	return threads__add(v->th, rs);
}

static void run(struct seen *v, bool waker_ids)
{
	struct session_opts so = { .no_symbols = true };
	char err[256];

	memset(v, 0, sizeof(*v));
	v->s = session__new(path, &so, err, sizeof(err));
	assert_non_null(v->s);
	v->ow = offwake__new(v->s, waker_ids ? BY_TID : BY_COMM);
	assert_non_null(v->ow);
	v->p = profile__new(perf_reader__nr_attrs(session__reader(v->s)), PROFILE_KEEP_TID);
	v->th = threads__new();
	assert_int_equal(session__run(v->s, on_sample, v), 0);
}

static void done(struct seen *v)
{
	threads__free(v->th);
	profile__free(v->p);
	offwake__free(v->ow);
	session__free(v->s);
	unlink(path);
}

/* The events and their raw fields, as the reader and the session see them. */
static void test_events(void **state)
{
	const struct perf_reader *r;
	struct seen v;

	build(false);
	run(&v, true);
	r = session__reader(v.s);
	assert_int_equal(perf_reader__nr_attrs(r), 4);
	assert_true(perf_reader__attr(r, 1)->is_offcpu);
	assert_true(perf_reader__attr(r, 2)->is_wakeup && perf_reader__attr(r, 2)->is_time);
	assert_true(perf_reader__attr(r, 3)->is_sched_delay && perf_reader__attr(r, 3)->is_time);
	assert_false(perf_reader__attr(r, 2)->is_offcpu || perf_reader__attr(r, 3)->is_offcpu);
	assert_int_equal(v.wakeups, 1);
	assert_int_equal(v.delays, 2);
	assert_int_equal(v.delay_states[0], 'S'); /* woken from S */
	assert_int_equal(v.delay_states[1], 'R'); /* preempted */
	done(&v);
}

/* Joined: leaf first waker name, waker root..leaf, --, sleeper leaf..root. */
static void test_offwake_join(void **state)
{
	struct seen v;
	const struct pstack *st;
	const uint32_t *fr;
	uint32_t sep;
	char *out = NULL, *line, *save = NULL, *tok;
	size_t len = 0, n = 0;
	const char *tokens[16];
	struct report_opts o = { .input = path };
	struct fg_tree *fgt;
	FILE *f;

	build(false);
	run(&v, true);
	assert_int_equal(v.joined, 1);
	assert_int_equal(offwake__unjoined(v.ow), 0);
	assert_int_equal(profile__nr_stacks(v.p), 1);
	st = profile__stack(v.p, 0);
	assert_int_equal(st->event, 2);
	assert_int_equal(st->tid, SLEEPER);
	assert_int_equal(st->period, 3000);
	assert_int_equal(st->nr, 1 + 3 + 1 + 3);
	fr = profile__frames(v.p, st);
	assert_string_equal(session__frame(v.s, fr[0])->sym, "waker 100/102");
	assert_int_equal(session__frame(v.s, fr[1])->addr, 0x402000); /* waker root */
	assert_int_equal(session__frame(v.s, fr[3])->addr, 0xffffffff81000200ULL); /* waker leaf */
	assert_string_equal(session__frame(v.s, fr[4])->sym, "--");
	assert_int_equal(offwake__separator(v.s, &sep), 0);
	assert_int_equal(fr[4], sep);
	assert_int_equal(session__frame(v.s, fr[5])->addr, 0xffffffff81000100ULL); /* sleeper leaf */

	/* folded, root first: sleeper;root..leaf;--;leaf..root;waker VALUE */
	f = open_memstream(&out, &len);
	assert_int_equal(folded__print(f, v.s, v.p, &o, NULL), 0);
	fclose(f);
	line = out;
	tok = strrchr(line, ' '); /* the value follows the last space */
	assert_non_null(tok);
	*tok = 0;
	assert_string_equal(tok + 1, "3000\n");
	for (tok = strtok_r(line, ";", &save); tok && n < 16; tok = strtok_r(NULL, ";", &save))
		tokens[n++] = tok;
	assert_int_equal(n, 1 + 8);
	assert_string_equal(tokens[0], "sleeper");
	assert_string_equal(tokens[4], "--");
	assert_string_equal(tokens[8], "waker 100/102");
	free(out);

	/* as flame graph paths: all, comm, 3 sleeper frames, --, 3 waker frames, name */
	fgt = fg_tree__new();
	assert_int_equal(fg__from_offwake(fgt, v.s, v.p, 2, false), 0);
	assert_int_equal(fg_tree__nr_nodes(fgt), 10);
	assert_int_equal(fg_tree__total(fgt, FG_OFF_CPU), 3000);
	assert_int_equal(fg_tree__total(fgt, FG_ON_CPU), 0);
	fg_tree__free(fgt);
	done(&v);
}

/* A wakeup sample whose off-CPU sample is missing is counted, not joined. */
static void test_offwake_unjoined(void **state)
{
	struct seen v;

	build(true);
	run(&v, false);
	assert_int_equal(v.joined, 0);
	assert_int_equal(offwake__unjoined(v.ow), 1);
	done(&v);
}

/* wall 7000 = 2000 on-CPU + 3000 S + 1500 run-queue + 500 rest. */
static void test_threads(void **state)
{
	struct report_opts o;
	char *out = NULL, *row;
	size_t len = 0;
	struct seen v;
	FILE *f;

	report_opts__init(&o);
	o.input = path;
	build(false);
	run(&v, false);
	f = open_memstream(&out, &len);
	assert_int_equal(threads__print(f, v.th, v.s, &o), 0);
	fclose(f);
	row = strstr(out, "\n      100      101  sleeper");
	assert_non_null(row);
	row = strtok(row + 1, "\n");
	assert_non_null(strstr(row, "7.00 us"));
	assert_non_null(strstr(row, "2.00 us   28.6%"));
	assert_non_null(strstr(row, "3.00 us   42.9%"));
	assert_non_null(strstr(row, "0 ns    0.0%"));
	assert_non_null(strstr(row, "1.50 us   21.4%"));
	assert_non_null(strstr(row, "500 ns    7.1%"));
	free(out);
	done(&v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_events),
		cmocka_unit_test(test_offwake_join),
		cmocka_unit_test(test_offwake_unjoined),
		cmocka_unit_test(test_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
