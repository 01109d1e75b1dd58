// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests of wait chains (profile/chains.h): a file of `record --chains`
 * records written with the recorder's own encoders and writer (switch
 * records, stack records, CPU samples; kernel frames named from a kallsyms
 * of this test's own), read through the reader, the session and the model,
 * each wait walked and checked against the answer built into it:
 *   - three threads (a condition variable through a pipe to a spin and a
 *     timer): every segment's kind, thread, time and stack, the folded path;
 *   - two threads waking each other at one instant: [cycle];
 *   - 40 threads each woken by the next: [depth] at 32 hops;
 *   - a waker with 200 000 CPU samples: [truncated] after 100 000 segments;
 *   - a waker whose records were lost (a gap in its switch count): [unknown];
 *   - a waker made during the wait: its maker's time before it existed;
 *   - a futex woken twice (same stack, 10 us on the CPU between): one wait;
 *   - an interrupt in D state: [io]; softirq work of loopback: the task's;
 *   - a waker whose D wait's record says it began before its preemption
 *     before it ended: the records' order rules, the disk's time is [io];
 *   - a `record --wakeups --off-cpu-thresh 0 --sched-delay` file: each
 *     interval's samples (sched-delay, offcpu-time, offcpu-wakeup at one
 *     time) gathered into its wait, walked to its waker's CPU samples.
 * Every walk tiles its wait.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perfdata/offcpu_payload.h"
#include "perfdata/perf_format.h"
#include "perfdata/perf_reader.h"
#include "perfdata/perf_writer.h"
#include "profile/chains.h"
#include "profile/profile.h"
#include "record/record.h"

#define CPU_ID 42
#define PID 100
#define MS 1000000ULL
#define T0 1000000000ULL
#define TEXT 0xffffffff81000000ULL

/* The kernel functions the stacks are made of, 4 KiB apart from _text on. */
static const char *const fns[] = {
	"_text", "a_wait", "b_read", "b_signal", "c_spin", "c_nap", "c_write",
	"hrtimer_wakeup", "__sysvec_apic_timer_interrupt", "asm_sysvec_apic_timer_interrupt",
	"x_fn", "y_fn", "d_fn", "f_one", "f_two", "h_fn", "m_create", "l_fn", "p_lock",
	"blk_complete", "io_wait", "process_backlog", "handle_softirqs", "tcp_send",
	"w_spin", "w_send",
};
enum {
	F_TEXT, F_A_WAIT, F_B_READ, F_B_SIGNAL, F_C_SPIN, F_C_NAP, F_C_WRITE, F_HRTIMER,
	F_SYSVEC, F_ASM_SYSVEC, F_X, F_Y, F_D, F_F1, F_F2, F_H, F_M_CREATE, F_L, F_P_LOCK,
	F_BLK, F_IO_WAIT, F_BACKLOG, F_SOFTIRQ, F_TCP_SEND, F_W_SPIN, F_W_SEND,
};

static char path[64], ksyms[64];

static uint64_t addr(int fn)
{
	return TEXT + 0x1000ULL * fn + 0x10;
}

static void put(struct perf_writer *w, const void *rec, size_t len)
{
	assert_true(len > 0);
	assert_int_equal(len, ((const struct perf_event_header *)rec)->size);
	assert_int_equal(perf_writer__write(w, rec, len), 0);
}

static void comm(struct perf_writer *w, uint32_t tid, const char *name)
{
	struct {
		struct perf_event_header h;
		uint32_t pid, tid;
		char comm[16];
		struct sample_id sid;
	} r = {
		.h = { .type = PERF_RECORD_COMM, .size = sizeof(r) },
		.pid = PID, .tid = tid,
		.sid = { .pid = PID, .tid = tid, .time = T0, .id = CPU_ID },
	};

	snprintf(r.comm, sizeof(r.comm), "%s", name);
	put(w, &r, sizeof(r));
}

/* Stack id `id` of tid: its kernel frames (innermost first), ending 0. */
static void stack(struct perf_writer *w, uint32_t id, uint32_t tid, const int *frames)
{
	static struct offcpu_chain_stack st;
	_Alignas(8) uint8_t rec[OFFCPU_PAYLOAD_MAX_SIZE];

	memset(&st, 0, sizeof(st));
	st.type = OFFCPU_CHAIN_STACK;
	st.id = id;
	st.pid = PID;
	st.tid = tid;
	st.kind = OFFCPU_CHAIN_STACK_TASK;
	st.time = T0;
	for (; frames[st.klen]; st.klen++)
		st.stack[OFFCPU_MAX_STACK + st.klen] = addr(frames[st.klen]);
	put(w, rec, chain_stack__encode(&st, rec));
}

