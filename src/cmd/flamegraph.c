// SPDX-License-Identifier: GPL-2.0-only
/*
 * `offcpu flamegraph`: read a recording with report's filters and
 * aggregation, draw on-CPU and off-CPU time in one SVG.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/commands.h"
#include "output/flamegraph/flamegraph.h"
#include "perfdata/perf_format.h"
#include "output/report.h"

struct fg_opts {
	const char *output;
	bool cpu_only, off_only, per_thread, wakeups;
	struct fg_svg_opts svg;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: offcpu flamegraph [-i FILE] [-o OUT.svg] [options] [filters]\n"
		"  draw on-CPU (warm colours) and off-CPU time (cool colours) of a recording in one\n"
		"  interactive SVG, widths in nanoseconds; open it in a browser: hover for details,\n"
		"  click to zoom, Ctrl-F or Search to highlight functions.\n"
		"  -i, --input FILE        perf.data file (default ./perf.data)\n"
		"  -o, --output FILE       SVG to write (default flamegraph.svg, - for stdout)\n"
		"      --cpu-only          on-CPU time only (cpu-clock samples)\n"
		"      --off-cpu-only      off-CPU time only (offcpu-time)\n"
		"      --wakeups           off-wake graph (record --wakeups): each sleeper's stack,\n"
		"                          a -- frame, then its waker's stack standing on it\n"
		"      --inverted          icicle graph: roots at the top\n"
		"      --per-thread        one tower per thread (comm-pid/tid) instead of per comm\n"
		"      --width PX          image width (default 1200)\n"
		"      --title TEXT        title (default by what is drawn)\n"
		"      --min-width PX      leave out frames narrower than PX (default 0.1)\n");
	report__filter_usage(f);
}

static int parse_num(const char *opt, const char *v, double lo, double hi, double *out)
{
	char *end;
	double d = strtod(v, &end);

	if (end == v || *end || !(d >= lo && d <= hi)) {
		fprintf(stderr, "offcpu flamegraph: bad %s '%s' (want %g..%g)\n", opt, v, lo, hi);
		return -EINVAL;
	}
	*out = d;
	return 0;
}

/* Parse argv; returns 0, 1 for --help (done), or negative on error. */
static int parse_args(int argc, char **argv, struct fg_opts *fo, struct report_opts *o)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL, *eq;
		char name[64];
		double d;
		int err = report__parse_filter(argc, argv, &i, o);

		if (err < 0)
			return err;
		if (err)
			continue;
		if (!strncmp(a, "--", 2) && (eq = strchr(a, '='))) {
			snprintf(name, sizeof(name), "%.*s", (int)(eq - a), a);
			val = eq + 1;
			a = name;
		}
#define ARG()                                                                                  \
	({                                                                                     \
		if (!val) {                                                                    \
			if (i + 1 >= argc) {                                                   \
				fprintf(stderr, "offcpu flamegraph: %s needs an argument\n", a); \
				return -EINVAL;                                                \
			}                                                                      \
			val = argv[++i];                                                       \
		}                                                                              \
		val;                                                                           \
	})
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 1;
		} else if (!strcmp(a, "-i") || !strcmp(a, "--input")) {
			o->input = ARG();
		} else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
			fo->output = ARG();
		} else if (!strcmp(a, "--cpu-only")) {
			fo->cpu_only = true;
		} else if (!strcmp(a, "--off-cpu-only")) {
			fo->off_only = true;
		} else if (!strcmp(a, "--wakeups")) {
			fo->wakeups = true;
		} else if (!strcmp(a, "--inverted")) {
			fo->svg.inverted = true;
		} else if (!strcmp(a, "--per-thread")) {
			fo->per_thread = true;
		} else if (!strcmp(a, "--title")) {
			fo->svg.title = ARG();
		} else if (!strcmp(a, "--width")) {
			if (parse_num(a, ARG(), 100, 100000, &d))
				return -EINVAL;
			fo->svg.width = (unsigned int)d;
		} else if (!strcmp(a, "--min-width")) {
			if (parse_num(a, ARG(), 0, 1000, &fo->svg.min_width))
				return -EINVAL;
		} else {
			fprintf(stderr, "offcpu flamegraph: unknown option '%s'\n", argv[i]);
			usage(stderr);
			return -EINVAL;
		}
