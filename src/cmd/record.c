// SPDX-License-Identifier: GPL-2.0-only
/* `offcpu record`: options into a record_opts, then a session. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/commands.h"
#include "record/record.h"

static const char usage_text[] =
	"usage: offcpu record [options] [-- COMMAND [ARGS...]]\n"
	"       offcpu record [options] -p PID|-t TID|-a [SECS]\n"
	"\n"
	"Record where threads wait (off-CPU time, event offcpu-time) and where they\n"
	"run (cpu-clock samples) into a perf.data file that Linux perf reads.\n"
	"\n"
	"Targets (default with no COMMAND: the whole machine):\n"
	"  -p, --pid PID[,PID...]     processes (all their threads) and the children they\n"
	"                             fork while recorded (as perf record -p), until the\n"
	"                             processes given exit\n"
	"  -t, --tid TID[,TID...]     threads, each alone (not its children), until they\n"
	"                             exit\n"
	"  -a, --all-cpus             the whole machine\n"
	"  -C, --cpu LIST             only these CPUs (e.g. 0,2-3)\n"
	"  -G, --cgroup PATH          only tasks in this cgroup v2 (and below)\n"
	"  COMMAND                    run it and record it and its children\n"
	"      --user NAME            run COMMAND as user NAME (its groups too); offcpu\n"
	"                             keeps its privileges for BPF and perf events only\n"
	"\n"
	"Recording:\n"
	"  -o, --output FILE          output file (default perf.data; an existing one\n"
	"                             becomes FILE.old, unless it or FILE.old is another\n"
	"                             user's)\n"
	"  -d, --duration SECS        stop after SECS seconds; a number after -p, -t or -a\n"
	"                             with no COMMAND is the same (offcpu record -p PID 5)\n"
	"  -F, --freq HZ|max          CPU sampling frequency (default 999); max: the\n"
	"                             kernel's (kernel.perf_event_max_sample_rate)\n"
	"  -c, --count N              a CPU sample every N events instead (cpu-clock,\n"
	"                             task-clock: every N ns)\n"
	"  -e, --event NAME           CPU event: cpu-clock (default), task-clock, cycles\n"
	"      --no-cpu               off-CPU only, no CPU samples\n"
	"      --off-cpu-thresh MS    waits of MS or more are written one by one, shorter\n"
	"                             ones summed in the kernel (default 500)\n"
	"      --off-cpu-states S|D|SD  sleep states that count as off-CPU (default SD)\n"
	"      --flush-interval MS    drain the in-kernel sums every MS (default 1000)\n"
	"      --stacks user,kernel   stacks taken at switch-out (default user,kernel)\n"
	"      --call-graph dwarf|fp  how user stacks are walked: dwarf (default) unwinds\n"
	"                             them in the kernel from each binary's .eh_frame\n"
	"                             (code built without frame pointers: distribution\n"
	"                             libraries, python...), falling back to frame\n"
	"                             pointers where a binary has no such table; fp\n"
	"                             follows frame pointers only (cheaper, loses callers\n"
	"                             in code built without them); perf's dwarf,SIZE is\n"
	"                             taken as dwarf (no stack is copied: SIZE is unused)\n"
	"      --python yes|no        Python functions in the stacks of CPython 3.11-3.13\n"
	"                             threads, as \"function (file.py:line)\" in place of the\n"
	"                             interpreter's frames (default yes; with --call-graph\n"
	"                             dwarf only); their names go to FILE.python\n"
	"  -U, --user-stacks-only     the same as --stacks user\n"
	"  -K, --kernel-stacks-only   the same as --stacks kernel\n"
	"  -g, --off-cpu              call graphs, off-CPU time: always on (accepted as in\n"
	"                             perf record)\n"
	"      --no-kstack-cache      walk every kernel stack (by default a stack is taken\n"
	"                             from the cache of blocking points when the thread\n"
	"                             blocks where it blocked before)\n"
	"      --kernel-threads       include kernel threads' off-CPU time\n"
	"  -u, --user-threads-only    user threads only: off-CPU time (as by default) and\n"
	"                             CPU samples\n"
	"  -k, --kernel-threads-only  kernel threads only: off-CPU time and CPU samples\n"
	"  -m, --min-block-time US    leave out waits shorter than US microseconds\n"
	"  -M, --max-block-time US    leave out waits longer than US microseconds (both\n"
	"                             filtered in the kernel and counted in the summary)\n"
	"      --wakeups              note who woke each waiting thread, with its stacks\n"
	"                             (event offcpu-wakeup, beside each offcpu-time sample)\n"
	"      --sched-delay          run-queue delay: the wait for a CPU after a wakeup,\n"
	"                             preemption or fork (event sched-delay)\n"
	"      --nice N               the recorder's own nice value, -20 to 19 (default\n"
	"                             -20: on a machine whose CPUs are all busy it still\n"
	"                             starts, drains and stops in time; its CPU time is\n"
	"                             the same at any value); 0: as it was started\n"
	"      --chains               wait chains (report --chains): every wait of every\n"
	"                             thread of the machine, its waker and stacks, compact\n"
	"                             (events offcpu-switch, offcpu-stack), and the CPU\n"
	"                             samples of threads outside the targets too (event\n"
	"                             chain-cpu-clock); implies --wakeups\n"
	"  -q, --quiet                no status line or summary\n"
	"  -v, --verbose              the whole summary: how stacks were taken, waits in\n"
	"                             progress, switch-ins the kernel hid\n"
	"  -h, --help                 this text\n";

enum {
	OPT_NO_CPU = 256,
	OPT_THRESH,
	OPT_STATES,
	OPT_FLUSH,
	OPT_STACKS,
	OPT_KTHREADS,
	OPT_WAKEUPS,
	OPT_SCHED_DELAY,
	OPT_CHAINS,
	OPT_USER,
	OPT_CALL_GRAPH,
	OPT_NO_KCACHE,
	OPT_PYTHON,
	OPT_OFF_CPU,
	OPT_SWITCH_OUTPUT,
	OPT_NICE,
};

/* -u/-k and -U/-K: each pair is one choice, asked at most once. */
enum { ONLY_NONE, ONLY_USER, ONLY_KERNEL };

