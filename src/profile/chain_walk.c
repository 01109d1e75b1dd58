// SPDX-License-Identifier: GPL-2.0-only
/*
 * Wait chains (profile/chains.h): which waits are analysed, the walk of one
 * wait back through its wakers into segments, and the walks as a profile.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfdata/offcpu_payload.h"
#include "perfdata/perf_reader.h"
#include "profile/chains_int.h"
#include "profile/profile.h"
#include "util/bsearch.h"
#include "util/vec.h"

/* ---- which waits ---------------------------------------------------------- */

/* Whether thread t's waits are asked for: named by a filter, else a target's. */
static bool thread_asked(const struct chains *c, const struct cthread *t,
			 const struct report_opts *o)
{
	bool named = o->pids.n || o->tids.n || o->nr_comms;

	if (!named)
		return t->pub.target;
	if (o->pids.n && !id_list__has(&o->pids, t->pub.pid))
		return false;
	if (o->tids.n && !id_list__has(&o->tids, t->pub.tid))
		return false;
	if (o->nr_comms) {
		const char *comm = session__comm(c->s, t->pub.comm);

		for (size_t i = 0; i < o->nr_comms; i++)
			if (!strcmp(o->comms[i], comm))
				return true;
		return false;
	}
	return true;
}

static bool wait_asked(const struct chain_wait *w, const struct report_opts *o)
{
	if (w->state != 'S' && w->state != 'D')
		return false;
	if (o->time_start && w->wake < o->time_start)
		return false;
	return !o->time_end || w->wake <= o->time_end;
}

long chains__select(const struct chains *c, const struct report_opts *o, uint64_t min_ns,
		    struct chain_sel **out)
{
	struct chain_sel *v = NULL;
	size_t n = 0, cap = 0;

	for (uint32_t ti = 0; ti < htab__n(&c->threads); ti++) {
		const struct cthread *t = cthread_at(c, ti);

		if (!thread_asked(c, t, o))
			continue;
		for (size_t i = t->w0; i < t->w0 + t->nw; i++) {
			const struct chain_wait *w = &c->waits[i];
			size_t last = i;
			struct chain_sel *sel;

			if (!wait_asked(w, o))
				continue;
			/* the same stack again after a moment on the CPU: one wait */
			while (last + 1 < t->w0 + t->nw) {
				const struct chain_wait *a = &c->waits[last], *b = &c->waits[last + 1];

				if (!wait_asked(b, o) || b->stack != w->stack || b->out < a->in ||
				    b->out - a->in > CHAINS_MERGE_NS)
					break;
				last++;
			}
			if (c->waits[last].wake - w->out >= min_ns) {
				sel = vec__push((void **)&v, &n, &cap, sizeof(*sel));
				if (!sel) {
					free(v);
					return -ENOMEM;
				}
				sel->first = i;
				sel->last = last;
				sel->ns = c->waits[last].wake - w->out;
			}
			i = last;
		}
	}
	*out = v;
	return (long)n;
}

/* ---- the walk -------------------------------------------------------------- */

const char *chain_seg__tag(enum chain_seg_kind k)
{
	static const char *const tags[CHAIN_SEG__NR] = {
		[CHAIN_SEG_TIMER] = "[timer]",	       [CHAIN_SEG_IRQ] = "[irq]",
		[CHAIN_SEG_IO] = "[io]",	       [CHAIN_SEG_NO_WAKER] = "[unknown]",
		[CHAIN_SEG_WAKE_UNSEEN] = "[wakeup unseen]",
		[CHAIN_SEG_UNKNOWN] = "[unknown]",     [CHAIN_SEG_DEPTH] = "[depth]",
		[CHAIN_SEG_CYCLE] = "[cycle]",	       [CHAIN_SEG_TRUNCATED] = "[truncated]",
		[CHAIN_SEG_RUNQ] = "[run queue]",
	};

	return k < CHAIN_SEG__NR ? tags[k] : NULL;
}