#undef ARG
	}
	if (fo->cpu_only + fo->off_only + fo->wakeups > 1) {
		fprintf(stderr, "offcpu flamegraph: --cpu-only, --off-cpu-only and --wakeups exclude each other\n");
		return -EINVAL;
	}
	return 0;
}

/* After what is drawn: the options, or the events the file has. */
static const char *default_title(const struct fg_opts *fo, const struct fg_profile_opts *po)
{
	bool ice = fo->svg.inverted;

	if (fo->wakeups)
		return ice ? "Off-Wake Time Icicle Graph" : "Off-Wake Time Flame Graph";
	if (po->cpu_event >= 0 && po->off_event >= 0)
		return ice ? "Icicle Graph: on-CPU and off-CPU time" : "Flame Graph: on-CPU and off-CPU time";
	if (po->cpu_event >= 0 || fo->cpu_only)
		return ice ? "CPU Icicle Graph" : "CPU Flame Graph";
	if (po->off_event >= 0 || fo->off_only)
		return ice ? "Off-CPU Time Icicle Graph" : "Off-CPU Time Flame Graph";
	return ice ? "Icicle Graph" : "Flame Graph";
}

/* Write the SVG to out (through out.tmp and a rename, so that a failure leaves no half file). */
static int write_svg(const struct fg_tree *t, const char *out, const struct fg_svg_opts *so,
		     size_t *drawn)
{
	bool to_stdout = !strcmp(out, "-");
	size_t len = strlen(out) + 5;
	char *tmp = malloc(len);
	FILE *f = NULL;
	int err;

	if (!tmp)
		return -ENOMEM;
	snprintf(tmp, len, "%s.tmp", out);
	if (to_stdout) {
		f = stdout;
	} else {
		/* a fresh file, never through a link planted at OUT.tmp */
		int fd;

		unlink(tmp);
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
		f = fd >= 0 ? fdopen(fd, "w") : NULL;
		if (!f && fd >= 0)
			close(fd);
	}
	if (!f) {
		err = -errno;
		goto cleanup;
	}
	err = fg_tree__write_svg(t, f, so, drawn);
	if (to_stdout) {
		if (fflush(f) && !err)
			err = -errno;
	} else {
		if (fclose(f) && !err)
			err = -errno;
		if (!err && rename(tmp, out))
			err = -errno;
		if (err)
			unlink(tmp);
	}
cleanup:
	free(tmp);
	return err;
}

/*
 * --wakeups: the off-wake stacks report__aggregate() joined, under their
 * sleeper's comm (or thread); the subtitle says how much of the off-CPU
 * time had a known waker.
 */
static int draw_offwake(struct fg_opts *fo, const struct report_opts *o, struct session *s,
			const struct profile *p)
{
	int ev = report__event_index(s, OFFCPU_WAKEUP_EVENT_NAME);
	int oev = report__event_index(s, OFFCPU_EVENT_NAME);
	struct fg_tree *t = fg_tree__new();
	char sub[4200], what[160], with[32], all[32];
	size_t drawn = 0;
	int err;

	if (!t || fg__from_offwake(t, s, p, ev, fo->per_thread)) {
		fprintf(stderr, "offcpu flamegraph: out of memory\n");
		fg_tree__free(t);
		return -ENOMEM;
	}
	report__fmt_ns(with, sizeof(with), fg_tree__total(t, FG_OFF_CPU));
	report__fmt_ns(all, sizeof(all), oev >= 0 ? profile__event(p, oev)->period : 0);
	snprintf(what, sizeof(what), "off-CPU %s with a known waker, of %s", with, all);
	snprintf(sub, sizeof(sub), "%s: %s", o->input, what);
	fo->svg.subtitle = sub;
	if (!fo->svg.title)
		fo->svg.title = default_title(fo, NULL);
	err = write_svg(t, fo->output, &fo->svg, &drawn);
	if (err)
		fprintf(stderr, "offcpu flamegraph: cannot write %s: %s\n", fo->output, strerror(-err));
	else if (strcmp(fo->output, "-"))
		fprintf(stderr, "[ offcpu flamegraph: wrote %s: %zu frames; %s ]\n", fo->output, drawn,
			what);
	fg_tree__free(t);
	return err;
}

