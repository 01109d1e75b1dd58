// SPDX-License-Identifier: GPL-2.0-only
/*
 * Session -> profile -> call graph -> outputs on a file built byte by byte
 * (no symbolizer: frames are map-relative addresses): process model
 * (COMM, MMAP2), distinct-stack folding, call-graph totals and order, the
 * stdio header and folded lines, and the filters.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "pd_builder.h"
#include "profile/callgraph.h"
#include "profile/profile.h"
#include "output/report.h"
#include "profile/read.h"
#include "util/bsearch.h"

#define ST (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
	    PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW)

static char path[64];

static void build(void)
{
	static const uint64_t st[1] = { ST };
	static const char *const names[1] = { OFFCPU_EVENT_NAME };
	struct offcpu_raw raw = { 'D', OFFCPU_RAW_DIRECT, 1, 0 };
	uint64_t a[2] = { 0x401100, 0x401200 }, c[2] = { 0x401300, 0x401200 };
	struct pdb b;

	snprintf(path, sizeof(path), "/tmp/offcpu-ut-report-%d.data", getpid());
	pdb_init(&b, 1, st, names);
	pdb_comm(&b, 10, 10, "worker", 1);
	pdb_mmap2(&b, 10, 0x400000, 0x10000, 0, "/nonexistent/app", 2);
	pdb_sample(&b, 0, 10, 10, 1000000000, 100, a, 2, &raw, sizeof(raw));
	pdb_sample(&b, 0, 10, 10, 2000000000, 50, a, 2, &raw, sizeof(raw));
	pdb_sample(&b, 0, 10, 10, 3000000000, 25, c, 2, &raw, sizeof(raw));
	pdb_finish(&b, path);
}

struct agg {
	struct profile *p;
	const struct report_opts *o;
	const struct session *s;
};

static int add(void *ctx, const struct rsample *rs)
{
	struct agg *a = ctx;

	if (a->o && !report__match(a->o, a->s, rs))
		return 0;
	assert_int_equal(rs->state, 'D');
	return profile__add(a->p, rs);
}

static struct profile *load(struct session **sp, const struct report_opts *o)
{
	struct session_opts so = { .no_symbols = true };
	char err[256];
	struct session *s = session__new(path, &so, err, sizeof(err));
	struct agg a;

	assert_non_null(s);
	a.p = profile__new(1, 0);
	a.o = o;
	a.s = s;
	assert_int_equal(session__run(s, add, &a), 0);
	*sp = s;
	return a.p;
}

static void test_profile_and_callgraph(void **state)
{
	struct session *s;
	struct profile *p;
	struct callgraph *cg;
	const struct cg_node *n;
	const struct frame *f;

	build();
	p = load(&s, NULL);
	assert_int_equal(profile__nr_stacks(p), 2);
	assert_int_equal(profile__event(p, 0)->samples, 3);
	assert_int_equal(profile__event(p, 0)->period, 175);
	assert_int_equal(profile__stack(p, 0)->samples, 2);
	assert_int_equal(profile__stack(p, 0)->period, 150);
	assert_string_equal(session__comm(s, profile__stack(p, 0)->comm), "worker");
	f = session__frame(s, profile__frames(p, profile__stack(p, 0))[0]);
	assert_null(f->sym);
	assert_int_equal(f->addr, 0x1100); /* map-relative */
	assert_string_equal(f->dso_short, "app");

	cg = callgraph__new(1);
	for (size_t i = 0; i < profile__nr_stacks(p); i++) {
		const struct pstack *st = profile__stack(p, i);
		callgraph__add_reversed(cg, CG_ROOT, profile__frames(p, st), st->nr, 0, st->samples, st->period);
	}
	assert_int_equal(callgraph__sort(cg, 0), 0);
	assert_int_equal(callgraph__value(cg, CG_ROOT, 0)->total, 175);
	n = callgraph__node(cg, callgraph__node(cg, CG_ROOT)->first_child);
	assert_int_equal(session__frame(s, n->frame)->addr, 0x1200);
	assert_int_equal(n->next_sibling, CG_NONE);
	assert_int_equal(callgraph__value(cg, callgraph__node(cg, CG_ROOT)->first_child, 0)->self, 0);
	/* largest child first: 0x1100 (150) before 0x1300 (25) */
	assert_int_equal(session__frame(s, callgraph__node(cg, n->first_child)->frame)->addr, 0x1100);
	assert_int_equal(callgraph__value(cg, n->first_child, 0)->self, 150);
	assert_int_equal(callgraph__value(cg, n->first_child, 0)->self_samples, 2);
	callgraph__free(cg);
	profile__free(p);
	session__free(s);
	unlink(path);
}

