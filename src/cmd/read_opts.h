/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the commands that read a recording (report, script, flamegraph)
 * share: the parse of their options with the filters (each command's
 * table, then the rows of profile/filter.h), report's options, the sink
 * that prints the library's warnings and notes, and how a failure is said.
 */
#ifndef OFFCPU_CMD_READ_OPTS_H
#define OFFCPU_CMD_READ_OPTS_H

#include <getopt.h>
#include <stdio.h>

#include "profile/report_opts.h"
#include "util/msg.h"

/*
 * getopt_long() codes of the options below without a short one; the
 * filters' codes are OPT_FILTER + their row in report__filter_options.
 */
enum {
	OPT_CHILDREN = 0x1000, OPT_NO_CHILDREN, OPT_PERCENT, OPT_SRCLINE, OPT_INLINE,
	OPT_NO_SYMBOLS, OPT_STDIO, OPT_KEEP_SCHED, OPT_MAX_STACK, OPT_CHAIN_MIN,
	OPT_NO_DEMANGLE,
	OPT_READ_LAST, /* a command's own codes from here */
	OPT_FILTER = 0x2000,
	OPT_OUTPUT = 0x3000, /* report's outputs: + their row in report_outputs */
};

/*
 * The options of `offcpu report` that `offcpu script` takes too (and
 * ignores some of); report's outputs (output/outputs.h) are not among them.
 */
#define REPORT_SHORT_OPTIONS "i:s:g::e:h"
#define REPORT_OPTIONS                                                    \
	{ "input", required_argument, NULL, 'i' },                        \
	{ "children", no_argument, NULL, OPT_CHILDREN },                  \
	{ "no-children", no_argument, NULL, OPT_NO_CHILDREN },            \
	{ "sort", required_argument, NULL, 's' },                         \
	{ "percent-limit", required_argument, NULL, OPT_PERCENT },        \
	{ "call-graph", optional_argument, NULL, 'g' },                   \
	{ "event", required_argument, NULL, 'e' },                        \
	{ "srcline", no_argument, NULL, OPT_SRCLINE },                    \
	{ "inline", no_argument, NULL, OPT_INLINE },                      \
	{ "no-symbols", no_argument, NULL, OPT_NO_SYMBOLS },              \
	{ "stdio", no_argument, NULL, OPT_STDIO },                        \
	{ "keep-sched-frames", no_argument, NULL, OPT_KEEP_SCHED },       \
	{ "max-stack", required_argument, NULL, OPT_MAX_STACK },          \
	{ "chain-min", required_argument, NULL, OPT_CHAIN_MIN },          \
	{ "no-demangle", no_argument, NULL, OPT_NO_DEMANGLE },            \
	{ "help", no_argument, NULL, 'h' }

/*
 * Option c of REPORT_OPTIONS (its value arg; -g may take argv[optind] as
 * its value, as perf's does): 1 when it was one of them (its value in o),
 * 0 when not, negative errno after a message.
 */
int read_opts__report(int c, char *arg, int argc, char **argv, struct report_opts *o);

/* arg, a whole decimal number in [lo, hi], into *v: 0, or -EINVAL (the caller says why). */
int read_opts__int(const char *arg, long lo, long hi, int *v);

/* The "filters:" part of a reading command's help. */
void read_opts__filter_usage(FILE *f);

/* A command's options, for read_opts__parse() (the filters' are added). */
struct read_cmd {
	const char *name;              /* "report" */
	const char *shortopts;         /* getopt's, without its leading "-:" */
	const struct option *longopts; /* ends with a row of zeros */
	bool own_prefix;               /* its options' missing values said after "offcpu NAME: " */
	void (*usage)(FILE *f);
	/* option c (value arg): 1 taken, 0 not an option of the command, negative after a message */
	int (*option)(void *ctx, int c, char *arg, int argc, char **argv);
	void *ctx;
};

/*
 * argv through getopt_long() in order, each filter to its parse() into
 * o, each other option to cmd->option(); -h and --help print the usage
 * on stdout. 0, 1 after --help, or a negative
 * errno after a message: "offcpu NAME: unknown option 'X'" and the usage
 * on stderr (an argument that is no option, "--" included), or "offcpu:
 * X needs an argument".
 */
int read_opts__parse(const struct read_cmd *cmd, struct report_opts *o, int argc, char **argv);

/*
 * The sink of the library's messages on stderr: "offcpu: warning: TEXT",
 * "offcpu CMD: TEXT" (notes) and "offcpu: TEXT" (hints); quiet (-q): the
 * hints only.
 */
struct msg_sink read_opts__msg(const char *cmd, bool quiet);

/* A failure of the library: "offcpu CMD: err", or "offcpu: out of memory" without a message. */
void read_opts__fail(const char *cmd, int ret, const char *err);

#endif
