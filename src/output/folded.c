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
#include <inttypes.h>
#include <string.h>

#include "output/outputs.h"
#include "output/report.h"

int folded__print(FILE *f, const struct session *s, const struct profile *p,
		  const struct report_opts *o, const struct msg_sink *ms)
{
	int ev = -1;

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
	for (size_t i = 0; i < profile__nr_stacks(p); i++) {
		const struct pstack *st = profile__stack(p, i);
		const uint32_t *fr = profile__frames(p, st);
		bool time = profile__attr(p, s, st->event)->is_time;

		if ((int)st->event != ev)
			continue;
		fputs(session__comm(s, st->comm), f);
		for (uint32_t j = st->nr; j-- > 0;) {
			fputc(';', f);
			frame__fput(f, session__frame(s, fr[j]), "_[i]", "_[k]");
		}
		fprintf(f, " %" PRIu64 "\n", time ? st->period : st->samples);
	}
	return ferror(f) ? -EIO : 0;
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
