// SPDX-License-Identifier: GPL-2.0-only
/*
 * `offcpu flamegraph`'s drawing: the tree of a profile (or of its off-wake
 * stacks), its title and subtitle, written to its file.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "output/flamegraph/flamegraph.h"
#include "output/format.h"
#include "perfdata/perf_format.h"
#include "profile/filter.h"
#include "util/outfile.h"

/* After what is drawn: the options, or the events the file has (po NULL: off-wake). */
static const char *default_title(const struct fg_draw *fd, const struct fg_profile_opts *po)
{
	bool ice = fd->svg.inverted;

	if (fd->wakeups)
		return ice ? "Off-Wake Time Icicle Graph" : "Off-Wake Time Flame Graph";
	if (fd->chains)
		return ice ? "Wait Chains Icicle Graph" : "Wait Chains Flame Graph";
	if (po->cpu_event >= 0 && po->off_event >= 0)
		return ice ? "Icicle Graph: on-CPU and off-CPU time" : "Flame Graph: on-CPU and off-CPU time";
	if (po->cpu_event >= 0 || fd->cpu_only)
		return ice ? "CPU Icicle Graph" : "CPU Flame Graph";
	if (po->off_event >= 0 || fd->off_only)
		return ice ? "Off-CPU Time Icicle Graph" : "Off-CPU Time Flame Graph";
	return ice ? "Icicle Graph" : "Flame Graph";
}

int fg_tree__write_file(const struct fg_tree *t, const char *path, const struct fg_svg_opts *so,
			size_t *drawn)
{
	struct outfile of;
	FILE *f;
	int err = outfile__open(&of, path, 0666);

	if (err)
		return err;
	f = fdopen(of.fd, "w");
	if (!f) {
		err = -errno;
		close(of.fd);
		return outfile__commit(&of, err);
	}
	err = fg_tree__write_svg(t, f, so, drawn);
	if (fclose(f) && !err)
		err = -errno;
	return outfile__commit(&of, err);
}

/*
 * --wakeups: the off-wake stacks the profile joined, under their sleeper's
 * comm (or thread); the subtitle says how much of the off-CPU time had a
 * known waker.
 */
static int offwake_tree(struct fg_tree *t, const struct fg_draw *fd, struct session *s,
			const struct profile *p, struct fg_drawn *out)
{
	int ev = session__event(s, OFFCPU_WAKEUP_EVENT_NAME);
	int oev = session__event(s, OFFCPU_EVENT_NAME);
	char with[32], all[32];
	int err = fg__from_offwake(t, s, p, ev, fd->per_thread);

	if (err)
		return err;
	report__fmt_ns(with, sizeof(with), fg_tree__total(t, FG_OFF_CPU));
	report__fmt_ns(all, sizeof(all), oev >= 0 ? profile__event(p, oev)->period : 0);
	snprintf(out->what, sizeof(out->what), "off-CPU %s with a known waker, of %s", with, all);
	out->empty = !fg_tree__total(t, FG_OFF_CPU);
	out->title = default_title(fd, NULL);
	return 0;
}

/*
 * --chains: each analysed wait's paths through its wakers, under the
 * sleeper's comm (or thread); the subtitle says how much was analysed.
 */
static int chains_tree(struct fg_tree *t, const struct fg_draw *fd, struct session *s,
		       const struct profile *p, struct fg_drawn *out)
{
	int ev = session__event(s, OFFCPU_EVENT_NAME);
	char all[32];
	int err = fg__from_chains(t, s, p, ev >= 0 ? ev : 0, fd->per_thread);

	if (err)
		return err;
	report__fmt_ns(all, sizeof(all), fg_tree__total(t, FG_OFF_CPU));
	snprintf(out->what, sizeof(out->what), "waits of %s in all, followed through their wakers", all);
	out->empty = !fg_tree__total(t, FG_OFF_CPU);
	out->title = default_title(fd, NULL);
	return 0;
}

/* On-CPU and off-CPU time; the subtitle says how much of each. */
static int time_tree(struct fg_tree *t, const struct fg_draw *fd, const struct report_opts *o,
		     const struct session *s, const struct profile *p, const struct msg_sink *ms,
		     struct fg_drawn *out)
{
	struct fg_profile_opts po;
	char on[32], off[32];
	int err;

	profile__time_events(p, s, ms, &po.cpu_event, &po.off_event);
	if (fd->off_only)
		po.cpu_event = -1;
	if (fd->cpu_only)
		po.off_event = -1;
	po.per_thread = fd->per_thread;
	err = fg__from_profile(t, s, p, &po);
	if (err)
		return err;
	report__fmt_ns(on, sizeof(on), fg_tree__total(t, FG_ON_CPU));
	report__fmt_ns(off, sizeof(off), fg_tree__total(t, FG_OFF_CPU));
	if (po.cpu_event >= 0 && po.off_event >= 0)
		snprintf(out->what, sizeof(out->what), "on-CPU %s, off-CPU %s%s", on, off,
			 profile__attr_from(p, po.off_event) ? " (from sched:sched_switch)" : "");
	else if (po.cpu_event >= 0)
		snprintf(out->what, sizeof(out->what), "on-CPU %s", on);
	else if (po.off_event >= 0)
		snprintf(out->what, sizeof(out->what), "off-CPU %s%s", off,
			 profile__attr_from(p, po.off_event) ? " (from sched:sched_switch)" : "");
	else
		snprintf(out->what, sizeof(out->what), "no %s samples%s",
			 fd->cpu_only ? "on-CPU" : fd->off_only ? "off-CPU" : "on-CPU or off-CPU",
			 report__filtered(o) ? " that pass the filters" : "");
	out->empty = po.cpu_event < 0 && po.off_event < 0;
	out->title = default_title(fd, &po);
	return 0;
}

int flamegraph__draw(const struct fg_draw *fd, const struct report_opts *o, struct session *s,
		     const struct profile *p, const struct msg_sink *ms, struct fg_drawn *out,
		     char *err, size_t errlen)
{
	struct fg_tree *t = fg_tree__new();
	struct fg_svg_opts so = fd->svg;
	int ret = -ENOMEM;

	memset(out, 0, sizeof(*out));
	if (t)
		ret = fd->wakeups ? offwake_tree(t, fd, s, p, out) :
		      fd->chains ? chains_tree(t, fd, s, p, out) : time_tree(t, fd, o, s, p, ms, out);
	if (ret) {
		snprintf(err, errlen, "out of memory");
		goto cleanup;
	}
	snprintf(out->sub, sizeof(out->sub), "%s: %s", o->input, out->what);
	if (out->empty) { /* an empty picture is no answer: nothing is written */
		snprintf(err, errlen, "%s: %s%s: nothing drawn, %s not written", o->input,
			 fd->wakeups ? "no off-CPU time with a known waker" : out->what,
			 fd->wakeups && report__filtered(o) ? " that passes the filters" : "", fd->output);
		ret = -ENODATA;
		goto cleanup;
	}
	so.subtitle = out->sub;
	if (!so.title)
		so.title = out->title;
	ret = fg_tree__write_file(t, fd->output, &so, &out->frames);
	if (ret)
		snprintf(err, errlen, "cannot write %s: %s", fd->output, strerror(-ret));
cleanup:
	fg_tree__free(t);
	return ret;
}
