// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzz target: `offcpu report`, `offcpu script` and `offcpu timeline` end
 * to end (reader, process model, aggregation, every output: call graphs,
 * --folded, --threads, --wakeups, --chains and its --folded and script's,
 * --pprof to stdout; the timeline as Perfetto and speedscope, --time
 * cutting it) on the input as a perf.data
 * file, through the commands' own entry points. Symbols are off
 * (--no-symbols): the symbolizer would open whatever files the input
 * names; its parsers have targets of their own. Output goes to /dev/null.
 * (offcpu flamegraph has no --no-symbols and is left out.)
 * LeakSanitizer checks every run, error paths included.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cmd/commands.h"

static int fd = -1;
static char path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fd = memfd_create("fuzz-report", MFD_CLOEXEC);
	if (fd < 0 || !freopen("/dev/null", "w", stdout))
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return 0;
}

#define RUN(fn, ...)                                                                       \
	do {                                                                               \
		char *args[] = { __VA_ARGS__, NULL };                                     \
		fn((int)(sizeof(args) / sizeof(args[0])) - 1, args);                      \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (ftruncate(fd, 0) || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
		abort();
	RUN(cmd_report, "report", "-i", path, "--no-symbols");
	RUN(cmd_report, "report", "-i", path, "--no-symbols", "--no-children", "-g", "callee,0",
	    "-s", "pid,tid,comm,dso,sym,state,cgroup");
	RUN(cmd_report, "report", "-i", path, "--no-symbols", "--folded");
	RUN(cmd_report, "report", "-i", path, "--no-symbols", "--threads");
	RUN(cmd_report, "report", "-i", path, "--no-symbols", "--wakeups");
	RUN(cmd_report, "report", "-i", path, "--no-symbols", "--pprof", "-");
	RUN(cmd_report, "report", "-i", path, "--no-symbols", "--chains", "--chain-min", "0");
	RUN(cmd_report, "report", "-i", path, "--no-symbols", "--chains", "--folded", "--chain-min", "0",
	    "--by", "tid");
	RUN(cmd_script, "script", "-i", path, "--no-symbols");
	RUN(cmd_script, "script", "-i", path, "--no-symbols", "--chains", "--chain-min", "0");
	RUN(cmd_timeline, "timeline", "-i", path, "--no-symbols", "-o", "-");
	RUN(cmd_timeline, "timeline", "-i", path, "--no-symbols", "-o", "-", "--format", "speedscope",
	    "--time", "0.5,");
	fflush(stdout);
	return 0;
}
