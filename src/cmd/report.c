// SPDX-License-Identifier: GPL-2.0-only
/* `offcpu report`: options, then the read (profile/read.h) and one output. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/commands.h"
#include "cmd/read_opts.h"
#include "output/pprof/pprof.h"
#include "output/report.h"
#include "output/threads.h"
#include "output/wakeups.h"
#include "perfdata/perf_format.h"
#include "profile/read.h"

/* The output asked for; the stdio report without any. */
struct report_output {
	bool folded;
	bool threads;           /* --threads */
	const char *pprof;      /* --pprof FILE */
};

enum { OPT_PPROF = OPT_READ_LAST, OPT_WAKEUPS, OPT_THREADS, OPT_HEADER, OPT_HEADER_ONLY, OPT_BY,
       OPT_LIMIT };

static const struct option long_opts[] = {
	REPORT_OPTIONS,
	{ "pprof", required_argument, NULL, OPT_PPROF },
	{ "wakeups", no_argument, NULL, OPT_WAKEUPS },
	{ "threads", no_argument, NULL, OPT_THREADS },
	{ "show-nr-samples", no_argument, NULL, 'n' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "header", no_argument, NULL, OPT_HEADER },
	{ "header-only", no_argument, NULL, OPT_HEADER_ONLY },
	{ "by", required_argument, NULL, OPT_BY },
	{ "limit", required_argument, NULL, OPT_LIMIT },
	{ 0 },
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: offcpu report [-i FILE] [options] [filters]\n"
		"  off-CPU time first (offcpu-time, then sched-delay and offcpu-wakeup), then\n"
		"  the CPU samples; off-CPU stacks start at the function that blocked.\n"
		"  -i, --input FILE        perf.data file (default ./perf.data)\n"
		"      --children          Children and Self columns (default)\n"
		"      --no-children       Self column only\n"
		"  -s, --sort KEYS         comma list of comm,pid,tid,dso,sym,state,cgroup\n"
		"                          (default comm,dso,sym)\n"
		"      --percent-limit N   hide entries below N%%\n"
		"  -g, --call-graph MODE   caller, callee or none (optionally ,MIN%%)\n"
		"      --folded            one `comm;frame;...;frame VALUE` line per stack of one\n"
		"                          event (off-CPU time unless --event says another)\n"
		"      --pprof FILE        write a gzipped pprof profile (go tool pprof) instead\n"
		"      --wakeups           who woke the sleepers (record --wakeups): top\n"
		"                          (sleeper stack, waker stack) pairs by time; with\n"
		"                          --folded, off-wake stacks `sleeper;--;waker VALUE`\n"
		"      --by comm|pid|tid   --wakeups' sleepers and wakers (default comm),\n"
		"                          --threads' rows (default tid)\n"
		"  -T, --threads           per thread: wall, on-CPU, off-CPU S and D,\n"
		"                          run-queue delay (record --sched-delay), most\n"
		"                          off-CPU time first\n"
		"      --limit N           --threads: the first N rows (default 30, 0: all)\n"
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
		"      --inline            show inlined frames\n"
		"      --stdio             accepted for perf compatibility\n");
	read_opts__filter_usage(f);
}

/* Options that cannot go together. */
static int check(const struct report_opts *o, const struct report_output *out)
{
	if (out->pprof && out->folded) {
		fprintf(stderr, "offcpu report: --pprof and --folded exclude each other\n");
		return -EINVAL;
	}
	if (o->by >= 0 && !o->wakeups && !out->threads) {
		fprintf(stderr, "offcpu report: --by goes with --wakeups or --threads\n");
		return -EINVAL;
	}
	if ((o->wakeups || out->threads) &&
	    (out->pprof || o->event || (o->wakeups && out->threads) || (out->threads && out->folded))) {
		fprintf(stderr, "offcpu report: --wakeups (with or without --folded), --threads, --pprof and -e exclude each other\n");
		return -EINVAL;
	}
	return 0;
}

struct report_args {
	struct report_opts *o;
	struct report_output *out;
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
	char *end;
	long v = strtol(arg, &end, 10);

	if (end == arg || *end || v < 0 || v > 1000000000) {
		fprintf(stderr, "offcpu report: bad --limit '%s' (rows, 0 for all)\n", arg);
		return -EINVAL;
	}
	o->limit = (int)v;
	return 1;
}