/* A wait of tid with the ring's flags (OFFCPU_CHAIN_*): as wait_. */
static void wait_flags(struct perf_writer *w, uint32_t tid, char state, uint64_t out, uint64_t wake,
		       uint64_t in, uint32_t stack_id, uint32_t waker, uint32_t waker_stack,
		       uint32_t seq, uint16_t flags)
{
	struct offcpu_chain_switch r = {
		.type = OFFCPU_CHAIN_SWITCH, .pid = PID, .tid = tid, .time = in, .out = out,
		.wake = wake, .waker_tid = waker, .seq = seq, .state = (uint8_t)state,
		.flags = OFFCPU_CHAIN_TARGET | flags,
	};
	_Alignas(8) uint8_t rec[OFFCPU_SWITCH_RECORD_SIZE];

	put(w, rec, chain_switch__encode(&r, stack_id, waker_stack, rec));
}

/* A wait of tid: left at out, woken at wake, back at in; seq: its switch-ins. */
static void wait_(struct perf_writer *w, uint32_t tid, char state, uint64_t out, uint64_t wake,
		  uint64_t in, uint32_t stack_id, uint32_t waker, uint32_t waker_stack, uint32_t seq)
{
	wait_flags(w, tid, state, out, wake, in, stack_id, waker, waker_stack, seq, 0);
}

static void cpu(struct perf_writer *w, uint32_t tid, uint64_t t, int fn)
{
	static struct offcpu_cpu_sample s;
	_Alignas(8) uint8_t rec[4096 + sizeof(s)];

	memset(&s, 0, sizeof(s));
	s.time = t;
	s.period = MS;
	s.ip = addr(fn);
	s.pid = PID;
	s.tid = tid;
	s.klen = 1;
	s.stack[OFFCPU_MAX_STACK] = addr(fn);
	put(w, rec, cpu_sample__encode(&s, CPU_ID, rec));
}

#define S(...) ((const int[]){ __VA_ARGS__, 0 })

/* Stack ids: one per (thread, place). */
enum {
	K_A = 1, K_B_READ, K_B_SIGNAL, K_C_NAP, K_C_WRITE, K_TIMER, K_X, K_Y, K_D, K_H,
	K_M_CREATE, K_P, K_IO, K_BLK, K_TCP, K_W_SPIN, K_W_IO, K_W_BLK, K_W_SEND,
};

static void scenario_three(struct perf_writer *w)
{
	comm(w, 201, "ta");
	comm(w, 202, "tb");
	comm(w, 203, "tc");
	stack(w, K_A, 201, S(F_A_WAIT));
	stack(w, K_B_READ, 202, S(F_B_READ));
	stack(w, K_B_SIGNAL, 202, S(F_B_SIGNAL));
	stack(w, K_C_NAP, 203, S(F_C_NAP));
	stack(w, K_C_WRITE, 203, S(F_C_WRITE));
	stack(w, K_TIMER, 203, S(F_HRTIMER, F_SYSVEC, F_ASM_SYSVEC, F_C_SPIN));
	for (uint64_t t = T0 + 1 * MS; t <= T0 + 249 * MS; t += MS)
		cpu(w, 203, t, F_C_SPIN);
	wait_(w, 203, 'S', T0 + 250 * MS, T0 + 350 * MS, T0 + 360 * MS, K_C_NAP, 0, K_TIMER, 1);
	wait_(w, 202, 'S', T0 + 50 * MS, T0 + 395 * MS, T0 + 397 * MS, K_B_READ, 203, K_C_WRITE, 1);
	wait_(w, 201, 'S', T0 + 100 * MS, T0 + 400 * MS, T0 + 400 * MS + 500000, K_A, 202,
	      K_B_SIGNAL, 1);
}

/* x and y wake each other at one instant (two CPUs' clocks); d0..d39 each woken by the next. */
static void scenario_cycle_depth(struct perf_writer *w)
{
	comm(w, 301, "tx");
	comm(w, 302, "ty");
	stack(w, K_X, 301, S(F_X));
	stack(w, K_Y, 302, S(F_Y));
	wait_(w, 302, 'S', T0 + 550 * MS, T0 + 600 * MS, T0 + 601 * MS, K_Y, 301, K_X, 1);
	wait_(w, 301, 'S', T0 + 500 * MS, T0 + 600 * MS, T0 + 605 * MS, K_X, 302, K_Y, 1);
	stack(w, K_D, 400, S(F_D));
	for (uint32_t k = 0; k < 40; k++) {
		char name[16];

		snprintf(name, sizeof(name), "d%u", k);
		comm(w, 400 + k, name);
		/* d_k: asleep from 700 ms, woken by d_k+1 at 800 ms - k us */
		wait_(w, 400 + k, 'S', T0 + 700 * MS, T0 + 800 * MS - k * 1000,
		      T0 + 800 * MS - k * 1000 + 500, K_D, k < 39 ? 401 + k : 0, k < 39 ? K_D : 0, 1);
	}
}

