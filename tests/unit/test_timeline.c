// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests of the timeline's model (profile/timeline.h): files with the
 * four events (cpu-clock, offcpu-time, offcpu-wakeup, sched-delay) and
 * FORK/EXIT side-band, written with the recorder's own encoders and
 * writer, read into a timeline: how each kind of sample becomes a slice,
 * what the stretches between waits are said to hold, wakeups, --time.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output/timeline.h"
#include "perfdata/perf_format.h"
#include "perfdata/perf_writer.h"
#include "profile/timeline.h"
#include "record/record.h"

#define CPU_ID 42
#define PID 100
#define SLEEPER 101
#define WAKER 102
#define T0 1000000000ULL /* times are T0 + the numbers in the comments */

#include "pw_records.h"

static char path[64];

/* What a file holds: each test builds its own from these. */
struct spec {
	bool sched_delay;   /* the sched-delay event, and the run-queue wait of the wakeup */
	bool summed_off;    /* a summed off-CPU sample of the sleeper */
	bool overlap;       /* an off-CPU sample inside the first one */
};

/* A waker: its identity and its one user frame. */
struct tl_waker {
	uint32_t pid, tid;
	char comm[16];
	uint64_t ip;
};

/* A sample of the off-CPU kinds: state bits, ns, direct or summed (count). */
static void off_sample(struct perf_writer *w, uint32_t tid, uint32_t state, uint64_t period,
		       uint64_t t, uint64_t count, const struct tl_waker *wk)
{
	_Alignas(8) uint8_t rec[OFFCPU_PAYLOAD_MAX_SIZE];
	struct offcpu_sample *s = calloc(1, sizeof(*s));
	uint64_t uf[2] = { 0x401100 + (state & 0xff), 0x401200 }, kf = 0xffffffff81000100ULL;
	struct offcpu_frames u = { uf, 2 }, k = { &kf, 1 }, none = { &kf, 0 };
	size_t n;

	s->kind = OFFCPU_REC_SAMPLE;
	s->flags = count == 1 ? 0 : OFFCPU_SAMPLE_SUM;
	s->k.who.pid = PID;
	s->k.who.tid = tid;
	s->k.state = state;
	s->v.period = period;
	s->v.count = count;
	s->v.time = t;
	if (wk) {
		struct offcpu_frames wu = { &wk->ip, 1 };

		s->k.state |= OFFCPU_WAKER;
		s->k.waker.pid = wk->pid;
		s->k.waker.tid = wk->tid;
		memcpy(s->v.wcomm, wk->comm, sizeof(s->v.wcomm));
		n = offcpu_waker__encode(s, &wu, &none, t, rec);
	} else {
		n = offcpu_sample__encode(s, &u, &k, t, rec);
	}
	assert_int_equal(n, ((const struct perf_event_header *)rec)->size);
	put(w, rec);
	free(s);
}

/*
 * The sleeper, forked at 0, waits 500 for its first run (sched-delay N at
 * 500), runs 200, sleeps in S 2800 (woken by WAKER at 3500: offcpu-time
 * and offcpu-wakeup at its switch-in 4000, after a run-queue wait of 500),
 * runs 800, is preempted 200 (sched-delay R at 5000), runs to its exit at
 * 7000. CPU samples at 600 and 4500. The waker runs: a sample at 3400.
 */
