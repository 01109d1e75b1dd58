// SPDX-License-Identifier: GPL-2.0-only
/* `offcpu script`: options, then every sample printed as it is read. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd/commands.h"
#include "cmd/read_opts.h"
#include "output/report.h"
#include "profile/chains.h"
#include "profile/read.h"

/* report's options are taken (and those that shape a report ignored), as report's were. */
static const struct option long_opts[] = {
	REPORT_OPTIONS,
	{ "folded", no_argument, NULL, OPT_READ_LAST },
	{ "chains", no_argument, NULL, OPT_READ_LAST + 1 },
	{ 0 },
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: offcpu script [-i FILE] [filters]\n"
		"  print every sample like `perf script`: comm tid [cpu] time: period event:\n"
		"  then one `address symbol+offset (dso)` line per frame: the callchain as\n"
		"  recorded, the scheduler's frames of off-CPU samples included (as perf\n"
		"  script prints them; report and flamegraph leave them out).\n"
		"      --max-stack N       the N innermost frames of each callchain\n"
		"      --no-demangle       C++ and Rust names as the binary has them\n"
		"      --chains            instead, each wait report --chains analyses (waits of\n"
		"                          --chain-min MS or more, default 1) and its segments,\n"
		"                          one tab-separated line each, times in ns\n");
	read_opts__filter_usage(f);
}

struct script_args {
	struct report_opts *o;
	bool chains;
};

static int option(void *ctx, int c, char *arg, int argc, char **argv)
{
	struct script_args *a = ctx;

	if (c == OPT_READ_LAST) /* --folded: report's, taken and ignored */
		return 1;
	if (c == OPT_READ_LAST + 1) {
		a->chains = true;
		return 1;
	}
	return read_opts__report(c, arg, argc, argv, a->o);
}

/* --chains: the recording read into wait chains, each analysed wait printed. */
static int script_chains(struct report_opts *o, const struct msg_sink *ms)
{
	struct session *s = NULL;
	struct chains *c = NULL;
	char err[4400];
	int ret;

	ret = chains__read(o, ms, &s, &c, err, sizeof(err));
	if (!ret) {
		ret = chains_script__print(stdout, c, s, o);
		if (ret)
			snprintf(err, sizeof(err), "%s", strerror(-ret));
	}
	if (ret)
		read_opts__fail("script", ret, err);
	chains__free(c);
	session__free(s);
	return ret ? 1 : 0;
}

int cmd_script(int argc, char **argv)
{
	struct msg_sink ms = read_opts__msg("script", false);
	struct report_opts o;
	struct script_args args = { &o, false };
	struct read_cmd cmd = { "script", REPORT_SHORT_OPTIONS, long_opts, false, usage, option, &args };
	struct session *s;
	char err[4400];
	int ret;

	report_opts__init(&o);
	ret = read_opts__parse(&cmd, &o, argc, argv);
	if (ret) {
		report_opts__free(&o);
		return ret > 0 ? 0 : 2;
	}
	if (args.chains) {
		ret = script_chains(&o, &ms);
		report_opts__free(&o);
		return ret;
	}
	s = report__open_stream(&o, &ms, err, sizeof(err));
	if (!s) {
		read_opts__fail("script", -EINVAL, err);
		report_opts__free(&o);
		return 1;
	}
	ret = script__run(stdout, s, &o);
	if (ret) {
		snprintf(err, sizeof(err), "%s: %s", o.input,
			 session__error(s)[0] ? session__error(s) : strerror(-ret));
		read_opts__fail("script", ret, err);
	}
	session__free(s);
	report_opts__free(&o);
	return ret ? 1 : 0;
}