/* A hop below parent: thread ti with stack. CHAINS_NONE (c->err set) on ENOMEM. */
static uint32_t hop_new(struct chains *c, uint32_t parent, uint32_t ti, uint32_t stack)
{
	struct chain_hop *h = vec__push((void **)&c->hops, &c->nhops, &c->caphops, sizeof(*h));

	if (!h) {
		c->err = -ENOMEM;
		return CHAINS_NONE;
	}
	h->parent = parent;
	h->thread = ti;
	h->stack = stack;
	h->depth = parent == CHAINS_NONE ? 0 : c->hops[parent].depth + 1;
	return (uint32_t)(c->nhops - 1);
}

static void seg_add(struct chains *c, enum chain_seg_kind kind, uint64_t start, uint64_t end,
		    uint32_t hop, bool sampled, uint32_t preempted_by)
{
	struct chain_seg *s;

	if (c->err || start >= end)
		return;
	s = vec__push((void **)&c->segs, &c->nsegs, &c->capsegs, sizeof(*s));
	if (!s) {
		c->err = -ENOMEM;
		return;
	}
	*s = (struct chain_seg){ start, end, hop, (uint8_t)kind, sampled, preempted_by };
}

/* A segment of thread ti with its own hop (parent: the path to it). */
static void seg_new(struct chains *c, enum chain_seg_kind kind, uint64_t start, uint64_t end,
		    uint32_t parent, uint32_t ti, uint32_t stack)
{
	uint32_t h;

	if (start >= end)
		return;
	h = hop_new(c, parent, ti, stack);
	if (h != CHAINS_NONE)
		seg_add(c, kind, start, end, h, false, CHAINS_NONE);
}

/* A time looked up among one thread's waits or samples (from base on). */
struct at_key {
	const struct chains *c;
	size_t base;
	uint64_t time;
};

static bool wait_not_before(const void *ctx, size_t i)
{
	const struct at_key *k = ctx;

	return k->c->waits[k->base + i].out >= k->time;
}

static bool sample_after_time(const void *ctx, size_t i)
{
	const struct at_key *k = ctx;

	return k->c->samples[k->base + i].time > k->time;
}

/* The index of t's last wait that started before time, or SIZE_MAX. */
static size_t wait_before(const struct chains *c, const struct cthread *t, uint64_t time)
{
	struct at_key k = { .c = c, .base = t->w0, .time = time };
	size_t n = bsearch_first(t->nw, wait_not_before, &k);

	return n ? t->w0 + n - 1 : SIZE_MAX;
}

/* The index of t's first CPU sample after time. */
static size_t sample_after(const struct chains *c, const struct cthread *t, uint64_t time)
{
	struct at_key k = { .c = c, .base = t->s0, .time = time };

	return t->s0 + bsearch_first(t->ns, sample_after_time, &k);
}

/*
 * Thread ti ran in [a, b): the time goes to its CPU samples in it, each
 * up to the midpoints with its neighbours (runs of one stack as one
 * segment), latest first; with none, to `fallback` (its stack at the
 * wakeup that ends the window, or at its next switch-out).
 */
static void on_cpu(struct chains *c, uint32_t ti, uint64_t a, uint64_t b, uint32_t parent,
		   uint32_t fallback)
{
	const struct cthread *t = cthread_at(c, ti);
	size_t first = sample_after(c, t, a), end = sample_after(c, t, b);
	uint64_t hi = b;

	if (first == end) {
		uint32_t h = hop_new(c, parent, ti, fallback);

		if (h != CHAINS_NONE)
			seg_add(c, CHAIN_SEG_ON_CPU, a, b, h, false, CHAINS_NONE);
		return;
	}
	for (size_t k = end; k-- > first && !c->err;) {
		uint32_t stack = c->samples[k].stack, h;
		uint64_t lo;

		if (c->nsegs >= CHAINS_MAX_SEGS) { /* the rest as one: see walk() */
			c->truncated = true;
			seg_new(c, CHAIN_SEG_TRUNCATED, a, hi, parent, ti, CHAINS_NONE);
			return;
		}

		while (k > first && c->samples[k - 1].stack == stack)
			k--;
		lo = k > first ? c->samples[k - 1].time + (c->samples[k].time - c->samples[k - 1].time) / 2 : a;
		h = hop_new(c, parent, ti, stack);
		if (h != CHAINS_NONE)
			seg_add(c, CHAIN_SEG_ON_CPU, lo, hi, h, true, CHAINS_NONE);
		hi = lo;
	}
}

