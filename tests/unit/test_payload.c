// SPDX-License-Identifier: GPL-2.0-only
/*
 * The off-CPU payload (src/perfdata/offcpu_payload.c) both ways: samples of
 * offcpu-time, sched-delay and offcpu-wakeup (a task waker and an [irq]
 * one) are encoded, put in a perf.data file built byte by byte, read back
 * with the reader, and every field compared; perf's own embedded layout
 * (perf --off-cpu, with its pid and tid swapped in direct samples), the
 * layout of earlier offcpu versions and short or hostile payloads are
 * decoded.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "pd_builder.h"
#include "perfdata/offcpu_payload.h"
#include "perfdata/perf_reader.h"
#include "session/session.h"

#define ST0 (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
	     PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN)

static const uint64_t kstack[3] = { 0xffffffff81001000ULL, 0xffffffff81002000ULL,
				    0xffffffff81003000ULL };
static const uint64_t ustack[4] = { 0x401010, 0x401020, 0x401030, 0x401040 };

/* What the reader hands back for the one off-CPU sample of a file. */
struct got {
	int n;
	struct perf_sample s;
	uint64_t chain[2 * OFFCPU_PAYLOAD_MAX_STACK + 4];
	uint8_t raw[OFFCPU_PAYLOAD_MAX_SIZE];
	uint16_t misc;
	bool is_offcpu, is_wakeup, is_sched_delay; /* of its event (the attr is gone with the reader) */
};

static int grab(void *ctx, const struct perf_rec *rec)
{
	struct got *g = ctx;

	if (rec->type != PERF_RECORD_SAMPLE || rec->sample.evattr->idx != 1)
		return 0;
	g->n++;
	g->s = rec->sample;
	g->misc = rec->misc;
	assert_true(rec->sample.nr_callchain <= sizeof(g->chain) / 8);
	for (uint64_t i = 0; i < rec->sample.nr_callchain; i++)
		g->chain[i] = perf_sample__ip(&rec->sample, i);
	assert_true(rec->sample.raw_size <= sizeof(g->raw));
	memcpy(g->raw, rec->sample.raw, rec->sample.raw_size);
	g->s.raw = g->raw;
	g->s.callchain = g->chain;
	g->is_offcpu = rec->sample.evattr->is_offcpu;
	g->is_wakeup = rec->sample.evattr->is_wakeup;
	g->is_sched_delay = rec->sample.evattr->is_sched_delay;
	g->s.evattr = NULL;
	g->s.off.callchain = NULL; /* pointed into the file */
	return 0;
}

/* Encode p, write it as the sample of event `name` (attr 1, id 101), read it back. */
static void roundtrip(struct offcpu_payload *p, const char *name, struct got *g)
{
	static const uint64_t st[2] = { ST0, OFFCPU_PAYLOAD_SAMPLE_TYPE };
	const char *names[2] = { "cpu-clock", name };
	_Alignas(8) uint8_t rec[OFFCPU_PAYLOAD_MAX_SIZE];
	char path[64], err[256];
	struct perf_reader *r;
	struct pdb b;
	size_t len;

	p->id = 101;
	len = offcpu_payload__encode(p, rec, sizeof(rec));
	assert_true(len > 0 && len % 8 == 0);
	snprintf(path, sizeof(path), "/tmp/offcpu-ut-payload-%d.data", getpid());
	pdb_init(&b, 2, st, names);
	pdb_put(&b, rec, len);
	pdb_finish(&b, path);
	r = perf_reader__open(path, err, sizeof(err));
	assert_non_null(r);
	memset(g, 0, sizeof(*g));
	assert_int_equal(perf_reader__process(r, grab, g), 0);
	assert_int_equal(g->n, 1);
	perf_reader__free(r);
	unlink(path);
}

static void base(struct offcpu_payload *p, enum offcpu_payload_event ev)
{
	memset(p, 0, sizeof(*p));
	p->event = ev;
	p->time = 123456789012ULL;
	p->pid = 100;
	p->tid = 101;
	p->cpu = 1;
	p->period = 987654321;
	p->count = 7;
	p->cgroup = 0x1234;
	p->state = 'D';
	p->flags = OFFCPU_RAW_DIRECT | OFFCPU_RAW_IN_PROGRESS_START;
	p->kstack = kstack;
	p->klen = 3;
	p->ustack = ustack;
	p->ulen = 4;
}