static const struct option long_opts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "pid", required_argument, NULL, 'p' },
	{ "tid", required_argument, NULL, 't' },
	{ "all-cpus", no_argument, NULL, 'a' },
	{ "cpu", required_argument, NULL, 'C' },
	{ "cgroup", required_argument, NULL, 'G' },
	{ "duration", required_argument, NULL, 'd' },
	{ "freq", required_argument, NULL, 'F' },
	{ "count", required_argument, NULL, 'c' },
	{ "event", required_argument, NULL, 'e' },
	{ "no-cpu", no_argument, NULL, OPT_NO_CPU },
	{ "off-cpu-thresh", required_argument, NULL, OPT_THRESH },
	{ "off-cpu-states", required_argument, NULL, OPT_STATES },
	{ "flush-interval", required_argument, NULL, OPT_FLUSH },
	{ "stacks", required_argument, NULL, OPT_STACKS },
	{ "kernel-threads", no_argument, NULL, OPT_KTHREADS },
	{ "wakeups", no_argument, NULL, OPT_WAKEUPS },
	{ "sched-delay", no_argument, NULL, OPT_SCHED_DELAY },
	{ "chains", no_argument, NULL, OPT_CHAINS },
	{ "user", required_argument, NULL, OPT_USER },
	{ "call-graph", required_argument, NULL, OPT_CALL_GRAPH },
	{ "no-kstack-cache", no_argument, NULL, OPT_NO_KCACHE },
	{ "python", required_argument, NULL, OPT_PYTHON },
	{ "off-cpu", no_argument, NULL, OPT_OFF_CPU },
	{ "nice", required_argument, NULL, OPT_NICE },
	{ "switch-output", optional_argument, NULL, OPT_SWITCH_OUTPUT },
	{ "user-threads-only", no_argument, NULL, 'u' },
	{ "kernel-threads-only", no_argument, NULL, 'k' },
	{ "user-stacks-only", no_argument, NULL, 'U' },
	{ "kernel-stacks-only", no_argument, NULL, 'K' },
	{ "min-block-time", required_argument, NULL, 'm' },
	{ "max-block-time", required_argument, NULL, 'M' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

/* After a usage error's message: the forms, and where the options are. */
static const char usage_short[] =
	"usage: offcpu record [options] [-- COMMAND [ARGS...]] | -p PID | -t TID | -a [SECS]\n"
	"       (offcpu record --help lists the options)\n";

static int bad(const char *opt, const char *val, const char *why)
{
	fprintf(stderr, "offcpu record: invalid value '%s' for %s: %s\n%s", val, opt, why,
		usage_short);
	return 2;
}

/* Options that cannot go together: usage, exit 2. */
static int conflict(const char *why)
{
	fprintf(stderr, "offcpu record: %s\n%s", why, usage_short);
	return 2;
}

/* A habit of perf record that offcpu does not take: one line, with what to do instead; exit 2. */
static int habit(const char *opt, const char *instead)
{
	fprintf(stderr, "offcpu record: %s: %s\n", opt, instead);
	return 2;
}

static int parse_double(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return errno || end == s || *end ? -EINVAL : 0;
}

/*
 * A duration in seconds: a finite number above 0, at most 10^9 s (31 years:
 * its nanoseconds fit in 64 bits with room to add the start time). strtod
 * takes "nan", "inf" and 1e300, none of which is a duration.
 */
#define MAX_DURATION 1e9
static int parse_duration(const char *s, double *out)
{
	return parse_double(s, out) || !isfinite(*out) || *out <= 0 || *out > MAX_DURATION
		       ? -EINVAL : 0;
}

static int parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno || *end || *out > max ? -EINVAL : 0;
}

