// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "perfdata/perf_format.h"
#include "profile/feed.h"
#include "profile/filter.h"
#include "profile/offwake.h"
#include "profile/read.h"
#include "profile/switches.h"
#include "profile/trim.h"

enum kernel_names { KERNEL_NOW, KERNEL_DEFERRED, KERNEL_NONE };

/*
 * The session of o->input: kernel addresses named at the end, at once, or
 * never (kernel); samples' stacks interned unless no_stacks.
 */
static struct session *open_session(const struct report_opts *o, enum kernel_names kernel,
				    bool no_stacks, const struct msg_sink *ms, char *err, size_t errlen)
{
	struct session_opts so = { .srcline = o->srcline, .inlines = o->inlines,
				   .no_symbols = o->no_symbols, .no_demangle = o->no_demangle,
				   .defer_kernel = kernel == KERNEL_DEFERRED, .no_kernel_names = kernel == KERNEL_NONE,
				   .no_stacks = no_stacks };

	if (ms)
		so.msg = *ms;
	return session__new(o->input, &so, err, errlen);
}

struct session *report__open(const struct report_opts *o, bool defer_kernel,
			     const struct msg_sink *ms, char *err, size_t errlen)
{
	return open_session(o, defer_kernel ? KERNEL_DEFERRED : KERNEL_NOW, false, ms, err, errlen);
}

struct session *report__open_stream(const struct report_opts *o, const struct msg_sink *ms,
				    char *err, size_t errlen)
{
	return open_session(o, KERNEL_NOW, true, ms, err, errlen);
}

/* The run's error: the session's reason, named after the file. */
static int run_failed(const struct report_opts *o, struct session *s, int ret, char *err,
		      size_t errlen)
{
	snprintf(err, errlen, "%s: %s", o->input, session__error(s));
	return ret;
}

struct agg_ctx {
	const struct report_opts *o;
	const struct session *s;
	struct profile *p;
	struct feed *feed;   /* into p, during the run */
	struct offwake *ow;  /* --wakeups */
	struct threads *th;  /* --threads */
	struct switches *sw; /* off-CPU time from sched:sched_switch samples */
	session_sample_cb cb; /* under sw: where its samples go */
};

/* Through the sched_switch derivation first when there is one. */
static int derive_sample(void *ctx, const struct rsample *rs)
{
	struct agg_ctx *a = ctx;

	return switches__sample(a->sw, rs, a->cb, a);
}

/*
 * The session run over cb, with sched:sched_switch samples turned into
 * off-CPU time when the file has them (profile/switches.h); the note that
 * says so to ms.
 */
static int run(struct agg_ctx *a, struct session *s, session_sample_cb cb, const struct msg_sink *ms)
{
	int ret;

	a->sw = switches__new(s, &ret);
	if (ret)
		return ret;
	if (!a->sw)
		return session__run(s, cb, a);
	a->cb = cb;
	ret = session__run(s, derive_sample, a);
	if (!ret)
		ret = switches__finish(a->sw, s, cb, a);
	if (!ret)
		switches__note(a->sw, ms);
	return ret;
}

static int agg_sample(void *ctx, const struct rsample *rs)
{
	struct agg_ctx *a = ctx;
	struct rsample joined;
	int err;

	if (rs->s->evattr->is_chain && !a->o->event)
		return 0; /* record --chains' own records: report --chains reads them */
	if (!a->ow)
		return report__match(a->o, a->s, rs) ? feed__add(a->feed, rs) : 0;
	/* --wakeups: off-CPU samples (for their total) and joined off-wake stacks */
	err = offwake__join(a->ow, rs, &joined);
	if (err < 0)
		return err;
	if (err)
		rs = &joined;
	else if (!rs->s->evattr->is_offcpu)
		return 0;
	return report__match(a->o, a->s, rs) ? feed__add(a->feed, rs) : 0;
}