/* f spins with 200 000 samples of two alternating stacks while e waits for it. */
static void scenario_truncated(struct perf_writer *w)
{
	comm(w, 501, "te");
	comm(w, 502, "tf");
	for (uint64_t i = 0; i < 200000; i++)
		cpu(w, 502, T0 + 900 * MS + 100 + i * 400, i & 1 ? F_F1 : F_F2);
	wait_(w, 501, 'S', T0 + 900 * MS, T0 + 990 * MS, T0 + 991 * MS, K_A, 502, 0, 1);
}

/* h's records 2..4 were lost: its time before its last one is not known. */
static void scenario_gap(struct perf_writer *w)
{
	comm(w, 601, "tg");
	comm(w, 602, "th");
	stack(w, K_H, 602, S(F_H));
	wait_(w, 602, 'S', T0 + 1000 * MS, T0 + 1050 * MS, T0 + 1060 * MS, K_H, 0, K_TIMER, 1);
	wait_(w, 602, 'S', T0 + 1150 * MS, T0 + 1190 * MS, T0 + 1195 * MS, K_H, 0, K_TIMER, 5);
	wait_(w, 601, 'S', T0 + 1100 * MS, T0 + 1200 * MS, T0 + 1201 * MS, K_A, 602, K_H, 1);
}

/* l is made by m at 1350 ms, then wakes k; p's futex wakes twice; an [io] wait; loopback. */
static void scenario_new_merge_io(struct perf_writer *w)
{
	comm(w, 701, "tk");
	comm(w, 702, "tl");
	comm(w, 703, "tm");
	stack(w, K_M_CREATE, 703, S(F_M_CREATE));
	wait_(w, 702, 'N', T0 + 1350 * MS, T0 + 1350 * MS, T0 + 1360 * MS, 0, 703, K_M_CREATE, 0);
	wait_(w, 701, 'S', T0 + 1300 * MS, T0 + 1400 * MS, T0 + 1401 * MS, K_A, 702, 0, 1);

	comm(w, 801, "tp");
	comm(w, 802, "tq");
	stack(w, K_P, 801, S(F_P_LOCK));
	wait_(w, 801, 'S', T0 + 1500 * MS, T0 + 1600 * MS, T0 + 1600 * MS + 5000, K_P, 802, 0, 1);
	wait_(w, 801, 'S', T0 + 1600 * MS + 15000, T0 + 1700 * MS, T0 + 1701 * MS, K_P, 802, 0, 2);

	comm(w, 901, "tio");
	stack(w, K_IO, 901, S(F_IO_WAIT));
	stack(w, K_BLK, 901, S(F_BLK, F_SYSVEC, F_ASM_SYSVEC));
	wait_(w, 901, 'D', T0 + 1800 * MS, T0 + 1810 * MS, T0 + 1811 * MS, K_IO, 0, K_BLK, 1);

	comm(w, 902, "tnet");
	comm(w, 903, "tsend");
	stack(w, K_TCP, 903, S(F_BACKLOG, F_SOFTIRQ, F_TCP_SEND));
	wait_(w, 902, 'S', T0 + 1900 * MS, T0 + 1920 * MS, T0 + 1921 * MS, K_A, 903, K_TCP, 1);
}

/*
 * A client's wait for a worker whose switch times disagree (the run
 * queue's clock lagged at a preemption): preempted at 2040 ms, back at
 * 2050 ms, and its next record, a D wait ended by the disk at 2095 ms,
 * says it left at 2030 ms, before either. In record order the D wait
 * follows the preemption; by their starts it would come first, and the
 * walk would book the disk's 45 ms to the worker on a CPU.
 */
static void scenario_skewed(struct perf_writer *w)
{
	comm(w, 1001, "tclient");
	comm(w, 1002, "tworker");
	comm(w, 1003, "tother");
	stack(w, K_W_SPIN, 1002, S(F_W_SPIN));
	stack(w, K_W_IO, 1002, S(F_IO_WAIT));
	stack(w, K_W_BLK, 1002, S(F_BLK, F_SYSVEC, F_ASM_SYSVEC));
	stack(w, K_W_SEND, 1002, S(F_W_SEND));
	wait_(w, 1002, 'R', T0 + 2040 * MS, T0 + 2040 * MS, T0 + 2050 * MS, K_W_SPIN, 1003, 0, 7);
	wait_(w, 1002, 'D', T0 + 2030 * MS, T0 + 2095 * MS, T0 + 2096 * MS, K_W_IO, 0, K_W_BLK, 8);
	wait_(w, 1001, 'S', T0 + 2000 * MS, T0 + 2100 * MS, T0 + 2101 * MS, K_A, 1002, K_W_SEND, 1);
}