static void build(const struct spec *sp)
{
	struct perf_event_attr cpu = { .size = sizeof(cpu), .type = PERF_TYPE_SOFTWARE,
				       .config = PERF_COUNT_SW_CPU_CLOCK,
				       .sample_type = cpu_sample_type(), .sample_id_all = 1 };
	struct perf_event_attr off;
	uint64_t ids[4] = { CPU_ID, OFFCPU_ID_OFFCPU, OFFCPU_ID_WAKEUP, OFFCPU_ID_SCHED_DELAY };
	struct tl_waker *wk = calloc(1, sizeof(*wk));
	uint64_t spread = sp->sched_delay ? 7 : 0;
	struct perf_writer *w;

	snprintf(path, sizeof(path), "/tmp/offcpu-ut-timeline-%d.data", getpid());
	unlink(path);
	offcpu_event_attr(&off);
	assert_int_equal(perf_writer__new(path, &w), 0);
	assert_int_equal(perf_writer__add_event(w, &cpu, "cpu-clock", &ids[0], 1), 0);
	assert_int_equal(perf_writer__add_event(w, &off, OFFCPU_EVENT_NAME, &ids[1], 1), 0);
	assert_int_equal(perf_writer__add_event(w, &off, OFFCPU_WAKEUP_EVENT_NAME, &ids[2], 1), 0);
	if (sp->sched_delay)
		assert_int_equal(perf_writer__add_event(w, &off, OFFCPU_SCHED_DELAY_EVENT_NAME, &ids[3], 1), 0);
	assert_int_equal(perf_writer__begin(w), 0);
	task_event(w, PERF_RECORD_FORK, SLEEPER, T0);
	comm(w, SLEEPER, "sleeper", T0);
	comm(w, WAKER, "waker", T0);
	if (sp->sched_delay)
		off_sample(w, SLEEPER, OFFCPU_SCHED_DELAY | OFFCPU_STATE_NEW, 500, T0 + 500, 1, NULL);
	cpu_sample(w, SLEEPER, T0 + 600, 100);
	cpu_sample(w, WAKER, T0 + 3400, 100);
	wk->pid = PID;
	wk->tid = WAKER;
	snprintf(wk->comm, sizeof(wk->comm), "waker");
	wk->ip = 0x402000;
	if (sp->sched_delay)
		off_sample(w, SLEEPER, OFFCPU_SCHED_DELAY | OFFCPU_STATE_S, 500, T0 + 4000, 1, NULL);
	/* the recorder reads the clock for each sample: the off-CPU one comes a little later */
	off_sample(w, SLEEPER, OFFCPU_STATE_S, 2800, T0 + 4000 + spread, 1, NULL);
	off_sample(w, SLEEPER, OFFCPU_STATE_S, 2800, T0 + 4000 + spread, 1, wk);
	if (sp->overlap) {
		off_sample(w, SLEEPER, OFFCPU_STATE_D, 100, T0 + 2000, 1, NULL);
		off_sample(w, SLEEPER, OFFCPU_STATE_D, 100, T0 + 2000, 1, wk);
	}
	cpu_sample(w, SLEEPER, T0 + 4500, 100);
	if (sp->sched_delay)
		off_sample(w, SLEEPER, OFFCPU_SCHED_DELAY, 200, T0 + 5000, 1, NULL);
	if (sp->summed_off) {
		off_sample(w, SLEEPER, OFFCPU_STATE_S, 300, T0 + 6000, 3, NULL);
		off_sample(w, SLEEPER, OFFCPU_STATE_S, 300, T0 + 6000, 3, wk);
	}
	task_event(w, PERF_RECORD_EXIT, SLEEPER, T0 + 7000);
	assert_int_equal(perf_writer__finished_round(w), 0);
	assert_int_equal(perf_writer__finish(w), 0);
	perf_writer__free(w);
	free(wk);
}

static struct timeline *read_tl(struct report_opts *o)
{
	struct timeline *tl = NULL;
	char err[256];

	o->input = path;
	o->no_symbols = true;
	assert_int_equal(timeline__read(o, NULL, &tl, err, sizeof(err)), 0);
	return tl;
}

static uint32_t thread_of(const struct timeline *tl, uint32_t tid)
{
	for (uint32_t i = 0; i < timeline__nr_threads(tl); i++)
		if (timeline__thread(tl, i)->tid == tid)
			return i;
	fail_msg("no thread %u", tid);
	return 0;
}

static void slice_is(const struct tl_slice *sl, int kind, char state, uint64_t start, uint64_t end,
		     uint16_t flags)
{
	assert_int_equal(sl->kind, kind);
	if (state)
		assert_int_equal(sl->state, state);
	assert_int_equal(sl->start, T0 + start);
	assert_int_equal(sl->end, T0 + end);
	assert_int_equal(sl->flags, flags);
}

