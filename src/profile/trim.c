// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "perfdata/perf_format.h"
#include "profile/offwake.h"
#include "profile/trim.h"

/*
 * The scheduler's entry points and the wrappers whose only job is to call
 * them: the one list of what "a scheduler frame" is. The frame below the
 * innermost one left is where the thread chose (or was made) to wait.
 */
static const char *const sched_frames[] = {
	"__schedule", "__schedule_loop", "schedule", "schedule_idle", "schedule_user",
	"schedule_preempt_disabled", "schedule_timeout", "schedule_timeout_interruptible",
	"schedule_timeout_killable", "schedule_timeout_uninterruptible", "schedule_timeout_idle",
	"schedule_hrtimeout", "schedule_hrtimeout_range", "schedule_hrtimeout_range_clock",
	"io_schedule", "io_schedule_timeout", "rt_mutex_schedule", "schedule_rtlock",
	"preempt_schedule", "preempt_schedule_common", "preempt_schedule_irq",
	"preempt_schedule_notrace", "preempt_schedule_thunk", "preempt_schedule_notrace_thunk",
	"__cond_resched", "_cond_resched", "__cond_resched_lock", "__cond_resched_rwlock_read",
	"__cond_resched_rwlock_write",
};

bool sched_frame__is(const char *sym)
{
	size_t n = strcspn(sym, "."); /* __schedule.isra.0 is __schedule */

	for (size_t i = 0; i < sizeof(sched_frames) / sizeof(sched_frames[0]); i++)
		if (strlen(sched_frames[i]) == n && !strncmp(sched_frames[i], sym, n))
			return true;
	return false;
}

struct trim {
	struct session *s;
	const struct report_opts *o;
	const struct profile *p; /* for the events' attrs */
	uint32_t sep;       /* the off-wake "--" frame */
	int8_t *is_sched;   /* per frame id: -1 unknown yet, 0, 1 */
	uint32_t nr_known;
};

static bool is_sched(struct trim *t, uint32_t id)
{
	const struct frame *f;
	bool v;

	if (id < t->nr_known && t->is_sched[id] >= 0)
		return t->is_sched[id];
	f = session__frame(t->s, id);
	v = f && f->kernel && f->sym && !f->inlined && sched_frame__is(f->sym);
	if (id < t->nr_known)
		t->is_sched[id] = v;
	return v;
}

/* How many of fr[0..n) (innermost first) are the scheduler's, never all n. */
static uint32_t sched_prefix(struct trim *t, const uint32_t *fr, uint32_t n)
{
	uint32_t k = 0;

	if (t->o->keep_sched_frames)
		return 0;
	while (k + 1 < n && is_sched(t, fr[k]))
		k++;
	return k;
}

static uint32_t cap(const struct trim *t, uint32_t n)
{
	return t->o->max_stack > 0 && n > (uint32_t)t->o->max_stack ? (uint32_t)t->o->max_stack : n;
}

/*
 * An off-wake stack: [waker name, waker root .. waker leaf, --, sleeper
 * leaf .. sleeper root]; the sleeper's side trimmed like any off-CPU stack,
 * the waker's cut to its innermost (the ones next to the separator).
 */
static void trim_offwake(struct trim *t, struct pstack *st, uint32_t *fr)
{
	uint32_t sep = 0, nw, ns, skip, keep_w, keep_s, at = 1;

	for (uint32_t i = 1; i < st->nr && !sep; i++)
		if (fr[i] == t->sep)
			sep = i;
	if (!sep)
		return;
	nw = sep - 1;
	ns = st->nr - sep - 1;
	skip = sched_prefix(t, fr + sep + 1, ns);
	keep_w = cap(t, nw);
	keep_s = cap(t, ns - skip);
	memmove(fr + at, fr + 1 + (nw - keep_w), keep_w * sizeof(*fr));
	at += keep_w;
	fr[at++] = t->sep;
	memmove(fr + at, fr + sep + 1 + skip, keep_s * sizeof(*fr));
	st->nr = at + keep_s;
}

static void trim_stack(void *ctx, struct pstack *st, uint32_t *fr)
{
	struct trim *t = ctx;
	const struct perf_evattr *a = profile__attr(t->p, t->s, st->event);
	uint32_t skip = 0;

	if (!st->nr)
		return;
	if (a->is_wakeup) {
		if (t->o->wakeups)
			trim_offwake(t, st, fr);
		else
			st->nr = cap(t, st->nr);
		return;
	}
	if (a->is_offcpu || a->is_sched_delay)
		skip = sched_prefix(t, fr, st->nr);
	st->frames_off += skip;
	st->nr = cap(t, st->nr - skip);
}

int profile__trim(struct profile *p, struct session *s, const struct report_opts *o,
		  const uint32_t *map, uint32_t nmap)
{
	struct trim t = { .s = s, .o = o, .p = p };
	int err;

	if (o->keep_sched_frames && o->max_stack <= 0)
		return profile__remap(p, map, nmap);
	if (o->wakeups && offwake__separator(s, &t.sep))
		return -ENOMEM;
	t.nr_known = session__nr_frames(s);
	t.is_sched = malloc(t.nr_known ? t.nr_known : 1);
	if (!t.is_sched)
		return -ENOMEM;
	memset(t.is_sched, -1, t.nr_known);
	err = profile__remap_rewrite(p, map, nmap, trim_stack, &t);
	free(t.is_sched);
	return err;
}
