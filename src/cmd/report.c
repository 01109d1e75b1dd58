// SPDX-License-Identifier: GPL-2.0-only
/*
 * `offcpu report` and `offcpu script`: option parsing, filters, and the
 * glue from a session to the outputs.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/commands.h"
#include "output/pprof/pprof.h"
#include "profile/offwake.h"
#include "output/report.h"
#include "output/threads.h"

static const char *const sort_names[SK_MAX] = {
	[SK_COMM] = "comm", [SK_PID] = "pid", [SK_TID] = "tid", [SK_DSO] = "dso",
	[SK_SYM] = "sym", [SK_STATE] = "state", [SK_CGROUP] = "cgroup",
};

static void usage(FILE *f, bool script)
{
	if (script) {
		fprintf(f,
			"usage: offcpu script [-i FILE] [filters]\n"
			"  print every sample like `perf script`: comm tid [cpu] time: period event:\n"
			"  then one `address symbol+offset (dso)` line per frame.\n");
	} else {
		fprintf(f,
			"usage: offcpu report [-i FILE] [options] [filters]\n"
			"  -i, --input FILE        perf.data file (default ./perf.data)\n"
			"      --children          Children and Self columns (default)\n"
			"      --no-children       Self column only\n"
			"  -s, --sort KEYS         comma list of comm,pid,tid,dso,sym,state,cgroup\n"
			"                          (default comm,dso,sym)\n"
			"      --percent-limit N   hide entries below N%%\n"
			"  -g, --call-graph MODE   caller, callee or none (optionally ,MIN%%)\n"
			"      --folded            one `comm;frame;...;frame VALUE` line per stack\n"
			"      --pprof FILE        write a gzipped pprof profile (go tool pprof) instead\n"
			"      --wakeups           who woke the sleepers (record --wakeups): top\n"
			"                          (sleeper stack, waker stack) pairs by time; with\n"
			"                          --folded, off-wake stacks `sleeper;--;waker VALUE`\n"
			"      --threads           per thread: wall, on-CPU, off-CPU S and D,\n"
			"                          run-queue delay (record --sched-delay)\n"
			"  -e, --event NAME        only this event\n"
			"      --srcline           file:line of each frame\n"
			"      --inline            show inlined frames\n"
			"      --stdio             accepted for perf compatibility\n");
	}
	report__filter_usage(f);
}

void report__filter_usage(FILE *f)
{
	fprintf(f,
		"filters:\n"
		"      --pid PID[,PID...]  --tid TID[,...]  --comm NAME[,...]\n"
		"      --cpu CPUS          e.g. 0-3,6\n"
		"      --time START,END    seconds, as in perf's sample timestamps\n");
}

static int parse_ids(const char *arg, struct id_list *l, bool ranges)
{
	char *dup = strdup(arg), *save = NULL, *tok;
	int err = 0;

	if (!dup)
		return -ENOMEM;
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long long a = strtoull(tok, &end, 10), b = a;

		if (end == tok)
			goto bad;
		if (*end == '-' && ranges) {
			char *e2;

			b = strtoull(end + 1, &e2, 10);
			if (e2 == end + 1 || *e2 || b < a || b - a > 65536)
				goto bad;
		} else if (*end) {
			goto bad;
		}
		for (unsigned long long v = a; v <= b; v++) {
			uint64_t *nv = realloc(l->v, (l->n + 1) * sizeof(*nv));

			if (!nv) {
				err = -ENOMEM;
				goto cleanup;
			}
			l->v = nv;
			l->v[l->n++] = v;
		}
	}
	goto cleanup;
bad:
	fprintf(stderr, "offcpu: bad list '%s'\n", arg);
	err = -EINVAL;
cleanup:
	free(dup);
	return err;
}

static bool in_list(const struct id_list *l, uint64_t v)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i] == v)
			return true;
	return false;
}

static int parse_time(const char *arg, struct report_opts *o)
{
	const char *comma = strchr(arg, ',');
	char *end;

	if (!comma)
		goto bad;
	if (comma != arg) {
		double t = strtod(arg, &end);

		if (end != comma || t < 0)
			goto bad;
		o->time_start = (uint64_t)(t * 1e9 + 0.5);
	}
	if (comma[1]) {
		double t = strtod(comma + 1, &end);

		if (*end || t < 0)
			goto bad;
		o->time_end = (uint64_t)(t * 1e9 + 0.5);
	}
	return 0;
bad:
	fprintf(stderr, "offcpu: bad --time '%s' (want START,END in seconds; either may be empty)\n", arg);
	return -EINVAL;
}

static int parse_sort(const char *arg, struct report_opts *o)
{
	char *dup = strdup(arg), *save = NULL, *tok;
	int err = 0;

	if (!dup)
		return -ENOMEM;
	o->nr_sort = 0;
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int k;

		for (k = 0; k < SK_MAX; k++)
			if (!strcmp(tok, sort_names[k]))
				break;
		if (k == SK_MAX || o->nr_sort == SK_MAX) {
			fprintf(stderr, "offcpu: unknown sort key '%s' (use comm,pid,tid,dso,sym,state,cgroup)\n", tok);
			err = -EINVAL;
			break;
		}
		o->sort[o->nr_sort++] = k;
	}
	free(dup);
	if (!err && !o->nr_sort) {
		fprintf(stderr, "offcpu: empty --sort\n");
		err = -EINVAL;
	}
	return err;
}

static bool is_graph_word(const char *s)
{
	static const char *const w[] = { "none", "caller", "callee", "graph", "fractal", "flat", "folded" };

	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		if (!strncmp(s, w[i], strlen(w[i])))
			return true;
	return false;
}

static int parse_graph(const char *arg, struct report_opts *o)
{
	char *dup = strdup(arg), *save = NULL, *tok;
	int err = 0;

	if (!dup)
		return -ENOMEM;
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		double v;

		if (!strcmp(tok, "none"))
			o->graph = GRAPH_NONE;
		else if (!strcmp(tok, "caller"))
			o->graph = GRAPH_CALLER;
		else if (!strcmp(tok, "callee"))
			o->graph = GRAPH_CALLEE;
		else if (!strcmp(tok, "graph") || !strcmp(tok, "fractal") || !strcmp(tok, "flat") ||
			 !strcmp(tok, "function") || !strcmp(tok, "address") || !strcmp(tok, "percent"))
			continue;
		else if ((v = strtod(tok, &end)) >= 0 && end != tok && !*end)
			o->graph_min = v;
		else {
			fprintf(stderr, "offcpu: bad --call-graph '%s' (caller, callee or none)\n", arg);
			err = -EINVAL;
			break;
		}
	}
	free(dup);
	return err;
}

void report_opts__free(struct report_opts *o)
{
	free(o->pids.v);
	free(o->tids.v);
	free(o->cpus.v);
	for (size_t i = 0; i < o->nr_comms; i++)
		free(o->comms[i]);
	free(o->comms);
}

static int add_comms(const char *arg, struct report_opts *o)
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

int report__parse_filter(int argc, char **argv, int *i, struct report_opts *o)
{
	const char *a = argv[*i], *val = NULL, *eq = NULL;
	char name[64];
	int err;

	if (!strncmp(a, "--", 2) && (eq = strchr(a, '='))) {
		snprintf(name, sizeof(name), "%.*s", (int)(eq - a), a);
		val = eq + 1;
		a = name;
	}
	if (strcmp(a, "--pid") && strcmp(a, "--tid") && strcmp(a, "--cpu") && strcmp(a, "-C") &&
	    strcmp(a, "--comm") && strcmp(a, "--time"))
		return 0;
	if (!val) {
		if (*i + 1 >= argc) {
			fprintf(stderr, "offcpu: %s needs an argument\n", a);
			return -EINVAL;
		}
		val = argv[++*i];
	}
	if (!strcmp(a, "--pid"))
		err = parse_ids(val, &o->pids, false);
	else if (!strcmp(a, "--tid"))
		err = parse_ids(val, &o->tids, false);
	else if (!strcmp(a, "--comm"))
		err = add_comms(val, o);
	else if (!strcmp(a, "--time"))
		err = parse_time(val, o);
	else
		err = parse_ids(val, &o->cpus, true);
	return err ? err : 1;
}

/* Parse argv into o; returns 0, 1 for --help (done), or negative on error. */
static int parse_args(int argc, char **argv, struct report_opts *o, bool script)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL;
		char name[64];
		const char *eq = NULL;
		int err = report__parse_filter(argc, argv, &i, o);

		if (err < 0)
			return err;
		if (err)
			continue;