/* Every wait timed: the waits where they were, on CPU exactly between them. */
static void test_exact(void **state)
{
	struct spec sp = { .sched_delay = true };
	struct report_opts o;
	struct timeline *tl;
	const struct tl_slice *sl;
	const struct tl_wake *wake;
	const uint32_t *by;
	char name[64];
	size_t n;
	uint32_t s, w;

	build(&sp);
	report_opts__init(&o);
	tl = read_tl(&o);
	assert_true(timeline__info(tl)->sched_delay && timeline__info(tl)->wakeups);
	s = thread_of(tl, SLEEPER);
	w = thread_of(tl, WAKER);
	assert_true(timeline__thread(tl, s)->measured);
	assert_false(timeline__thread(tl, w)->measured);
	assert_string_equal(timeline__thread(tl, s)->comm, "sleeper");
	sl = timeline__slices(tl, s, &n);
	assert_int_equal(n, 7);
	slice_is(&sl[0], TL_RUNQ, 'N', 0, 500, 0);
	slice_is(&sl[1], TL_ONCPU, 0, 500, 700, 0);
	slice_is(&sl[2], TL_OFFCPU, 'S', 700, 3500, 0);
	slice_is(&sl[3], TL_RUNQ, 'S', 3500, 4000, 0);
	slice_is(&sl[4], TL_ONCPU, 0, 4000, 4800, 0);
	slice_is(&sl[5], TL_RUNQ, 'R', 4800, 5000, 0);
	slice_is(&sl[6], TL_ONCPU, 0, 5000, 7000, 0);
	assert_string_equal(tl_slice__name(tl, &sl[3], name, sizeof(name)), "runnable (woken)");
	assert_string_equal(tl_slice__name(tl, &sl[4], name, sizeof(name)), "on CPU");
	assert_null(tl_slice__may_hold(&sl[4]));
	/* the wakeup: by the waker, at the wait's end, on the waker's list */
	assert_int_equal(sl[2].wake, 1);
	wake = timeline__wake(tl, 0);
	assert_int_equal(wake->time, T0 + 3500);
	assert_int_equal(wake->sleeper, s);
	assert_int_equal(wake->waker, w);
	assert_true(wake->exact && !wake->irq && wake->stack);
	by = timeline__wakes_by(tl, w, &n);
	assert_int_equal(n, 1);
	assert_int_equal(by[0], 0);
	timeline__samples(tl, s, &n);
	assert_int_equal(n, 2);
	timeline__samples(tl, w, &n);
	assert_int_equal(n, 1);
	timeline__free(tl);
	report_opts__free(&o);
	unlink(path);
}

/* No --sched-delay, short waits summed: the wait ends at its switch-in, stretches flagged. */
static void test_partial(void **state)
{
	struct spec sp = { .summed_off = true };
	struct report_opts o;
	struct timeline *tl;
	const struct tl_slice *sl;
	const struct tl_summed *su;
	char name[64];
	size_t n;
	uint32_t s;

	build(&sp);
	report_opts__init(&o);
	tl = read_tl(&o);
	s = thread_of(tl, SLEEPER);
	sl = timeline__slices(tl, s, &n);
	assert_int_equal(n, 3);
	slice_is(&sl[0], TL_ONCPU, 0, 0, 1200, TL_MAY_RUNQ | TL_MAY_WAIT);
	slice_is(&sl[1], TL_OFFCPU, 'S', 1200, 4000, TL_WAKE_UNKNOWN);
	slice_is(&sl[2], TL_ONCPU, 0, 4000, 7000, TL_MAY_RUNQ | TL_MAY_WAIT);
	assert_string_equal(tl_slice__name(tl, &sl[0], name, sizeof(name)), "on CPU or short waits");
	assert_non_null(tl_slice__may_hold(&sl[0]));
	assert_false(timeline__wake(tl, 0)->exact);
	assert_int_equal(timeline__wake(tl, 0)->time, T0 + 4000);
	su = timeline__summed(tl, s, &n);
	assert_int_equal(n, 1);
	assert_int_equal(su->count, 3);
	assert_int_equal(su->total, 300);
	assert_int_equal(su->time, T0 + 6000);
	assert_int_equal(timeline__thread(tl, s)->summed_off, 3);
	/* the sum's waker is its own, and draws nothing on the waker's track */
	assert_int_equal(su->wake, 2);
	assert_int_equal(timeline__wake(tl, 1)->waker, thread_of(tl, WAKER));
	assert_int_equal(timeline__info(tl)->unjoined, 0);
	timeline__wakes_by(tl, thread_of(tl, WAKER), &n);
	assert_int_equal(n, 1);
	timeline__free(tl);
	report_opts__free(&o);
	unlink(path);
}