/* The profile of an open session: its samples folded, kernel frames named, joins noted. */
static int aggregate(struct agg_ctx *a, struct session *s, unsigned int keep,
		     const struct msg_sink *ms, char *err, size_t errlen)
{
	const uint32_t *remap;
	uint32_t nremap;
	int ret = -ENOMEM, err_feed;

	a->p = profile__new(perf_reader__nr_attrs(session__reader(s)), keep);
	if (a->o->wakeups)
		a->ow = offwake__new(s, a->o->waker_by);
	if (!a->p || (a->o->wakeups && !a->ow))
		return ret;
	a->feed = feed__new(a->p); /* the samples folded on the second core */
	if (!a->feed)
		return ret;
	ret = run(a, s, agg_sample, ms);
	err_feed = feed__finish(a->feed); /* the profile whole, and the caller's again */
	a->feed = NULL;
	if (ret)
		return run_failed(a->o, s, ret, err, errlen);
	if (err_feed)
		return err_feed; /* out of memory: err stays empty */
	if (a->sw && (ret = switches__set_attr(a->sw, a->p)))
		return ret;
	remap = session__remap(s, &nremap);
	ret = profile__trim(a->p, s, a->o, remap, nremap); /* the frames named, then trimmed */
	if (ret)
		return ret;
	if (a->ow && offwake__unjoined(a->ow))
		msg__say(ms, MSG_NOTE, "%" PRIu64 " %s samples without their %s sample, left out",
			 offwake__unjoined(a->ow), OFFCPU_WAKEUP_EVENT_NAME, OFFCPU_EVENT_NAME);
	return 0;
}

int profile__read(const struct report_opts *o, unsigned int keep, const struct msg_sink *ms,
		  struct session **sp, struct profile **pp, char *err, size_t errlen)
{
	struct agg_ctx a = { .o = o };
	struct session *s;
	int ret = -EINVAL;

	err[0] = 0;
	/*
	 * Frames are kept, named at the end. The session interns no stacks:
	 * the profile interns each sample's frames itself, in the feed's
	 * thread, where the walk's thread would otherwise intern every new
	 * chain's (and both would hold every sequence).
	 */
	s = open_session(o, KERNEL_DEFERRED, true, ms, err, errlen);
	if (!s)
		return ret;
	a.s = s;
	if (o->wakeups && session__event(s, OFFCPU_WAKEUP_EVENT_NAME) < 0)
		snprintf(err, errlen, "%s has no %s event: record with --wakeups", o->input,
			 OFFCPU_WAKEUP_EVENT_NAME);
	else
		ret = aggregate(&a, s, keep, ms, err, errlen);
	offwake__free(a.ow);
	switches__free(a.sw);
	if (ret) {
		profile__free(a.p);
		session__free(s);
		return ret;
	}
	*sp = s;
	*pp = a.p;
	return 0;
}

/* --threads: every sample that passes the filters, to its thread's row. */
static int threads_sample(void *ctx, const struct rsample *rs)
{
	struct agg_ctx *a = ctx;

	return report__match(a->o, a->s, rs) ? threads__add(a->th, rs) : 0;
}

int threads__read(const struct report_opts *o, const struct msg_sink *ms, struct session **sp,
		  struct threads **tp, char *err, size_t errlen)
{
	struct agg_ctx a = { .o = o };
	struct session *s;
	int ret;

	err[0] = 0;
	s = open_session(o, KERNEL_NONE, true, ms, err, errlen); /* no frame or stack is used */
	if (!s)
		return -EINVAL;
	a.s = s;
	a.th = threads__new();
	if (!a.th)
		ret = -ENOMEM;
	else if ((ret = run(&a, s, threads_sample, ms)))
		run_failed(o, s, ret, err, errlen);
	switches__free(a.sw);
	if (ret) {
		threads__free(a.th);
		session__free(s);
		return ret;
	}
	*sp = s;
	*tp = a.th;
	return 0;
}
