// SPDX-License-Identifier: GPL-2.0-only
/*
 * Wait chains (profile/chains.h): the model of every thread's timeline,
 * read from a recording's samples (the walk is chain_walk.c's).
 *
 * Reading. Two kinds of recording give the same model:
 *  - `record --chains`: an offcpu-switch sample per wait of every thread
 *    (out, wake, in, state, stack ids, waker, the thread's count of
 *    switch-ins: a gap in it says records were lost), an offcpu-stack
 *    sample per distinct stack (its id and callchain), CPU samples;
 *  - `record --wakeups --off-cpu-thresh 0 [--sched-delay]`: per interval
 *    of a recorded thread, at its switch-in and with one time, a
 *    sched-delay sample (its run-queue wait), an offcpu-time sample (its
 *    stack, ns off CPU) and an offcpu-wakeup sample (its waker, with the
 *    waker's stack). They are gathered per thread while their time is the
 *    same, and make one wait when the next time comes.
 * Stacks are interned by their frames (the session's ids); kernel frames
 * are named at the end (session__remap), so the pool is renamed then.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfdata/offcpu_payload.h"
#include "perfdata/perf_format.h"
#include "profile/chains.h"
#include "profile/chains_int.h"
#include "profile/profile.h"
#include "profile/read.h"
#include "profile/trim.h"
#include "util/hash.h"
#include "util/htab.h"
#include "util/vec.h"

/* ---- the pool of stacks -------------------------------------------------- */

struct stack_key {
	const uint32_t *fr;
	uint32_t nr;
	const uint32_t *all;
};

static bool stack_eq(const void *entry, const void *key)
{
	const struct cstack *e = entry;
	const struct stack_key *k = key;

	return e->nr == k->nr && !memcmp(k->all + e->off, k->fr, k->nr * sizeof(uint32_t));
}

/* The pool id of these frames (innermost first), made on first sight; CHAINS_NONE on ENOMEM. */
static uint32_t stack_id(struct chains *c, const uint32_t *fr, uint32_t nr)
{
	struct stack_key k = { fr, nr, c->frames };
	uint64_t h = hash__bytes(fr, nr * sizeof(uint32_t), 0x5eed);
	struct cstack *e = htab__find(&c->stacks, h, stack_eq, &k);
	bool added;

	if (e)
		return (uint32_t)(e - (struct cstack *)htab__at(&c->stacks, 0));
	if (vec__reserve((void **)&c->frames, &c->capframes, c->nframes + nr, sizeof(uint32_t), 4096))
		return CHAINS_NONE;
	k.all = c->frames;
	e = htab__get(&c->stacks, h, stack_eq, &k, &added);
	if (!e)
		return CHAINS_NONE;
	e->off = (uint32_t)c->nframes;
	e->nr = nr;
	if (nr)
		memcpy(c->frames + c->nframes, fr, nr * sizeof(uint32_t));
	c->nframes += nr;
	return (uint32_t)(htab__n(&c->stacks) - 1);
}


const uint32_t *chains__stack(const struct chains *c, uint32_t stack, uint32_t *nr)
{
	const struct cstack *e = stack == CHAINS_NONE ? NULL : cstack_at(c, stack);
	uint32_t skip, n;

	if (!e) {
		*nr = 0;
		return NULL;
	}
	skip = e->blocking ? e->skip : 0;
	n = e->nr - skip;
	if (c->max_stack > 0 && n > (uint32_t)c->max_stack)
		n = (uint32_t)c->max_stack;
	*nr = n;
	return c->frames + e->off + skip;
}

/* ---- threads ------------------------------------------------------------- */

static bool thread_eq(const void *entry, const void *key)
{
	return ((const struct cthread *)entry)->pub.tid == *(const uint32_t *)key;
}