/*
 * v's waker u slept until 2290 ms, and the kernel hid that wakeup: its
 * record has no waker and says so (OFFCPU_CHAIN_WAKE_UNSEEN).
 */
static void scenario_unseen(struct perf_writer *w)
{
	comm(w, 1101, "tv");
	comm(w, 1102, "tu");
	stack(w, K_H, 1102, S(F_H));
	wait_flags(w, 1102, 'S', T0 + 2150 * MS, T0 + 2290 * MS, T0 + 2292 * MS, K_H, 0, 0, 1,
		   OFFCPU_CHAIN_WAKE_UNSEEN);
	wait_(w, 1101, 'S', T0 + 2200 * MS, T0 + 2300 * MS, T0 + 2301 * MS, K_A, 1102, K_H, 1);
}

static void build(void)
{
	struct perf_event_attr cpu_attr = { .size = sizeof(cpu_attr), .type = PERF_TYPE_SOFTWARE,
					    .config = PERF_COUNT_SW_CPU_CLOCK,
					    .sample_type = cpu_sample_type(), .sample_id_all = 1 };
	struct perf_event_attr off, sw;
	uint64_t ids[4] = { CPU_ID, OFFCPU_ID_OFFCPU, OFFCPU_ID_SWITCH, OFFCPU_ID_STACK };
	struct perf_writer *w;
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/offcpu-ut-chains-%d.data", getpid());
	snprintf(ksyms, sizeof(ksyms), "/tmp/offcpu-ut-chains-%d.kallsyms", getpid());
	f = fopen(ksyms, "w");
	assert_non_null(f);
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		fprintf(f, "%llx T %s\n", (unsigned long long)(TEXT + 0x1000ULL * i), fns[i]);
	fprintf(f, "%llx T _etext\n", (unsigned long long)(TEXT + 0x1000ULL * 64));
	fclose(f);
	unlink(path);
	offcpu_event_attr(&off);
	chain_switch_attr(&sw);
	assert_int_equal(perf_writer__new(path, &w), 0);
	assert_int_equal(perf_writer__add_event(w, &cpu_attr, "cpu-clock", &ids[0], 1), 0);
	assert_int_equal(perf_writer__add_event(w, &off, OFFCPU_EVENT_NAME, &ids[1], 1), 0);
	assert_int_equal(perf_writer__add_event(w, &sw, OFFCPU_SWITCH_EVENT_NAME, &ids[2], 1), 0);
	assert_int_equal(perf_writer__add_event(w, &off, OFFCPU_STACK_EVENT_NAME, &ids[3], 1), 0);
	assert_int_equal(perf_writer__begin(w), 0);
	assert_int_equal(synth__kernel_mmap(w, TEXT, CPU_ID), 0);
	scenario_three(w);
	scenario_cycle_depth(w);
	scenario_truncated(w);
	scenario_gap(w);
	scenario_new_merge_io(w);
	scenario_skewed(w);
	scenario_unseen(w);
	assert_int_equal(perf_writer__finished_round(w), 0);
	assert_int_equal(perf_writer__finish(w), 0);
	perf_writer__free(w);
}

struct model {
	struct session *s;
	struct chains *c;
	struct report_opts o;
};

static int add(void *ctx, const struct rsample *rs)
{
	return chains__add(ctx, rs);
}

static void load(struct model *m)
{
	struct session_opts so = { .kallsyms = ksyms, .defer_kernel = true };
	const uint32_t *remap;
	uint32_t n;
	char err[256];

	build();
	memset(m, 0, sizeof(*m));
	report_opts__init(&m->o);
	m->o.input = path;
	m->s = session__new(path, &so, err, sizeof(err));
	assert_non_null(m->s);
	m->c = chains__new(m->s, false, 0);
	assert_non_null(m->c);
	assert_int_equal(session__run(m->s, add, m->c), 0);
	remap = session__remap(m->s, &n);
	assert_int_equal(chains__finish(m->c, remap, n), 0);
}

static void unload(struct model *m)
{
	chains__free(m->c);
	session__free(m->s);
	report_opts__free(&m->o);
	unlink(path);
	unlink(ksyms);
}

/* The walk of tid's selected wait (waits of at least min). */
static void walk_of(struct model *m, uint32_t tid, uint64_t min, struct chain_walk *w,
		    struct chain_sel *out)
{
	struct chain_sel *sel = NULL;
	long n;

	char t[16];

