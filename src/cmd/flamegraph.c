// SPDX-License-Identifier: GPL-2.0-only
/*
 * `offcpu flamegraph`: options, then the profile read with report's
 * filters and drawn in one SVG (output/flamegraph/flamegraph.h).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/commands.h"
#include "cmd/read_opts.h"
#include "output/flamegraph/flamegraph.h"
#include "profile/chains.h"
#include "profile/read.h"

enum {
	OPT_CPU_ONLY = OPT_READ_LAST, OPT_OFF_ONLY, OPT_WAKEUPS, OPT_INVERTED, OPT_PER_THREAD,
	OPT_TITLE, OPT_WIDTH, OPT_MIN_WIDTH, OPT_CHAINS,
};

static const struct option long_opts[] = {
	{ "input", required_argument, NULL, 'i' },
	{ "output", required_argument, NULL, 'o' },
	{ "cpu-only", no_argument, NULL, OPT_CPU_ONLY },
	{ "off-cpu-only", no_argument, NULL, OPT_OFF_ONLY },
	{ "wakeups", no_argument, NULL, OPT_WAKEUPS },
	{ "chains", no_argument, NULL, OPT_CHAINS },
	{ "chain-min", required_argument, NULL, OPT_CHAIN_MIN },
	{ "inverted", no_argument, NULL, OPT_INVERTED },
	{ "per-thread", no_argument, NULL, OPT_PER_THREAD },
	{ "title", required_argument, NULL, OPT_TITLE },
	{ "width", required_argument, NULL, OPT_WIDTH },
	{ "min-width", required_argument, NULL, OPT_MIN_WIDTH },
	{ "keep-sched-frames", no_argument, NULL, OPT_KEEP_SCHED },
	{ "max-stack", required_argument, NULL, OPT_MAX_STACK },
	{ "no-demangle", no_argument, NULL, OPT_NO_DEMANGLE },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
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
		"      --chains            wait chains (record --chains): each wait's stack, then\n"
		"                          per waker a [woken by X] frame and X's stack, up to\n"
		"                          the work that ended the wait (on-CPU colours) or its\n"
		"                          end ([timer], [io], ...)\n"
		"      --chain-min MS      --chains: waits of MS or more (default 1)\n"
		"      --inverted          icicle graph: roots at the top\n"
		"      --per-thread        one tower per thread (comm-pid/tid) instead of per comm\n"
		"      --width PX          image width (default 1200)\n"
		"      --title TEXT        title (default by what is drawn)\n"
		"      --min-width PX      leave out frames narrower than PX (default 0.1)\n"
		"      --keep-sched-frames keep the scheduler's frames (__schedule, schedule, ...)\n"
		"                          on top of off-CPU stacks; by default each tower ends\n"
		"                          at the function that blocked\n"
		"      --max-stack N       the N innermost frames of each stack\n"
		"      --no-demangle       C++ and Rust names as the binary has them\n");
	read_opts__filter_usage(f);
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

struct fg_args {
	struct fg_draw *fd;
	struct report_opts *o;
};

static int option(void *ctx, int c, char *arg, int argc, char **argv)
{
	struct fg_args *a = ctx;
	double d;

	switch (c) {
	case 'i':
		a->o->input = arg;
		return 1;
	case 'o':
		a->fd->output = arg;
		return 1;
	case OPT_CPU_ONLY:
		a->fd->cpu_only = true;
		return 1;
	case OPT_OFF_ONLY:
		a->fd->off_only = true;
		return 1;
	case OPT_WAKEUPS:
		a->fd->wakeups = true;
		return 1;
	case OPT_CHAINS:
		a->fd->chains = true;
		return 1;
	case OPT_INVERTED:
		a->fd->svg.inverted = true;
		return 1;
	case OPT_PER_THREAD:
		a->fd->per_thread = true;
		return 1;
	case OPT_TITLE:
		a->fd->svg.title = arg;
		return 1;
	case OPT_WIDTH:
		if (parse_num("--width", arg, 100, 100000, &d))
			return -EINVAL;
		a->fd->svg.width = (unsigned int)d;
		return 1;
	case OPT_MIN_WIDTH:
		return parse_num("--min-width", arg, 0, 1000, &a->fd->svg.min_width) ? -EINVAL : 1;
	case OPT_KEEP_SCHED:
	case OPT_MAX_STACK:
	case OPT_CHAIN_MIN:
	case OPT_NO_DEMANGLE:
		return read_opts__report(c, arg, argc, argv, a->o);
	}
	return 0;
}

/* --chains: the recording read into wait chains, their paths as a profile. */
static int read_chains(struct report_opts *o, const struct msg_sink *ms, struct session **s,
		       struct chains **c, struct profile **p, char *err, size_t errlen)
{
	struct chains_totals tot;
	int ret = chains__read(o, ms, s, c, err, errlen);

	if (ret)
		return ret;
	ret = chains__profile(*c, o, chains__min_ns(o), -1, PROFILE_KEEP_PID | PROFILE_KEEP_TID, p, &tot);
	if (ret)
		snprintf(err, errlen, "out of memory");
	return ret;
}

int cmd_flamegraph(int argc, char **argv)
{
	struct msg_sink ms = read_opts__msg("flamegraph", false);
	struct fg_draw fd = { .output = "flamegraph.svg", .svg = { .width = 1200, .min_width = 0.1 } };
	struct report_opts o;
	struct fg_args args = { &fd, &o };
	struct read_cmd cmd = { "flamegraph", "i:o:h", long_opts, true, usage, option, &args };
	struct session *s = NULL;
	struct profile *p = NULL;
	struct chains *c = NULL;
	struct fg_drawn drawn;
	char err[4400];
	int ret;

	report_opts__init(&o);
	ret = read_opts__parse(&cmd, &o, argc, argv);
	if (!ret && fd.cpu_only + fd.off_only + fd.wakeups + fd.chains > 1) {
		fprintf(stderr, "offcpu flamegraph: --cpu-only, --off-cpu-only, --wakeups and --chains exclude each other\n");
		ret = -EINVAL;
	}
	if (ret) {
		report_opts__free(&o);
		return ret > 0 ? 0 : 2;
	}
	o.wakeups = fd.wakeups;
	o.waker_by = fd.per_thread ? BY_TID : BY_COMM;
	if (fd.chains)
		ret = read_chains(&o, &ms, &s, &c, &p, err, sizeof(err));
	else
		ret = profile__read(&o, fd.per_thread ? PROFILE_KEEP_PID | PROFILE_KEEP_TID : 0, &ms,
				    &s, &p, err, sizeof(err));
	if (!ret)
		ret = flamegraph__draw(&fd, &o, s, p, &ms, &drawn, err, sizeof(err));
	if (ret)
		read_opts__fail("flamegraph", ret, err);
	else if (strcmp(fd.output, "-"))
		fprintf(stderr, "[ offcpu flamegraph: wrote %s: %zu frames; %s ]\n", fd.output,
			drawn.frames, drawn.what);
	profile__free(p);
	chains__free(c);
	session__free(s);
	report_opts__free(&o);
	return ret ? 1 : 0;
}
