// SPDX-License-Identifier: GPL-2.0-only
/*
 * The timeline of a recording (profile/timeline.h): the session's samples
 * kept one by one (not folded), grouped by thread, then each measured
 * thread's waits laid out in time and the stretches between them derived.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfdata/perf_format.h"
#include "profile/filter.h"
#include "profile/read.h"
#include "profile/timeline.h"
#include "profile/trim.h"
#include "util/hash.h"
#include "util/htab.h"
#include "util/vec.h"

enum ev_kind { EV_RUNQ, EV_OFF, EV_CPU }; /* in this order at equal times */

/* One sample as read, before the thread's slices are laid out. */
struct ev {
	uint64_t time, period, count;
	uint32_t thread, stack;
	uint32_t wake;     /* an off-CPU sample's wakeup: index + 1 */
	uint32_t cpu;
	uint32_t seq;      /* file order: the sort is stable */
	uint8_t kind;      /* enum ev_kind */
	char state;
	uint16_t flags;    /* OFFCPU_RAW_* */
};

/* A wakeup: as the outputs see it, and the waker by ids, resolved to a thread after the walk. */
struct wake_rec {
	struct tl_wake w;
	uint32_t waker_pid, waker_tid, waker_comm;
	bool summed;       /* of a sum of short waits: no time of its own, on no waker's track */
	bool placed;       /* its wait is a slice (not left out), which gave it its time */
};

/* A piece of a critical path as walked: its sleeper by thread index, renumbered with the threads. */
struct crit_rec {
	struct tl_crit c;
	uint32_t sleeper;
};

struct thread_in {
	struct tl_thread t;
	uint32_t comm_id;  /* session comm id of its last sample */
	uint32_t order;    /* its index once sorted by pid, tid */
};

struct node {
	uint32_t parent, frame, depth;
};

/*
 * The stack ids of the last stacks seen, by the hash of their frames:
 * most samples repeat a recent stack, and checking one against its path
 * in the tree costs less than a lookup per frame.
 */
#define STACK_CACHE 65536
struct stack_cache {
	uint64_t hash;
	uint32_t id, depth;
};

struct timeline {
	struct session *s;
	struct tl_info info;
	const struct report_opts *o;
	struct htab threads;     /* struct thread_in, by (pid, tid) */
	struct tl_thread *th;    /* sorted by pid, tid */
	uint32_t nr_th;
	struct htab nodes;       /* struct node, by (parent, frame): stack id = position + 1 */
	struct ev *ev;
	size_t nr_ev, cap_ev;
	struct wake_rec *wakes;
	size_t nr_wakes, cap_wakes;
	uint32_t last_off;       /* the last off-CPU event, for its wakeup sample; UINT32_MAX none */
	int cpu_event;           /* attr index of the CPU samples' event, -1 until seen */
	uint64_t skipped;        /* samples of other events */
	/* the laid-out timeline, per thread: [off[i], off[i + 1]) */
	struct tl_slice *slices;
	size_t nr_slices, cap_slices;
	size_t *slice_off;
	struct tl_sample *samples;
	size_t *sample_off;
	struct tl_summed *summed;
	size_t nr_summed, cap_summed;
	size_t *summed_off;
	uint32_t *wakes_by;      /* wake indexes, by waker then time */
	size_t *wakes_by_off;
	int8_t *is_sched;        /* per session frame: -1 not known yet */
	size_t nr_is_sched;
	struct stack_cache *cache; /* STACK_CACHE entries */
	struct chains *chains;   /* the waits' wakers followed (profile/chains.h), or NULL */
	struct crit_rec *crit;   /* critical paths as walked */
	size_t nr_crit, cap_crit;
	struct tl_crit *crits;   /* ... grouped by sleeper: [crit_off[i], crit_off[i + 1]) */
	size_t *crit_off;
};

/* ---- threads and stacks ---- */

struct thread_key {
	uint32_t pid, tid;
};

static bool thread_eq(const void *entry, const void *key)
{
	const struct thread_in *t = entry;
	const struct thread_key *k = key;

	return t->t.pid == k->pid && t->t.tid == k->tid;
}

/* The index of thread (pid, tid), added on first sight: 0, or -ENOMEM. */
static int thread_of(struct timeline *tl, uint32_t pid, uint32_t tid, uint32_t *idx, bool *added)
{
	struct thread_key k = { pid, tid };
	struct thread_in *t = htab__get(&tl->threads, hash__mix((uint64_t)pid << 32 | tid), thread_eq,
					&k, added);

	if (!t)
		return -ENOMEM;
	if (*added) {
		t->t.pid = pid;
		t->t.tid = tid;
	}
	*idx = (uint32_t)(t - (struct thread_in *)htab__at(&tl->threads, 0));
	return 0;
}

static struct thread_in *thread_at(const struct timeline *tl, uint32_t idx)
{
	return htab__at(&tl->threads, idx);
}

static bool node_eq(const void *entry, const void *key)
{
	const struct node *a = entry, *b = key;

	return a->parent == b->parent && a->frame == b->frame;
}

static uint64_t node_hash(uint32_t parent, uint32_t frame)
{
	return hash__mix((uint64_t)parent << 32 | frame);
}

/* Whether session frame id is the scheduler's own (profile/trim.h's list), remembered. */
static bool is_sched(struct timeline *tl, uint32_t id)
{
	const struct frame *f;
	bool v;

	if (id >= tl->nr_is_sched) {
		size_t n = tl->nr_is_sched ? tl->nr_is_sched : 1024, old = tl->nr_is_sched;
		int8_t *m;

		while (n <= id)
			n *= 2;
		m = realloc(tl->is_sched, n);
		if (!m)
			return false; /* only the trim is lost, never a frame */
		memset(m + old, -1, n - old);
		tl->is_sched = m;
		tl->nr_is_sched = n;
	}
	if (tl->is_sched[id] >= 0)
		return tl->is_sched[id];
	f = session__frame(tl->s, id);
	v = f && f->kernel && f->sym && !f->inlined && sched_frame__is(f->sym);
	tl->is_sched[id] = v;
	return v;
}