static int parse_states(const char *s, uint32_t *mask)
{
	*mask = 0;
	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s == 'S' || *s == 's')
			*mask |= OFFCPU_STATE_S;
		else if (*s == 'D' || *s == 'd')
			*mask |= OFFCPU_STATE_D;
		else
			return -EINVAL;
	}
	return 0;
}

static int parse_stacks(const char *s, bool *user, bool *kernel)
{
	char buf[64], *tok, *save = NULL;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	*user = *kernel = false;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "user"))
			*user = true;
		else if (!strcmp(tok, "kernel"))
			*kernel = true;
		else
			return -EINVAL;
	}
	return *user || *kernel ? 0 : -EINVAL;
}

/*
 * -e with a tracepoint (perf record -e sched:sched_switch): offcpu records
 * its own events; -e picks the CPU-sampling one. 2 after the line, or -1
 * when arg is no tracepoint.
 */
static int tracepoint_event(const char *arg)
{
	char opt[96];

	if (!strchr(arg, ':'))
		return -1;
	snprintf(opt, sizeof(opt), "-e %s", arg);
	if (!strcmp(arg, "sched:sched_switch"))
		return habit(opt, "not needed: offcpu records every switch itself, with its stacks and "
			     "times (event offcpu-time); -e picks the CPU-sampling event (cpu-clock, "
			     "task-clock, cycles)");
	if (!strcmp(arg, "sched:sched_wakeup") || !strcmp(arg, "sched:sched_waking"))
		return habit(opt, "use --wakeups: who woke each wait, with its stacks (event "
			     "offcpu-wakeup); -e picks the CPU-sampling event (cpu-clock, task-clock, "
			     "cycles)");
	return habit(opt, "offcpu records its own events (offcpu-time and CPU samples) and no "
		     "tracepoint: use perf record for that; -e picks the CPU-sampling event (cpu-clock, "
		     "task-clock, cycles)");
}

/*
 * --call-graph dwarf|fp, or perf's dwarf,SIZE: the size of the stack copy
 * perf takes, which offcpu does not (it unwinds in the kernel), said unused.
 */
