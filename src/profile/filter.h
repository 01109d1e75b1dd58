/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The filters (--pid, --tid, --comm, --cpu, --time, --event) on resolved
 * samples. The session hands every sample to its consumer, which filters:
 * the off-wake join must see the samples a filter would drop (it filters
 * the joined one), --threads and script filter as they go.
 */
#ifndef OFFCPU_PROFILE_FILTER_H
#define OFFCPU_PROFILE_FILTER_H

#include <stdbool.h>

#include "profile/report_opts.h"
#include "session/session.h"

/* true when a filter other than --event is set */
static inline bool report__filtered(const struct report_opts *o)
{
	return o->pids.n || o->tids.n || o->nr_comms || o->cpus.n || o->time_start || o->time_end;
}

/* report__match() when a filter is set. */
bool report__match_filtered(const struct report_opts *o, const struct session *s,
			    const struct rsample *rs);

/*
 * true when the sample passes --pid/--tid/--comm/--cpu/--time/--event.
 * Inline: every sample of a report asks, and most reports set no filter.
 */
static inline bool report__match(const struct report_opts *o, const struct session *s,
				 const struct rsample *rs)
{
	return (!o->event && !report__filtered(o)) || report__match_filtered(o, s, rs);
}

/* true when the event passes --event */
bool report__event_match(const struct report_opts *o, const struct perf_evattr *a);

/*
 * The filter options, one row each, in the order of their help: every
 * command that reads a recording (report, script, flamegraph) takes each
 * row as --NAME VALUE (and -SHORT VALUE), lists its help under "filters:"
 * and hands its value to parse(). A new filter is a field in struct
 * report_opts, a row here, and its test in report__match() and
 * report__filtered() (filter.c); no command changes.
 */
struct filter_option {
	const char *name;  /* the long option */
	char short_name;   /* its short option, 0 for none */
	const char *help;  /* its part of the "filters:" help (rows' parts are printed one after the other) */
	const char *bad;   /* the message for a value parse() refuses (-EINVAL): a format of the value */
	int (*parse)(struct report_opts *o, const char *arg); /* 0, -EINVAL or -ENOMEM */
};
extern const struct filter_option report__filter_options[];
extern const int report__nr_filter_options;

/* Free what the filters' values hold (report_opts__free() calls it). */
void report__filters_free(struct report_opts *o);

#endif
