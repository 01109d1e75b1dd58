// SPDX-License-Identifier: GPL-2.0-only
/* offcpu: the subcommand table. Each subcommand lives in its own folder. */
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "cmd/commands.h"

#ifndef OFFCPU_VERSION
#define OFFCPU_VERSION "0.1"
#endif

static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} commands[] = {
	{ "record", cmd_record, "record off-CPU and CPU samples into perf.data" },
	{ "report", cmd_report, "show where the time went, per event" },
	{ "script", cmd_script, "print every sample, like perf script" },
	{ "flamegraph", cmd_flamegraph, "draw on-CPU and off-CPU time in one interactive SVG" },
	{ "timeline", cmd_timeline, "every thread's waits and runs in time, for Perfetto or speedscope" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: offcpu COMMAND [ARGS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\n'offcpu COMMAND --help' describes a command's options.\n");
}

int main(int argc, char **argv)
{
	/*
	 * Blocks from 128 KiB on are mapped and unmapped, never kept in the
	 * heap: the readers' large tables come and go (the walk's caches,
	 * then the outputs'), and glibc's adaptive threshold would rise past
	 * them once one was freed, keeping the next ones (and their copies
	 * as they grow) resident: 61 MB against 41 MB of peak RSS for a
	 * report of a 100 MB recording.
	 */
	mallopt(M_MMAP_THRESHOLD, 128 << 10);
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("offcpu %s\n", OFFCPU_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "offcpu: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