static int call_graph(struct record_opts *o, const char *arg)
{
	unsigned long long size;

	if (!strcmp(arg, "dwarf") || !strcmp(arg, "fp")) {
		o->dwarf = arg[0] == 'd';
		return 0;
	}
	if (!strncmp(arg, "dwarf,", 6) && !parse_uint(arg + 6, UINT32_MAX, &size)) {
		o->dwarf = true;
		fprintf(stderr, "offcpu record: --call-graph %s: the size is unused (user stacks are "
			"unwound in the kernel; no copy of the stack is taken)\n", arg);
		return 0;
	}
	if (!strcmp(arg, "lbr"))
		return habit("--call-graph lbr", "no LBR: use dwarf (the default) or fp");
	return bad("--call-graph", arg, "expected dwarf or fp");
}

/* The options of the events and their stacks, for option(). */
static int event_option(struct record_opts *o, int c, const char *arg, char **argv)
{
	unsigned long long u;

	switch (c) {
	case 'F':
		if (!strcmp(arg, "max")) {
			o->freq_max = true;
			return 0;
		}
		if (parse_uint(arg, 100000, &u) || !u)
			return bad("-F", arg, "expected a frequency in Hz (1-100000) or max");
		o->freq = u;
		o->freq_max = false;
		return 0;
	case 'c':
		if (parse_uint(arg, 1ULL << 62, &u) || !u)
			return bad("-c", arg, "expected a count of events > 0 (cpu-clock: ns)");
		o->period = u;
		return 0;
	case 'e':
		if (tracepoint_event(arg) > 0)
			return 2;
		if (strcmp(arg, "cpu-clock") && strcmp(arg, "task-clock") &&
		    strcmp(arg, "cycles"))
			return bad("-e", arg, "cpu-clock, task-clock or cycles");
		o->event = arg;
		return 0;
	case OPT_NO_CPU:
		o->no_cpu = true;
		return 0;
	case OPT_THRESH:
		if (parse_uint(arg, 3600000, &u))
			return bad("--off-cpu-thresh", arg, "expected milliseconds");
		o->thresh_ns = u * 1000000ULL;
		return 0;
	case OPT_STATES:
		if (parse_states(arg, &o->state_mask))
			return bad("--off-cpu-states", arg, "expected S, D or SD");
		return 0;
	case OPT_FLUSH:
		if (parse_uint(arg, 3600000, &u) || u < 10)
			return bad("--flush-interval", arg, "expected milliseconds >= 10");
		o->flush_ms = u;
		return 0;
	case OPT_STACKS:
		if (parse_stacks(arg, &o->ustack, &o->kstack))
			return bad("--stacks", arg, "expected user, kernel or user,kernel");
		return 0;
	case OPT_KTHREADS:
		o->kernel_threads = true;
		return 0;
	case OPT_NO_KCACHE:
		o->kstack_cache = false;
		return 0;
	case OPT_WAKEUPS:
		o->wakeups = true;
		return 0;
	case OPT_SCHED_DELAY:
		o->sched_delay = true;
		return 0;
	case OPT_CHAINS:
		o->chains = true;
		o->wakeups = true; /* the targets' offcpu-wakeup samples too: report --wakeups */
		return 0;
	case OPT_PYTHON:
		if (!strcmp(arg, "yes"))
			o->python = true;
		else if (!strcmp(arg, "no"))
			o->python = false;
		else
			return bad("--python", arg, "expected yes or no");
		return 0;
	case OPT_CALL_GRAPH:
		return call_graph(o, arg);
	case OPT_SWITCH_OUTPUT:
		return habit("--switch-output", "not supported: one recording is one file; record "
			     "again (-d SECS each) for one file per period");
	case OPT_NICE: {
		char *end;
		long n;

		errno = 0;
		n = strtol(arg, &end, 10);
		if (errno || end == arg || *end || n < -20 || n > 19)
			return bad("--nice", arg, "expected a nice value, -20 to 19");
		o->nice = n;
		return 0;
	}
	case OPT_USER:
		if (!*arg)
			return bad("--user", arg, "expected a user name or uid");
		o->user = arg;
		return 0;
	case 'q':
		o->quiet = true;
		return 0;
	default:
		if (optopt && optopt < 256)
			fprintf(stderr, "offcpu record: unknown option or missing value: -%c\n",
				optopt);
		else
			fprintf(stderr, "offcpu record: unknown option or missing value: %s\n",
				argv[optind - 1]);
		fputs(usage_short, stderr);
		return 2;
	}
}

