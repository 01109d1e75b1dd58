// SPDX-License-Identifier: GPL-2.0-only
/* Off-CPU intervals from sched:sched_switch samples (see switches.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfdata/offcpu_payload.h"
#include "profile/switches.h"
#include "util/hash.h"
#include "util/htab.h"
#include "util/vec.h"

#define SWITCH_EVENT "sched:sched_switch"

/*
 * sched_switch's RAW data, as the kernel has laid it out since 4.x (the
 * format file of the event says the same): the common fields (8 bytes),
 * char prev_comm[16], pid_t prev_pid, int prev_prio, long prev_state,
 * char next_comm[16], pid_t next_pid, int next_prio. The first sample is
 * checked (its prev_pid is the sample's own thread) before any is read.
 */
#define RAW_MIN 64
#define RAW_PREV_PID 24
#define RAW_PREV_STATE 32
#define RAW_NEXT_PID 56

/* prev_state as the tracepoint reports it: one bit per state, preemption above them */
#define STATE_S 0x1
#define STATE_D 0x2
#define STATE_IDLE 0x80 /* TASK_IDLE: uninterruptible, not counted in the load */
#define STATE_BITS 0xff

/* A thread's wait since its last switch-out, with the stack it left from. */
struct pending {
	uint32_t tid;
	bool open;
	char state;
	struct perf_sample ps; /* the switch-out's: pid, tid, cpu, time */
	uint32_t comm;
	uint64_t thread_start;
	uint32_t nr;
	uint32_t *frames, *locs;
	size_t cap;
};

struct switches {
	int event;            /* attr index of sched:sched_switch */
	int layout;           /* 0 not checked yet, 1 as above, -1 not: samples passed on as they are */
	struct perf_evattr attr;
	struct htab pend;     /* struct pending, by tid */
	uint64_t switches, waits, exact, next_event, at_end;
	uint64_t unreadable;  /* switch samples without their RAW data: no wait taken */
	char from[256];
};

static bool pend_eq(const void *entry, const void *key)
{
	return ((const struct pending *)entry)->tid == *(const uint32_t *)key;
}

struct switches *switches__new(const struct session *s, int *err)
{
	const struct perf_reader *r = session__reader(s);
	struct switches *w;
	int ev = -1;

	*err = 0;
	for (int i = 0; i < perf_reader__nr_attrs(r); i++) {
		const struct perf_evattr *a = perf_reader__attr(r, i);

		if (a->is_offcpu)
			return NULL; /* off-CPU samples of its own: nothing to derive */
		if (!strcmp(a->name, SWITCH_EVENT) && (a->attr.sample_type & PERF_SAMPLE_RAW) &&
		    (a->attr.sample_type & PERF_SAMPLE_TIME) && ev < 0)
			ev = i;
	}
	if (ev < 0)
		return NULL;
	w = calloc(1, sizeof(*w));
	if (!w) {
		*err = -ENOMEM;
		return NULL;
	}
	w->event = ev;
	w->attr = *perf_reader__attr(r, ev);
	snprintf(w->attr.name, sizeof(w->attr.name), "%s", OFFCPU_EVENT_NAME);
	w->attr.is_offcpu = true;
	w->attr.is_time = true;
	htab__init(&w->pend, sizeof(struct pending));
	return w;
}

void switches__free(struct switches *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < htab__n(&w->pend); i++) {
		struct pending *p = htab__at(&w->pend, i);

		free(p->frames);
		free(p->locs);
	}
	htab__free(&w->pend);
	free(w);
}

/* How a wait's end was found, each counted for the note. */
enum end_kind { END_SWITCH_IN, END_NEXT_EVENT, END_FILE };

/* The off-CPU interval of p, ended at end, as an offcpu-time sample to cb. */
static int emit(struct switches *w, struct pending *p, uint64_t end, enum end_kind kind,
		session_sample_cb cb, void *ctx)
{
	struct perf_sample ps = p->ps;
	struct rsample rs = { 0 };

	p->open = false;
	if (end <= p->ps.time)
		return 0;
	if (kind == END_SWITCH_IN)
		w->exact++;
	else if (kind == END_NEXT_EVENT)
		w->next_event++;
	else
		w->at_end++;
	ps.evattr = &w->attr;
	ps.time = end;
	ps.period = end - p->ps.time;
	ps.nr_callchain = 0;
	ps.callchain = NULL;
	ps.raw = NULL;
	ps.raw_size = 0;
	memset(&ps.off, 0, sizeof(ps.off));
	ps.off.state = p->state;
	ps.off.count = 1;
	rs.s = &ps;
	rs.event = w->event;
	rs.comm = p->comm;
	rs.thread_start = p->thread_start;
	rs.state = p->state;
	rs.count = 1;
	rs.nr = (int)p->nr;
	rs.frames = p->frames;
	rs.locs = p->locs;
	rs.stack = 0; /* session stack ids hold within a run: this may be after it */
	w->waits++;
	return cb(ctx, &rs);
}

/* tid's open wait, if any, ended at t: exactly (its switch-in), or at the latest (its next event). */
static int end_wait(struct switches *w, uint32_t tid, uint64_t t, bool exact, session_sample_cb cb,
		    void *ctx)
{
	struct pending *p = htab__find(&w->pend, hash__mix(tid), pend_eq, &tid);

	if (!p || !p->open)
		return 0;
	return emit(w, p, t, exact ? END_SWITCH_IN : END_NEXT_EVENT, cb, ctx);
}