/* The tree's node for fr[0..n) (leaf first), added along its path: its id, 0 on ENOMEM. */
static uint32_t stack_insert(struct timeline *tl, const uint32_t *fr, uint32_t n)
{
	uint32_t parent = 0, depth = 0;

	for (uint32_t i = n; i-- > 0;) {
		struct node k = { parent, fr[i], ++depth };
		bool added;
		struct node *e = htab__get(&tl->nodes, node_hash(parent, fr[i]), node_eq, &k, &added);

		if (!e)
			return 0;
		if (added)
			*e = k;
		parent = (uint32_t)(e - (struct node *)htab__at(&tl->nodes, 0)) + 1;
	}
	return parent;
}

/* Whether stack id is the path of fr[0..n) (leaf first). */
static bool stack_is(const struct timeline *tl, uint32_t id, const uint32_t *fr, uint32_t n)
{
	uint32_t k = 0;

	for (; id && k < n; k++) {
		const struct node *nd = htab__at(&tl->nodes, id - 1);

		if (nd->frame != fr[k])
			return false;
		id = nd->parent;
	}
	return k == n && !id;
}

/*
 * The stack id of frames fr[0..n) (leaf first): the scheduler's innermost
 * frames left out when trim (never all), then the innermost --max-stack
 * ones. 0 for no frame; -ENOMEM.
 */
static int64_t stack_of(struct timeline *tl, const uint32_t *fr, uint32_t n, bool trim)
{
	uint32_t skip = 0, id;
	struct stack_cache *c;
	uint64_t h;

	if (trim && !tl->o->keep_sched_frames)
		while (skip + 1 < n && is_sched(tl, fr[skip]))
			skip++;
	if (tl->o->max_stack > 0 && n - skip > (uint32_t)tl->o->max_stack)
		n = skip + (uint32_t)tl->o->max_stack;
	if (n <= skip)
		return 0;
	fr += skip;
	n -= skip;
	h = hash__bytes(fr, n * sizeof(*fr), 0);
	c = &tl->cache[h & (STACK_CACHE - 1)];
	if (c->hash == h && c->depth == n && stack_is(tl, c->id, fr, n))
		return c->id;
	id = stack_insert(tl, fr, n);
	if (!id)
		return -ENOMEM;
	*c = (struct stack_cache){ h, id, n };
	return id;
}

/* ---- the walk ---- */

struct walk {
	struct timeline *tl;
	struct report_opts o;  /* the caller's, without --time */
};

static int push_ev(struct timeline *tl, const struct ev *e)
{
	struct ev *n = vec__push((void **)&tl->ev, &tl->nr_ev, &tl->cap_ev, sizeof(*n));

	if (!n)
		return -ENOMEM;
	*n = *e;
	n->seq = (uint32_t)(tl->nr_ev - 1);
	return 0;
}

