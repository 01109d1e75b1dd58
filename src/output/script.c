// SPDX-License-Identifier: GPL-2.0-only
/*
 * `offcpu script`: every sample as text in perf script's default layout,
 * streamed as the file is read (nothing is kept per sample):
 *
 *   comm  tid [cpu]   sec.usec:     period event:
 *   \t      address symbol+0xoff (dso)
 *   (blank line)
 *
 * The spacing follows Debian's perf 6.1 so that FlameGraph's
 * stackcollapse-perf.pl and the speedscope / Firefox Profiler importers
 * read it as they read perf's.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "perfdata/offcpu_payload.h"
#include "perfdata/perf_format.h"
#include "output/report.h"

struct script_ctx {
	FILE *f;
	const struct report_opts *o;
	const struct session *s;
	int name_width;
};

/*
 * An offcpu-switch sample (record --chains) on its line, where perf script
 * dumps the raw payload: "out OUT wake WAKE STATE waker TID stack ID/ID seq
 * N flags". false for the other events.
 */
static bool print_switch(FILE *f, const struct perf_sample *ps)
{
	struct offcpu_switch sw;

	if (strcmp(ps->evattr->name, OFFCPU_SWITCH_EVENT_NAME) ||
	    !offcpu_payload__decode_switch(ps->raw, ps->raw_size, &sw))
		return false;
	fprintf(f, "%c out %" PRIu64 ".%09" PRIu64 " wake %" PRIu64 ".%09" PRIu64
		   " waker %u stacks %u/%u seq %u%s%s%s%s\n\n",
		sw.state ? sw.state : '?', sw.out / UINT64_C(1000000000), sw.out % UINT64_C(1000000000),
		sw.wake / UINT64_C(1000000000), sw.wake % UINT64_C(1000000000), sw.waker_tid,
		sw.stack, sw.waker_stack, sw.seq, sw.flags & OFFCPU_SWITCH_TARGET ? " target" : "",
		sw.flags & OFFCPU_SWITCH_FROM_START ? " from-start" : "",
		sw.flags & OFFCPU_SWITCH_REPAIRED ? " repaired" : "",
		sw.flags & OFFCPU_SWITCH_GAP ? " gap" : "");
	return true;
}

static int script_sample(void *ctx, const struct rsample *rs)
{
	struct script_ctx *c = ctx;
	const struct perf_sample *ps = rs->s;
	const struct perf_evattr *a = ps->evattr;
	uint64_t st = a->attr.sample_type;
	const char *comm = session__comm(c->s, rs->comm);
	/* perf's embedded off-CPU samples have a callchain in their payload */
	bool chain = (st & PERF_SAMPLE_CALLCHAIN) || ps->off.embedded;
	FILE *f = c->f;

	if (!report__match(c->o, c->s, rs))
		return 0;
	if (chain)
		fprintf(f, "%s ", comm);
	else
		fprintf(f, "%16s ", comm);
	fprintf(f, "%5d ", (int32_t)ps->tid); /* perf prints -1 as such */
	if (st & PERF_SAMPLE_CPU)
		fprintf(f, "[%03u] ", ps->cpu);
	if (st & PERF_SAMPLE_TIME)
		fprintf(f, "%5" PRIu64 ".%06" PRIu64 ": ", ps->time / UINT64_C(1000000000),
			ps->time % UINT64_C(1000000000) / 1000);
	if (st & PERF_SAMPLE_PERIOD)
		fprintf(f, "%10" PRIu64 " ", ps->period);
	fprintf(f, "%*s: ", c->name_width, a->name);
	if (a->is_chain && print_switch(f, ps))
		return ferror(f) ? -EIO : 0;
	if (!chain && rs->nr) {
		const struct frame *fr = session__frame(c->s, rs->frames[0]);

		if (fr->sym)
			fprintf(f, "%16" PRIx64 " %s+0x%" PRIx64 " (%s)\n", rs->addrs[0], fr->sym,
				rs->offs[0], fr->dso);
		else
			fprintf(f, "%16" PRIx64 " [unknown] (%s)\n", rs->addrs[0], fr->dso);
		return ferror(f) ? -EIO : 0;
	}
	fputc('\n', f);
	for (int i = 0; i < rs->nr && !rs->no_chain && (!c->o->max_stack || i < c->o->max_stack); i++) {
		const struct frame *fr = session__frame(c->s, rs->frames[i]);

		if (fr->sym)
			fprintf(f, "\t%16" PRIx64 " %s+0x%" PRIx64 " (%s)%s\n", rs->addrs[i], fr->sym,
				rs->offs[i], fr->dso, fr->inlined ? " (inlined)" : "");
		else
			fprintf(f, "\t%16" PRIx64 " [unknown] (%s)\n", rs->addrs[i], fr->dso);
	}
	fputc('\n', f);
	/* where perf script dumps the raw payload: a wait cut to the recording */
	if (rs->flags & (OFFCPU_RAW_IN_PROGRESS_START | OFFCPU_RAW_IN_PROGRESS_STOP))
		fprintf(f, "%*s[in progress at %s]\n\n", 6, "",
			!(rs->flags & OFFCPU_RAW_IN_PROGRESS_STOP)    ? "start"
			: !(rs->flags & OFFCPU_RAW_IN_PROGRESS_START) ? "stop"
								      : "start and stop");
	/* where perf script dumps the raw payload, the waker it holds */
	if (a->is_wakeup && rs->waker_comm) {
		if (rs->flags & OFFCPU_RAW_WAKER_IRQ)
			fprintf(f, "%*swaker: [irq]\n\n", 6, "");
		else
			fprintf(f, "%*swaker: %s %u/%u\n\n", 6, "", session__comm(c->s, rs->waker_comm),
				rs->waker_pid, rs->waker_tid);
	}
	return ferror(f) ? -EIO : 0;
}

int script__run(FILE *f, struct session *s, const struct report_opts *o)
{
	const struct perf_reader *r = session__reader(s);
	struct script_ctx c = { f, o, s, 0 };
	int nr = perf_reader__nr_attrs(r);

	/* perf pads event names to the longest one when there are several */
	if (nr > 1)
		for (int i = 0; i < nr; i++) {
			int len = strlen(perf_reader__attr(r, i)->name);

			if (len > c.name_width)
				c.name_width = len;
		}
	return session__run(s, script_sample, &c);
}