	id_list__free(&m->o.tids);
	snprintf(t, sizeof(t), "%u", tid);
	assert_int_equal(id_list__parse(&m->o.tids, t, false), 0);
	n = chains__select(m->c, &m->o, min, &sel);
	assert_int_equal(n, 1);
	*out = sel[0];
	free(sel);
	assert_int_equal(chains__walk(m->c, out, w), 0);
	assert_true(chain_walk__tiles(w));
}

/* The name of the innermost frame of a segment's stack, "-" without. */
static const char *leaf(struct model *m, const struct chain_walk *w, const struct chain_seg *sg)
{
	uint32_t nr;
	const uint32_t *fr = chains__stack(m->c, w->hops[sg->hop].stack, &nr);

	return nr ? session__frame(m->s, fr[0])->sym : "-";
}

static uint32_t seg_tid(struct model *m, const struct chain_walk *w, const struct chain_seg *sg)
{
	return chains__thread(m->c, w->hops[sg->hop].thread)->tid;
}

static void expect_seg(struct model *m, const struct chain_walk *w, size_t i, int kind,
		       uint32_t tid, uint64_t start, uint64_t end, const char *fn, uint32_t depth)
{
	const struct chain_seg *sg;

	assert_true(i < w->nsegs);
	sg = &w->segs[i];
	assert_int_equal(sg->kind, kind);
	assert_int_equal(seg_tid(m, w, sg), tid);
	assert_int_equal(sg->start, start);
	assert_int_equal(sg->end, end);
	assert_string_equal(leaf(m, w, sg), fn);
	assert_int_equal(w->hops[sg->hop].depth, depth);
}

static void test_three_threads(void **state)
{
	struct model m;
	struct chain_walk w;
	struct chain_sel sel;

	(void)state;
	load(&m);
	walk_of(&m, 201, MS, &w, &sel);
	assert_int_equal(w.start, T0 + 100 * MS);
	assert_int_equal(w.end, T0 + 400 * MS);
	assert_int_equal(w.nsegs, 6);
	/* latest first: b ran (its stack at the wakeup), waited for a CPU, slept in its read */
	expect_seg(&m, &w, 0, CHAIN_SEG_ON_CPU, 202, T0 + 397 * MS, T0 + 400 * MS, "b_signal", 1);
	expect_seg(&m, &w, 1, CHAIN_SEG_RUNQ, 202, T0 + 395 * MS, T0 + 397 * MS, "b_read", 1);
	/* ... for c: its write (no sample), its wait for a CPU, its timer, its spin (sampled) */
	expect_seg(&m, &w, 2, CHAIN_SEG_ON_CPU, 203, T0 + 360 * MS, T0 + 395 * MS, "c_write", 2);
	expect_seg(&m, &w, 3, CHAIN_SEG_RUNQ, 203, T0 + 350 * MS, T0 + 360 * MS, "c_nap", 2);
	expect_seg(&m, &w, 4, CHAIN_SEG_TIMER, 203, T0 + 250 * MS, T0 + 350 * MS, "c_nap", 2);
	expect_seg(&m, &w, 5, CHAIN_SEG_ON_CPU, 203, T0 + 100 * MS, T0 + 250 * MS, "c_spin", 2);
	assert_true(w.segs[5].sampled);
	assert_false(w.segs[2].sampled);
	/* the hop between: b asleep in its read */
	assert_int_equal(w.hops[w.hops[w.segs[5].hop].parent].stack,
			 w.hops[w.segs[1].hop].stack);
	unload(&m);
}

/* The folded paths of the three threads' wait, through chains__profile. */
static void test_folded(void **state)
{
	struct model m;
	struct profile *p;
	struct chains_totals tot;
	bool spin = false, timer = false;
	char t[16];

	(void)state;
	load(&m);
	snprintf(t, sizeof(t), "%u", 201);
	assert_int_equal(id_list__parse(&m.o.tids, t, false), 0);
	assert_int_equal(chains__profile(m.c, &m.o, MS, -1, 0, &p, &tot), 0);
	assert_int_equal(tot.waits, 1);
	assert_int_equal(tot.ns, 300 * MS);
	assert_int_equal(tot.bad, 0);
	for (size_t i = 0; i < profile__nr_stacks(p); i++) {
		const struct pstack *st = profile__stack(p, i);
		const uint32_t *fr = profile__frames(p, st);
		char line[512] = "";

		for (uint32_t j = st->nr; j-- > 0;) {
			strcat(line, session__frame(m.s, fr[j])->sym);
			strcat(line, j ? ";" : "");
		}
		if (!strcmp(line, "a_wait;[woken by tb];b_read;[woken by tc];c_spin")) {
			assert_int_equal(st->period, 150 * MS);
			spin = true;
		}
		if (!strcmp(line, "a_wait;[woken by tb];b_read;[woken by tc];c_nap;[timer]")) {
			assert_int_equal(st->period, 100 * MS);
			timer = true;
		}
		assert_string_equal(session__comm(m.s, st->comm), "ta");
	}
	assert_true(spin && timer);
	profile__free(p);
	unload(&m);
}