/* The index of thread tid (of process pid, when known), made on first sight; CHAINS_NONE on ENOMEM. */
static uint32_t thread_id(struct chains *c, uint32_t pid, uint32_t tid, uint32_t comm)
{
	uint64_t h = hash__mix(tid);
	struct cthread *t = htab__find(&c->threads, h, thread_eq, &tid);
	bool added;

	if (!t) {
		t = htab__get(&c->threads, h, thread_eq, &tid, &added);
		if (!t)
			return CHAINS_NONE;
		t->pub.tid = tid;
		t->pub.pid = pid;
		t->pend.stack = CHAINS_NONE;
		t->pend.waker = CHAINS_NONE;
		t->pend.waker_stack = CHAINS_NONE;
	}
	if (pid && !t->pub.pid)
		t->pub.pid = pid;
	if (comm)
		t->pub.comm = comm;
	return (uint32_t)(t - (struct cthread *)htab__at(&c->threads, 0));
}


/* ---- reading ------------------------------------------------------------- */

struct chains *chains__new(struct session *s, bool keep_sched, int max_stack)
{
	struct chains *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->s = s;
	c->keep_sched = keep_sched;
	c->max_stack = max_stack;
	c->ev_switch = session__event(s, OFFCPU_SWITCH_EVENT_NAME);
	c->ev_stack = session__event(s, OFFCPU_STACK_EVENT_NAME);
	c->switch_mode = c->ev_switch >= 0;
	c->st.switch_records = c->switch_mode;
	htab__init(&c->stacks, sizeof(struct cstack));
	htab__init(&c->rawids, sizeof(struct rawid));
	htab__init(&c->threads, sizeof(struct cthread));
	return c;
}

void chains__free(struct chains *c)
{
	if (!c)
		return;
	htab__free(&c->stacks);
	htab__free(&c->rawids);
	htab__free(&c->threads);
	free(c->frames);
	free(c->waits);
	free(c->samples);
	free(c->segs);
	free(c->hops);
	free(c);
}

static int push_wait(struct chains *c, const struct chain_wait *w)
{
	struct chain_wait *n = vec__push((void **)&c->waits, &c->nwaits, &c->capwaits, sizeof(*n));

	if (!n)
		return -ENOMEM;
	*n = *w;
	/* a record's place in the file: a thread's switch records come in the order it switched */
	n->order = c->switch_mode ? (uint32_t)(c->nwaits - 1) : 0;
	return 0;
}

/* A resolved sample's frames as a pool stack. */
static int sample_stack(struct chains *c, const struct rsample *rs, uint32_t *id)
{
	*id = rs->nr > 0 ? stack_id(c, rs->frames, (uint32_t)rs->nr) : CHAINS_NONE;
	return rs->nr > 0 && *id == CHAINS_NONE ? -ENOMEM : 0;
}

/*
 * How a wakeup came, from the waker's stack (innermost first): an
 * interrupt entry on it makes an interrupt's, a timer's when a timer
 * function is between the wakeup and that entry. Softirq work the task
 * did for itself (loopback's receive, process_backlog) is the task's: the
 * recorder books it so, and so does this.
 */
static enum chain_waker waker_kind(struct chains *c, uint32_t stack, bool irq)
{
	static const char *const timer_fns[] = {
		"hrtimer_wakeup", "__hrtimer_run_queues", "hrtimer_interrupt", "call_timer_fn",
		"__run_timers", "run_timer_softirq", "hrtimer_run_softirq", "process_timeout",
		"tick_nohz_handler", "tick_sched_timer",
	};
	static const char *const entries[] = {
		"asm_sysvec_", "asm_common_interrupt", "handle_softirqs", "__do_softirq",
		"el1h_64_irq", "el0t_64_irq",
	};
	const uint32_t *fr;
	uint32_t nr;