/* The report (or folded) of the file as o asks; want is what the output returns. */
static char *render_rc(bool folded, const struct report_opts *o, int want)
{
	struct session *s;
	struct profile *p;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	p = load(&s, o);
	if (folded)
		assert_int_equal(folded__print(f, s, p, o, NULL), want);
	else
		assert_int_equal(report_stdio__print(f, s, p, o), want);
	fclose(f);
	profile__free(p);
	session__free(s);
	return buf;
}

static char *render(bool folded, const struct report_opts *o)
{
	return render_rc(folded, o, 0);
}

static void opts(struct report_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->input = path;
	o->children = 0;
	o->sort[0] = SK_SYM;
	o->nr_sort = 1;
	o->graph = GRAPH_NONE;
	o->graph_min = 0.5;
}

static void test_outputs(void **state)
{
	struct report_opts o;
	char *out;

	build();
	opts(&o);
	out = render(false, &o);
	assert_non_null(strstr(out, "# Samples: 3 of event 'offcpu-time'"));
	assert_non_null(strstr(out, "# Event count (approx.): 175 (175 ns off-CPU)"));
	assert_non_null(strstr(out, "85.71%"));  /* 150 / 175 */
	assert_non_null(strstr(out, "14.29%"));  /* 25 / 175 */
	free(out);

	out = render(true, &o);
	assert_string_equal(out, "worker;[app];[app] 150\nworker;[app];[app] 25\n");
	free(out);

	/* --time 1.5,: drops the first sample */
	o.time_start = 1500000000;
	out = render(false, &o);
	assert_non_null(strstr(out, "# Samples: 2 of event 'offcpu-time'"));
	assert_non_null(strstr(out, "# Event count (approx.): 75 "));
	free(out);
	o.time_start = 0;
	/* --comm other: nothing, which is no report (-ENODATA, nothing written) */
	{
		char *c = strdup("other");
		o.comms = &c;
		o.nr_comms = 1;
		out = render_rc(false, &o, -ENODATA);
		assert_string_equal(out, "");
		free(out);
		out = render_rc(true, &o, -ENODATA);
		assert_string_equal(out, "");
		free(out);
		free(c);
	}
	unlink(path);
}

static bool above(const void *ctx, size_t i)
{
	const int *k = ctx;
	static const int v[] = { 1, 3, 3, 3, 7 };

	return v[i] > *k;
}

