// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/read_opts.h"
#include "profile/filter.h"

static const char *const sort_names[SK_MAX] = {
	[SK_COMM] = "comm", [SK_PID] = "pid", [SK_TID] = "tid", [SK_DSO] = "dso",
	[SK_SYM] = "sym", [SK_STATE] = "state", [SK_CGROUP] = "cgroup",
};

/* --threads' keys (enum thread_sort): one of them, not a list. */
static const char *const thread_sort_names[TS_MAX] = {
	[TS_OFF] = "off", [TS_S] = "S", [TS_D] = "D", [TS_ON] = "on", [TS_RUNQ] = "runq",
	[TS_WALL] = "wall",
};

/* --sort: report's keys (a comma list), or one of --threads' (checked against the output later). */
static int parse_sort(const char *arg, struct report_opts *o)
{
	char *dup, *save = NULL, *tok;
	int err = 0;

	for (int k = 0; k < TS_MAX; k++)
		if (!strcmp(arg, thread_sort_names[k])) {
			o->thread_sort = k;
			return 0;
		}
	dup = strdup(arg);
	if (!dup)
		return -ENOMEM;
	o->sort_given = true;
	o->nr_sort = 0;
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int k;

		for (k = 0; k < SK_MAX; k++)
			if (!strcmp(tok, sort_names[k]))
				break;
		if (k == SK_MAX || o->nr_sort == SK_MAX) {
			fprintf(stderr, "offcpu: unknown sort key '%s' (use comm,pid,tid,dso,sym,state,cgroup; "
				"--threads: off, S, D, on, runq or wall)\n", tok);
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

/* A word perf's -g takes as its value when it follows as an argument of its own. */
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

		if (!strcmp(tok, "folded")) {
			fprintf(stderr, "offcpu: -g folded: use --folded (one `comm;frame;...;frame VALUE` line per stack)\n");
			err = -EINVAL;
			break;
		} else if (!strcmp(tok, "none"))
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

/* -g, --call-graph[=MODE] or -g MODE when MODE is one of perf's words. */
static int call_graph(char *arg, int argc, char **argv, struct report_opts *o)
{
	if (!arg && optind < argc && is_graph_word(argv[optind]))
		arg = argv[optind++];
	if (arg)
		return parse_graph(arg, o);
	if (o->graph == GRAPH_NONE)
		o->graph = GRAPH_DEFAULT;
	return 0;
}

static int percent_limit(const char *arg, struct report_opts *o)
{
	char *end;

	o->percent_limit = strtod(arg, &end);
	if (*end || o->percent_limit < 0) {
		fprintf(stderr, "offcpu: bad --percent-limit '%s'\n", arg);
		return -EINVAL;
	}
	return 0;
}

int read_opts__int(const char *arg, long lo, long hi, int *v)
{
	char *end;
	long n = strtol(arg, &end, 10);

	if (end == arg || *end || n < lo || n > hi)
		return -EINVAL;
	*v = (int)n;
	return 0;
}

/* --max-stack N: perf's name; N >= 1 (perf's 0 would show no frame). */
static int max_stack(const char *arg, struct report_opts *o)
{
	if (read_opts__int(arg, 1, 65535, &o->max_stack)) {
		fprintf(stderr, "offcpu: bad --max-stack '%s' (want 1..65535)\n", arg);
		return -EINVAL;
	}
	return 0;
}

/* --chain-min MS: the shortest wait --chains analyses, in ms (fractions allowed). */
static int chain_min(const char *arg, struct report_opts *o)
{
	char *end;
	double ms = strtod(arg, &end);

	if (end == arg || *end || !(ms >= 0 && ms <= 1e9)) {
		fprintf(stderr, "offcpu: bad --chain-min '%s' (milliseconds, 0 or more)\n", arg);
		return -EINVAL;
	}
	o->chain_min_ns = (int64_t)(ms * 1e6 + 0.5);
	return 0;
}

int read_opts__report(int c, char *arg, int argc, char **argv, struct report_opts *o)
{
	int err = 0;

	switch (c) {
	case 'i':
		o->input = arg;
		break;
	case OPT_CHILDREN:
		o->children = 1;
		break;
	case OPT_NO_CHILDREN:
		o->children = 0;
		break;
	case 's':
		err = parse_sort(arg, o);
		break;
	case OPT_PERCENT:
		err = percent_limit(arg, o);
		break;
	case 'g':
		err = call_graph(arg, argc, argv, o);
		break;
	case 'e':
		o->event = arg;
		break;
	case OPT_SRCLINE:
		o->srcline = true;
		break;
	case OPT_INLINE:
		o->inlines = true;
		break;
	case OPT_NO_SYMBOLS:
		o->no_symbols = true;
		break;
	case OPT_STDIO:
		break; /* the only output */
	case OPT_KEEP_SCHED:
		o->keep_sched_frames = true;
		break;
	case OPT_MAX_STACK:
		err = max_stack(arg, o);
		break;
	case OPT_CHAIN_MIN:
		err = chain_min(arg, o);
		break;
	case OPT_NO_DEMANGLE:
		o->no_demangle = true;
		break;
	default:
		return 0;
	}
	return err ? err : 1;
}

void read_opts__filter_usage(FILE *f)
{
	fprintf(f, "filters:\n");
	for (int i = 0; i < report__nr_filter_options; i++)
		fputs(report__filter_options[i].help, f);
}

/* The row of the filter getopt_long() returned c for, or NULL. */
static const struct filter_option *filter_of(int c)
{
	for (int i = 0; i < report__nr_filter_options; i++)
		if (c == OPT_FILTER + i || (c && c == report__filter_options[i].short_name))
			return &report__filter_options[i];
	return NULL;
}

/* A filter's value into o: 1, or a negative errno (after a message when it is bad). */
static int filter(const struct filter_option *f, const char *arg, struct report_opts *o)
{
	int err = f->parse(o, arg);

	if (err == -EINVAL) {
		fprintf(stderr, "offcpu: ");
		fprintf(stderr, f->bad, arg);
		fprintf(stderr, "\n");
	}
	return err ? err : 1;
}

/* getopt_long() said ':' (a value missing), '?' or 1 (an unknown option, an argument) at arg. */
static void bad(const struct read_cmd *cmd, int c, const char *arg)
{
	if (c != ':') {
		fprintf(stderr, "offcpu %s: unknown option '%s'\n", cmd->name, arg);
		cmd->usage(stderr);
	} else if (cmd->own_prefix && !filter_of(optopt)) {
		fprintf(stderr, "offcpu %s: %s needs an argument\n", cmd->name, arg);
	} else {
		fprintf(stderr, "offcpu: %s needs an argument\n", arg);
	}
}

/*
 * The command's getopt tables with the filters' rows after its own:
 * shortopts (with getopt's "-:" first) in buf, the long rows in *longopts
 * (the caller frees it). 0 or -ENOMEM.
 */
static int tables(const struct read_cmd *cmd, char *buf, size_t len, struct option **longopts)
{
	size_t n = 0, at;
	struct option *l;

	while (cmd->longopts[n].name)
		n++;
	l = calloc(n + report__nr_filter_options + 1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	memcpy(l, cmd->longopts, n * sizeof(*l));
	at = (size_t)snprintf(buf, len, "-:%s", cmd->shortopts);
	for (int i = 0; i < report__nr_filter_options; i++) {
		const struct filter_option *f = &report__filter_options[i];

		l[n + i] = (struct option){ f->name, required_argument, NULL, OPT_FILTER + i };
		if (f->short_name && at + 3 < len)
			at += (size_t)snprintf(buf + at, len - at, "%c:", f->short_name);
	}
	*longopts = l;
	return 0;
}

int read_opts__parse(const struct read_cmd *cmd, struct report_opts *o, int argc, char **argv)
{
	struct option *longopts;
	char shortopts[64];
	int c, at, err;

	/* "-": arguments come in order (as code 1), ':': a missing value is ':' */
	err = tables(cmd, shortopts, sizeof(shortopts), &longopts);
	if (err)
		return err;
	optind = 1;
	opterr = 0;
	for (at = optind; (c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1;
	     at = optind) {
		const struct filter_option *f = filter_of(c);

		if (c == 'h') {
			cmd->usage(stdout);
			err = 1;
			goto cleanup;
		}
		if (c == ':' || c == '?' || c == 1)
			err = 0;
		else
			err = f ? filter(f, optarg, o) : cmd->option(cmd->ctx, c, optarg, argc, argv);
		if (err < 0)
			goto cleanup;
		if (!err) {
			bad(cmd, c, argv[at]);
			err = -EINVAL;
			goto cleanup;
		}
	}
	err = 0;
	if (at < argc) { /* getopt stopped at "--": no option of ours */
		bad(cmd, '?', argv[at]);
		err = -EINVAL;
	}
cleanup:
	free(longopts);
	return err;
}

static void print_msg(void *ctx, enum msg_kind kind, const char *text)
{
	if (kind == MSG_WARNING)
		fprintf(stderr, "offcpu: warning: %s\n", text);
	else if (kind == MSG_HINT)
		fprintf(stderr, "offcpu: %s\n", text);
	else
		fprintf(stderr, "offcpu %s: %s\n", (const char *)ctx, text);
}

static void print_hint(void *ctx, enum msg_kind kind, const char *text)
{
	if (kind == MSG_HINT)
		print_msg(ctx, kind, text);
}

struct msg_sink read_opts__msg(const char *cmd, bool quiet)
{
	return (struct msg_sink){ quiet ? print_hint : print_msg, (void *)cmd };
}

void read_opts__fail(const char *cmd, int ret, const char *err)
{
	if (err[0])
		fprintf(stderr, "offcpu %s: %s\n", cmd, err);
	else
		fprintf(stderr, "offcpu: %s\n", ret == -ENOMEM ? "out of memory" : strerror(-ret));
}
