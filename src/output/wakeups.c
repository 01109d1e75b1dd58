// SPDX-License-Identifier: GPL-2.0-only
/* `offcpu report --wakeups`: (sleeper stack, waker stack) pairs by time. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "output/outputs.h"
#include "output/report.h"
#include "output/wakeups.h"
#include "perfdata/perf_format.h"
#include "profile/offwake.h"

/* One side of a pair, innermost first, frames [from, to) stepping by dir. */
static void print_side(FILE *f, const struct session *s, const char *title, const uint32_t *fr,
		       int from, int to, int dir)
{
	bool first = true;

	for (int i = from; i != to; i += dir) {
		fprintf(f, "      %-8s  ", first ? title : "");
		frame__fput(f, session__frame(s, fr[i]), " (inlined)", " [k]");
		fputc('\n', f);
		first = false;
	}
	if (first)
		fprintf(f, "      %-8s  (no stack)\n", title);
}

static int cmp_period(const void *a, const void *b, void *ctx)
{
	const struct pstack *x = profile__stack(ctx, *(const size_t *)a);
	const struct pstack *y = profile__stack(ctx, *(const size_t *)b);

	if (x->period != y->period)
		return x->period > y->period ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

int offwake__print(FILE *f, struct session *s, const struct profile *p,
		   const struct report_opts *o)
{
	int ev = session__event(s, OFFCPU_WAKEUP_EVENT_NAME);
	int oev = session__event(s, OFFCPU_EVENT_NAME);
	const struct profile_event *pe = profile__event(p, ev);
	uint64_t intervals = 0, offcpu_total = oev >= 0 ? profile__event(p, oev)->period : 0;
	size_t n = 0, *order;
	char t1[32], t2[32];
	uint32_t sep_frame;

	if (offwake__separator(s, &sep_frame))
		return -ENOMEM;
	order = malloc((profile__nr_stacks(p) + 1) * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < profile__nr_stacks(p); i++)
		if ((int)profile__stack(p, i)->event == ev) {
			order[n++] = i;
			intervals += profile__stack(p, i)->count;
		}
	qsort_r(order, n, sizeof(*order), cmp_period, (void *)p);
	report__fmt_ns(t1, sizeof(t1), pe ? pe->period : 0);
	report__fmt_ns(t2, sizeof(t2), offcpu_total);
	fprintf(f, "# offcpu report --wakeups of %s\n#\n", o->input);
	fprintf(f, "# Off-CPU time with a known waker: %s of %s (%.1f%%), %" PRIu64
		   " intervals, %zu (sleeper, waker) stack pairs\n",
		t1, t2, offcpu_total ? 100.0 * (pe ? pe->period : 0) / offcpu_total : 0.0, intervals,
		n);
	fprintf(f, "# Each pair: off-CPU time, its share of all off-CPU time, intervals,\n"
		   "# sleeper <- waker (%s; [irq]: an interrupt), then both stacks,\n"
		   "# innermost frame first ([k]: kernel).\n#\n",
		o->by == BY_TID ? "comm pid/tid" : o->by == BY_PID ? "comm pid" : "by comm: --by pid|tid for finer");
	for (size_t j = 0; j < n; j++) {
		const struct pstack *st = profile__stack(p, order[j]);
		const uint32_t *fr = profile__frames(p, st);
		double share = offcpu_total ? 100.0 * st->period / offcpu_total : 0.0;
		int sep = -1;

		if (o->percent_limit > 0 && share < o->percent_limit)
			break;
		for (uint32_t i = 1; i < st->nr && sep < 0; i++)
			if (fr[i] == sep_frame)
				sep = i;
		if (sep < 0)
			continue; /* not an off-wake stack */
		report__fmt_ns(t1, sizeof(t1), st->period);
		fprintf(f, "%12s  %6.2f%%  %8" PRIu64 "  %s", t1, share, st->count,
			session__comm(s, st->comm));
		if (o->by == BY_TID)
			fprintf(f, " %u/%u", st->pid, st->tid);
		else if (o->by == BY_PID)
			fprintf(f, " %u", st->pid);
		fprintf(f, " (%c)  <-  %s\n", st->state ? st->state : '?', session__frame(s, fr[0])->sym);
		print_side(f, s, "sleeper", fr, sep + 1, st->nr, 1);
		print_side(f, s, "waker", fr, sep - 1, 0, -1);
		fputc('\n', f);
	}
	free(order);
	return ferror(f) ? -EIO : 0;
}

int offwake__print_folded(FILE *f, const struct session *s, const struct profile *p,
			  const struct report_opts *o)
{
	struct report_opts fo = *o;

	fo.event = OFFCPU_WAKEUP_EVENT_NAME; /* the off-wake stacks, not the off-CPU ones */
	return folded__print(f, s, p, &fo, NULL); /* one event asked: no hint */
}

const char offwake__conflict[] = "--wakeups (with or without --folded), --threads, --pprof and -e exclude each other";

/* The off-wake join in the profile, with the keys of the sleepers' rows (--by). */
static unsigned int wakeups_prepare(struct report_opts *o, const struct output_choice *c)
{
	unsigned int keep = 0;

	o->wakeups = true;
	if (!output_choice__has(c, "folded")) { /* pairs by comm, or finer with --by */
		if (o->by < 0)
			o->by = BY_COMM;
		if (o->by == BY_PID)
			keep |= PROFILE_KEEP_PID;
		if (o->by == BY_TID)
			keep |= PROFILE_KEEP_PID | PROFILE_KEEP_TID;
		o->waker_by = o->by;
	} else if (o->by >= 0) { /* folded: the wakers' names only */
		o->waker_by = o->by;
	}
	return keep;
}

static int wakeups_write(const struct output_run *r)
{
	if (output_choice__has(r->c, "folded"))
		return offwake__print_folded(r->f, r->s, r->p, r->o);
	return offwake__print(r->f, r->s, r->p, r->o);
}

const struct report_output wakeups_output = {
	.name = "wakeups",
	.help = "      --wakeups           who woke the sleepers (record --wakeups): top\n"
		"                          (sleeper stack, waker stack) pairs by time; with\n"
		"                          --folded, off-wake stacks `sleeper;--;waker VALUE`\n"
		"      --by comm|pid|tid   --wakeups' sleepers and wakers (default comm),\n"
		"                          --threads' rows (default tid)\n",
	.excludes = "pprof threads",
	.no_event = true,
	.conflict = offwake__conflict,
	.by = true,
	.prepare = wakeups_prepare,
	.write = wakeups_write,
};
