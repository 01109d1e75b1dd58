/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the commands that read a recording (report, script, flamegraph)
 * share: the filter options and their help, the sink that prints the
 * library's warnings and notes, and how a failure is said.
 */
#ifndef OFFCPU_CMD_READ_OPTS_H
#define OFFCPU_CMD_READ_OPTS_H

#include <getopt.h>
#include <stdio.h>

#include "profile/report_opts.h"
#include "util/msg.h"

/* getopt_long() codes of the options below without a short one (-C is --cpu). */
enum {
	OPT_PID = 0x1000, OPT_TID, OPT_COMM, OPT_TIME,
	OPT_CHILDREN, OPT_NO_CHILDREN, OPT_PERCENT, OPT_FOLDED, OPT_SRCLINE, OPT_INLINE,
	OPT_NO_SYMBOLS, OPT_STDIO,
	OPT_READ_LAST, /* a command's own codes from here */
};

/* The filters' rows of a getopt_long() table. */
#define FILTER_OPTIONS                                            \
	{ "pid", required_argument, NULL, OPT_PID },              \
	{ "tid", required_argument, NULL, OPT_TID },              \
	{ "comm", required_argument, NULL, OPT_COMM },            \
	{ "cpu", required_argument, NULL, 'C' },                  \
	{ "time", required_argument, NULL, OPT_TIME }

/* The options of `offcpu report` that `offcpu script` takes too (and ignores some of). */
#define REPORT_SHORT_OPTIONS "i:s:g::e:C:h"
#define REPORT_OPTIONS                                                    \
	{ "input", required_argument, NULL, 'i' },                        \
	{ "children", no_argument, NULL, OPT_CHILDREN },                  \
	{ "no-children", no_argument, NULL, OPT_NO_CHILDREN },            \
	{ "sort", required_argument, NULL, 's' },                         \
	{ "percent-limit", required_argument, NULL, OPT_PERCENT },        \
	{ "call-graph", optional_argument, NULL, 'g' },                   \
	{ "folded", no_argument, NULL, OPT_FOLDED },                      \
	{ "event", required_argument, NULL, 'e' },                        \
	{ "srcline", no_argument, NULL, OPT_SRCLINE },                    \
	{ "inline", no_argument, NULL, OPT_INLINE },                      \
	{ "no-symbols", no_argument, NULL, OPT_NO_SYMBOLS },              \
	{ "stdio", no_argument, NULL, OPT_STDIO },                        \
	{ "help", no_argument, NULL, 'h' },                               \
	FILTER_OPTIONS

/*
 * Option c of REPORT_OPTIONS (its value arg; -g may take argv[optind] as
 * its value, as perf's does): 1 when it was one of them (its value in o,
 * --folded in *folded), 0 when not, negative errno after a message.
 */
int read_opts__report(int c, char *arg, int argc, char **argv, struct report_opts *o,
		      bool *folded);

/*
 * Option c of getopt_long() with its value arg: 1 when it was a filter
 * (its value now in o), 0 when it is none, negative errno after a message.
 */
int read_opts__filter(int c, const char *arg, struct report_opts *o);
void read_opts__filter_usage(FILE *f);

/* A command's options, for read_opts__parse(). */
struct read_cmd {
	const char *name;              /* "report" */
	const char *shortopts;         /* getopt's, without its leading "-:" */
	const struct option *longopts;
	bool own_prefix;               /* its options' missing values said after "offcpu NAME: " */
	void (*usage)(FILE *f);
	/* option c (value arg): 1 taken, 0 not an option of the command, negative after a message */
	int (*option)(void *ctx, int c, char *arg, int argc, char **argv);
	void *ctx;
};

/*
 * argv through getopt_long() in order, each option to cmd->option(); -h
 * and --help print the usage on stdout. 0, 1 after --help, or a negative
 * errno after a message: "offcpu NAME: unknown option 'X'" and the usage
 * on stderr (an argument that is no option, "--" included), or "offcpu:
 * X needs an argument".
 */
int read_opts__parse(const struct read_cmd *cmd, int argc, char **argv);

/* The sink of the library's messages: "offcpu: warning: TEXT" and "offcpu CMD: TEXT" on stderr. */
struct msg_sink read_opts__msg(const char *cmd);

/* A failure of the library: "offcpu CMD: err", or "offcpu: out of memory" without a message. */
void read_opts__fail(const char *cmd, int ret, const char *err);

#endif