/* An offcpu-wakeup sample: the waker of the off-CPU sample just before it. */
static int add_wake(struct timeline *tl, const struct rsample *rs)
{
	const struct perf_sample *ps = rs->s;
	struct ev *off = tl->last_off != UINT32_MAX ? &tl->ev[tl->last_off] : NULL;
	struct wake_rec *w;
	int64_t stack;

	if (!off || off->wake || thread_at(tl, off->thread)->t.tid != ps->tid ||
	    off->time != ps->time || off->period != ps->period) {
		tl->info.unjoined++;
		return 0;
	}
	stack = stack_of(tl, rs->frames, (uint32_t)rs->nr, false);
	if (stack < 0)
		return -ENOMEM;
	w = vec__push((void **)&tl->wakes, &tl->nr_wakes, &tl->cap_wakes, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->w = (struct tl_wake){ .sleeper = off->thread, .waker = TL_NO_THREAD, .stack = (uint32_t)stack,
				 .irq = (rs->flags & OFFCPU_RAW_WAKER_IRQ) || !rs->waker_tid };
	w->waker_pid = rs->waker_pid;
	w->waker_tid = rs->waker_tid;
	w->waker_comm = rs->waker_comm;
	w->summed = off->flags & OFFCPU_RAW_AGGREGATED;
	off->wake = (uint32_t)tl->nr_wakes;
	return 0;
}

static int on_sample(void *ctx, const struct rsample *rs)
{
	struct walk *wk = ctx;
	struct timeline *tl = wk->tl;
	const struct perf_sample *ps = rs->s;
	const struct perf_evattr *a = ps->evattr;
	struct ev e = { .time = ps->time, .period = ps->period, .count = rs->count ? rs->count : 1,
			.cpu = ps->cpu, .state = rs->state, .flags = (uint16_t)rs->flags };
	struct thread_in *t;
	bool added;
	int64_t stack;
	int err;

	/* the chains' model takes every sample (it selects the waits itself) */
	if (tl->chains && (err = chains__add(tl->chains, rs)))
		return err;
	if (a->is_chain)
		return 0; /* record --chains' own records: the model above reads them */
	/* idle (0) and exited tasks (-1) are no thread */
	if (!ps->tid || ps->tid == UINT32_MAX || !report__match(&wk->o, tl->s, rs)) {
		if (!a->is_wakeup)
			tl->last_off = UINT32_MAX;
		return 0;
	}
	if (a->is_wakeup)
		return add_wake(tl, rs);
	tl->last_off = UINT32_MAX;
	if (a->is_offcpu) {
		e.kind = EV_OFF;
		tl->info.offcpu = true;
	} else if (a->is_sched_delay) {
		e.kind = EV_RUNQ;
	} else {
		if (tl->cpu_event < 0)
			tl->cpu_event = a->idx;
		if (a->idx != tl->cpu_event) {
			tl->skipped++;
			return 0;
		}
		e.kind = EV_CPU;
	}
	err = thread_of(tl, ps->pid, ps->tid, &e.thread, &added);
	if (err)
		return err;
	t = thread_at(tl, e.thread);
	t->comm_id = rs->comm;
	if (e.kind != EV_CPU)
		t->t.measured = true;
	stack = stack_of(tl, rs->frames, (uint32_t)rs->nr, e.kind != EV_CPU);
	if (stack < 0)
		return -ENOMEM;
	e.stack = (uint32_t)stack;
	if (e.kind == EV_OFF)
		tl->last_off = (uint32_t)tl->nr_ev;
	if (e.flags & OFFCPU_RAW_AGGREGATED) {
		if (e.kind == EV_OFF) {
			t->t.summed_off += e.count;
			t->t.summed_off_ns += e.period;
		} else {
			t->t.summed_runq += e.count;
			t->t.summed_runq_ns += e.period;
		}
	}
	return push_ev(tl, &e);
}

/* ---- critical paths (profile/chains.h) ---- */

/*
 * Whether chains can follow this recording's waits through their wakers:
 * record --chains (every wait of every thread), or --wakeups with every
 * wait written one by one (--off-cpu-thresh 0).
 */
static bool chains_possible(const struct session *s)
{
	const struct perf_reader *r = session__reader(s);
	const char *name;
	uint64_t v;

	if (session__event(s, OFFCPU_SWITCH_EVENT_NAME) >= 0)
		return true;
	if (session__event(s, OFFCPU_WAKEUP_EVENT_NAME) < 0)
		return false;
	for (int i = 0; perf_reader__offcpu_counter(r, i, &name, &v); i++)
		if (!strcmp(name, "offcpu.thresh_ns"))
			return v == 0;
	return false;
}

/* The timeline's thread of chains' thread ci (made on first sight): 0 or -ENOMEM. */
static int crit_thread(struct timeline *tl, uint32_t ci, uint32_t *idx)
{
	const struct chain_thread *ct = ci == CHAINS_NONE ? NULL : chains__thread(tl->chains, ci);
	bool added;
	int err;

	if (!ct) {
		*idx = TL_NO_THREAD;
		return 0;
	}
	err = thread_of(tl, ct->pid, ct->tid, idx, &added);
	if (!err && added)
		thread_at(tl, *idx)->comm_id = ct->comm;
	return err;
}

static int crit_push(struct timeline *tl, const struct tl_crit *c, uint32_t sleeper)
{
	struct crit_rec *r = vec__push((void **)&tl->crit, &tl->nr_crit, &tl->cap_crit, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->c = *c;
	r->sleeper = sleeper;
	return 0;
}

/* One walk: the wait, then its pieces earliest first (the walk gives them latest first). */
static int crit_walk(struct timeline *tl, const struct chain_walk *w, char state)
{
	uint32_t sleeper, nr;
	const uint32_t *fr;
	int64_t stack;
	int err = crit_thread(tl, w->thread, &sleeper);

	if (err)
		return err;
	fr = chains__stack(tl->chains, w->nhops ? w->hops[0].stack : CHAINS_NONE, &nr);
	stack = stack_of(tl, fr, nr, false);
	if (stack < 0)
		return -ENOMEM;
	err = crit_push(tl, &(struct tl_crit){ .start = w->start, .end = w->end, .thread = sleeper,
					       .stack = (uint32_t)stack, .kind = TL_CRIT_WAIT,
					       .state = state }, sleeper);
	for (size_t k = w->nsegs; k-- > 0 && !err;) {
		const struct chain_seg *sg = &w->segs[k];
		const struct chain_hop *h = &w->hops[sg->hop];
		struct tl_crit c = { .start = sg->start, .end = sg->end, .kind = sg->kind,
				     .depth = h->depth > 255 ? 255 : (uint8_t)h->depth, .sampled = sg->sampled };

		err = crit_thread(tl, h->thread, &c.thread);
		fr = chains__stack(tl->chains, h->stack, &nr);
		if (!err && (stack = stack_of(tl, fr, nr, false)) < 0)
			err = -ENOMEM;
		c.stack = (uint32_t)stack;
		if (!err)
			err = crit_push(tl, &c, sleeper);
	}
	return err;
}

/* The critical path of every wait the filters and --chain-min select. */
static int crit_paths(struct timeline *tl)
{
	struct chain_sel *sel = NULL;
	long n;
	int err;

	err = chains__finish(tl->chains, NULL, 0);
	if (err)
		return err;
	n = chains__select(tl->chains, tl->o, chains__min_ns(tl->o), &sel);
	if (n < 0)
		return (int)n;
	for (long i = 0; i < n && !err; i++) {
		struct chain_walk w;

		err = chains__walk(tl->chains, &sel[i], &w);
		if (err)
			break;
		if (!chain_walk__tiles(&w))
			tl->info.crit_bad++;
		tl->info.crit_waits++;
		err = crit_walk(tl, &w, chains__wait(tl->chains, sel[i].first)->state);
	}
	free(sel);
	return err;
}

/* ---- after the walk: threads in order, wakers resolved ---- */

static int cmp_thread(const void *a, const void *b)
{
	const struct thread_in *x = *(struct thread_in *const *)a, *y = *(struct thread_in *const *)b;

	if (x->t.pid != y->t.pid)
		return x->t.pid < y->t.pid ? -1 : 1;
	return x->t.tid < y->t.tid ? -1 : x->t.tid > y->t.tid;
}

/* Every waker a thread (a track for its wakeups, when it had no sample of its own). */
static int resolve_wakers(struct timeline *tl)
{
	for (size_t i = 0; i < tl->nr_wakes; i++) {
		struct wake_rec *w = &tl->wakes[i];
		uint32_t idx;
		bool added;
		int err;

		if (w->w.irq)
			continue;
		err = thread_of(tl, w->waker_pid, w->waker_tid, &idx, &added);
		if (err)
			return err;
		if (added) {
			thread_at(tl, idx)->t.waker_only = true;
			thread_at(tl, idx)->comm_id = w->waker_comm;
		}
		w->w.waker = idx;
	}
	return 0;
}

/* Threads sorted by pid, tid; their names and lives; events and wakes renumbered. */
static int order_threads(struct timeline *tl)
{
	size_t n = htab__n(&tl->threads);
	struct thread_in **by = malloc((n ? n : 1) * sizeof(*by));

	if (!by)
		return -ENOMEM;
	tl->th = calloc(n ? n : 1, sizeof(*tl->th));
	if (!tl->th) {
		free(by);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		by[i] = thread_at(tl, (uint32_t)i);
	qsort(by, n, sizeof(*by), cmp_thread);
	for (size_t i = 0; i < n; i++) {
		struct session_thread st;

		by[i]->order = (uint32_t)i;
		tl->th[i] = by[i]->t;
		tl->th[i].comm = session__comm(tl->s, by[i]->comm_id);
		/* threads are keyed by (pid, tid) here: its latest life (no start matches ~0) */
		if (session__thread(tl->s, by[i]->t.tid, UINT64_MAX, &st) && st.pid == by[i]->t.pid) {
			tl->th[i].start = st.fork_time;
			tl->th[i].end = st.exit_time;
		}
	}
	tl->nr_th = (uint32_t)n;
	free(by);
	for (size_t i = 0; i < tl->nr_ev; i++)
		tl->ev[i].thread = thread_at(tl, tl->ev[i].thread)->order;
	for (size_t i = 0; i < tl->nr_wakes; i++) {
		struct tl_wake *w = &tl->wakes[i].w;

		w->sleeper = thread_at(tl, w->sleeper)->order;
		if (w->waker != TL_NO_THREAD)
			w->waker = thread_at(tl, w->waker)->order;
	}
	for (size_t i = 0; i < tl->nr_crit; i++) {
		struct crit_rec *c = &tl->crit[i];

		c->sleeper = thread_at(tl, c->sleeper)->order;
		if (c->c.thread != TL_NO_THREAD)
			c->c.thread = thread_at(tl, c->c.thread)->order;
	}
	return 0;
}

static int cmp_ev(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * The events grouped by thread, each thread's in time order (run-queue
 * waits before off-CPU waits at one time, then file order). They come in
 * time order from the reader, nearly always: a counting sort by thread
 * keeps that order and moves each event once (a qsort of the whole array
 * cost a fifth of the time on large recordings); a thread whose events
 * are still out of order is sorted on its own.
 */
static int group_events(struct timeline *tl)
{
	size_t *at = calloc(tl->nr_th + 1, sizeof(*at));
	struct ev *out = malloc((tl->nr_ev ? tl->nr_ev : 1) * sizeof(*out));

	if (!at || !out) {
		free(at);
		free(out);
		return -ENOMEM;
	}
	for (size_t i = 0; i < tl->nr_ev; i++)
		at[tl->ev[i].thread + 1]++;
	for (uint32_t ti = 0; ti < tl->nr_th; ti++)
		at[ti + 1] += at[ti];
	for (size_t i = 0; i < tl->nr_ev; i++)
		out[at[tl->ev[i].thread]++] = tl->ev[i];
	free(tl->ev);
	tl->ev = out;
	tl->cap_ev = tl->nr_ev ? tl->nr_ev : 1;
	for (size_t b = 0, e; b < tl->nr_ev; b = e) {
		bool sorted = true;

		for (e = b + 1; e < tl->nr_ev && tl->ev[e].thread == tl->ev[b].thread; e++)
			sorted = sorted && cmp_ev(&tl->ev[e - 1], &tl->ev[e]) <= 0;
		if (!sorted)
			qsort(tl->ev + b, e - b, sizeof(*tl->ev), cmp_ev);
	}
	free(at);
	return 0;
}

/* ---- laying out one thread ---- */

static int push_slice(struct timeline *tl, const struct tl_slice *sl)
{
	struct tl_slice *n = vec__push((void **)&tl->slices, &tl->nr_slices, &tl->cap_slices, sizeof(*n));

	if (!n)
		return -ENOMEM;
	*n = *sl;
	return 0;
}

static int cmp_slice(const void *a, const void *b)
{
	const struct tl_slice *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

/*
 * The waits of one thread (events ev[0..n), in time order) as slices: a
 * run-queue wait and the off-CPU wait its wakeup ended share their
 * switch-in (their samples' times up to OFFCPU_SWITCH_IN_SPREAD_NS apart)
 * and pair up; an off-CPU wait without its run-queue wait
 * ends at its switch-in, exactly when the thread's run-queue waits were
 * all recorded one by one (rq_whole), else flagged. A run-queue wait after
 * a sleep whose off-CPU wait is not there (summed, or in a state not
 * measured) carries TL_MAY_WAIT for the stretch before it: lay_gaps()
 * moves the flag there.
 */
static int lay_waits(struct timeline *tl, const struct ev *ev, size_t n, bool rq_whole)
{
	for (size_t i = 0; i < n; i++) {
		const struct ev *e = &ev[i], *off = NULL;
		struct tl_slice sl = { .stack = e->stack, .state = e->state };
		int err;

		if (e->kind == EV_CPU || (e->flags & OFFCPU_RAW_AGGREGATED))
			continue;
		if (e->kind == EV_RUNQ) {
			/* its off-CPU wait: the next one timed, within the switch-in's spread */
			for (size_t j = i + 1; j < n && ev[j].time - e->time <= OFFCPU_SWITCH_IN_SPREAD_NS &&
					       e->state != 'R' && e->state != 'N'; j++) {
				if (ev[j].kind == EV_RUNQ || ev[j].kind == EV_CPU)
					break;
				if (ev[j].kind == EV_OFF && !(ev[j].flags & OFFCPU_RAW_AGGREGATED)) {
					off = &ev[j];
					break;
				}
			}
			sl.kind = TL_RUNQ;
			sl.start = e->time > e->period ? e->time - e->period : 0;
			sl.end = e->time;
			if (e->flags & OFFCPU_RAW_IN_PROGRESS_START)
				sl.flags |= TL_FROM_START;
			if (off) {
				err = push_slice(tl, &sl);
				if (err)
					return err;
				sl = (struct tl_slice){ .kind = TL_OFFCPU, .stack = off->stack,
							.state = off->state ? off->state : '?',
							.wake = off->wake, .end = sl.start };
				sl.start = sl.end > off->period ? sl.end - off->period : 0;
				if (off->flags & OFFCPU_RAW_IN_PROGRESS_START)
					sl.flags |= TL_FROM_START;
				i = (size_t)(off - ev); /* events between are CPU samples or summed */
			} else if (e->state != 'R' && e->state != 'N') {
				sl.flags |= TL_MAY_WAIT; /* a sleep before it nobody timed */
			}
		} else {
			sl.kind = TL_OFFCPU;
			sl.state = e->state ? e->state : '?';
			sl.end = e->time;
			sl.start = e->time > e->period ? e->time - e->period : 0;
			sl.wake = e->wake;
			if (e->flags & OFFCPU_RAW_IN_PROGRESS_START)
				sl.flags |= TL_FROM_START;
			if (e->flags & OFFCPU_RAW_IN_PROGRESS_STOP)
				sl.flags |= TL_TO_STOP;
			else if (!rq_whole)
				sl.flags |= TL_WAKE_UNKNOWN;
		}
		err = push_slice(tl, &sl);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Waits in start order, none overlapping: a wait inside the one before it
 * (perf's own summed samples, timed at the end of the recording) is left
 * out and counted, a small overlap (the two clocks of a wait's ends) cut.
 */
static size_t untangle(struct timeline *tl, struct tl_slice *sl, size_t n)
{
	size_t out = 0;

	qsort(sl, n, sizeof(*sl), cmp_slice);
	for (size_t i = 0; i < n; i++) {
		if (out && sl[i].start < sl[out - 1].end) {
			if (sl[i].end <= sl[out - 1].end) {
				tl->info.overlaps++;
				continue;
			}
			sl[i].start = sl[out - 1].end;
		}
		sl[out++] = sl[i];
	}
	return out;
}

/*
 * The stretches between a measured thread's waits (from its start to its
 * end), flagged with what they may hold besides time on CPU. The waits are
 * tl->slices[first..]; the result replaces them, in time order.
 */
static int lay_gaps(struct timeline *tl, size_t first, const struct tl_thread *t, uint16_t may)
{
	size_t n = tl->nr_slices - first, k;
	struct tl_slice *w = malloc((n ? n : 1) * sizeof(*w));
	uint64_t at = t->start;
	int err = 0;

	if (!w)
		return -ENOMEM;
	memcpy(w, tl->slices + first, n * sizeof(*w));
	tl->nr_slices = first;
	for (k = 0; k < n && !err; k++) {
		uint16_t own = w[k].flags & TL_MAY_WAIT;

		w[k].flags &= (uint16_t)~TL_MAY_WAIT;
		if (w[k].start > at)
			err = push_slice(tl, &(struct tl_slice){ .start = at, .end = w[k].start,
								 .kind = TL_ONCPU, .flags = may | own });
		if (!err)
			err = push_slice(tl, &w[k]);
		at = w[k].end;
	}
	if (!err && t->end > at)
		err = push_slice(tl, &(struct tl_slice){ .start = at, .end = t->end, .kind = TL_ONCPU,
							 .flags = may });
	free(w);
	return err;
}

/*
 * A thread's life inside the recording's window, stretched over its waits
 * and samples. A thread whose first wait is the one of its creation (a
 * run-queue wait after the wakeup of a new task) begins there: between
 * its FORK record and that wakeup its maker was still making it.
 */
static void thread_life(const struct timeline *tl, struct tl_thread *t, const struct ev *ev, size_t n,
			const struct tl_slice *sl, size_t nsl)
{
	uint64_t s = t->start && t->start > tl->info.start ? t->start : tl->info.start;
	uint64_t e = t->end && t->end < tl->info.end ? t->end : tl->info.end;

	if (nsl && (sl[0].start < s || (sl[0].kind == TL_RUNQ && sl[0].state == 'N')))
		s = sl[0].start;
	if (nsl && sl[nsl - 1].end > e)
		e = sl[nsl - 1].end;
	for (size_t i = 0; i < n; i++) {
		if (ev[i].time < s)
			s = ev[i].time;
		if (ev[i].time > e)
			e = ev[i].time;
	}
	t->start = s;
	t->end = e > s ? e : s;
}

/* One thread: its waits, the stretches between them, its samples and summed waits. */
static int lay_thread(struct timeline *tl, uint32_t ti, const struct ev *ev, size_t n, size_t *nsamples)
{
	struct tl_thread *t = &tl->th[ti];
	bool rq_whole = tl->info.sched_delay && !t->summed_runq;
	uint16_t may = (rq_whole ? 0 : TL_MAY_RUNQ) | (t->summed_off ? TL_MAY_WAIT : 0);
	size_t first = tl->nr_slices, nsl;
	int err;

	tl->slice_off[ti] = first;
	tl->summed_off[ti] = tl->nr_summed;
	for (size_t i = 0; i < n; i++) {
		if (ev[i].kind == EV_CPU) {
			(*nsamples)++;
		} else if (ev[i].flags & OFFCPU_RAW_AGGREGATED) {
			struct tl_summed *s = vec__push((void **)&tl->summed, &tl->nr_summed, &tl->cap_summed,
							sizeof(*s));

			if (!s)
				return -ENOMEM;
			*s = (struct tl_summed){ ev[i].time, ev[i].period, ev[i].count, ev[i].stack,
						 ev[i].wake, ev[i].kind == EV_OFF ? TL_OFFCPU : TL_RUNQ,
						 ev[i].state };
		}
	}
	if (!t->measured)
		return 0;
	err = lay_waits(tl, ev, n, rq_whole);
	if (err)
		return err;
	nsl = untangle(tl, tl->slices + first, tl->nr_slices - first);
	tl->nr_slices = first + nsl;
	thread_life(tl, t, ev, n, tl->slices + first, nsl);
	return lay_gaps(tl, first, t, may);
}

/* Whether a wakeup is drawn on its waker's track: a task's, of a wait shown. */
static bool drawn(const struct wake_rec *w)
{
	return w->w.waker != TL_NO_THREAD && !w->summed && w->placed;
}

/* Wakeups: their times from the slices they ended; per waker, in time order. */
static int lay_wakes(struct timeline *tl)
{
	size_t *count;

	for (uint32_t ti = 0; ti < tl->nr_th; ti++)
		for (size_t i = tl->slice_off[ti]; i < tl->slice_off[ti + 1]; i++) {
			const struct tl_slice *sl = &tl->slices[i];
			struct tl_wake *w;

			if (!sl->wake || sl->kind != TL_OFFCPU)
				continue;
			tl->wakes[sl->wake - 1].placed = true;
			w = &tl->wakes[sl->wake - 1].w;
			w->time = sl->end;
			w->exact = !(sl->flags & (TL_WAKE_UNKNOWN | TL_TO_STOP));
		}
	tl->wakes_by = malloc((tl->nr_wakes ? tl->nr_wakes : 1) * sizeof(*tl->wakes_by));
	count = calloc(tl->nr_th + 1, sizeof(*count));
	if (!tl->wakes_by || !count) {
		free(count);
		return -ENOMEM;
	}
	for (size_t i = 0; i < tl->nr_wakes; i++)
		if (drawn(&tl->wakes[i]))
			count[tl->wakes[i].w.waker + 1]++;
	for (uint32_t ti = 0; ti < tl->nr_th; ti++)
		count[ti + 1] += count[ti];
	memcpy(tl->wakes_by_off, count, (tl->nr_th + 1) * sizeof(*count));
	for (size_t i = 0; i < tl->nr_wakes; i++)
		if (drawn(&tl->wakes[i]))
			tl->wakes_by[count[tl->wakes[i].w.waker]++] = (uint32_t)i;
	free(count);
	/* each waker's in time order (insertion: they come nearly sorted) */
	for (uint32_t ti = 0; ti < tl->nr_th; ti++) {
		uint32_t *a = tl->wakes_by + tl->wakes_by_off[ti];
		size_t n = tl->wakes_by_off[ti + 1] - tl->wakes_by_off[ti];

		for (size_t i = 1; i < n; i++) {
			uint32_t v = a[i];
			size_t j = i;

			for (; j && tl->wakes[a[j - 1]].w.time > tl->wakes[v].w.time; j--)
				a[j] = a[j - 1];
			a[j] = v;
		}
	}
	return 0;
}

/* ---- --time ---- */

/* Keep what overlaps the window [tl->info.start, end] (the recording's, or --time's), cut at its edges. */
static void clip(struct timeline *tl)
{
	uint64_t ws = tl->info.start, we = tl->info.end;
	size_t o_sl = 0, o_sa = 0, o_su = 0, o;

	for (uint32_t ti = 0; ti < tl->nr_th; ti++) {
		struct tl_thread *t = &tl->th[ti];
		size_t b_sl = o_sl, b_sa = o_sa, b_su = o_su;

		for (size_t i = tl->slice_off[ti]; i < tl->slice_off[ti + 1]; i++) {
			struct tl_slice sl = tl->slices[i];

			if (sl.end < ws || sl.start > we || (sl.end == ws && sl.start < ws))
				continue;
			if (sl.start < ws || sl.end > we) {
				sl.whole = sl.end - sl.start;
				sl.flags |= TL_CUT;
				sl.start = sl.start < ws ? ws : sl.start;
				sl.end = sl.end > we ? we : sl.end;
			}
			tl->slices[o_sl++] = sl;
		}
		for (size_t i = tl->sample_off[ti]; i < tl->sample_off[ti + 1]; i++)
			if (tl->samples[i].time >= ws && tl->samples[i].time <= we)
				tl->samples[o_sa++] = tl->samples[i];
		for (size_t i = tl->summed_off[ti]; i < tl->summed_off[ti + 1]; i++)
			if (tl->summed[i].time >= ws && tl->summed[i].time <= we)
				tl->summed[o_su++] = tl->summed[i];
		tl->slice_off[ti] = b_sl;
		tl->sample_off[ti] = b_sa;
		tl->summed_off[ti] = b_su;
		t->start = t->start < ws ? ws : t->start;
		t->end = t->end > we ? we : t->end;
		if (t->end < t->start)
			t->end = t->start;
	}
	tl->slice_off[tl->nr_th] = o_sl;
	tl->sample_off[tl->nr_th] = o_sa;
	tl->summed_off[tl->nr_th] = o_su;
	tl->nr_slices = o_sl;
	tl->nr_summed = o_su;
	/* the critical paths' pieces inside the window, cut at its edges */
	o = 0;
	for (uint32_t ti = 0; ti < tl->nr_th; ti++) {
		size_t b = o;

		for (size_t i = tl->crit_off[ti]; i < tl->crit_off[ti + 1]; i++) {
			struct tl_crit c = tl->crits[i];

			if (c.end < ws || c.start > we || (c.end == ws && c.start < ws))
				continue;
			c.start = c.start < ws ? ws : c.start;
			c.end = c.end > we ? we : c.end;
			tl->crits[o++] = c;
		}
		tl->crit_off[ti] = b;
		if (ti + 1 == tl->nr_th)
			tl->crit_off[ti + 1] = o;
	}
	/* each waker's wakeups inside the window */
	o = 0;
	for (uint32_t ti = 0; ti < tl->nr_th; ti++) {
		size_t b = o;

		for (size_t i = tl->wakes_by_off[ti]; i < tl->wakes_by_off[ti + 1]; i++) {
			const struct tl_wake *w = &tl->wakes[tl->wakes_by[i]].w;

			if (w->time >= ws && w->time <= we)
				tl->wakes_by[o++] = tl->wakes_by[i];
		}
		tl->wakes_by_off[ti] = b;
		if (ti + 1 == tl->nr_th)
			tl->wakes_by_off[ti + 1] = o;
	}
}

/* ---- the whole ---- */

/* The recording's counters the timeline needs: its window, threshold, losses. */
static void counters(struct timeline *tl)
{
	const struct perf_reader *r = session__reader(tl->s);
	uint64_t start = 0, stop = 0, v;
	struct session_stats st;
	const char *name;

	tl->info.thresh_ns = UINT64_MAX;
	for (int i = 0; perf_reader__offcpu_counter(r, i, &name, &v); i++) {
		if (!strcmp(name, "record.start_ns"))
			start = v;
		else if (!strcmp(name, "record.stop_ns"))
			stop = v;
		else if (!strcmp(name, "offcpu.thresh_ns"))
			tl->info.thresh_ns = v;
		else if (!strncmp(name, "drop.", 5) || !strcmp(name, "offcpu.filtered"))
			tl->info.lost += v;
	}
	session__stats(tl->s, &st);
	tl->info.lost += st.lost;
	if (!(start && stop > start))
		session__time_span(tl->s, &start, &stop);
	tl->info.start = start;
	tl->info.end = stop > start ? stop : start;
}

/* The critical paths grouped by sleeper, each's in the order walked. */
static int group_crits(struct timeline *tl)
{
	size_t *at = calloc(tl->nr_th + 1, sizeof(*at));

	tl->crit_off = calloc(tl->nr_th + 1, sizeof(*tl->crit_off));
	tl->crits = malloc((tl->nr_crit ? tl->nr_crit : 1) * sizeof(*tl->crits));
	if (!at || !tl->crit_off || !tl->crits) {
		free(at);
		return -ENOMEM;
	}
	for (size_t i = 0; i < tl->nr_crit; i++)
		at[tl->crit[i].sleeper + 1]++;
	for (uint32_t ti = 0; ti < tl->nr_th; ti++)
		at[ti + 1] += at[ti];
	memcpy(tl->crit_off, at, (tl->nr_th + 1) * sizeof(*at));
	for (size_t i = 0; i < tl->nr_crit; i++)
		tl->crits[at[tl->crit[i].sleeper]++] = tl->crit[i].c;
	free(at);
	free(tl->crit);
	tl->crit = NULL;
	return 0;
}

static int lay_out(struct timeline *tl)
{
	size_t n = tl->nr_th, nsamples = 0, at = 0, ns = 0;
	int err = 0;

	tl->slice_off = calloc(n + 1, sizeof(size_t));
	tl->sample_off = calloc(n + 1, sizeof(size_t));
	tl->summed_off = calloc(n + 1, sizeof(size_t));
	tl->wakes_by_off = calloc(n + 1, sizeof(size_t));
	if (!tl->slice_off || !tl->sample_off || !tl->summed_off || !tl->wakes_by_off)
		return -ENOMEM;
	err = group_events(tl);
	for (uint32_t ti = 0; ti < n && !err; ti++) {
		size_t b = at;

		while (at < tl->nr_ev && tl->ev[at].thread == ti)
			at++;
		tl->sample_off[ti] = nsamples;
		err = lay_thread(tl, ti, tl->ev + b, at - b, &nsamples);
		if (!tl->th[ti].measured)
			thread_life(tl, &tl->th[ti], tl->ev + b, at - b, NULL, 0);
	}
	if (err)
		return err;
	tl->slice_off[n] = tl->nr_slices;
	tl->summed_off[n] = tl->nr_summed;
	tl->sample_off[n] = nsamples;
	/* the samples out of the events, which are then no longer needed */
	tl->samples = malloc((nsamples ? nsamples : 1) * sizeof(*tl->samples));
	if (!tl->samples)
		return -ENOMEM;
	for (size_t i = 0; i < tl->nr_ev; i++)
		if (tl->ev[i].kind == EV_CPU)
			tl->samples[ns++] = (struct tl_sample){ tl->ev[i].time, tl->ev[i].period,
								tl->ev[i].stack, tl->ev[i].cpu };
	free(tl->ev);
	tl->ev = NULL;
	tl->nr_ev = tl->cap_ev = 0;
	err = group_crits(tl);
	return err ? err : lay_wakes(tl);
}

static void notes(const struct timeline *tl, const struct msg_sink *ms)
{
	const struct perf_reader *r = session__reader(tl->s);

	if (tl->skipped)
		msg__say(ms, MSG_NOTE, "%" PRIu64 " samples of other events than '%s' left out", tl->skipped,
			 perf_reader__attr(r, tl->cpu_event)->name);
	if (tl->info.overlaps)
		msg__say(ms, MSG_NOTE, "%" PRIu64 " waits left out: they lay inside another wait of their thread",
			 tl->info.overlaps);
	if (tl->info.crit_bad)
		msg__say(ms, MSG_WARNING, "%" PRIu64 " critical paths whose pieces do not tile their wait",
			 tl->info.crit_bad);
	if (tl->info.unjoined)
		msg__say(ms, MSG_NOTE, "%" PRIu64 " %s samples without their %s sample, left out",
			 tl->info.unjoined, OFFCPU_WAKEUP_EVENT_NAME, OFFCPU_EVENT_NAME);
}

int timeline__read(const struct report_opts *o, const struct msg_sink *ms, struct timeline **tp,
		   char *err, size_t errlen)
{
	struct timeline *tl = calloc(1, sizeof(*tl));
	struct walk wk = { .tl = tl };
	int ret = -ENOMEM;

	err[0] = 0;
	if (!tl)
		return ret;
	tl->o = o;
	tl->cpu_event = -1;
	tl->last_off = UINT32_MAX;
	htab__init(&tl->threads, sizeof(struct thread_in));
	htab__init(&tl->nodes, sizeof(struct node));
	tl->cache = calloc(STACK_CACHE, sizeof(*tl->cache));
	if (!tl->cache)
		goto cleanup;
	/* never NULL, so that every array + offset is defined, empty or not */
	if (vec__reserve((void **)&tl->ev, &tl->cap_ev, 1, sizeof(*tl->ev), 1024) ||
	    vec__reserve((void **)&tl->slices, &tl->cap_slices, 1, sizeof(*tl->slices), 1024) ||
	    vec__reserve((void **)&tl->summed, &tl->cap_summed, 1, sizeof(*tl->summed), 64) ||
	    vec__reserve((void **)&tl->wakes, &tl->cap_wakes, 1, sizeof(*tl->wakes), 64))
		goto cleanup;
	/* kernel frames named as they come: the trim reads their names */
	tl->s = report__open(o, false, ms, err, errlen);
	if (!tl->s) {
		ret = -EINVAL;
		goto cleanup;
	}
	if (chains_possible(tl->s)) {
		tl->chains = chains__new(tl->s, o->keep_sched_frames, o->max_stack);
		if (!tl->chains) {
			ret = -ENOMEM;
			goto cleanup;
		}
		tl->info.chains = true;
	}
	tl->info.sched_delay = session__event(tl->s, OFFCPU_SCHED_DELAY_EVENT_NAME) >= 0;
	tl->info.wakeups = session__event(tl->s, OFFCPU_WAKEUP_EVENT_NAME) >= 0;
	wk.o = *o;
	wk.o.time_start = wk.o.time_end = 0;
	wk.o.event = NULL;
	ret = session__run(tl->s, on_sample, &wk);
	if (ret) {
		snprintf(err, errlen, "%s: %s", o->input, session__error(tl->s));
		goto cleanup;
	}
	counters(tl);
	if (tl->cpu_event >= 0)
		tl->info.cpu_event = perf_reader__attr(session__reader(tl->s), tl->cpu_event)->name;
	ret = tl->chains ? crit_paths(tl) : 0;
	if (!ret)
		ret = resolve_wakers(tl);
	if (!ret)
		ret = order_threads(tl);
	if (!ret)
		ret = lay_out(tl);
	if (ret)
		goto cleanup;
	if (o->time_start && o->time_start > tl->info.start)
		tl->info.start = o->time_start;
	if (o->time_end && o->time_end < tl->info.end)
		tl->info.end = o->time_end > tl->info.start ? o->time_end : tl->info.start;
	clip(tl); /* to --time, and to the recording (a wait of record --chains may begin before it) */
	notes(tl, ms);
	*tp = tl;
	return 0;
cleanup:
	timeline__free(tl);
	return ret;
}

void timeline__free(struct timeline *tl)
{
	if (!tl)
		return;
	session__free(tl->s);
	htab__free(&tl->threads);
	htab__free(&tl->nodes);
	free(tl->th);
	free(tl->ev);
	free(tl->wakes);
	free(tl->slices);
	free(tl->slice_off);
	free(tl->samples);
	free(tl->sample_off);
	free(tl->summed);
	free(tl->summed_off);
	free(tl->wakes_by);
	free(tl->wakes_by_off);
	free(tl->is_sched);
	free(tl->cache);
	chains__free(tl->chains);
	free(tl->crit);
	free(tl->crits);
	free(tl->crit_off);
	free(tl);
}

/* ---- answers ---- */

const struct tl_info *timeline__info(const struct timeline *tl)
{
	return &tl->info;
}

struct session *timeline__session(const struct timeline *tl)
{
	return tl->s;
}

uint32_t timeline__nr_threads(const struct timeline *tl)
{
	return tl->nr_th;
}

const struct tl_thread *timeline__thread(const struct timeline *tl, uint32_t i)
{
	return &tl->th[i];
}

const struct tl_slice *timeline__slices(const struct timeline *tl, uint32_t i, size_t *n)
{
	*n = tl->slice_off[i + 1] - tl->slice_off[i];
	return tl->slices + tl->slice_off[i];
}

const struct tl_sample *timeline__samples(const struct timeline *tl, uint32_t i, size_t *n)
{
	*n = tl->sample_off[i + 1] - tl->sample_off[i];
	return tl->samples + tl->sample_off[i];
}

const struct tl_summed *timeline__summed(const struct timeline *tl, uint32_t i, size_t *n)
{
	*n = tl->summed_off[i + 1] - tl->summed_off[i];
	return tl->summed + tl->summed_off[i];
}

const struct tl_crit *timeline__critical(const struct timeline *tl, uint32_t i, size_t *n)
{
	*n = tl->crit_off[i + 1] - tl->crit_off[i];
	return tl->crits + tl->crit_off[i];
}

const uint32_t *timeline__wakes_by(const struct timeline *tl, uint32_t i, size_t *n)
{
	*n = tl->wakes_by_off[i + 1] - tl->wakes_by_off[i];
	return tl->wakes_by + tl->wakes_by_off[i];
}

const struct tl_wake *timeline__wake(const struct timeline *tl, uint32_t idx)
{
	return &tl->wakes[idx].w;
}

size_t timeline__nr_wakes(const struct timeline *tl)
{
	return tl->nr_wakes;
}

uint32_t timeline__nr_stacks(const struct timeline *tl)
{
	return (uint32_t)htab__n(&tl->nodes);
}

void timeline__stack_node(const struct timeline *tl, uint32_t id, uint32_t *parent, uint32_t *frame)
{
	const struct node *n = htab__at(&tl->nodes, id - 1);

	*parent = n->parent;
	*frame = n->frame;
}

uint32_t timeline__stack_depth(const struct timeline *tl, uint32_t id)
{
	return id ? ((const struct node *)htab__at(&tl->nodes, id - 1))->depth : 0;
}

uint32_t timeline__stack_leaf(const struct timeline *tl, uint32_t id)
{
	uint32_t leaf = UINT32_MAX;

	while (id) {
		const struct node *n = htab__at(&tl->nodes, id - 1);
		const struct frame *f = session__frame(tl->s, n->frame);

		if (leaf == UINT32_MAX)
			leaf = n->frame;
		if (!(f && f->kernel && f->sym && !f->inlined && sched_frame__is(f->sym)))
			return n->frame;
		id = n->parent;
	}
	return leaf;
}