#define ARG()                                                                                  \
	({                                                                                     \
		if (!val) {                                                                    \
			if (i + 1 >= argc) {                                                   \
				fprintf(stderr, "offcpu: %s needs an argument\n", a);          \
				return -EINVAL;                                                \
			}                                                                      \
			val = argv[++i];                                                       \
		}                                                                              \
		val;                                                                           \
	})
		if (!strncmp(a, "--", 2) && (eq = strchr(a, '='))) {
			snprintf(name, sizeof(name), "%.*s", (int)(eq - a), a);
			val = eq + 1;
			a = name;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout, script);
			return 1;
		} else if (!strcmp(a, "-i") || !strcmp(a, "--input")) {
			o->input = ARG();
		} else if (!strcmp(a, "--children")) {
			o->children = 1;
		} else if (!strcmp(a, "--no-children")) {
			o->children = 0;
		} else if (!strcmp(a, "-s") || !strcmp(a, "--sort")) {
			err = parse_sort(ARG(), o);
		} else if (!strcmp(a, "--percent-limit")) {
			char *end;
			o->percent_limit = strtod(ARG(), &end);
			if (*end || o->percent_limit < 0) {
				fprintf(stderr, "offcpu: bad --percent-limit '%s'\n", val);
				return -EINVAL;
			}
		} else if (!strcmp(a, "-g") || !strcmp(a, "--call-graph")) {
			if (!val && i + 1 < argc && is_graph_word(argv[i + 1]))
				val = argv[++i];
			if (val)
				err = parse_graph(val, o);
			else if (o->graph == GRAPH_NONE)
				o->graph = GRAPH_DEFAULT;
		} else if (!strcmp(a, "--folded")) {
			o->folded = true;
		} else if (!strcmp(a, "--pprof") && !script) {
			o->pprof = ARG();
		} else if (!strcmp(a, "--wakeups") && !script) {
			o->wakeups = true;
		} else if (!strcmp(a, "--threads") && !script) {
			o->threads = true;
		} else if (!strcmp(a, "-e") || !strcmp(a, "--event")) {
			o->event = ARG();
		} else if (!strcmp(a, "--srcline")) {
			o->srcline = true;
		} else if (!strcmp(a, "--inline")) {
			o->inlines = true;
		} else if (!strcmp(a, "--no-symbols")) {
			o->no_symbols = true;
		} else if (!strcmp(a, "--stdio")) {
			/* the only output */
		} else {
			fprintf(stderr, "offcpu %s: unknown option '%s'\n", script ? "script" : "report", argv[i]);
			usage(stderr, script);
			return -EINVAL;
		}
