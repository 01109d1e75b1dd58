// SPDX-License-Identifier: GPL-2.0-only
/* `offcpu report`: options, then one output (output/outputs.h) of the recording. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/commands.h"
#include "cmd/read_opts.h"
#include "output/outputs.h"

enum { OPT_HEADER = OPT_READ_LAST, OPT_HEADER_ONLY, OPT_BY, OPT_LIMIT, OPT_IDLE };

/* report's own options; the outputs' rows (output/outputs.h) come after them. */
static const struct option own_opts[] = {
	REPORT_OPTIONS,
	{ "show-nr-samples", no_argument, NULL, 'n' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "header", no_argument, NULL, OPT_HEADER },
	{ "header-only", no_argument, NULL, OPT_HEADER_ONLY },
	{ "by", required_argument, NULL, OPT_BY },
	{ "limit", required_argument, NULL, OPT_LIMIT },
	{ "idle", no_argument, NULL, OPT_IDLE },
};
#define NR_OWN (sizeof(own_opts) / sizeof(own_opts[0]))

static void usage(FILE *f)
{
	fprintf(f,
		"usage: offcpu report [-i FILE] [options] [filters]\n"
		"  off-CPU time first (offcpu-time, then sched-delay and offcpu-wakeup), then\n"
		"  the CPU samples; off-CPU stacks start at the function that blocked.\n"
		"  -i, --input FILE        perf.data file (default ./perf.data)\n"
		"      --children          Children and Self columns (perf's default)\n"
		"      --no-children       Self column only (default: entries are where the\n"
		"                          time was spent: for off-CPU time, where threads\n"
		"                          blocked; their callers in the call graph below)\n"
		"  -s, --sort KEYS         comma list of comm,pid,tid,dso,sym,state,cgroup\n"
		"                          (default comm,dso,sym)\n"
		"      --percent-limit N   hide entries below N%%\n"
		"  -g, --call-graph MODE   caller, callee or none (optionally ,MIN%%)\n");
	for (int i = 0; i < report__nr_outputs; i++)
		if (report_outputs[i]->help)
			fputs(report_outputs[i]->help, f);
	fprintf(f,
		"      --keep-sched-frames keep the scheduler's frames (__schedule, schedule,\n"
		"                          schedule_timeout, ...) innermost in off-CPU stacks\n"
		"      --max-stack N       the N innermost frames of each stack\n"
		"  -n, --show-nr-samples   a Samples column\n"
		"      --header            every counter of the file's header (by default one\n"
		"                          line: nothing lost, or what was)\n"
		"      --header-only       the header and nothing else\n"
		"  -q, --quiet             no # lines, no warnings\n"
		"  -v, --verbose           the whole header, shared objects by path\n"
		"  -e, --event NAME        only this event\n"
		"      --srcline           file:line of each frame\n"
		"      --no-demangle       C++ and Rust names as the binary has them\n"
		"      --inline            show inlined frames\n"
		"      --stdio             accepted for perf compatibility\n");
	read_opts__filter_usage(f);
}

struct report_args {
	struct report_opts *o;
	struct output_choice *c;
};

static int by(const char *arg, struct report_opts *o)
{
	if (!strcmp(arg, "comm"))
		o->by = BY_COMM;
	else if (!strcmp(arg, "pid"))
		o->by = BY_PID;
	else if (!strcmp(arg, "tid"))
		o->by = BY_TID;
	else {
		fprintf(stderr, "offcpu report: bad --by '%s' (comm, pid or tid)\n", arg);
		return -EINVAL;
	}
	return 1;
}

static int limit(const char *arg, struct report_opts *o)
{
	if (read_opts__int(arg, 0, 1000000000, &o->limit)) {
		fprintf(stderr, "offcpu report: bad --limit '%s' (rows, 0 for all)\n", arg);
		return -EINVAL;
	}
	return 1;
}

static int option(void *ctx, int c, char *arg, int argc, char **argv)
{
	struct report_args *a = ctx;

	for (int i = 0; i < report__nr_outputs; i++)
		if (c == OPT_OUTPUT + i || (c && c == report_outputs[i]->short_name)) {
			a->c->given |= 1u << i;
			a->c->arg[i] = arg;
			return 1;
		}
	switch (c) {
	case 'n':
		a->o->show_nr = true;
		return 1;
	case 'q':
		a->o->quiet = true;
		return 1;
	case 'v':
		a->o->verbose = true;
		return 1;
	case OPT_HEADER:
		if (a->o->header != HEADER_ONLY)
			a->o->header = HEADER_FULL;
		return 1;
	case OPT_HEADER_ONLY:
		a->o->header = HEADER_ONLY;
		return 1;
	case OPT_BY:
		return by(arg, a->o);
	case OPT_LIMIT:
		return limit(arg, a->o);
	case OPT_IDLE:
		a->o->idle = true;
		return 1;
	}
	return read_opts__report(c, arg, argc, argv, a->o);
}

/*
 * report's getopt tables: its own rows, then a row per output (code
 * OPT_OUTPUT + its place), its short option after report's. 0 or -ENOMEM;
 * the caller frees *longopts.
 */
static int tables(char *shortopts, size_t len, struct option **longopts)
{
	struct option *l = calloc(NR_OWN + (size_t)report__nr_outputs + 1, sizeof(*l));
	size_t at = (size_t)snprintf(shortopts, len, "%s", REPORT_SHORT_OPTIONS "nqv"), n = NR_OWN;

	if (!l)
		return -ENOMEM;
	memcpy(l, own_opts, sizeof(own_opts));
	for (int i = 0; i < report__nr_outputs; i++) {
		const struct report_output *out = report_outputs[i];

		if (!out->name)
			continue;
		l[n++] = (struct option){
			out->name, out->has_arg ? required_argument : no_argument, NULL, OPT_OUTPUT + i };
		if (out->short_name && at + 3 < len)
			at += (size_t)snprintf(shortopts + at, len - at, "%c%s", out->short_name,
					       out->has_arg ? ":" : "");
	}
	*longopts = l;
	return 0;
}

int cmd_report(int argc, char **argv)
{
	struct output_choice c = { 0 };
	struct report_opts o;
	struct report_args args = { &o, &c };
	struct read_cmd cmd = { "report", NULL, NULL, false, usage, option, &args };
	struct option *longopts;
	struct msg_sink ms;
	char shortopts[48], err[4400];
	int ret;

	report_opts__init(&o);
	ret = tables(shortopts, sizeof(shortopts), &longopts);
	if (!ret) {
		cmd.shortopts = shortopts;
		cmd.longopts = longopts;
		ret = read_opts__parse(&cmd, &o, argc, argv);
		free(longopts);
	}
	if (!ret && report_outputs__check(&c, &o, err, sizeof(err))) {
		fprintf(stderr, "offcpu report: %s\n", err);
		ret = -EINVAL;
	}
	if (ret) {
		report_opts__free(&o);
		return ret > 0 ? 0 : 2;
	}
	ms = read_opts__msg("report", o.quiet); /* -q: no warnings, no notes; errors still said */
	err[0] = 0;
	ret = report_outputs__run(&c, &o, stdout, &ms, err, sizeof(err));
	if (ret)
		read_opts__fail("report", ret, err);
	report_opts__free(&o);
	return ret ? 1 : 0;
}