/* The callchain of base(): kernel marker, 3 kernel frames, user marker, 4 user frames. */
static void check_chain(const uint64_t *c, uint64_t nr)
{
	assert_int_equal(nr, 9);
	assert_true(c[0] == PERF_CTX_KERNEL);
	for (int i = 0; i < 3; i++)
		assert_true(c[1 + i] == kstack[i]);
	assert_true(c[4] == PERF_CTX_USER);
	for (int i = 0; i < 4; i++)
		assert_true(c[5 + i] == ustack[i]);
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static void test_time_roundtrip(void **state)
{
	struct offcpu_payload p;
	struct got g;
	uint64_t emb[9];

	base(&p, OFFCPU_PAYLOAD_TIME);
	roundtrip(&p, OFFCPU_EVENT_NAME, &g);
	assert_true(g.is_offcpu);
	assert_int_equal(g.misc & PERF_RECORD_MISC_CPUMODE_MASK, PERF_RECORD_MISC_KERNEL);
	assert_int_equal(g.s.id, 101);
	assert_int_equal(g.s.pid, 100);
	assert_int_equal(g.s.tid, 101);
	assert_int_equal(g.s.cpu, 1);
	assert_int_equal(g.s.time, 123456789012ULL);
	assert_int_equal(g.s.period, 987654321);
	assert_true(g.s.ip == kstack[0]);
	check_chain(g.chain, g.s.nr_callchain);
	/* decoded */
	assert_true(g.s.off.embedded);
	assert_true(g.s.off.own);
	assert_int_equal(g.s.off.pid, 100);
	assert_int_equal(g.s.off.tid, 101);
	assert_int_equal(g.s.off.period, 987654321);
	assert_int_equal(g.s.off.state, 'D');
	assert_int_equal(g.s.off.flags, OFFCPU_RAW_DIRECT | OFFCPU_RAW_IN_PROGRESS_START);
	assert_int_equal(g.s.off.count, 7);
	assert_int_equal(g.s.off.cgroup, 0x1234);
	assert_false(g.s.off.waker);
	/* the bytes perf >= 6.14 reads: pid, tid, period, nr, ips, cgroup */
	assert_true(g.s.raw_size % 8 == 4);
	assert_int_equal(rd64(g.raw), (uint64_t)101 << 32 | 100);
	assert_int_equal(rd64(g.raw + 8), 987654321);
	assert_int_equal(rd64(g.raw + 16), 9);
	for (int i = 0; i < 9; i++)
		emb[i] = rd64(g.raw + 24 + 8 * i);
	check_chain(emb, 9);
	assert_int_equal(rd64(g.raw + 24 + 72), 0x1234);
	/* then struct offcpu_raw */
	assert_int_equal(rd64(g.raw + 24 + 80), (uint64_t)(OFFCPU_RAW_DIRECT | OFFCPU_RAW_IN_PROGRESS_START) << 32 | 'D');
	assert_int_equal(rd64(g.raw + 24 + 88), 7);
	assert_int_equal(rd64(g.raw + 24 + 96), 0x1234);
}

static void test_delay_roundtrip(void **state)
{
	struct offcpu_payload p;
	struct got g;
	struct offcpu_raw raw;

	base(&p, OFFCPU_PAYLOAD_DELAY);
	p.state = 'R';
	p.flags = OFFCPU_RAW_AGGREGATED;
	p.klen = 0; /* --stacks user */
	roundtrip(&p, OFFCPU_SCHED_DELAY_EVENT_NAME, &g);
	assert_true(g.is_sched_delay);
	assert_int_equal(g.misc & PERF_RECORD_MISC_CPUMODE_MASK, PERF_RECORD_MISC_USER);
	assert_int_equal(g.s.pid, 100);
	assert_int_equal(g.s.tid, 101);
	assert_int_equal(g.s.period, 987654321);
	assert_true(g.s.ip == ustack[0]);
	assert_int_equal(g.s.nr_callchain, 5);
	assert_true(g.chain[0] == PERF_CTX_USER && g.chain[4] == ustack[3]);
	assert_false(g.s.off.embedded);
	assert_true(g.s.off.own);
	assert_int_equal(g.s.off.state, 'R');
	assert_int_equal(g.s.off.flags, OFFCPU_RAW_AGGREGATED);
	assert_int_equal(g.s.off.count, 7);
	assert_int_equal(g.s.off.cgroup, 0x1234);
	assert_int_equal(g.s.raw_size, 28);
	memcpy(&raw, g.raw, sizeof(raw));
	assert_int_equal(raw.state, 'R');
	assert_int_equal(raw.count, 7);
}

static void test_wakeup_roundtrip(void **state)
{
	struct offcpu_payload p;
	struct got g;

	base(&p, OFFCPU_PAYLOAD_WAKEUP);
	p.waker_pid = 300;
	p.waker_tid = 301;
	strcpy(p.waker_comm, "waker-thread");
	roundtrip(&p, OFFCPU_WAKEUP_EVENT_NAME, &g);
	assert_true(g.is_wakeup);
	assert_int_equal(g.s.pid, 100);
	assert_int_equal(g.s.tid, 101);
	check_chain(g.chain, g.s.nr_callchain);
	assert_false(g.s.off.embedded);
	assert_int_equal(g.s.off.state, 'D');
	assert_int_equal(g.s.off.count, 7);
	assert_true(g.s.off.waker);
	assert_int_equal(g.s.off.waker_pid, 300);
	assert_int_equal(g.s.off.waker_tid, 301);
	assert_string_equal(g.s.off.waker_comm, "waker-thread");
	/* what perf script's dump shows: binary ids at 0x18, text at 0x30 */
	assert_int_equal(g.s.raw_size + 4, (sizeof(struct offcpu_wakeup_raw) + 4 + 7) / 8 * 8);
	assert_int_equal(rd64(g.raw + 0x18), (uint64_t)301 << 32 | 300);
	assert_string_equal((char *)g.raw + 0x30, "waker-thread 300/301");
}

static void test_wakeup_irq(void **state)
{
	struct offcpu_payload p;
	struct got g;

	base(&p, OFFCPU_PAYLOAD_WAKEUP);
	p.flags |= OFFCPU_RAW_WAKER_IRQ;
	strcpy(p.waker_comm, "[irq]");
	p.ulen = 0; /* the interrupt's kernel frames only */
	roundtrip(&p, OFFCPU_WAKEUP_EVENT_NAME, &g);
	assert_int_equal(g.s.nr_callchain, 4);
	assert_true(g.chain[0] == PERF_CTX_KERNEL && g.chain[3] == kstack[2]);
	assert_true(g.s.off.waker);
	assert_true(g.s.off.flags & OFFCPU_RAW_WAKER_IRQ);
	assert_int_equal(g.s.off.waker_pid, 0);
	assert_int_equal(g.s.off.waker_tid, 0);
	assert_string_equal(g.s.off.waker_comm, "[irq]");
	assert_string_equal((char *)g.raw + 0x30, "[irq]");
}

/* No frame at all: one at address 0, the same in both callchains. */
static void test_no_frames(void **state)
{
	struct offcpu_payload p;
	struct got g;

	base(&p, OFFCPU_PAYLOAD_TIME);
	p.klen = p.ulen = 0;
	roundtrip(&p, OFFCPU_EVENT_NAME, &g);
	assert_int_equal(g.s.nr_callchain, 2);
	assert_true(g.chain[0] == PERF_CTX_USER && g.chain[1] == 0);
	assert_int_equal(g.s.ip, 0);
	assert_int_equal(rd64(g.raw + 16), 2);
	assert_true(rd64(g.raw + 24) == PERF_CTX_USER);
	assert_int_equal(rd64(g.raw + 32), 0); /* ips[1]: perf >= 6.14's ip */
	assert_int_equal(g.s.off.state, 'D');
}

/* Stacks deeper than perf's maximum are cut, in both callchains. */
static void test_long_stacks(void **state)
{
	static uint64_t k[200], u[200];
	struct offcpu_payload p;
	struct got g;

	for (int i = 0; i < 200; i++) {
		k[i] = 0xffffffff81000000ULL + i;
		u[i] = 0x400000 + i;
	}
	base(&p, OFFCPU_PAYLOAD_TIME);
	p.kstack = k;
	p.ustack = u;
	p.klen = p.ulen = 200;
	roundtrip(&p, OFFCPU_EVENT_NAME, &g);
	assert_int_equal(g.s.nr_callchain, 2 + 2 * OFFCPU_PAYLOAD_MAX_STACK);
	assert_true(g.chain[OFFCPU_PAYLOAD_MAX_STACK] == k[OFFCPU_PAYLOAD_MAX_STACK - 1]);
	assert_true(g.chain[1 + 2 * OFFCPU_PAYLOAD_MAX_STACK] == u[OFFCPU_PAYLOAD_MAX_STACK - 1]);
	assert_true(g.s.off.own);
	assert_int_equal(g.s.off.count, 7);
}

/* A buffer too small is refused, never overrun. */
static void test_encode_small_buffer(void **state)
{
	_Alignas(8) uint8_t rec[128 + 8];
	struct offcpu_payload p;

	base(&p, OFFCPU_PAYLOAD_TIME);
	memset(rec, 0xaa, sizeof(rec));
	assert_int_equal(offcpu_payload__encode(&p, rec, 128), 0);
	for (int i = 128; i < 136; i++)
		assert_int_equal(rec[i], 0xaa);
}

/* What perf --off-cpu writes: the embedded sample alone, 4 bytes of padding. */
static void test_decode_perf_own(void **state)
{
	uint8_t raw[8 * 7 + 4] = { 0 };
	uint64_t v[7] = { (uint64_t)200 << 32 | 201, 5000, 3, PERF_CTX_USER, 0x401000, 0x402000, 9 };
	struct offcpu_fields f;

	memcpy(raw, v, sizeof(v));
	offcpu_payload__decode(OFFCPU_PAYLOAD_TIME, raw, sizeof(raw), &f);
	assert_true(f.embedded);
	assert_false(f.own);
	assert_int_equal(f.pid, 201);
	assert_int_equal(f.tid, 200);
	assert_int_equal(f.period, 5000);
	assert_int_equal(f.nr_callchain, 3);
	assert_true(rd64(f.callchain) == PERF_CTX_USER);
	assert_int_equal(f.cgroup, 9);
	assert_int_equal(f.state, 0);
	assert_int_equal(f.count, 1);
}

/* Earlier offcpu versions: a bare offcpu_raw in offcpu-time. */
static void test_decode_legacy(void **state)
{
	struct offcpu_raw r = { 'S', OFFCPU_RAW_AGGREGATED, 12, 77 };
	uint8_t raw[28] = { 0 };
	struct offcpu_fields f;

	memcpy(raw, &r, sizeof(r));
	offcpu_payload__decode(OFFCPU_PAYLOAD_TIME, raw, sizeof(raw), &f);
	assert_false(f.embedded);
	assert_true(f.own);
	assert_int_equal(f.state, 'S');
	assert_int_equal(f.flags, OFFCPU_RAW_AGGREGATED);
	assert_int_equal(f.count, 12);
	assert_int_equal(f.cgroup, 77);
	/* shorter still: what is there */
	offcpu_payload__decode(OFFCPU_PAYLOAD_TIME, raw, 8, &f);
	assert_int_equal(f.state, 'S');
	assert_int_equal(f.count, 1);
}

/* Every length of a payload whose callchain length is hostile: in bounds, no crash. */
static void test_decode_hostile(void **state)
{
	uint8_t raw[256];
	struct offcpu_fields f;

	for (int fill = 0; fill < 3; fill++) {
		memset(raw, fill == 0 ? 0 : fill == 1 ? 0xff : 0x01, sizeof(raw));
		for (uint32_t n = 0; n <= sizeof(raw); n++) {
			for (int ev = OFFCPU_PAYLOAD_TIME; ev <= OFFCPU_PAYLOAD_DELAY; ev++) {
				offcpu_payload__decode(ev, raw, n, &f);
				if (f.embedded) {
					assert_true(32 + 8 * f.nr_callchain <= n);
					assert_true((const uint8_t *)f.callchain == raw + 24);
				}
				if (f.waker)
					assert_true(strlen(f.waker_comm) <= 16);
			}
		}
	}
	offcpu_payload__decode(OFFCPU_PAYLOAD_TIME, NULL, 0, &f);
	assert_false(f.embedded || f.own);
}

/*
 * perf's own direct samples carry the thread id as pid and the process id as
 * tid; the session puts them back from the side-band (FORK: thread 201 of
 * process 200). A summed sample in the right order is left alone.
 */
struct ids {
	uint32_t pid[4], tid[4];
	int n;
};

static int ids_cb(void *ctx, const struct rsample *rs)
{
	struct ids *x = ctx;

	if (rs->s->evattr->is_offcpu && x->n < 4) {
		x->pid[x->n] = rs->s->pid;
		x->tid[x->n] = rs->s->tid;
		x->n++;
	}
	return 0;
}

static void perf_style_sample(struct pdb *b, uint32_t p32_0, uint32_t p32_1, uint64_t time)
{
	uint64_t v[6] = { (uint64_t)p32_1 << 32 | p32_0, 1000, 2, PERF_CTX_USER, 0x401000, 0 };
	uint8_t raw[52] = { 0 };

	memcpy(raw, v, sizeof(v));
	/* perf's BPF output: the sample's own pid/tid are those of the task switched in */
	pdb_sample(b, 1, 7, 7, time, 0, NULL, 0, raw, sizeof(raw));
}

static void test_perf_swapped_ids(void **state)
{
	static const uint64_t st[2] = { ST0, PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP |
						 PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
						 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
						 PERF_SAMPLE_RAW };
	static const char *const names[2] = { "task-clock", OFFCPU_EVENT_NAME };
	struct session_opts so = { .no_symbols = true };
	struct ids x = { 0 };
	char path[64], err[256];
	struct session *s;
	struct pdb b;

	snprintf(path, sizeof(path), "/tmp/offcpu-ut-payload-s-%d.data", getpid());
	pdb_init(&b, 2, st, names);
	pdb_comm(&b, 200, 200, "main", 1);
	/* FORK: thread 201 of process 200 */
	pdb_hdr(&b, PERF_RECORD_FORK, 0, 8 + 24 + pdb_trailer_size(&b));
	pdb_u32(&b, 200); pdb_u32(&b, 200); pdb_u32(&b, 201); pdb_u32(&b, 200);
	pdb_u64(&b, 2);
	pdb_trailer(&b, 200, 201, 2);
	perf_style_sample(&b, 201, 200, 10); /* direct: swapped */
	perf_style_sample(&b, 200, 201, 11); /* summed: as it should be */
	perf_style_sample(&b, 200, 200, 12); /* the main thread */
	pdb_finish(&b, path);
	s = session__new(path, &so, err, sizeof(err));
	assert_non_null(s);
	assert_int_equal(session__run(s, ids_cb, &x), 0);
	assert_int_equal(x.n, 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(x.pid[i], 200);
	assert_int_equal(x.tid[0], 201);
	assert_int_equal(x.tid[1], 201);
	assert_int_equal(x.tid[2], 200);
	session__free(s);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time_roundtrip),
		cmocka_unit_test(test_delay_roundtrip),
		cmocka_unit_test(test_wakeup_roundtrip),
		cmocka_unit_test(test_wakeup_irq),
		cmocka_unit_test(test_no_frames),
		cmocka_unit_test(test_long_stacks),
		cmocka_unit_test(test_encode_small_buffer),
		cmocka_unit_test(test_decode_perf_own),
		cmocka_unit_test(test_decode_legacy),
		cmocka_unit_test(test_decode_hostile),
		cmocka_unit_test(test_perf_swapped_ids),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
