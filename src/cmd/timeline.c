// SPDX-License-Identifier: GPL-2.0-only
/*
 * `offcpu timeline`: options, then the recording read into a timeline
 * (profile/timeline.h) and written for Perfetto or speedscope
 * (output/timeline.h).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd/commands.h"
#include "cmd/read_opts.h"
#include "output/timeline.h"
#include "profile/timeline.h"

enum { OPT_FORMAT = OPT_READ_LAST };

static const struct option long_opts[] = {
	{ "input", required_argument, NULL, 'i' },
	{ "output", required_argument, NULL, 'o' },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "keep-sched-frames", no_argument, NULL, OPT_KEEP_SCHED },
	{ "max-stack", required_argument, NULL, OPT_MAX_STACK },
	{ "no-symbols", no_argument, NULL, OPT_NO_SYMBOLS },
	{ "chain-min", required_argument, NULL, OPT_CHAIN_MIN },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: offcpu timeline [-i FILE] [-o OUT] [--format perfetto|speedscope] [filters]\n"
		"  every thread's waits, runs and wakeups on one time axis: open the Perfetto\n"
		"  trace in ui.perfetto.dev, the speedscope file in speedscope.\n"
		"  -i, --input FILE        perf.data file (default ./perf.data)\n"
		"  -o, --output FILE       file to write (default timeline.pftrace, or\n"
		"                          timeline.speedscope.json; - for stdout)\n"
		"      --format FORMAT     perfetto (default): a protobuf trace, a track per thread\n"
		"                          with slices on CPU, off CPU (S, D) and waiting for a CPU,\n"
		"                          stacks, CPU samples, flows from wakers (record --wakeups);\n"
		"                          speedscope: an evented profile per thread\n"
		"      --keep-sched-frames keep the scheduler's frames (__schedule, schedule, ...)\n"
		"                          on top of off-CPU stacks\n"
		"      --max-stack N       the N innermost frames of each stack\n"
		"      --no-symbols        addresses only\n"
		"      --chain-min MS      the critical path of waits of MS or more (default 1),\n"
		"                          followed through their wakers (record --chains)\n"
		"  What a recording can show: waits of --off-cpu-thresh or more one by one (shorter\n"
		"  ones are summed, without times); the time between waits is on CPU only when\n"
		"  every wait was recorded: record --off-cpu-thresh 0 --sched-delay [--wakeups].\n"
		"  --time START,END cuts the timeline to that window.\n");
	read_opts__filter_usage(f);
}

struct tl_args {
	struct report_opts *o;
	const char *output;
	bool speedscope;
};

static int option(void *ctx, int c, char *arg, int argc, char **argv)
{
	struct tl_args *a = ctx;

	switch (c) {
	case 'i':
		a->o->input = arg;
		return 1;
	case 'o':
		a->output = arg;
		return 1;
	case OPT_FORMAT:
		if (!strcmp(arg, "perfetto")) {
			a->speedscope = false;
		} else if (!strcmp(arg, "speedscope")) {
			a->speedscope = true;
		} else {
			fprintf(stderr, "offcpu timeline: bad --format '%s' (perfetto or speedscope)\n", arg);
			return -EINVAL;
		}
		return 1;
	case OPT_KEEP_SCHED:
	case OPT_MAX_STACK:
	case OPT_NO_SYMBOLS:
	case OPT_CHAIN_MIN:
		return read_opts__report(c, arg, argc, argv, a->o);
	}
	return 0;
}

int cmd_timeline(int argc, char **argv)
{
	struct msg_sink ms = read_opts__msg("timeline", false);
	struct report_opts o;
	struct tl_args args = { &o, NULL, false };
	struct read_cmd cmd = { "timeline", "i:o:h", long_opts, true, usage, option, &args };
	struct timeline *tl = NULL;
	struct tl_written w;
	char err[4400];
	int ret;

	report_opts__init(&o);
	ret = read_opts__parse(&cmd, &o, argc, argv);
	if (ret) {
		report_opts__free(&o);
		return ret > 0 ? 0 : 2;
	}
	if (!args.output)
		args.output = args.speedscope ? "timeline.speedscope.json" : "timeline.pftrace";
	ret = timeline__read(&o, &ms, &tl, err, sizeof(err));
	if (!ret)
		ret = args.speedscope ? timeline__speedscope(tl, args.output, &ms, &w, err, sizeof(err))
				      : timeline__perfetto(tl, args.output, &ms, &w, err, sizeof(err));
	if (ret)
		read_opts__fail("timeline", ret, err);
	else if (strcmp(args.output, "-"))
		fprintf(stderr, "[ offcpu timeline: wrote %s (%.1f MB): %zu threads, %zu slices, "
			"%zu CPU samples, %zu wakeup flows, %zu sums of short waits ]\n", args.output,
			w.bytes / 1e6, w.threads, w.slices, w.samples, w.flows, w.summed);
	timeline__free(tl);
	report_opts__free(&o);
	return ret ? 1 : 0;
}