/* rs's thread leaves the CPU asleep (state): its wait starts, with rs's stack. */
static int start_wait(struct switches *w, const struct rsample *rs, char state)
{
	uint32_t tid = rs->s->tid, nr = rs->nr > 0 ? (uint32_t)rs->nr : 0;
	struct pending *p;
	bool added;

	p = htab__get(&w->pend, hash__mix(tid), pend_eq, &tid, &added);
	if (!p)
		return -ENOMEM;
	if (added)
		p->tid = tid;
	if (nr > p->cap) {
		uint32_t *f = realloc(p->frames, nr * sizeof(*f));
		uint32_t *l = f ? realloc(p->locs, nr * sizeof(*l)) : NULL;

		if (f)
			p->frames = f;
		if (!l)
			return -ENOMEM;
		p->locs = l;
		p->cap = nr;
	}
	if (nr) {
		memcpy(p->frames, rs->frames, nr * sizeof(*p->frames));
		memcpy(p->locs, rs->locs, nr * sizeof(*p->locs));
	}
	p->nr = nr;
	p->ps = *rs->s;
	p->comm = rs->comm;
	p->thread_start = rs->thread_start;
	p->state = state;
	p->open = true;
	return 0;
}

static uint64_t raw_u64(const struct perf_sample *s, size_t off, size_t len)
{
	uint64_t v = 0;

	memcpy(&v, (const char *)s->raw + off, len); /* little-endian, as the file */
	return v;
}

/* 'S' or 'D' for a thread that left the CPU asleep, 0 for one preempted or leaving for good. */
static char sleep_state(uint64_t st)
{
	if (st & ~(uint64_t)STATE_BITS)
		return 0; /* preempted: runnable */
	if (st == STATE_S)
		return 'S';
	if (st == STATE_D || st == STATE_IDLE)
		return 'D';
	return 0;
}

int switches__sample(struct switches *w, const struct rsample *rs, session_sample_cb cb, void *ctx)
{
	const struct perf_sample *s = rs->s;
	uint32_t tid = s->tid, next;
	int err;

	if (w->layout == 0 && rs->event == w->event)
		w->layout = s->raw && s->raw_size >= RAW_MIN &&
				    (uint32_t)raw_u64(s, RAW_PREV_PID, 4) == tid ? 1 : -1;
	if (rs->event != w->event || w->layout < 0) {
		/* the thread is running: a wait it had open ended before */
		err = end_wait(w, tid, s->time, false, cb, ctx);
		return err ? err : cb(ctx, rs);
	}
	if (!s->raw || s->raw_size < RAW_MIN) {
		w->unreadable++;
		return 0;
	}
	w->switches++;
	next = (uint32_t)raw_u64(s, RAW_NEXT_PID, 4);
	if (next && next != tid) {
		err = end_wait(w, next, s->time, true, cb, ctx);
		if (err)
			return err;
	}
	if (!tid)
		return 0; /* the idle task */
	err = end_wait(w, tid, s->time, false, cb, ctx);
	if (!err && sleep_state(raw_u64(s, RAW_PREV_STATE, 8)))
		err = start_wait(w, rs, sleep_state(raw_u64(s, RAW_PREV_STATE, 8)));
	return err;
}

int switches__finish(struct switches *w, const struct session *s, session_sample_cb cb, void *ctx)
{
	uint64_t first, last;
	int err = 0;

	if (!session__time_span(s, &first, &last))
		return 0;
	for (size_t i = 0; i < htab__n(&w->pend) && !err; i++) {
		struct pending *p = htab__at(&w->pend, i);
		struct session_thread th;

		if (!p->open)
			continue;
		/* a thread that exited: it ran from its wakeup to its exit (no event of its own there) */
		if (session__thread(s, p->tid, p->thread_start, &th) && th.exit_time > p->ps.time &&
		    th.exit_time < last)
			err = emit(w, p, th.exit_time, END_NEXT_EVENT, cb, ctx);
		else
			err = emit(w, p, last, END_FILE, cb, ctx);
	}
	snprintf(w->from, sizeof(w->from),
		 "%s: %" PRIu64 " waits from a switch-out in S or D; %" PRIu64 " ended at their"
		 " switch-in, %" PRIu64 " at the thread's next event (upper bounds), %" PRIu64
		 " at the file's end", SWITCH_EVENT, w->waits, w->exact, w->next_event, w->at_end);
	return err;
}

int switches__set_attr(const struct switches *w, struct profile *p)
{
	return w->layout > 0 && w->waits ? profile__set_attr(p, w->event, &w->attr, w->from) : 0;
}

void switches__note(const struct switches *w, const struct msg_sink *ms)
{
	if (w->layout < 0) {
		msg__say(ms, MSG_WARNING, "%s samples are not laid out as the scheduler's switch event"
			 " (prev_pid at offset %d): no off-CPU time taken from them", SWITCH_EVENT, RAW_PREV_PID);
		return;
	}
	if (!w->switches)
		return;
	msg__say(ms, MSG_NOTE, "%s: off-CPU time from %" PRIu64 " %s samples, as hotspot takes it:"
		 " %" PRIu64 " waits, each from a switch-out in S or D to the thread's next switch-in;"
		 " %" PRIu64 " switch-ins in the file, %" PRIu64 " taken as the thread's next event"
		 " (an upper bound: its time on CPU before it is counted too; a whole-machine"
		 " recording, -a, has the switch-ins the kernel traces), %" PRIu64
		 " waits open at the end, counted to it",
		 OFFCPU_EVENT_NAME, w->switches, SWITCH_EVENT, w->waits, w->exact, w->next_event, w->at_end);
	if (w->unreadable)
		msg__say(ms, MSG_WARNING, "%" PRIu64 " %s samples without their raw data: no wait taken from them",
			 w->unreadable, SWITCH_EVENT);
}
