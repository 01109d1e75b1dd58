// SPDX-License-Identifier: GPL-2.0-only
/*
 * `offcpu report --folded`: one line per distinct stack,
 * `comm;outermost;...;innermost VALUE`, the input of flamegraph.pl and
 * friends. VALUE is nanoseconds for time events (cpu-clock, task-clock,
 * offcpu-time), samples otherwise. Kernel frames end in _[k], inlined
 * ones in _[i]. One event per output: --event picks it, else off-CPU
 * time (offcpu-time) when it has samples, else the first event that has.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "output/outputs.h"
#include "output/report.h"
#include "util/vec.h"

/*
 * Each frame's text in a line (its name, then _[i] or _[k]), made the
 * first time the frame is printed and kept: a frame is in thousands of
 * lines. at[id] is its place in pool + 1, 0 while not made.
 */
struct ftexts {
	const struct session *s;
	uint32_t *at, *len, nr;
	char *pool;
	size_t n, cap;
};

/* Frame id's text (*l bytes, not NUL-terminated), or NULL on ENOMEM. */
static const char *ftext(struct ftexts *t, uint32_t id, size_t *l)
{
	const struct frame *fr;
	char buf[512];
	const char *name;
	size_t nl, sl;

	if (id < t->nr && t->at[id]) {
		*l = t->len[id];
		return t->pool + t->at[id] - 1;
	}
	fr = session__frame(t->s, id);
	name = frame__name(fr, buf, sizeof(buf));
	nl = strlen(name);
	sl = fr->inlined || fr->kernel ? 4 : 0;
	if (nl > UINT32_MAX - 8 || t->n + nl + sl > UINT32_MAX - 1 ||
	    vec__reserve((void **)&t->pool, &t->cap, t->n + nl + sl, 1, 1 << 16))
		return NULL;
	memcpy(t->pool + t->n, name, nl);
	memcpy(t->pool + t->n + nl, fr->inlined ? "_[i]" : "_[k]", sl);
	*l = nl + sl;
	if (id < t->nr) {
		t->at[id] = (uint32_t)t->n + 1;
		t->len[id] = (uint32_t)*l;
	}
	t->n += *l;
	return t->pool + t->n - *l;
}

/*
 * The lines of event ev, each made in a buffer and written at once (a
 * line is a few dozen frames, a file tens of thousands of lines). 0 or
 * -ENOMEM.
 */
static int print_lines(FILE *f, const struct session *s, const struct profile *p, int ev)
{
	struct ftexts t = { .s = s, .nr = session__nr_frames(s) };
	char *line = NULL;
	size_t cap = 0;
	int err = 0;

	t.at = calloc(t.nr ? t.nr : 1, sizeof(*t.at));
	t.len = malloc((t.nr ? t.nr : 1) * sizeof(*t.len));
	if (!t.at || !t.len)
		err = -ENOMEM;
	for (size_t i = 0; i < profile__nr_stacks(p) && !err; i++) {
		const struct pstack *st = profile__stack(p, i);
		const uint32_t *fr = profile__frames(p, st);
		bool time = profile__attr(p, s, st->event)->is_time;
		const char *comm = session__comm(s, st->comm);
		size_t n = strlen(comm), l;

		if ((int)st->event != ev)
			continue;
		if (vec__reserve((void **)&line, &cap, n + 32, 1, 4096)) {
			err = -ENOMEM;
			break;
		}
		memcpy(line, comm, n);
		for (uint32_t j = st->nr; j-- > 0;) {
			const char *ft = ftext(&t, fr[j], &l);

			if (!ft || vec__reserve((void **)&line, &cap, n + l + 32, 1, 4096)) {
				err = -ENOMEM;
				break;
			}
			line[n++] = ';';
			memcpy(line + n, ft, l);
			n += l;
		}
		if (err)
			break;
		line[n++] = ' ';
		n += report__put_u64(line + n, time ? st->period : st->samples);
		line[n++] = '\n';
		fwrite(line, 1, n, f);
	}
	free(line);
	free(t.at);
	free(t.len);
	free(t.pool);
	return err;
}

int folded__print(FILE *f, const struct session *s, const struct profile *p,
		  const struct report_opts *o, const struct msg_sink *ms)
{
	int ev = -1, err;

	for (int i = 0; i < profile__nr_events(p); i++)
		if (profile__event(p, i)->samples && report__event_match(o, profile__attr(p, s, i)) &&
		    (ev < 0 || (profile__attr(p, s, i)->is_offcpu && !profile__attr(p, s, ev)->is_offcpu)))
			ev = i;
	for (int i = 0; i < profile__nr_events(p) && !o->event && ev >= 0; i++)
		if (i != ev && profile__event(p, i)->samples)
			msg__say(ms, MSG_HINT, "several events have samples; folding '%s' (pick one with --event; '%s' skipped)",
				 profile__attr(p, s, ev)->name, profile__attr(p, s, i)->name);
	if (ev < 0)
		return -ENODATA;
	err = print_lines(f, s, p, ev);
	return err ? err : ferror(f) ? -EIO : 0;
}

static int folded_write(const struct output_run *r)
{
	int err = folded__print(r->f, r->s, r->p, r->o, r->ms);

	if (err == -ENODATA)
		snprintf(r->err, r->errlen, "%s: no samples%s%s%s to fold", r->o->input,
			 r->o->event ? " of event " : "", r->o->event ? r->o->event : "",
			 report__filtered(r->o) ? " that pass the filters" : "");
	return err;
}

const struct report_output folded_output = {
	.name = "folded",
	.help = "      --folded            one `comm;frame;...;frame VALUE` line per stack of one\n"
		"                          event (off-CPU time unless --event says another)\n",
	.excludes = "pprof",
	.conflict = "--pprof and --folded exclude each other",
	.write = folded_write,
};