	/* innermost first: what the wakeup was part of, up to the interrupt's entry */
	fr = chains__stack(c, stack, &nr);
	for (uint32_t i = 0; i < nr; i++) {
		const struct frame *f = session__frame(c->s, fr[i]);

		if (!f || !f->sym)
			continue;
		if (!strcmp(f->sym, "process_backlog"))
			return CHAIN_WAKER_TASK;
		for (size_t k = 0; k < sizeof(timer_fns) / sizeof(timer_fns[0]); k++)
			if (!strcmp(f->sym, timer_fns[k]))
				return CHAIN_WAKER_TIMER;
		for (size_t k = 0; k < sizeof(entries) / sizeof(entries[0]); k++)
			if (!strncmp(f->sym, entries[k], strlen(entries[k])))
				return CHAIN_WAKER_IRQ;
	}
	return irq ? CHAIN_WAKER_IRQ : CHAIN_WAKER_TASK;
}

/* The gathered samples of t's last switch-in as a wait (a --wakeups recording). */
static int pend_flush(struct chains *c, uint32_t ti)
{
	struct cthread *t = cthread_at(c, ti);
	struct pend *p = &t->pend;
	struct chain_wait w = { .thread = ti, .stack = CHAINS_NONE, .waker = CHAINS_NONE,
				.waker_stack = CHAINS_NONE, .flags = CHAIN_WAIT_TARGET };
	int err = 0;

	if (p->has_off) {
		w.in = p->time;
		w.wake = p->has_delay && p->delay <= p->time ? p->time - p->delay : p->time;
		w.out = p->off <= w.wake ? w.wake - p->off : 0;
		w.state = p->state;
		w.stack = p->stack;
		if (p->flags & OFFCPU_RAW_IN_PROGRESS_START)
			w.flags |= CHAIN_WAIT_FROM_START;
		if (p->flags & OFFCPU_RAW_IN_PROGRESS_STOP)
			w.flags |= CHAIN_WAIT_TO_STOP;
		if (p->has_waker) {
			w.kind = p->kind;
			w.waker = p->waker;
			w.waker_stack = p->waker_stack;
		}
		err = push_wait(c, &w);
	} else if (p->has_delay && p->delay <= p->time) {
		/* a run-queue wait alone: a preemption (or a sleep left out) */
		w.in = p->time;
		w.out = w.wake = p->time - p->delay;
		w.state = p->delay_state == 'N' ? 'N' : 'R';
		w.stack = p->delay_stack;
		err = push_wait(c, &w);
	} else if (p->has_waker) {
		c->st.unjoined++;
	}
	memset(p, 0, sizeof(*p));
	p->stack = p->waker = p->waker_stack = CHAINS_NONE;
	return err;
}

/* offcpu-time, sched-delay and offcpu-wakeup samples of a --wakeups recording. */
static int add_legacy(struct chains *c, const struct rsample *rs, uint32_t ti)
{
	const struct perf_sample *ps = rs->s;
	const struct perf_evattr *a = ps->evattr;
	struct cthread *t = cthread_at(c, ti);
	struct pend *p = &t->pend;
	uint64_t joined = 0;
	int err;

	/* a sleep's run-queue wait, then its off-CPU wait: one switch-in (its time the first's) */
	if (a->is_offcpu && p->has_delay && !p->has_off && p->delay_state != 'R' &&
	    p->delay_state != 'N' && ps->time >= p->time &&
	    ps->time - p->time <= OFFCPU_SWITCH_IN_SPREAD_NS)
		joined = p->time;
	else if (a->is_wakeup && p->has_off && p->off_time == ps->time)
		joined = p->time;
	if (!joined && p->time != ps->time && (p->has_off || p->has_delay || p->has_waker)) {
		err = pend_flush(c, ti);
		if (err)
			return err;
		t = cthread_at(c, ti);
		p = &t->pend;
	}
	p->time = joined ? joined : ps->time;
	if (a->is_offcpu) {
		p->off_time = ps->time;
		if (!(rs->flags & OFFCPU_RAW_DIRECT) && rs->count != 1) {
			c->st.summed++;
			return 0;
		}
		p->has_off = true;
		p->off = ps->period;
		p->state = rs->state == 'D' ? 'D' : 'S';
		p->flags = rs->flags;
		return sample_stack(c, rs, &p->stack);
	}
	if (a->is_sched_delay) {
		p->has_delay = true;
		p->delay = ps->period;
		p->delay_state = rs->state;
		return sample_stack(c, rs, &p->delay_stack);
	}
	/* offcpu-wakeup: the waker of the interval just read */
	if (!p->has_off || p->has_waker || (rs->flags & OFFCPU_RAW_AGGREGATED)) {
		c->st.unjoined++;
		return 0;
	}
	p->has_waker = true;
	err = sample_stack(c, rs, &p->waker_stack);
	if (err)
		return err;
	if (rs->flags & OFFCPU_RAW_WAKER_IRQ) {
		p->kind = CHAIN_WAKER_IRQ; /* a timer's or not: told at chains__finish */
		return 0;
	}
	p->kind = CHAIN_WAKER_TASK;
	p->waker = thread_id(c, rs->waker_pid, rs->waker_tid, rs->waker_comm);
	return p->waker == CHAINS_NONE ? -ENOMEM : 0;
}