static void test_cycle(void **state)
{
	struct model m;
	struct chain_walk w;
	struct chain_sel sel;

	(void)state;
	load(&m);
	walk_of(&m, 301, MS, &w, &sel);
	assert_int_equal(w.nsegs, 2);
	expect_seg(&m, &w, 0, CHAIN_SEG_CYCLE, 301, T0 + 550 * MS, T0 + 600 * MS, "x_fn", 2);
	expect_seg(&m, &w, 1, CHAIN_SEG_ON_CPU, 302, T0 + 500 * MS, T0 + 550 * MS, "y_fn", 1);
	unload(&m);
}

static void test_depth(void **state)
{
	struct model m;
	struct chain_walk w;
	struct chain_sel sel;
	uint32_t deepest = 0;

	(void)state;
	load(&m);
	walk_of(&m, 400, MS, &w, &sel);
	for (size_t i = 0; i < w.nhops; i++)
		if (w.hops[i].depth > deepest)
			deepest = w.hops[i].depth;
	assert_int_equal(deepest, CHAINS_MAX_DEPTH);
	/* d32, 32 hops from d0, is asleep still: its waker is not followed */
	for (size_t i = 0; i < w.nsegs; i++) {
		if (w.segs[i].kind != CHAIN_SEG_DEPTH)
			continue;
		assert_int_equal(seg_tid(&m, &w, &w.segs[i]), 400 + CHAINS_MAX_DEPTH);
		assert_int_equal(w.hops[w.segs[i].hop].depth, CHAINS_MAX_DEPTH);
		deepest = 0;
	}
	assert_int_equal(deepest, 0);
	unload(&m);
}

static void test_truncated(void **state)
{
	struct model m;
	struct chain_walk w;
	struct chain_sel sel;

	(void)state;
	load(&m);
	walk_of(&m, 501, MS, &w, &sel);
	assert_int_equal(w.nsegs, CHAINS_MAX_SEGS + 1);
	assert_int_equal(w.segs[w.nsegs - 1].kind, CHAIN_SEG_TRUNCATED);
	assert_int_equal(w.segs[w.nsegs - 1].start, T0 + 900 * MS);
	unload(&m);
}

static void test_gap(void **state)
{
	struct model m;
	struct chain_walk w;
	struct chain_sel sel;
	struct chains_stats st;

	(void)state;
	load(&m);
	chains__stats(m.c, &st);
	assert_int_equal(st.gaps, 1);
	walk_of(&m, 601, MS, &w, &sel);
	assert_int_equal(w.nsegs, 4);
	expect_seg(&m, &w, 0, CHAIN_SEG_ON_CPU, 602, T0 + 1195 * MS, T0 + 1200 * MS, "h_fn", 1);
	expect_seg(&m, &w, 1, CHAIN_SEG_RUNQ, 602, T0 + 1190 * MS, T0 + 1195 * MS, "h_fn", 1);
	expect_seg(&m, &w, 2, CHAIN_SEG_TIMER, 602, T0 + 1150 * MS, T0 + 1190 * MS, "h_fn", 1);
	expect_seg(&m, &w, 3, CHAIN_SEG_UNKNOWN, 602, T0 + 1100 * MS, T0 + 1150 * MS, "-", 1);
	unload(&m);
}

static void test_wake_unseen(void **state)
{
	struct model m;
	struct chain_walk w;
	struct chain_sel sel;
	struct chains_stats st;

	(void)state;
	load(&m);
	chains__stats(m.c, &st);
	assert_int_equal(st.wake_unseen, 1);
	walk_of(&m, 1101, MS, &w, &sel);
	assert_int_equal(w.nsegs, 3);
	expect_seg(&m, &w, 0, CHAIN_SEG_ON_CPU, 1102, T0 + 2292 * MS, T0 + 2300 * MS, "h_fn", 1);
	expect_seg(&m, &w, 1, CHAIN_SEG_RUNQ, 1102, T0 + 2290 * MS, T0 + 2292 * MS, "h_fn", 1);
	expect_seg(&m, &w, 2, CHAIN_SEG_WAKE_UNSEEN, 1102, T0 + 2200 * MS, T0 + 2290 * MS, "h_fn", 1);
	assert_string_equal(chain_seg__tag(CHAIN_SEG_WAKE_UNSEEN), "[wakeup unseen]");
	unload(&m);
}