static void walk(struct chains *c, uint32_t ti, uint64_t lo, uint64_t hi, uint32_t parent,
		 uint32_t at_hi_stack);

/*
 * Thread ti was asleep in wait w over [a, b) (self: its hop, with w's
 * stack): the time goes on to w's waker over that window, or ends here
 * tagged by what woke it.
 */
static void asleep(struct chains *c, const struct chain_wait *w, uint64_t a, uint64_t b,
		   uint32_t self)
{
	enum chain_seg_kind end = w->flags & CHAIN_WAIT_WAKE_UNSEEN ? CHAIN_SEG_WAKE_UNSEEN
								 : CHAIN_SEG_NO_WAKER;
	bool seen = false;

	if (self == CHAINS_NONE)
		return;
	switch (w->kind) {
	case CHAIN_WAKER_TASK:
		if (w->waker == CHAINS_NONE)
			break;
		for (unsigned int i = 0; i < c->npath; i++)
			seen |= c->path[i] == w;
		if (seen) {
			end = CHAIN_SEG_CYCLE;
		} else if (c->hops[self].depth >= CHAINS_MAX_DEPTH) {
			end = CHAIN_SEG_DEPTH;
		} else {
			c->path[c->npath++] = w;
			walk(c, w->waker, a, b, self, w->waker_stack);
			c->npath--;
			return;
		}
		break;
	case CHAIN_WAKER_TIMER:
		end = CHAIN_SEG_TIMER;
		break;
	case CHAIN_WAKER_IRQ:
		end = w->state == 'D' ? CHAIN_SEG_IO : CHAIN_SEG_IRQ;
		break;
	}
	seg_add(c, end, a, b, self, false, CHAINS_NONE);
}

/*
 * What thread ti did over [lo, hi), walked back from hi (it woke its
 * parent's thread at hi, with stack at_hi_stack), into segments under
 * parent. Every step ends lower than it started: the loop ends.
 */
static void walk(struct chains *c, uint32_t ti, uint64_t lo, uint64_t hi, uint32_t parent,
		 uint32_t at_hi_stack)
{
	const struct cthread *t = cthread_at(c, ti);
	uint64_t at = hi;

	if (!t->pub.known) {
		seg_new(c, CHAIN_SEG_UNKNOWN, lo, hi, parent, ti, CHAINS_NONE);
		return;
	}
	while (at > lo && !c->err) {
		size_t j = wait_before(c, t, at);
		const struct chain_wait *w = j != SIZE_MAX ? &c->waits[j] : NULL;
		size_t k = j == SIZE_MAX ? t->w0 : j + 1;
		const struct chain_wait *next = k < t->w0 + t->nw ? &c->waits[k] : NULL;
		uint64_t from, a;

		if (c->truncated || c->nsegs >= CHAINS_MAX_SEGS) {
			c->truncated = true;
			seg_new(c, CHAIN_SEG_TRUNCATED, lo, at, parent, ti, CHAINS_NONE);
			return;
		}
		if (w && at <= w->in) {
			if (at > w->wake) { /* on a run queue */
				a = w->wake > lo ? w->wake : lo;
				seg_new(c, CHAIN_SEG_RUNQ, a, at, parent, ti, w->stack);
				if (!c->err && w->state == 'R' && c->nsegs)
					c->segs[c->nsegs - 1].preempted_by = w->waker;
			} else { /* asleep */
				a = w->out > lo ? w->out : lo;
				asleep(c, w, a, at, hop_new(c, parent, ti, w->stack));
			}
			at = a;
			continue;
		}
		if (!w && next && next->state == 'N' && next->waker != CHAINS_NONE &&
		    at <= next->out) {
			/* before it was created: its creator's time */
			uint32_t h = hop_new(c, parent, ti, CHAINS_NONE);

			if (h != CHAINS_NONE && c->hops[h].depth < CHAINS_MAX_DEPTH)
				walk(c, next->waker, lo, at, h, next->waker_stack);
			else if (h != CHAINS_NONE)
				seg_add(c, CHAIN_SEG_DEPTH, lo, at, h, false, CHAINS_NONE);
			return;
		}
		from = w ? w->in : t->pub.from;
		if (at <= from || (next && (next->flags & CHAIN_WAIT_GAP))) {
			/* before its timeline is known, or records of it lost */
			a = at > from && from > lo ? from : lo;
			seg_new(c, CHAIN_SEG_UNKNOWN, a, at, parent, ti, CHAINS_NONE);
			at = a;
			continue;
		}
		a = from > lo ? from : lo;
		on_cpu(c, ti, a, at, parent, at == hi ? at_hi_stack : next ? next->stack : CHAINS_NONE);
		at = a;
	}
}