static bool rawid_eq(const void *entry, const void *key)
{
	return ((const struct rawid *)entry)->id == ((const struct rawid *)key)->id;
}

/* An offcpu-stack record: its id to the pool. */
static int add_stack(struct chains *c, const struct rsample *rs)
{
	struct rawid key = { 0, CHAINS_NONE }, *e;
	bool added;
	int err;

	if (!offcpu_payload__decode_stack(rs->s->raw, rs->s->raw_size, &key.id) || !key.id)
		return 0;
	e = htab__get(&c->rawids, hash__mix(key.id), rawid_eq, &key, &added);
	if (!e)
		return -ENOMEM;
	e->id = key.id;
	err = sample_stack(c, rs, &e->stack); /* the same id again (LRU): the last one */
	return err;
}

/* The pool stack of a recording's stack id, CHAINS_NONE when none or unknown. */
static uint32_t rawid_stack(struct chains *c, uint32_t id)
{
	struct rawid key = { id, 0 }, *e;

	if (!id)
		return CHAINS_NONE;
	e = htab__find(&c->rawids, hash__mix(id), rawid_eq, &key);
	return e ? e->stack : CHAINS_NONE;
}

/*
 * An offcpu-switch record: a wait of its thread. Its stack ids are the
 * recording's until chains__finish() (offcpu-stack records may follow).
 */
static int add_switch(struct chains *c, const struct rsample *rs, uint32_t ti)
{
	const struct perf_sample *ps = rs->s;
	struct offcpu_switch sw;
	struct chain_wait w = { .thread = ti, .in = ps->time, .waker = CHAINS_NONE };
	struct cthread *t;

	if (!offcpu_payload__decode_switch(ps->raw, ps->raw_size, &sw))
		return 0;
	w.out = sw.out <= ps->time ? sw.out : ps->time;
	w.wake = sw.wake >= w.out && sw.wake <= ps->time ? sw.wake : ps->time;
	w.stack = sw.stack;
	w.waker_stack = sw.waker_stack;
	w.state = sw.state;
	if (sw.flags & OFFCPU_SWITCH_TARGET)
		w.flags |= CHAIN_WAIT_TARGET;
	if (sw.flags & OFFCPU_SWITCH_FROM_START)
		w.flags |= CHAIN_WAIT_FROM_START;
	if (sw.flags & OFFCPU_SWITCH_TO_STOP)
		w.flags |= CHAIN_WAIT_TO_STOP;
	if (sw.flags & OFFCPU_SWITCH_WAKE_UNSEEN) {
		w.flags |= CHAIN_WAIT_WAKE_UNSEEN;
		c->st.wake_unseen++;
	}
	if (sw.waker_tid) {
		w.waker = thread_id(c, 0, sw.waker_tid, 0);
		if (w.waker == CHAINS_NONE)
			return -ENOMEM;
		w.kind = CHAIN_WAKER_TASK; /* or an interrupt's: told by its stack at chains__finish */
	} else if (sw.waker_stack) {
		w.kind = CHAIN_WAKER_IRQ;
	}
	t = cthread_at(c, ti);
	if ((sw.flags & OFFCPU_SWITCH_GAP) ||
	    (t->has_seq && sw.seq != t->last_seq + 1 && sw.state != 'N')) {
		w.flags |= CHAIN_WAIT_GAP;
		c->st.gaps++;
	}
	t->has_seq = true;
	t->last_seq = sw.seq;
	return push_wait(c, &w);
}