static int option(void *ctx, int c, char *arg, int argc, char **argv)
{
	struct report_args *a = ctx;

	switch (c) {
	case OPT_PPROF:
		a->out->pprof = arg;
		return 1;
	case OPT_WAKEUPS:
		a->o->wakeups = true;
		return 1;
	case OPT_THREADS:
	case 'T':
		a->out->threads = true;
		return 1;
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
	}
	return read_opts__report(c, arg, argc, argv, a->o, &a->out->folded);
}

/* The keys the profile keeps: those the sort and the output show. */
static unsigned int keep_flags(struct report_opts *o, const struct report_output *out)
{
	unsigned int keep = 0;

	if (out->pprof) /* its samples carry pid and tid labels */
		keep |= PROFILE_KEEP_PID | PROFILE_KEEP_TID;
	if (o->wakeups && !out->folded) { /* pairs by comm, or finer with --by */
		if (o->by < 0)
			o->by = BY_COMM;
		if (o->by == BY_PID)
			keep |= PROFILE_KEEP_PID;
		if (o->by == BY_TID)
			keep |= PROFILE_KEEP_PID | PROFILE_KEEP_TID;
		o->waker_by = o->by;
	} else if (o->wakeups && o->by >= 0) { /* folded: the wakers' names only */
		o->waker_by = o->by;
	}
	for (int i = 0; i < o->nr_sort; i++) {
		if (o->sort[i] == SK_PID)
			keep |= PROFILE_KEEP_PID;
		if (o->sort[i] == SK_TID)
			keep |= PROFILE_KEEP_TID;
		if (o->sort[i] == SK_CGROUP)
			keep |= PROFILE_KEEP_CGROUP;
	}
	return keep;
}

/* --threads: the per-thread table. */
static int report_threads(const struct report_opts *o, const struct msg_sink *ms, char *err,
			  size_t errlen)
{
	struct session *s;
	struct threads *th;
	int ret = threads__read(o, ms, &s, &th, err, errlen);

	if (ret)
		return ret;
	ret = threads__print(stdout, th, s, o);
	if (ret)
		snprintf(err, errlen, "%s", strerror(-ret));
	threads__free(th);
	session__free(s);
	return ret;
}

/* Every other output, from the profile. */
static int report_profile(struct report_opts *o, const struct report_output *out,
			  const struct msg_sink *ms, char *err, size_t errlen)
{
	struct session *s;
	struct profile *p;
	int ret = profile__read(o, keep_flags(o, out), ms, &s, &p, err, errlen);

	if (ret)
		return ret;
	if (out->pprof)
		ret = pprof__write(out->pprof, s, p, o, ms, err, errlen);
	else if (o->wakeups && out->folded)
		ret = offwake__print_folded(stdout, s, p, o);
	else if (o->wakeups)
		ret = offwake__print(stdout, s, p, o);
	else if (out->folded)
		ret = folded__print(stdout, s, p, o);
	else
		ret = report_stdio__print(stdout, s, p, o);
	if (ret && !err[0])
		snprintf(err, errlen, "%s", strerror(-ret));
	profile__free(p);
	session__free(s);
	return ret;
}

int cmd_report(int argc, char **argv)
{
	struct msg_sink ms = read_opts__msg("report");
	struct report_output out = { 0 };
	struct report_opts o;
	struct report_args args = { &o, &out };
	struct read_cmd cmd = { "report", REPORT_SHORT_OPTIONS "nqvT", long_opts, false, usage, option, &args };
	char err[4400];
	int ret;

	report_opts__init(&o);
	ret = read_opts__parse(&cmd, &o, argc, argv);
	if (!ret)
		ret = check(&o, &out);
	if (ret) {
		report_opts__free(&o);
		return ret > 0 ? 0 : 2;
	}
	if (o.quiet)
		ms.fn = NULL; /* -q: no warnings, no notes; errors still said */
	err[0] = 0;
	ret = out.threads ? report_threads(&o, &ms, err, sizeof(err)) :
			    report_profile(&o, &out, &ms, err, sizeof(err));
	if (ret)
		read_opts__fail("report", ret, err);
	report_opts__free(&o);
	return ret ? 1 : 0;
}