/* util/bsearch.h, which every sorted-table lookup goes through: the partition point at each edge. */
static void test_bsearch_first(void **state)
{
	static const struct { int key; size_t n, want; } c[] = {
		{ 0, 5, 0 }, { 1, 5, 1 }, { 2, 5, 1 }, { 3, 5, 4 }, { 6, 5, 4 }, { 7, 5, 5 },
		{ 9, 5, 5 }, { 9, 0, 0 }, { 0, 1, 0 }, { 1, 1, 1 }, { 3, 2, 2 }, { 2, 2, 1 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		assert_int_equal(bsearch_first(c[i].n, above, &c[i].key), c[i].want);
}

static void test_fmt_ns(void **state)
{
	char b[32];

	report__fmt_ns(b, sizeof(b), 1500000000ULL);
	assert_string_equal(b, "1.50 s");
	report__fmt_ns(b, sizeof(b), 2500000ULL);
	assert_string_equal(b, "2.50 ms");
	report__fmt_ns(b, sizeof(b), 999);
	assert_string_equal(b, "999 ns");
}

/* The double next to positive v, up or down (nextafter() without libm). */
static double next_to(double v, int dir)
{
	uint64_t b;

	memcpy(&b, &v, sizeof(b));
	b += dir;
	memcpy(&v, &b, sizeof(v));
	return v;
}

/* report__fmt_fixed2(v, w) must print what snprintf's "%*.2f" prints. */
static void fixed2_is_printf(double v, int w)
{
	char a[64], b[64];
	size_t n = report__fmt_fixed2(a, sizeof(a), v, w);

	snprintf(b, sizeof(b), "%*.2f", w, v);
	if (strcmp(a, b))
		fail_msg("%.17g width %d: \"%s\", printf \"%s\"", v, w, a, b);
	assert_int_equal(n, strlen(b));
}

/*
 * The report's percentages without printf: every value a report can give
 * (v * 100.0 / total over many totals), exact ties of the binary value
 * (k / 8: glibc rounds them to even), the neighbours of x.xx5, denormals,
 * -0.0, values past the fast range, and a buffer too short.
 */
static void test_fmt_fixed2(void **state)
{
	static const double odd[] = { 0.0, -0.0, 0.005, 0.015, 0.125, 0.375, 2.675, 1.005, 99.995,
				      100.0, 1e-320, 4.9e-324, 35184372088831.99, 35184372088832.0,
				      1e300, -1.5, 0.0 / 0.0, 1.0 / 0.0 };
	uint64_t x = 88172645463325252ULL;
	char small[8];

	(void)state;
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++)
		for (int w = 0; w < 12; w++)
			fixed2_is_printf(odd[i], w);
	for (int k = 0; k < 100000; k++) {
		fixed2_is_printf(k / 8.0, 7);
		fixed2_is_printf(k / 1000.0 + 0.005, 7);
		fixed2_is_printf(next_to(k / 1000.0 + 0.005, -1), 0);
		fixed2_is_printf(next_to(k / 1000.0 + 0.005, 1), 0);
	}
	for (int k = 0; k < 300000; k++) {
		uint64_t total, v;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		total = 1 + (x >> (x & 63));
		v = total ? (x >> 7) % (total + 1) : 0;
		fixed2_is_printf(100.0 * v / total, 7);
	}
	assert_int_equal(report__fmt_fixed2(small, sizeof(small), 12.345, 7), 7);
	assert_string_equal(small, "  12.35");
}

/* A sched_switch sample of prev (pid = tid) leaving in state for next, its RAW as the kernel lays it out. */
static void switch_sample(struct pdb *b, uint32_t prev, uint64_t state, uint32_t next, uint64_t t)
{
	uint8_t raw[64] = { 0 };
	uint64_t ips[2] = { 0xffffffff81000100ULL, 0x401100 };

	memcpy(raw + 24, &prev, 4);
	memcpy(raw + 32, &state, 8);
	memcpy(raw + 56, &next, 4);
	pdb_sample(b, 0, prev, prev, t, 1, ips, 2, raw, sizeof(raw));
}

/*
 * Off-CPU time from sched:sched_switch samples (profile/switches.c), every
 * way a wait ends: at the thread's switch-in (tid 10), at its next event of
 * another kind (tid 20), at the file's end (tid 30); a preempted thread
 * (R+) and the idle task start none.
 */
static void test_switches(void **state)
{
	static const uint64_t st[2] = { ST, ST & ~(uint64_t)PERF_SAMPLE_RAW };
	static const char *const names[2] = { "sched:sched_switch", "cpu-clock" };
	uint64_t ip[1] = { 0x401100 };
	struct msg_sink ms = { 0 };
	struct report_opts o;
	struct session *s;
	struct profile *p;
	struct threads *t;
	uint64_t want[3][3] = { { 10, 'S', 1000000000 }, { 20, 'D', 3000000000 }, { 30, 'S', 1000000000 } };
	char err[256];
	struct pdb b;

	(void)state;
	pdb_init(&b, 2, st, names);
	switch_sample(&b, 10, 0x1, 20, 1000000000);  /* 10 sleeps (S) */
	switch_sample(&b, 20, 0x2, 10, 2000000000);  /* 20 sleeps (D), 10 comes back: 1 s */
	switch_sample(&b, 0, 0x0, 10, 2500000000);   /* the idle task: no wait */
	switch_sample(&b, 10, 0x100, 0, 3000000000); /* 10 preempted: no wait */
	pdb_sample(&b, 1, 20, 20, 5000000000, 1, ip, 1, NULL, 0); /* 20 runs: 3 s at most */
	switch_sample(&b, 30, 0x1, 0, 6000000000);   /* 30 sleeps to the end */
	pdb_sample(&b, 1, 99, 99, 7000000000, 1, ip, 1, NULL, 0); /* the file's last record */
	pdb_finish(&b, path);
	opts(&o);
	assert_int_equal(profile__read(&o, PROFILE_KEEP_TID, &ms, &s, &p, err, sizeof(err)), 0);
	assert_true(profile__attr(p, s, 0)->is_offcpu);
	assert_string_equal(profile__attr(p, s, 0)->name, "offcpu-time");
	assert_non_null(strstr(profile__attr_from(p, 0), "3 waits"));
	assert_int_equal(profile__event(p, 0)->samples, 3);
	assert_int_equal(profile__event(p, 0)->period, 5000000000ULL);
	profile__free(p);
	session__free(s);
	assert_int_equal(threads__read(&o, &ms, &s, &t, err, sizeof(err)), 0);
	for (int i = 0; i < 3; i++) {
		const struct thread_time *r = NULL;

		for (size_t j = 0; j < threads__nr(t); j++)
			if (threads__row(t, j)->tid == want[i][0])
				r = threads__row(t, j);
		assert_non_null(r);
		assert_int_equal(want[i][1] == 'S' ? r->sleep_s : r->sleep_d, want[i][2]);
		assert_int_equal(want[i][1] == 'S' ? r->sleep_d : r->sleep_s, 0);
	}
	threads__free(t);
	session__free(s);
	report_opts__free(&o);
}

/* A sample of pid and tid -1 (perf records them in an exiting task's last moments): ":-1", as perf shows it. */
static void test_pid_minus_one(void **state)
{
	static const uint64_t st[1] = { ST & ~(uint64_t)PERF_SAMPLE_RAW };
	static const char *const names[1] = { "cpu-clock" };
	uint64_t ips[1] = { 0xffffffff81000000ULL };
	struct session_opts so = { .no_symbols = true };
	struct report_opts o;
	char err[256], *buf = NULL;
	size_t len = 0;
	struct session *s;
	struct pdb b;
	FILE *f;

	pdb_init(&b, 1, st, names);
	pdb_sample(&b, 0, UINT32_MAX, UINT32_MAX, 1000000000, 100, ips, 1, NULL, 0);
	pdb_finish(&b, path);
	opts(&o);
	s = session__new(path, &so, err, sizeof(err));
	assert_non_null(s);
	f = open_memstream(&buf, &len);
	assert_int_equal(script__run(f, s, &o), 0);
	fclose(f);
	assert_non_null(strstr(buf, ":-1    -1 [001]"));
	free(buf);
	session__free(s);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_profile_and_callgraph),
		cmocka_unit_test(test_outputs),
		cmocka_unit_test(test_fmt_ns),
		cmocka_unit_test(test_fmt_fixed2),
		cmocka_unit_test(test_bsearch_first),
		cmocka_unit_test(test_switches),
		cmocka_unit_test(test_pid_minus_one),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