#undef ARG
		if (err)
			return err;
	}
	if (o->pprof && o->folded) {
		fprintf(stderr, "offcpu report: --pprof and --folded exclude each other\n");
		return -EINVAL;
	}
	if ((o->wakeups || o->threads) && (o->pprof || o->event || (o->wakeups && o->threads) ||
					   (o->threads && o->folded))) {
		fprintf(stderr, "offcpu report: --wakeups (with or without --folded), --threads, --pprof and -e exclude each other\n");
		return -EINVAL;
	}
	return 0;
}

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

bool report__match(const struct report_opts *o, const struct session *s, const struct rsample *rs)
{
	const struct perf_sample *ps = rs->s;

	if (!report__event_match(o, ps->evattr))
		return false;
	if (o->pids.n && !in_list(&o->pids, ps->pid))
		return false;
	if (o->tids.n && !in_list(&o->tids, ps->tid))
		return false;
	if (o->cpus.n && !in_list(&o->cpus, ps->cpu))
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

void report__fmt_ns(char *buf, size_t len, uint64_t ns)
{
	if (ns >= 1000000000ULL)
		snprintf(buf, len, "%.2f s", ns / 1e9);
	else if (ns >= 1000000ULL)
		snprintf(buf, len, "%.2f ms", ns / 1e6);
	else if (ns >= 1000ULL)
		snprintf(buf, len, "%.2f us", ns / 1e3);
	else
		snprintf(buf, len, "%llu ns", (unsigned long long)ns);
}

struct agg_ctx {
	const struct report_opts *o;
	const struct session *s;
	struct profile *p;
	struct offwake *ow; /* --wakeups */
	struct threads *th; /* --threads */
};

static int agg_sample(void *ctx, const struct rsample *rs)
{
	struct agg_ctx *a = ctx;
	struct rsample joined;
	int err;

	if (!a->ow)
		return report__match(a->o, a->s, rs) ? profile__add(a->p, rs) : 0;
	/* --wakeups: off-CPU samples (for their total) and joined off-wake stacks */
	err = offwake__join(a->ow, rs, &joined);
	if (err < 0)
		return err;
	if (err)
		rs = &joined;
	else if (!rs->s->evattr->is_offcpu)
		return 0;
	return report__match(a->o, a->s, rs) ? profile__add(a->p, rs) : 0;
}

int report__event_index(const struct session *s, const char *name)
{
	const struct perf_reader *r = session__reader(s);

	for (int i = 0; i < perf_reader__nr_attrs(r); i++)
		if (!strcmp(perf_reader__attr(r, i)->name, name))
			return i;
	return -1;
}

static struct session *open_session(const struct report_opts *o, const char *cmd,
				    bool defer_kernel)
{
	struct session_opts so = { .srcline = o->srcline, .inlines = o->inlines,
				   .no_symbols = o->no_symbols, .defer_kernel = defer_kernel };
	char err[512];
	struct session *s = session__new(o->input, &so, err, sizeof(err));

	if (!s)
		fprintf(stderr, "offcpu %s: %s\n", cmd, err);
	return s;
}

int report__aggregate(const struct report_opts *o, unsigned int keep, const char *cmd,
		      struct session **sp, struct profile **pp)
{
	struct session *s = open_session(o, cmd, true); /* frames are kept, named at the end */
	struct profile *p = NULL;
	const uint32_t *remap;
	uint32_t nremap;
	struct agg_ctx a = { .o = o };
	int err = -EINVAL;

	if (!s)
		goto cleanup;
	if (o->wakeups && report__event_index(s, OFFCPU_WAKEUP_EVENT_NAME) < 0) {
		fprintf(stderr, "offcpu %s: %s has no %s event: record with --wakeups\n", cmd, o->input,
			OFFCPU_WAKEUP_EVENT_NAME);
		goto cleanup;
	}
	p = profile__new(perf_reader__nr_attrs(session__reader(s)), keep);
	if (o->wakeups)
		a.ow = offwake__new(s, o->waker_ids);
	if (!p || (o->wakeups && !a.ow)) {
		fprintf(stderr, "offcpu: out of memory\n");
		err = -ENOMEM;
		goto cleanup;
	}
	a.s = s;
	a.p = p;
	err = session__run(s, agg_sample, &a);
	if (err) {
		fprintf(stderr, "offcpu %s: %s: %s\n", cmd, o->input, session__error(s));
		goto cleanup;
	}
	remap = session__remap(s, &nremap);
	err = profile__remap(p, remap, nremap);
	if (err) {
		fprintf(stderr, "offcpu: out of memory\n");
		goto cleanup;
	}
	if (a.ow && offwake__unjoined(a.ow))
		fprintf(stderr, "offcpu %s: %" PRIu64 " %s samples without their %s sample, left out\n",
			cmd, offwake__unjoined(a.ow), OFFCPU_WAKEUP_EVENT_NAME, OFFCPU_EVENT_NAME);
	offwake__free(a.ow);
	*sp = s;
	*pp = p;
	return 0;
cleanup:
	offwake__free(a.ow);
	profile__free(p);
	session__free(s);
	return err;
}

void report_opts__init(struct report_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->input = "perf.data";
	o->children = -1;
	o->sort[0] = SK_COMM;
	o->sort[1] = SK_DSO;
	o->sort[2] = SK_SYM;
	o->nr_sort = 3;
	o->graph_min = 0.5;
}

/* --threads: every sample that passes the filters, to its thread's row. */
static int threads_sample(void *ctx, const struct rsample *rs)
{
	struct agg_ctx *a = ctx;

	return report__match(a->o, a->s, rs) ? threads__add(a->th, rs) : 0;
}

static int report_threads(const struct report_opts *o)
{
	struct session *s = open_session(o, "report", false);
	struct agg_ctx a = { .o = o, .s = s };
	int err = -EINVAL;

	if (!s)
		return err;
	a.th = threads__new();
	if (!a.th) {
		fprintf(stderr, "offcpu: out of memory\n");
		goto cleanup;
	}
	err = session__run(s, threads_sample, &a);
	if (err) {
		fprintf(stderr, "offcpu report: %s: %s\n", o->input, session__error(s));
		goto cleanup;
	}
	err = threads__print(stdout, a.th, s, o);
	if (err)
		fprintf(stderr, "offcpu report: %s\n", strerror(-err));
cleanup:
	threads__free(a.th);
	session__free(s);
	return err;
}

int cmd_report(int argc, char **argv)
{
	struct report_opts o;
	struct session *s = NULL;
	struct profile *p = NULL;
	unsigned int keep = 0;
	int err, ret = 1;

	report_opts__init(&o);
	err = parse_args(argc, argv, &o, false);
	if (err) {
		ret = err > 0 ? 0 : 2;
		goto cleanup;
	}
	if (o.threads) {
		ret = report_threads(&o) ? 1 : 0;
		goto cleanup;
	}
	if (o.pprof) /* its samples carry pid and tid labels */
		keep |= PROFILE_KEEP_PID | PROFILE_KEEP_TID;
	if (o.wakeups && !o.folded) { /* pairs by thread, wakers named by thread */
		keep |= PROFILE_KEEP_PID | PROFILE_KEEP_TID;
		o.waker_ids = true;
	}
	for (int i = 0; i < o.nr_sort; i++) {
		if (o.sort[i] == SK_PID)
			keep |= PROFILE_KEEP_PID;
		if (o.sort[i] == SK_TID)
			keep |= PROFILE_KEEP_TID;
		if (o.sort[i] == SK_CGROUP)
			keep |= PROFILE_KEEP_CGROUP;
	}
	if (report__aggregate(&o, keep, "report", &s, &p))
		goto cleanup;
	if (o.pprof) {
		if (pprof__write(o.pprof, s, p, &o))
			goto cleanup; /* pprof__write said why */
		ret = 0;
		goto cleanup;
	}
	if (o.wakeups && o.folded) {
		struct report_opts fo = o;

		fo.event = OFFCPU_WAKEUP_EVENT_NAME; /* the off-wake stacks, not the off-CPU ones */
		err = folded__print(stdout, s, p, &fo);
	} else if (o.wakeups) {
		err = offwake__print(stdout, s, p, &o);
	} else {
		err = o.folded ? folded__print(stdout, s, p, &o) : report_stdio__print(stdout, s, p, &o);
	}
	if (err) {
		fprintf(stderr, "offcpu report: %s\n", strerror(-err));
		goto cleanup;
	}
	ret = 0;
cleanup:
	profile__free(p);
	session__free(s);
	report_opts__free(&o);
	return ret;
}

int cmd_script(int argc, char **argv)
{
	struct report_opts o;
	struct session *s = NULL;
	int err, ret = 1;

	report_opts__init(&o);
	err = parse_args(argc, argv, &o, true);
	if (err) {
		ret = err > 0 ? 0 : 2;
		goto cleanup;
	}
	s = open_session(&o, "script", false);
	if (!s)
		goto cleanup;
	err = script__run(stdout, s, &o);
	if (err) {
		fprintf(stderr, "offcpu script: %s: %s\n", o.input,
			session__error(s)[0] ? session__error(s) : strerror(-err));
		goto cleanup;
	}
	ret = 0;
cleanup:
	session__free(s);
	report_opts__free(&o);
	return ret;
}