/*
 * Option c of getopt_long() with its value arg into o: 0, or 2 (the exit
 * status) after the message and the usage on stderr: a bad value, an
 * unknown option or a missing value. What is recorded and where to;
 * event_option() takes the rest.
 */
static int option(struct record_opts *o, int c, const char *arg, char **argv)
{
	switch (c) {
	case 'o':
		if (!*arg)
			return bad("-o", arg, "empty path");
		o->output = arg;
		return 0;
	case 'p':
		if (int_list__parse(&o->pids, arg, false))
			return bad("-p", arg, "expected PID[,PID...]");
		return 0;
	case 't':
		if (int_list__parse(&o->tids, arg, false))
			return bad("-t", arg, "expected TID[,TID...]");
		return 0;
	case 'a':
		o->all_cpus = true;
		return 0;
	case 'C':
		if (int_list__parse(&o->cpus, arg, true))
			return bad("-C", arg, "expected a CPU list such as 0,2-3");
		return 0;
	case 'G':
		o->cgroup = arg;
		return 0;
	case 'd':
		if (parse_duration(arg, &o->duration))
			return bad("-d", arg, "expected seconds, more than 0 and at most 1e9");
		return 0;
	default:
		return event_option(o, c, arg, argv);
	}
}

/* What -u/-k and -U/-K asked for so far (ONLY_*): asking both ways is a conflict. */
struct only {
	int threads, stacks;
};

/*
 * The habits of BCC's offcputime and perf record (-u/-k, -U/-K, -m/-M,
 * -g, -v) into o and only: 0, or 2 after the message; the rest goes to
 * option().
 */
static int habit_option(struct record_opts *o, struct only *only, int c, const char *arg,
			char **argv)
{
	unsigned long long u;

	switch (c) {
	case 'u':
	case 'k':
		if (only->threads && only->threads != (c == 'u' ? ONLY_USER : ONLY_KERNEL))
			return conflict("-u and -k: user or kernel threads, not both");
		only->threads = c == 'u' ? ONLY_USER : ONLY_KERNEL;
		return 0;
	case 'U':
	case 'K':
		if (only->stacks && only->stacks != (c == 'U' ? ONLY_USER : ONLY_KERNEL))
			return conflict("-U and -K: user or kernel stacks only, not both (both is the default)");
		only->stacks = c == 'U' ? ONLY_USER : ONLY_KERNEL;
		o->ustack = c == 'U';
		o->kstack = c == 'K';
		return 0;
	case 'm':
		if (parse_uint(arg, UINT64_MAX / 1000, &u))
			return bad("-m", arg, "expected microseconds");
		o->min_ns = u * 1000;
		return 0;
	case 'M':
		if (parse_uint(arg, UINT64_MAX / 1000 - 1, &u))
			return bad("-M", arg, "expected microseconds");
		o->max_ns = u * 1000;
		return 0;
	case 'g':
	case OPT_OFF_CPU:
		return 0; /* perf's "call graphs on", "off-CPU too": they always are */
	case 'v':
		o->verbose = true;
		return 0;
	default:
		return option(o, c, arg, argv);
	}
}

/*
 * The recorder's messages on stderr, behind "offcpu record:". Each is one
 * call on the unbuffered stderr, which glibc locks for the call: a line is
 * written whole even when it comes from another thread (libbpf's log from
 * the unwinder's loader thread), as the recorder's sink must allow.
 */