static int add_cpu(struct chains *c, const struct rsample *rs, uint32_t ti)
{
	struct csample *n = vec__push((void **)&c->samples, &c->nsamples, &c->capsamples, sizeof(*n));

	if (!n)
		return -ENOMEM;
	n->time = rs->s->time;
	n->thread = ti;
	c->st.cpu_samples++;
	return sample_stack(c, rs, &n->stack);
}

int chains__add(struct chains *c, const struct rsample *rs)
{
	const struct perf_sample *ps = rs->s;
	const struct perf_evattr *a = ps->evattr;
	bool offcpu_ev = a->is_offcpu || a->is_wakeup || a->is_sched_delay;
	struct cthread *t;
	uint32_t ti;

	if (rs->event == c->ev_stack)
		return add_stack(c, rs);
	if (c->switch_mode && offcpu_ev)
		return 0; /* the offcpu-switch records hold the same, for every thread */
	if (!offcpu_ev && rs->event != c->ev_switch && !a->is_time)
		return 0; /* another event: no time in it (chain-cpu-clock's attr is cpu-clock's) */
	ti = thread_id(c, ps->pid, ps->tid, rs->comm);
	if (ti == CHAINS_NONE)
		return -ENOMEM;
	t = cthread_at(c, ti);
	if (!t->first_time || ps->time < t->first_time)
		t->first_time = ps->time;
	if (ps->time > t->last_time)
		t->last_time = ps->time;
	if (rs->event == c->ev_switch)
		return add_switch(c, rs, ti);
	if (offcpu_ev)
		return add_legacy(c, rs, ti);
	return add_cpu(c, rs, ti);
}

/* ---- putting in order ---------------------------------------------------- */

/*
 * A thread's waits in the order it had them: its switch records' (the
 * file's), not their times, which can disagree (see waits_monotonic);
 * --wakeups samples (order 0) by their times.
 */
static int cmp_wait(const void *a, const void *b)
{
	const struct chain_wait *x = a, *y = b;

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->order != y->order)
		return x->order < y->order ? -1 : 1;
	if (x->out != y->out)
		return x->out < y->out ? -1 : 1;
	return x->in < y->in ? -1 : x->in > y->in;
}

static int cmp_sample(const void *a, const void *b)
{
	const struct csample *x = a, *y = b;

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	return x->time < y->time ? -1 : x->time > y->time;
}

/*
 * Each thread's waits (in order) made to follow one another in time: a
 * wait that starts before the one before it has ended starts at its end.
 * The recorder times switches by the run queue's clock made monotonic
 * time per CPU, which can be off by what the run queue's clock lagged
 * (the kernel skips its update at a switch right after a wakeup that
 * preempts): two switches of a thread then disagree by that much. Such an
 * overlap, tens of us, is one thread's time counted twice; left in, the
 * walk (which finds a thread's wait by its start, wait_before) would
 * step over the later wait whole and book it as time on the CPU.
 */