static void test_new_thread(void **state)
{
	struct model m;
	struct chain_walk w;
	struct chain_sel sel;

	(void)state;
	load(&m);
	walk_of(&m, 701, MS, &w, &sel);
	assert_int_equal(w.nsegs, 3);
	expect_seg(&m, &w, 0, CHAIN_SEG_ON_CPU, 702, T0 + 1360 * MS, T0 + 1400 * MS, "-", 1);
	expect_seg(&m, &w, 1, CHAIN_SEG_RUNQ, 702, T0 + 1350 * MS, T0 + 1360 * MS, "-", 1);
	/* before l existed: m, which made it (its stack then) */
	expect_seg(&m, &w, 2, CHAIN_SEG_ON_CPU, 703, T0 + 1300 * MS, T0 + 1350 * MS, "m_create", 2);
	unload(&m);
}

static void test_merged_and_ends(void **state)
{
	struct model m;
	struct chain_walk w;
	struct chain_sel sel;

	(void)state;
	load(&m);
	/* two waits 10 us apart on one stack: one wait of 200 ms, the 10 us its own */
	walk_of(&m, 801, 150 * MS, &w, &sel);
	assert_int_equal(sel.last - sel.first, 1);
	assert_int_equal(w.end - w.start, 200 * MS);
	expect_seg(&m, &w, 1, CHAIN_SEG_ON_CPU, 801, T0 + 1600 * MS + 5000, T0 + 1600 * MS + 15000,
		   "p_lock", 0);
	expect_seg(&m, &w, 2, CHAIN_SEG_RUNQ, 801, T0 + 1600 * MS, T0 + 1600 * MS + 5000, "p_lock", 0);
	/* a D wait ended by an interrupt: the disk */
	walk_of(&m, 901, MS, &w, &sel);
	assert_int_equal(w.nsegs, 1);
	expect_seg(&m, &w, 0, CHAIN_SEG_IO, 901, T0 + 1800 * MS, T0 + 1810 * MS, "io_wait", 0);
	/* loopback's receive in the sender's softirq work: the sender's time, with its stack */
	walk_of(&m, 902, MS, &w, &sel);
	assert_int_equal(w.nsegs, 1);
	expect_seg(&m, &w, 0, CHAIN_SEG_ON_CPU, 903, T0 + 1900 * MS, T0 + 1920 * MS,
		   "process_backlog", 1);
	unload(&m);
}

/*
 * The worker's records in their order, not by their times: its D wait
 * starts when it was back from its preemption (2050 ms), and the disk's
 * time ends [io].
 */
static void test_skewed_times(void **state)
{
	struct model m;
	struct chain_walk w;
	struct chain_sel sel;

	(void)state;
	load(&m);
	walk_of(&m, 1001, MS, &w, &sel);
	assert_int_equal(w.nsegs, 5);
	expect_seg(&m, &w, 0, CHAIN_SEG_ON_CPU, 1002, T0 + 2096 * MS, T0 + 2100 * MS, "w_send", 1);
	expect_seg(&m, &w, 1, CHAIN_SEG_RUNQ, 1002, T0 + 2095 * MS, T0 + 2096 * MS, "io_wait", 1);
	expect_seg(&m, &w, 2, CHAIN_SEG_IO, 1002, T0 + 2050 * MS, T0 + 2095 * MS, "io_wait", 1);
	expect_seg(&m, &w, 3, CHAIN_SEG_RUNQ, 1002, T0 + 2040 * MS, T0 + 2050 * MS, "w_spin", 1);
	expect_seg(&m, &w, 4, CHAIN_SEG_ON_CPU, 1002, T0 + 2000 * MS, T0 + 2040 * MS, "w_spin", 1);
	unload(&m);
}

/*
 * --wakeups: the sleeper is off CPU 300 ms to T0 + 400 ms, then 2 ms on a
 * run queue; its waker spins with a sample every ms in c_spin, and woke it
 * in b_signal. Samples as the recorder encodes them, the run-queue wait's
 * first (the switch program writes it first).
 */