static void record_msg(void *ctx, enum msg_kind kind, const char *text)
{
	(void)ctx;
	switch (kind) {
	case MSG_SUMMARY:
		fprintf(stderr, "[ offcpu record: %s ]\n", text);
		break;
	case MSG_STATUS: /* in place of the last one: the cursor stays on its line */
		if (*text)
			fprintf(stderr, "\r[ offcpu record: %s ]\033[K", text);
		else
			fputs("\r\033[K", stderr);
		break;
	case MSG_DEBUG:
		fputs(text, stderr);
		break;
	default: /* errors, warnings, notes: the same words whatever their kind */
		fprintf(stderr, "offcpu record: %s\n", text);
		break;
	}
}

/*
 * Record with options o, in the recorder's steps. Exit status: the
 * command's (0 without one), 127 when it could not be run (as a shell
 * says), 1 when the recording failed.
 */
static int record(const struct record_opts *o)
{
	const struct msg_sink ms = { record_msg, NULL };
	struct recorder *r = NULL;
	int err, status;

	err = recorder__new(o, &ms, &r);
	if (err) {
		fprintf(stderr, "offcpu record: out of memory\n");
		return 1;
	}
	err = recorder__open(r);
	if (!err)
		err = recorder__start(r);
	if (!err)
		err = recorder__finish(r, recorder__loop(r));
	if (!err)
		status = recorder__command_status(r);
	else
		status = recorder__command_failed(r) ? 127 : 1;
	recorder__free(r);
	return status;
}

/*
 * The options taken together, after getopt: argv[optind...] is a trailing
 * duration or the COMMAND (dashdash: "--" came before it). 0, or 2 after
 * the message.
 */
static int check(struct record_opts *o, const struct only *only, int argc, char **argv,
		 bool dashdash)
{
	/*
	 * BCC's trailing duration (offcputime -p PID 5): one number after
	 * -p/-t/-a, with no COMMAND and no "--" before it; anything else
	 * after the options is a COMMAND, as before.
	 */
	if (!dashdash && optind == argc - 1 && (o->pids.n || o->tids.n || o->all_cpus) &&
	    argv[optind][0] >= '0' && argv[optind][0] <= '9') {
		double secs;

		if (parse_duration(argv[optind], &secs))
			return bad("the duration", argv[optind], "expected seconds, more than 0 and at most 1e9");
		if (o->duration > 0)
			return conflict("two durations: -d and a trailing number");
		o->duration = secs;
		optind++;
	}
	if (o->min_ns > o->max_ns)
		return conflict("-m is above -M: no wait would be kept");
	if (o->period && (o->freq_max || o->freq))
		return conflict("-c and -F: a sample every N events, or N a second, not both");
	if (!o->freq)
		o->freq = 999;
	if (only->threads == ONLY_USER && o->kernel_threads)
		return conflict("-u and --kernel-threads: user threads only, or kernel threads too?");
	if (only->threads) {
		o->user_threads = only->threads == ONLY_USER;
		o->kernel_threads = only->threads == ONLY_KERNEL;
		o->thread_kind_cpu = true;
	}
	if (optind < argc)
		o->argv = argv + optind;
	if (o->argv && (o->pids.n || o->tids.n || o->all_cpus)) {
		fprintf(stderr, "offcpu record: give either a COMMAND or -p/-t/-a, not both\n%s",
			usage_short);
		return 2;
	}
	if (o->user && !o->argv) {
		fprintf(stderr, "offcpu record: --user needs a COMMAND to run\n%s", usage_short);
		return 2;
	}
	if (!o->argv && !o->pids.n && !o->tids.n)
		o->all_cpus = true; /* as perf: no target means the whole machine */
	return 0;
}

/*
 * The number in environment variable name into *out, at most max; unset or
 * empty leaves *out. 0, or 2 with the reason said (what: what it expects).
 */
static int env_uint(const char *name, unsigned long long max, const char *what, uint32_t *out)
{
	const char *v = getenv(name);
	unsigned long long n;

	if (!v || !*v)
		return 0;
	if (parse_uint(v, max, &n)) {
		fprintf(stderr, "offcpu record: %s: expected %s, got '%s'\n", name, what, v);
		return 2;
	}
	*out = n;
	return 0;
}