static void waits_monotonic(struct chains *c)
{
	for (size_t i = 1; i < c->nwaits; i++) {
		const struct chain_wait *p = &c->waits[i - 1];
		struct chain_wait *w = &c->waits[i];

		if (w->thread != p->thread || w->out >= p->in)
			continue;
		w->out = p->in;
		if (w->wake < w->out)
			w->wake = w->out;
		if (w->in < w->wake)
			w->in = w->wake;
	}
}

/* The pool's frames renamed, each stack's scheduler frames counted. */
static void stacks_rename(struct chains *c, const uint32_t *remap, uint32_t nremap)
{
	if (remap)
		for (size_t i = 0; i < c->nframes; i++)
			if (c->frames[i] < nremap)
				c->frames[i] = remap[c->frames[i]];
	for (size_t i = 0; i < htab__n(&c->stacks); i++) {
		struct cstack *e = htab__at(&c->stacks, i);
		uint32_t k = 0;

		while (!c->keep_sched && k + 1 < e->nr) {
			const struct frame *f = session__frame(c->s, c->frames[e->off + k]);

			if (!f || !f->kernel || !f->sym || f->inlined || !sched_frame__is(f->sym))
				break;
			k++;
		}
		e->skip = k;
	}
}

/* Stack ids of the recording to the pool's, wakers' kinds from their stacks. */
static void waits_resolve(struct chains *c)
{
	for (size_t i = 0; i < c->nwaits; i++) {
		struct chain_wait *w = &c->waits[i];
		struct cstack *e;

		if (c->switch_mode) {
			w->stack = rawid_stack(c, w->stack);
			w->waker_stack = rawid_stack(c, w->waker_stack);
		}
		if ((w->flags & CHAIN_WAIT_FROM_START) && w->out < c->file_first) {
			/* in progress when the recording started: from its start on */
			w->out = c->file_first < w->in ? c->file_first : w->in;
			if (w->wake < w->out)
				w->wake = w->out;
		}
		e = cstack_at(c, w->stack);
		if (e)
			e->blocking = true;
		if (w->kind == CHAIN_WAKER_IRQ) {
			w->kind = waker_kind(c, w->waker_stack, true);
			if (w->kind == CHAIN_WAKER_TASK && w->waker == CHAINS_NONE)
				w->kind = CHAIN_WAKER_IRQ; /* softirq work of a task not named */
		} else if (w->kind == CHAIN_WAKER_TASK && c->switch_mode) {
			w->kind = waker_kind(c, w->waker_stack, false);
		}
		if (w->kind == CHAIN_WAKER_TASK && w->waker != CHAINS_NONE &&
		    !cthread_at(c, w->waker)->pub.tid)
			w->kind = CHAIN_WAKER_IRQ; /* the idle task: an interrupt came upon it */
		if (w->kind != CHAIN_WAKER_TASK && w->state != 'R')
			w->waker = CHAINS_NONE;
	}
}

/* Each thread's range of waits and samples, what of its timeline is known. */
static void threads_index(struct chains *c)
{
	size_t i = 0, j = 0;

	for (uint32_t ti = 0; ti < htab__n(&c->threads); ti++) {
		struct cthread *t = cthread_at(c, ti);
		struct session_thread sth;

		t->w0 = i;
		while (i < c->nwaits && c->waits[i].thread == ti)
			i++;
		t->nw = i - t->w0;
		t->s0 = j;
		while (j < c->nsamples && c->samples[j].thread == ti)
			j++;
		t->ns = j - t->s0;
		t->pub.known = c->switch_mode || t->nw || t->ns;
		for (size_t k = t->w0; k < t->w0 + t->nw && !t->pub.target; k++)
			t->pub.target = c->waits[k].flags & CHAIN_WAIT_TARGET;
		t->pub.from = c->file_first;
		t->pub.to = c->file_last;
		/* threads are keyed by tid here: its latest life (no start matches ~0) */
		if (session__thread(c->s, t->pub.tid, UINT64_MAX, &sth)) {
			if (sth.fork_time > t->pub.from && sth.fork_time <= t->first_time)
				t->pub.from = sth.fork_time;
			if (!t->pub.comm)
				t->pub.comm = sth.comm;
			if (!t->pub.pid)
				t->pub.pid = sth.pid;
		}
		if (t->nw && c->waits[t->w0].state == 'N')
			t->pub.from = c->waits[t->w0].out;
		c->st.waits += t->nw;
	}
	c->st.threads = htab__n(&c->threads);
}

