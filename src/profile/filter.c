// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "profile/filter.h"

bool report__event_match(const struct report_opts *o, const struct perf_evattr *a)
{
	size_t n;

	if (!o->event)
		return true;
	if (!strcmp(o->event, a->name))
		return true;
	n = strcspn(a->name, ":");
	return strlen(o->event) == n && !strncmp(o->event, a->name, n);
}

bool report__match_filtered(const struct report_opts *o, const struct session *s,
			    const struct rsample *rs)
{
	const struct perf_sample *ps = rs->s;

	if (!report__event_match(o, ps->evattr))
		return false;
	if (o->pids.n && !id_list__has(&o->pids, ps->pid))
		return false;
	if (o->tids.n && !id_list__has(&o->tids, ps->tid))
		return false;
	if (o->cpus.n && !id_list__has(&o->cpus, ps->cpu))
		return false;
	if (o->time_start && ps->time < o->time_start)
		return false;
	if (o->time_end && ps->time > o->time_end)
		return false;
	if (o->nr_comms) {
		const char *c = session__comm(s, rs->comm);
		size_t i;

		for (i = 0; i < o->nr_comms; i++)
			if (!strcmp(o->comms[i], c))
				break;
		if (i == o->nr_comms)
			return false;
	}
	return true;
}

/* --comm NAME[,NAME...]: adds up when repeated. */
static int filter_comms(struct report_opts *o, const char *arg)
{
	char *dup = strdup(arg), *save = NULL, *tok;

	if (!dup)
		return -ENOMEM;
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char **n = realloc(o->comms, (o->nr_comms + 1) * sizeof(*n));

		if (!n || !(n[o->nr_comms] = strdup(tok))) {
			if (n)
				o->comms = n;
			free(dup);
			return -ENOMEM;
		}
		o->comms = n;
		o->nr_comms++;
	}
	free(dup);
	return 0;
}

/*
 * A time in seconds to ns: a finite number from 0 up to what 64 bits of ns
 * hold (584 years); nan, inf and larger values are refused (a cast of
 * those to an integer is undefined).
 */
static int parse_secs(const char *arg, const char *stop, uint64_t *ns)
{
	char *end;
	double t = strtod(arg, &end);

	if (end == arg || end != stop || !isfinite(t) || t < 0 || t >= 18446744073.0)
		return -EINVAL;
	*ns = (uint64_t)(t * 1e9 + 0.5);
	return 0;
}

/* --time START,END in seconds, either end may be empty; END not before START. */
static int filter_time(struct report_opts *o, const char *arg)
{
	const char *comma = strchr(arg, ',');

	if (!comma)
		return -EINVAL;
	if (comma != arg && parse_secs(arg, comma, &o->time_start))
		return -EINVAL;
	if (comma[1] && parse_secs(comma + 1, comma + 1 + strlen(comma + 1), &o->time_end))
		return -EINVAL;
	if (o->time_end && o->time_end < o->time_start)
		return -EINVAL;
	return 0;
}

static int filter_pids(struct report_opts *o, const char *arg)
{
	return id_list__parse(&o->pids, arg, false);
}

static int filter_tids(struct report_opts *o, const char *arg)
{
	return id_list__parse(&o->tids, arg, false);
}

static int filter_cpus(struct report_opts *o, const char *arg)
{
	return id_list__parse(&o->cpus, arg, true);
}

const struct filter_option report__filter_options[] = {
	{ "pid", 0, "      --pid PID[,PID...]", "bad list '%s'", filter_pids },
	{ "tid", 0, "  --tid TID[,...]", "bad list '%s'", filter_tids },
	{ "comm", 0, "  --comm NAME[,...]\n", "bad list '%s'", filter_comms },
	{ "cpu", 'C', "      --cpu CPUS          e.g. 0-3,6\n", "bad list '%s'", filter_cpus },
	{ "time", 0, "      --time START,END    seconds, as in perf's sample timestamps\n",
	  "bad --time '%s' (want START,END in seconds, END not before START; either may be empty)", filter_time },
};
const int report__nr_filter_options = sizeof(report__filter_options) / sizeof(report__filter_options[0]);

void report__filters_free(struct report_opts *o)
{
	id_list__free(&o->pids);
	id_list__free(&o->tids);
	id_list__free(&o->cpus);
	for (size_t i = 0; i < o->nr_comms; i++)
		free(o->comms[i]);
	free(o->comms);
}
