/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The outputs of `offcpu report`, one table. Each row is an option of the
 * command (--NAME, its help, what it does not go with) and the function
 * that writes it; cmd/report.c takes its options, help and conflicts from
 * here. A new output is a file output/NAME.c that defines
 * `const struct report_output NAME_output` and its name in the list
 * REPORT_OUTPUTS (output/outputs.c); no command changes.
 */
#ifndef OFFCPU_OUTPUT_OUTPUTS_H
#define OFFCPU_OUTPUT_OUTPUTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "profile/chains.h"
#include "profile/profile.h"
#include "profile/report_opts.h"
#include "profile/threads.h"
#include "session/session.h"
#include "util/msg.h"

#define OUTPUTS_MAX 16

/* The outputs given on a command line: bit i for report_outputs[i], each one's value. */
struct output_choice {
	unsigned int given;
	const char *arg[OUTPUTS_MAX];
};

/* What an output writes from: the recording read as its row asks, and where to write. */
struct output_run {
	FILE *f;                       /* stdout */
	const char *arg;               /* its option's value (--pprof FILE), else NULL */
	struct session *s;
	const struct profile *p;       /* OUTPUT_READS_PROFILE */
	const struct threads *t;       /* OUTPUT_READS_THREADS */
	struct chains *chains;         /* OUTPUT_READS_CHAINS */
	const struct report_opts *o;
	const struct output_choice *c; /* the others given with it (--wakeups --folded) */
	const struct msg_sink *ms;     /* its notes and hints */
	char *err;                     /* a failure's message, when the errno is not all */
	size_t errlen;
};

enum output_reads {
	OUTPUT_READS_PROFILE, /* profile/read.h profile__read() */
	OUTPUT_READS_THREADS, /* threads__read() */
	OUTPUT_READS_CHAINS,  /* profile/chains.h chains__read() */
};

struct report_output {
	const char *name;       /* --NAME; NULL for the report without an output option */
	char short_name;        /* -X too; 0 for none */
	bool has_arg;           /* --NAME VALUE */
	const char *help;       /* its lines of report's help, those of the options it takes too */
	const char *excludes;   /* the outputs it does not go with, "NAME NAME" */
	bool no_event;          /* nor with -e */
	const char *conflict;   /* the message when it meets one of those */
	bool by;                /* it takes --by */
	bool thread_keys;       /* it takes --threads' --sort keys and --idle, not report's keys */
	enum output_reads reads;
	/* before the read: the PROFILE_KEEP_* flags it needs, its part of o's aggregation; or NULL */
	unsigned int (*prepare)(struct report_opts *o, const struct output_choice *c);
	/* 0 or a negative errno (a message in r->err when there is more to say) */
	int (*write)(const struct output_run *r);
};

extern const struct report_output *const report_outputs[];
extern const int report__nr_outputs;

/* Whether the output called name was given. */
bool output_choice__has(const struct output_choice *c, const char *name);
/* The value given to the output called name (--pprof FILE), NULL when none. */
const char *output_choice__arg(const struct output_choice *c, const char *name);

/*
 * The first conflict among the outputs given and o's options, its message
 * in err: -EINVAL; 0 when they go together.
 */
int report_outputs__check(const struct output_choice *c, const struct report_opts *o, char *err,
			  size_t errlen);

/*
 * The output given last in the table's order (those before it are its
 * modifiers, as --folded is of --wakeups), else the report: o->input read
 * as it asks, written to f. 0, or a negative errno with a message in err
 * (empty when it is only "out of memory"); notes to ms.
 */
int report_outputs__run(const struct output_choice *c, struct report_opts *o, FILE *f,
			const struct msg_sink *ms, char *err, size_t errlen);

#endif
