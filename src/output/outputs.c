// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <string.h>

#include "output/outputs.h"
#include "profile/read.h"

/* The outputs, in the order of report's help; each NAME_output is defined in its file. */
#define REPORT_OUTPUTS(X) X(stdio) X(folded) X(pprof) X(wakeups) X(chains) X(threads)

#define DECLARE(n) extern const struct report_output n##_output;
REPORT_OUTPUTS(DECLARE)
#define ROW(n) &n##_output,
const struct report_output *const report_outputs[] = { REPORT_OUTPUTS(ROW) };
const int report__nr_outputs = sizeof(report_outputs) / sizeof(report_outputs[0]);
_Static_assert(sizeof(report_outputs) / sizeof(report_outputs[0]) <= OUTPUTS_MAX,
	       "more outputs than struct output_choice holds");

static int output_index(const char *name, size_t len)
{
	for (int i = 0; i < report__nr_outputs; i++)
		if (report_outputs[i]->name && strlen(report_outputs[i]->name) == len &&
		    !strncmp(report_outputs[i]->name, name, len))
			return i;
	return -1;
}

bool output_choice__has(const struct output_choice *c, const char *name)
{
	int i = output_index(name, strlen(name));

	return i >= 0 && (c->given & 1u << i);
}

const char *output_choice__arg(const struct output_choice *c, const char *name)
{
	int i = output_index(name, strlen(name));

	return i >= 0 && (c->given & 1u << i) ? c->arg[i] : NULL;
}

/* Whether out meets one of its excluded outputs in c, or -e. */
static bool conflicts(const struct report_output *out, const struct output_choice *c,
		      const struct report_opts *o)
{
	const char *n = out->excludes;

	if (out->no_event && o->event)
		return true;
	while (n && *n) {
		size_t len = strcspn(n, " ");
		int i = output_index(n, len);

		if (i >= 0 && (c->given & 1u << i))
			return true;
		n += len + strspn(n + len, " ");
	}
	return false;
}

/* "--by goes with --A, --B or --C": the outputs that take --by. */
static void by_message(char *err, size_t errlen)
{
	size_t at = (size_t)snprintf(err, errlen, "--by goes with");
	int n = 0, k = 0;

	for (int i = 0; i < report__nr_outputs; i++)
		n += report_outputs[i]->by;
	for (int i = 0; i < report__nr_outputs && at < errlen; i++)
		if (report_outputs[i]->by)
			at += (size_t)snprintf(err + at, errlen - at, "%s--%s",
					       !k++ ? " " : k == n ? " or " : ", ",
					       report_outputs[i]->name);
}

int report_outputs__check(const struct output_choice *c, const struct report_opts *o, char *err,
			  size_t errlen)
{
	bool by = false, thread_keys = false;

	for (int i = 0; i < report__nr_outputs; i++) {
		const struct report_output *out = report_outputs[i];

		if (!(c->given & 1u << i))
			continue;
		if (conflicts(out, c, o)) {
			snprintf(err, errlen, "%s", out->conflict);
			return -EINVAL;
		}
		by |= out->by;
		thread_keys |= out->thread_keys;
	}
	if (o->by >= 0 && !by) {
		by_message(err, errlen);
		return -EINVAL;
	}
	if (thread_keys && o->sort_given) {
		snprintf(err, errlen, "--threads sorts by off, S, D, on, runq or wall (one of them)");
		return -EINVAL;
	}
	if (!thread_keys && (o->thread_sort >= 0 || o->idle)) {
		snprintf(err, errlen, "%s goes with --threads (report sorts by comm,pid,tid,dso,sym,state,cgroup)",
			 o->idle ? "--idle" : "--sort off|S|D|on|runq|wall");
		return -EINVAL;
	}
	return 0;
}

/* The keys the sort shows, kept whatever the output. */
static unsigned int sort_keep(const struct report_opts *o)
{
	unsigned int keep = 0;

	for (int i = 0; i < o->nr_sort; i++) {
		if (o->sort[i] == SK_PID)
			keep |= PROFILE_KEEP_PID;
		if (o->sort[i] == SK_TID)
			keep |= PROFILE_KEEP_TID;
		if (o->sort[i] == SK_CGROUP)
			keep |= PROFILE_KEEP_CGROUP;
	}
	return keep;
}

int report_outputs__run(const struct output_choice *c, struct report_opts *o, FILE *f,
			const struct msg_sink *ms, char *err, size_t errlen)
{
	const struct report_output *out = NULL;
	struct output_run r = { .f = f, .o = o, .c = c, .ms = ms, .err = err, .errlen = errlen };
	struct profile *p = NULL;
	struct threads *t = NULL;
	struct chains *ch = NULL;
	unsigned int keep;
	int ret;

	for (int i = 0; i < report__nr_outputs; i++)
		if ((c->given & 1u << i) || (!out && !report_outputs[i]->name)) {
			out = report_outputs[i];
			r.arg = c->arg[i];
		}
	if (!out)
		return -EINVAL;
	if (out->reads == OUTPUT_READS_THREADS) {
		ret = threads__read(o, ms, &r.s, &t, err, errlen);
	} else if (out->reads == OUTPUT_READS_CHAINS) {
		if (out->prepare)
			out->prepare(o, c);
		ret = chains__read(o, ms, &r.s, &ch, err, errlen);
	} else {
		keep = out->prepare ? out->prepare(o, c) : 0;
		ret = profile__read(o, keep | sort_keep(o), ms, &r.s, &p, err, errlen);
	}
	if (ret)
		return ret;
	r.p = p;
	r.t = t;
	r.chains = ch;
	ret = out->write(&r);
	if (ret && !err[0])
		snprintf(err, errlen, "%s", strerror(-ret));
	profile__free(p);
	threads__free(t);
	chains__free(ch);
	session__free(r.s);
	return ret;
}