int cmd_flamegraph(int argc, char **argv)
{
	struct fg_opts fo = { .output = "flamegraph.svg", .svg = { .width = 1200, .min_width = 0.1 } };
	struct report_opts o;
	struct session *s = NULL;
	struct profile *p = NULL;
	struct fg_tree *t = NULL;
	struct fg_profile_opts po;
	char sub[4200], what[128], on[32], off[32];
	size_t drawn = 0;
	int err, ret = 1;

	report_opts__init(&o);
	err = parse_args(argc, argv, &fo, &o);
	if (err) {
		ret = err > 0 ? 0 : 2;
		goto cleanup;
	}
	o.wakeups = fo.wakeups;
	o.waker_ids = fo.per_thread;
	if (report__aggregate(&o, fo.per_thread ? PROFILE_KEEP_PID | PROFILE_KEEP_TID : 0,
			      "flamegraph", &s, &p))
		goto cleanup;
	if (fo.wakeups) {
		err = draw_offwake(&fo, &o, s, p);
		ret = err ? 1 : 0;
		goto cleanup;
	}
	report__time_events(s, p, "flamegraph", &po.cpu_event, &po.off_event);
	if (fo.off_only)
		po.cpu_event = -1;
	if (fo.cpu_only)
		po.off_event = -1;
	po.per_thread = fo.per_thread;
	t = fg_tree__new();
	if (!t || fg__from_profile(t, s, p, &po)) {
		fprintf(stderr, "offcpu flamegraph: out of memory\n");
		goto cleanup;
	}
	report__fmt_ns(on, sizeof(on), fg_tree__total(t, FG_ON_CPU));
	report__fmt_ns(off, sizeof(off), fg_tree__total(t, FG_OFF_CPU));
	if (po.cpu_event >= 0 && po.off_event >= 0)
		snprintf(what, sizeof(what), "on-CPU %s, off-CPU %s", on, off);
	else if (po.cpu_event >= 0)
		snprintf(what, sizeof(what), "on-CPU %s", on);
	else if (po.off_event >= 0)
		snprintf(what, sizeof(what), "off-CPU %s", off);
	else
		snprintf(what, sizeof(what), "no %s samples%s",
			 fo.cpu_only ? "on-CPU" : fo.off_only ? "off-CPU" : "on-CPU or off-CPU",
			 o.pids.n || o.tids.n || o.nr_comms || o.cpus.n || o.time_start || o.time_end
				 ? " that pass the filters" : "");
	snprintf(sub, sizeof(sub), "%s: %s", o.input, what);
	fo.svg.subtitle = sub;
	if (!fo.svg.title)
		fo.svg.title = default_title(&fo, &po);
	err = write_svg(t, fo.output, &fo.svg, &drawn);
	if (err) {
		fprintf(stderr, "offcpu flamegraph: cannot write %s: %s\n", fo.output, strerror(-err));
		goto cleanup;
	}
	if (strcmp(fo.output, "-"))
		fprintf(stderr, "[ offcpu flamegraph: wrote %s: %zu frames; %s ]\n", fo.output, drawn, what);
	else if (po.cpu_event < 0 && po.off_event < 0)
		fprintf(stderr, "offcpu flamegraph: %s\n", sub);
	ret = 0;
cleanup:
	fg_tree__free(t);
	profile__free(p);
	session__free(s);
	report_opts__free(&o);
	return ret;
}