static void build_wakeups(void)
{
	struct perf_event_attr cpu_attr = { .size = sizeof(cpu_attr), .type = PERF_TYPE_SOFTWARE,
					    .config = PERF_COUNT_SW_CPU_CLOCK,
					    .sample_type = cpu_sample_type(), .sample_id_all = 1 };
	struct perf_event_attr off;
	uint64_t ids[4] = { CPU_ID, OFFCPU_ID_OFFCPU, OFFCPU_ID_WAKEUP, OFFCPU_ID_SCHED_DELAY };
	static struct offcpu_sample s;
	uint64_t kf = addr(F_A_WAIT), wkf = addr(F_B_SIGNAL);
	struct offcpu_frames none = { &kf, 0 }, k = { &kf, 1 }, wk = { &wkf, 1 };
	_Alignas(8) uint8_t rec[OFFCPU_PAYLOAD_MAX_SIZE];
	struct perf_writer *w;
	uint64_t in = T0 + 402 * MS;

	unlink(path);
	offcpu_event_attr(&off);
	assert_int_equal(perf_writer__new(path, &w), 0);
	assert_int_equal(perf_writer__add_event(w, &cpu_attr, "cpu-clock", &ids[0], 1), 0);
	assert_int_equal(perf_writer__add_event(w, &off, OFFCPU_EVENT_NAME, &ids[1], 1), 0);
	assert_int_equal(perf_writer__add_event(w, &off, OFFCPU_WAKEUP_EVENT_NAME, &ids[2], 1), 0);
	assert_int_equal(perf_writer__add_event(w, &off, OFFCPU_SCHED_DELAY_EVENT_NAME, &ids[3], 1), 0);
	assert_int_equal(perf_writer__begin(w), 0);
	assert_int_equal(synth__kernel_mmap(w, TEXT, CPU_ID), 0);
	comm(w, 201, "ta");
	comm(w, 203, "tc");
	for (uint64_t t = T0 + 1 * MS; t <= T0 + 399 * MS; t += MS)
		cpu(w, 203, t, F_C_SPIN);
	memset(&s, 0, sizeof(s));
	s.kind = OFFCPU_REC_SAMPLE;
	s.k.who.pid = PID;
	s.k.who.tid = 201;
	s.v.time = in; /* direct */
	s.v.count = 1;
	s.k.state = OFFCPU_SCHED_DELAY | OFFCPU_STATE_S;
	s.v.period = 2 * MS;
	put(w, rec, offcpu_sample__encode(&s, &none, &k, in, rec));
	s.k.state = OFFCPU_STATE_S | OFFCPU_WAKER;
	s.v.period = 300 * MS;
	s.k.waker.pid = PID;
	s.k.waker.tid = 203;
	snprintf(s.v.wcomm, sizeof(s.v.wcomm), "tc");
	/* the recorder reads the clock for each sample: the off-CPU one comes a little later */
	put(w, rec, offcpu_sample__encode(&s, &none, &k, in + 300, rec));
	put(w, rec, offcpu_waker__encode(&s, &none, &wk, in + 300, rec));
	assert_int_equal(perf_writer__finished_round(w), 0);
	assert_int_equal(perf_writer__finish(w), 0);
	perf_writer__free(w);
}

static void test_wakeups_recording(void **state)
{
	struct session_opts so = { .kallsyms = ksyms, .defer_kernel = true };
	struct chain_sel *sel = NULL;
	struct chains_stats st;
	struct chain_walk w;
	struct model m;
	const uint32_t *remap;
	uint32_t n;
	char err[256];

	(void)state;
	build(); /* the kallsyms file */
	build_wakeups();
	memset(&m, 0, sizeof(m));
	report_opts__init(&m.o);
	m.s = session__new(path, &so, err, sizeof(err));
	assert_non_null(m.s);
	m.c = chains__new(m.s, false, 0);
	assert_non_null(m.c);
	assert_int_equal(session__run(m.s, add, m.c), 0);
	remap = session__remap(m.s, &n);
	assert_int_equal(chains__finish(m.c, remap, n), 0);
	chains__stats(m.c, &st);
	assert_false(st.switch_records);
	assert_int_equal(st.waits, 1);
	assert_int_equal(st.unjoined, 0);
	assert_int_equal(chains__select(m.c, &m.o, MS, &sel), 1);
	assert_int_equal(chains__walk(m.c, sel, &w), 0);
	free(sel);
	assert_true(chain_walk__tiles(&w));
	/* the wait: 300 ms off CPU up to its wakeup, 2 ms before its switch-in */
	assert_int_equal(w.start, T0 + 100 * MS);
	assert_int_equal(w.end, T0 + 400 * MS);
	/* tc ran all of it: its samples, all in c_spin (the last one's share runs to the end) */
	assert_int_equal(w.nsegs, 1);
	expect_seg(&m, &w, 0, CHAIN_SEG_ON_CPU, 203, T0 + 100 * MS, T0 + 400 * MS, "c_spin", 1);
	assert_true(w.segs[0].sampled);
	unload(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_three_threads), cmocka_unit_test(test_folded),
		cmocka_unit_test(test_cycle),	      cmocka_unit_test(test_depth),
		cmocka_unit_test(test_truncated),     cmocka_unit_test(test_gap),
		cmocka_unit_test(test_wake_unseen),
		cmocka_unit_test(test_new_thread),    cmocka_unit_test(test_merged_and_ends),
		cmocka_unit_test(test_skewed_times), cmocka_unit_test(test_wakeups_recording),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