/*
 * The test hooks (OFFCPU_TEST_HIDE, OFFCPU_TEST_HIDE_WAKING, OFFCPU_TEST_UNWIND_LATE,
 * OFFCPU_TEST_WAKEUP_PROG, OFFCPU_TEST_STALL, OFFCPU_TEST_UNWIND_FAIL,
 * OFFCPU_TEST_STOP_DELAY): 0, or 2 after the message.
 */
static int test_knobs(struct record_opts *o)
{
	const char *wprog = getenv("OFFCPU_TEST_WAKEUP_PROG"), *ufail = getenv("OFFCPU_TEST_UNWIND_FAIL");

	o->test_wakeup_prog = wprog && *wprog && strcmp(wprog, "0");
	o->test_unwind_fail = ufail && *ufail && strcmp(ufail, "0");
	if (env_uint("OFFCPU_TEST_HIDE", 1000000, "a number", &o->test_hide) ||
	    env_uint("OFFCPU_TEST_HIDE_WAKING", 1000000, "a number", &o->test_hide_waking) ||
	    env_uint("OFFCPU_TEST_UNWIND_LATE", 10000, "milliseconds", &o->test_unwind_late_ms) ||
	    env_uint("OFFCPU_TEST_STALL", 100, "milliseconds (at most 100)", &o->test_stall_ms) ||
	    env_uint("OFFCPU_TEST_STOP_DELAY", 1000, "milliseconds (at most 1000)",
		     &o->test_stop_delay_ms))
		return 2;
	return 0;
}

/*
 * Run by sudo, root writes on behalf of the user who ran it (SUDO_UID,
 * SUDO_GID): the file is theirs, so that `offcpu report` needs no sudo.
 * perf record does not do this. --user (who runs the COMMAND) does not
 * change who reads the file.
 */
static void sudo_owner(struct record_opts *o)
{
	unsigned long long uid, gid;

	if (geteuid() != 0 || !getenv("SUDO_UID") || !getenv("SUDO_GID"))
		return;
	if (parse_uint(getenv("SUDO_UID"), UINT32_MAX - 1, &uid) ||
	    parse_uint(getenv("SUDO_GID"), UINT32_MAX - 1, &gid)) {
		fprintf(stderr, "offcpu record: SUDO_UID '%s' or SUDO_GID '%s' is not a number: "
			"the output stays root's\n", getenv("SUDO_UID"), getenv("SUDO_GID"));
	} else if (uid) {
		o->give_output = true;
		o->owner_uid = uid;
		o->owner_gid = gid;
	}
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o = {
		.output = "perf.data",
		.freq = 0, /* -F: 999 unless -c (check) */
		.event = "cpu-clock",
		.thresh_ns = 500000000ULL,
		.state_mask = OFFCPU_STATE_S | OFFCPU_STATE_D,
		.flush_ms = 1000,
		.ustack = true,
		.kstack = true,
		.dwarf = true,
		.python = true,
		.kstack_cache = true,
		.user_threads = true,
		.max_ns = UINT64_MAX,
		.nice = -20,
		.orig_argc = argc,
		.orig_argv = argv,
	};
	struct only only = { ONLY_NONE, ONLY_NONE };
	int c, ret = 0, before = 1;

	optind = 1;
	opterr = 0; /* our own message, prefixed like every other */
	while (!ret && (c = getopt_long(argc, argv, "+o:p:t:aC:G:d:F:c:e:uUkKm:M:gqvh", long_opts,
					NULL)) != -1) {
		before = optind;
		if (c == 'h') {
			fputs(usage_text, stdout);
			goto out;
		}
		ret = habit_option(&o, &only, c, optarg, argv);
	}
	if (!ret)
		ret = check(&o, &only, argc, argv, optind > before);
	if (!ret)
		ret = test_knobs(&o);
	if (!ret) {
		sudo_owner(&o);
		/* a line rewritten in place is for a person at a terminal */
		o.status_line = !o.quiet && isatty(STDERR_FILENO);
		ret = record(&o);
	}
out:
	int_list__free(&o.pids);
	int_list__free(&o.tids);
	int_list__free(&o.cpus);
	return ret;
}