int chains__walk(struct chains *c, const struct chain_sel *sel, struct chain_walk *out)
{
	const struct chain_wait *first = &c->waits[sel->first];
	uint32_t ti = first->thread, root;

	c->nsegs = c->nhops = 0;
	c->npath = 0;
	c->truncated = false;
	c->err = 0;
	root = hop_new(c, CHAINS_NONE, ti, first->stack);
	for (size_t k = sel->last + 1; k-- > sel->first && !c->err;) {
		const struct chain_wait *w = &c->waits[k];

		if (k < sel->last) { /* its own time between two of the merged waits */
			const struct chain_wait *n = &c->waits[k + 1];

			if (n->out > w->in) /* its own stacks, not under its wait's */
				on_cpu(c, ti, w->in, n->out, CHAINS_NONE, n->stack);
			if (w->in > w->wake)
				seg_add(c, CHAIN_SEG_RUNQ, w->wake, w->in, root, false, CHAINS_NONE);
		}
		c->npath = 0;
		asleep(c, w, w->out, w->wake, root);
	}
	if (c->err)
		return c->err;
	*out = (struct chain_walk){ first->out, c->waits[sel->last].wake, ti, c->segs, c->nsegs,
				    c->hops, c->nhops };
	return 0;
}

bool chain_walk__tiles(const struct chain_walk *w)
{
	uint64_t at = w->end;

	for (size_t i = 0; i < w->nsegs; i++) {
		if (w->segs[i].end != at || w->segs[i].start >= w->segs[i].end)
			return false;
		at = w->segs[i].start;
	}
	return at == w->start && (w->nsegs || w->start == w->end);
}

/* ---- chains as a profile ----------------------------------------------------- */

int chains__marker(struct chains *c, uint32_t ti, enum by_key by, uint32_t *id)
{
	const struct cthread *t = cthread_at(c, ti);
	char name[96];
	const char *comm = t && t->pub.comm ? session__comm(c->s, t->pub.comm) : "[unknown]";

	if (by == BY_TID && t)
		snprintf(name, sizeof(name), "[woken by %s %u/%u]", comm, t->pub.pid, t->pub.tid);
	else if (by == BY_PID && t)
		snprintf(name, sizeof(name), "[woken by %s %u]", comm, t->pub.pid);
	else
		snprintf(name, sizeof(name), "[woken by %s]", comm);
	return session__label_frame(c->s, name, id);
}

/* Frames of a path, root first, as it is built. */
struct pathbuf {
	uint32_t *f;
	size_t n, cap;
};