/*
 * A wait inside another of its thread (perf's summed samples) is left out
 * and counted, and its wakeup is drawn on no track.
 */
static void test_overlap(void **state)
{
	struct spec sp = { .sched_delay = true, .overlap = true };
	struct report_opts o;
	struct timeline *tl;
	size_t n;

	build(&sp);
	report_opts__init(&o);
	tl = read_tl(&o);
	timeline__slices(tl, thread_of(tl, SLEEPER), &n);
	assert_int_equal(n, 7);
	assert_int_equal(timeline__info(tl)->overlaps, 1);
	timeline__wakes_by(tl, thread_of(tl, WAKER), &n);
	assert_int_equal(n, 1);
	timeline__free(tl);
	report_opts__free(&o);
	unlink(path);
}

/* --time: what overlaps the window, cut at its edges with the whole length kept. */
static void test_time(void **state)
{
	struct spec sp = { .sched_delay = true };
	struct report_opts o;
	struct timeline *tl;
	const struct tl_slice *sl;
	size_t n;
	uint32_t s;

	build(&sp);
	report_opts__init(&o);
	o.time_start = T0 + 2000;
	o.time_end = T0 + 3800;
	tl = read_tl(&o);
	assert_int_equal(timeline__info(tl)->start, T0 + 2000);
	assert_int_equal(timeline__info(tl)->end, T0 + 3800);
	s = thread_of(tl, SLEEPER);
	sl = timeline__slices(tl, s, &n);
	assert_int_equal(n, 2);
	slice_is(&sl[0], TL_OFFCPU, 'S', 2000, 3500, TL_CUT);
	assert_int_equal(sl[0].whole, 2800);
	slice_is(&sl[1], TL_RUNQ, 'S', 3500, 3800, TL_CUT);
	timeline__samples(tl, s, &n);
	assert_int_equal(n, 0);
	timeline__wakes_by(tl, thread_of(tl, WAKER), &n);
	assert_int_equal(n, 1); /* its wakeup at 3500 is inside */
	timeline__samples(tl, thread_of(tl, WAKER), &n);
	assert_int_equal(n, 1);
	timeline__free(tl);
	report_opts__free(&o);
	unlink(path);
}

/* --tid of the sleeper: its waker has a track for its wakeup, nothing else. */
static void test_filter(void **state)
{
	struct spec sp = { .sched_delay = true };
	struct report_opts o;
	struct timeline *tl;
	size_t n;
	uint32_t w;

	build(&sp);
	report_opts__init(&o);
	assert_int_equal(id_list__parse(&o.tids, "101", false), 0);
	tl = read_tl(&o);
	w = thread_of(tl, WAKER);
	assert_true(timeline__thread(tl, w)->waker_only);
	timeline__samples(tl, w, &n);
	assert_int_equal(n, 0);
	timeline__wakes_by(tl, w, &n);
	assert_int_equal(n, 1);
	timeline__free(tl);
	report_opts__free(&o);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact),
		cmocka_unit_test(test_partial),
		cmocka_unit_test(test_overlap),
		cmocka_unit_test(test_time),
		cmocka_unit_test(test_filter),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