int chains__finish(struct chains *c, const uint32_t *remap, uint32_t nremap)
{
	int err = 0;

	for (uint32_t ti = 0; ti < htab__n(&c->threads) && !err; ti++)
		err = pend_flush(c, ti);
	if (err)
		return err;
	if (!session__time_span(c->s, &c->file_first, &c->file_last))
		c->file_first = c->file_last = 0;
	stacks_rename(c, remap, nremap);
	waits_resolve(c);
	if (c->nwaits) /* qsort takes no NULL array, even empty */
		qsort(c->waits, c->nwaits, sizeof(*c->waits), cmp_wait);
	waits_monotonic(c);
	if (c->nsamples)
		qsort(c->samples, c->nsamples, sizeof(*c->samples), cmp_sample);
	threads_index(c);
	return 0;
}

void chains__stats(const struct chains *c, struct chains_stats *st)
{
	*st = c->st;
}

size_t chains__nr_threads(const struct chains *c)
{
	return htab__n(&c->threads);
}

const struct chain_thread *chains__thread(const struct chains *c, uint32_t i)
{
	const struct cthread *t = cthread_at(c, i);

	return t ? &t->pub : NULL;
}

size_t chains__nr_waits(const struct chains *c)
{
	return c->nwaits;
}

const struct chain_wait *chains__wait(const struct chains *c, size_t i)
{
	return i < c->nwaits ? &c->waits[i] : NULL;
}

/* ---- a recording read into a model ----------------------------------------- */

static int read_sample(void *ctx, const struct rsample *rs)
{
	return chains__add(ctx, rs);
}

int chains__read(const struct report_opts *o, const struct msg_sink *ms, struct session **sp,
		 struct chains **cp, char *err, size_t errlen)
{
	struct chains_stats st;
	struct session *s;
	struct chains *c = NULL;
	const uint32_t *remap;
	uint32_t nremap;
	int ret = -EINVAL;

	err[0] = 0;
	s = report__open(o, true, ms, err, errlen);
	if (!s)
		return ret;
	if (session__event(s, OFFCPU_SWITCH_EVENT_NAME) < 0 &&
	    session__event(s, OFFCPU_WAKEUP_EVENT_NAME) < 0) {
		snprintf(err, errlen, "%s has no %s records: record with --chains (or --wakeups --off-cpu-thresh 0)",
			 o->input, OFFCPU_SWITCH_EVENT_NAME);
		goto cleanup;
	}
	ret = -ENOMEM;
	c = chains__new(s, o->keep_sched_frames, o->max_stack);
	if (!c)
		goto cleanup;
	ret = session__run(s, read_sample, c);
	if (ret) {
		snprintf(err, errlen, "%s: %s", o->input, session__error(s));
		goto cleanup;
	}
	remap = session__remap(s, &nremap);
	ret = chains__finish(c, remap, nremap);
	if (ret)
		goto cleanup;
	chains__stats(c, &st);
	if (st.summed)
		msg__say(ms, MSG_NOTE, "%" PRIu64 " summed %s samples could not be placed in time, left out: record with --chains (or --off-cpu-thresh 0)",
			 st.summed, OFFCPU_EVENT_NAME);
	if (st.unjoined)
		msg__say(ms, MSG_NOTE, "%" PRIu64 " %s samples without their interval, left out",
			 st.unjoined, OFFCPU_WAKEUP_EVENT_NAME);
	*sp = s;
	*cp = c;
	return 0;
cleanup:
	chains__free(c);
	session__free(s);
	return ret;
}