static int path_push(struct pathbuf *p, uint32_t id)
{
	uint32_t *e = vec__push((void **)&p->f, &p->n, &p->cap, sizeof(*e));

	if (!e)
		return -ENOMEM;
	*e = id;
	return 0;
}

/* Hop h's part of a path, root first: its marker (not the root's), its stack outermost first. */
static int path_hop(struct chains *c, const struct report_opts *o, const struct chain_walk *w,
		    uint32_t h, struct pathbuf *p)
{
	const struct chain_hop *hop = &w->hops[h];
	const uint32_t *fr;
	uint32_t nr, id;
	int err = 0;

	if (hop->parent != CHAINS_NONE) {
		err = path_hop(c, o, w, hop->parent, p);
		if (!err)
			err = chains__marker(c, hop->thread, o->waker_by, &id);
		if (!err)
			err = path_push(p, id);
	}
	fr = chains__stack(c, hop->stack, &nr);
	for (uint32_t i = nr; i-- > 0 && !err;)
		err = path_push(p, fr[i]);
	return err;
}

/* One segment's path into p (root first), then reversed into rs's frames. */
static int seg_sample(struct chains *c, const struct report_opts *o, const struct chain_walk *w,
		      const struct chain_seg *sg, struct pathbuf *p)
{
	const char *tag = chain_seg__tag(sg->kind);
	uint32_t id;
	int err;

	p->n = 0;
	err = path_hop(c, o, w, sg->hop, p);
	if (!err && tag) {
		err = session__label_frame(c->s, tag, &id);
		if (!err)
			err = path_push(p, id);
	}
	for (size_t i = 0, j = p->n; !err && i < j / 2; i++) {
		uint32_t v = p->f[i];

		p->f[i] = p->f[j - 1 - i];
		p->f[j - 1 - i] = v;
	}
	return err;
}

int chains__profile(struct chains *c, const struct report_opts *o, uint64_t min_ns, int ev,
		    unsigned int keep, struct profile **out, struct chains_totals *tot)
{
	struct chain_sel *sel = NULL;
	struct pathbuf pb = { 0 };
	struct profile *p;
	long n;
	int err = 0;

	memset(tot, 0, sizeof(*tot));
	if (ev < 0)
		ev = session__event(c->s, OFFCPU_EVENT_NAME);
	if (ev < 0)
		ev = 0;
	p = profile__new(perf_reader__nr_attrs(session__reader(c->s)), keep);
	if (!p)
		return -ENOMEM;
	n = chains__select(c, o, min_ns, &sel);
	if (n < 0)
		err = (int)n;
	for (long i = 0; i < n && !err; i++) {
		const struct chain_wait *first = &c->waits[sel[i].first];
		const struct cthread *t = cthread_at(c, first->thread);
		struct chain_walk w;

		err = chains__walk(c, &sel[i], &w);
		if (err)
			break;
		tot->waits++;
		tot->intervals += sel[i].last - sel[i].first + 1;
		tot->ns += w.end - w.start;
		tot->segs += w.nsegs;
		tot->bad += !chain_walk__tiles(&w);
		tot->truncated += c->truncated;
		for (size_t k = 0; k < w.nsegs && !err; k++) {
			const struct chain_seg *sg = &w.segs[k];
			struct perf_sample ps = { .evattr = perf_reader__attr(session__reader(c->s), ev),
						  .pid = t->pub.pid, .tid = t->pub.tid,
						  .time = w.end, .period = sg->end - sg->start };
			struct rsample rs = { .s = &ps, .event = ev, .comm = t->pub.comm,
					      .state = first->state, .count = 1 };

			err = seg_sample(c, o, &w, sg, &pb);
			if (err)
				break;
			rs.nr = (int)pb.n;
			rs.frames = pb.f;
			err = profile__add(p, &rs);
		}
	}
	free(sel);
	free(pb.f);
	if (err) {
		profile__free(p);
		return err;
	}
	*out = p;
	return 0;
}
