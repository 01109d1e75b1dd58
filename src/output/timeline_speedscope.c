// SPDX-License-Identifier: GPL-2.0-only
/*
 * The timeline as speedscope's own JSON (speedscope's
 * file-format-schema.json): an evented profile per thread, its events
 * opening and closing frames over time, nanoseconds from the window's
 * start. Each slice is a stack under a marker frame that says what the
 * time was: [off-cpu S] / [off-cpu D] with the stack the thread slept in,
 * [runnable (woken)] / [runnable (preempted)] with the stack it waited
 * for a CPU in, [on-cpu] (or [on-cpu or runnable], [on-cpu or short
 * waits] where the recording could not time every wait) with the stacks of
 * the CPU samples inside it, each over the period before the sample. A
 * thread without waits recorded has its samples alone, under [on-cpu].
 *
 * speedscope shows no instants and no arrows: summed short waits (which
 * have no times) and wakeups are left out, and counted in a note.
 *
 * The profiles are written first and the shared frames after them (JSON
 * does not order an object's members), so that frames are numbered as
 * they are first used and the file is written in one pass.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output/format.h"
#include "output/timeline.h"
#include "util/outfile.h"
#include "util/vec.h"

/* Marker frames, the first of the shared frames. */
enum { M_ONCPU, M_ONCPU_RUNQ, M_ONCPU_WAITS, M_OFF_S, M_OFF_D, M_OFF, M_RUNQ_WOKEN, M_RUNQ_PREEMPTED,
       M_RUNQ_NEW, M_RUNQ, NR_MARKERS };
static const char *const markers[NR_MARKERS] = {
	[M_ONCPU] = "[on-cpu]", [M_ONCPU_RUNQ] = "[on-cpu or runnable]",
	[M_ONCPU_WAITS] = "[on-cpu or short waits]", [M_OFF_S] = "[off-cpu S]",
	[M_OFF_D] = "[off-cpu D]", [M_OFF] = "[off-cpu]", [M_RUNQ_WOKEN] = "[runnable (woken)]",
	[M_RUNQ_PREEMPTED] = "[runnable (preempted)]", [M_RUNQ_NEW] = "[runnable (new)]",
	[M_RUNQ] = "[runnable]",
};

/* A file above this many bytes is said to be large (speedscope keeps an object per event). */
#define SPEEDSCOPE_LARGE (512ULL << 20)

struct ss {
	const struct timeline *tl;
	struct session *s;
	FILE *f;
	uint64_t base;          /* the window's start: time 0 */
	uint32_t *index;        /* session frame id -> shared frame index + 1 */
	uint32_t *order;        /* shared frames after the markers: session frame ids */
	size_t nr_order, cap_order;
	uint32_t *open;         /* the frames open now, outermost first */
	size_t nr_open, cap_open;
	uint64_t at;            /* the time of the last event */
	uint32_t *path;         /* a segment's frames */
	size_t cap_path;
	bool first_event;
	int err;
	struct tl_written *w;
};

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* The shared frame index of session frame id, numbered on first use. */
static uint32_t frame_index(struct ss *x, uint32_t id)
{
	uint32_t *o;

	if (x->index[id])
		return x->index[id] - 1;
	o = vec__push((void **)&x->order, &x->nr_order, &x->cap_order, sizeof(*o));
	if (!o) {
		x->err = -ENOMEM;
		return M_ONCPU;
	}
	*o = id;
	x->index[id] = (uint32_t)(NR_MARKERS + x->nr_order);
	return x->index[id] - 1;
}

static void event(struct ss *x, char type, uint32_t frame, uint64_t at)
{
	fprintf(x->f, "%s{\"type\":\"%c\",\"frame\":%" PRIu32 ",\"at\":%" PRIu64 "}",
		x->first_event ? "" : ",", type, frame, at - x->base);
	x->first_event = false;
	x->at = at;
}

/*
 * The frames open become path[0..n) from time s: those after the common
 * prefix are closed (innermost first) and the rest opened; a gap since the
 * last event closes everything where it began.
 */
static void move_to(struct ss *x, const uint32_t *path, size_t n, uint64_t s)
{
	size_t common = 0;

	if (s > x->at)
		while (x->nr_open)
			event(x, 'C', x->open[--x->nr_open], x->at);
	while (common < n && common < x->nr_open && x->open[common] == path[common])
		common++;
	while (x->nr_open > common)
		event(x, 'C', x->open[--x->nr_open], s);
	if (vec__reserve((void **)&x->open, &x->cap_open, n, sizeof(*x->open), 64)) {
		x->err = -ENOMEM;
		return;
	}
	for (; x->nr_open < n; x->nr_open++) {
		x->open[x->nr_open] = path[x->nr_open];
		event(x, 'O', path[x->nr_open], s);
	}
	x->at = s;
}

/* One stretch [s, e] with the marker and the stack: its events. */
static void segment(struct ss *x, uint32_t marker, uint32_t stack, uint64_t s, uint64_t e)
{
	uint32_t depth = timeline__stack_depth(x->tl, stack), id = stack, parent, frame;

	if (e < s || vec__reserve((void **)&x->path, &x->cap_path, depth + 1, sizeof(*x->path), 256)) {
		if (e >= s)
			x->err = -ENOMEM;
		return;
	}
	x->path[0] = marker;
	for (uint32_t i = depth; i-- > 0; id = parent) {
		timeline__stack_node(x->tl, id, &parent, &frame);
		x->path[1 + i] = frame_index(x, frame);
	}
	move_to(x, x->path, depth + 1, s);
	x->at = e;
}

static uint32_t marker_of(const struct tl_slice *sl)
{
	switch (sl->kind) {
	case TL_OFFCPU:
		return sl->state == 'S' ? M_OFF_S : sl->state == 'D' ? M_OFF_D : M_OFF;
	case TL_RUNQ:
		return sl->state == 'R' ? M_RUNQ_PREEMPTED : sl->state == 'N' ? M_RUNQ_NEW :
		       sl->state == 'S' || sl->state == 'D' ? M_RUNQ_WOKEN : M_RUNQ;
	default:
		return sl->flags & TL_MAY_WAIT ? M_ONCPU_WAITS : sl->flags & TL_MAY_RUNQ ? M_ONCPU_RUNQ : M_ONCPU;
	}
}

/*
 * An on-CPU slice with the samples inside it: each sample's stack over
 * the period before it (cut to the slice and to the sample before), the
 * marker alone in between. *k: the first sample not yet placed.
 */
static void oncpu(struct ss *x, const struct tl_slice *sl, const struct tl_sample *sa, size_t n,
		  size_t *k)
{
	uint32_t m = marker_of(sl);
	uint64_t at = sl->start;

	for (; *k < n && sa[*k].time <= sl->end; (*k)++) {
		uint64_t s = sa[*k].time > sa[*k].period ? sa[*k].time - sa[*k].period : 0;

		if (sa[*k].time < sl->start)
			continue; /* in a wait: the two clocks of a switch, a few microseconds apart */
		s = s < at ? at : s;
		if (s > at)
			segment(x, m, 0, at, s);
		segment(x, m, sa[*k].stack, s, sa[*k].time);
		at = sa[*k].time;
		x->w->samples++;
	}
	if (sl->end > at || sl->end == sl->start)
		segment(x, m, 0, at, sl->end);
}

static void thread_profile(struct ss *x, uint32_t ti, const struct tl_info *in)
{
	const struct tl_thread *t = timeline__thread(x->tl, ti);
	size_t nsl, nsa, k = 0;
	const struct tl_slice *sl = timeline__slices(x->tl, ti, &nsl);
	const struct tl_sample *sa = timeline__samples(x->tl, ti, &nsa);
	char name[128];

	snprintf(name, sizeof(name), "%s %u", t->comm ? t->comm : "[unknown]", t->tid);
	fprintf(x->f, "%s\n{\"type\":\"evented\",\"name\":", x->w->threads ? "," : "");
	json_str(x->f, name);
	fprintf(x->f, ",\"unit\":\"nanoseconds\",\"startValue\":0,\"endValue\":%" PRIu64 ",\"events\":[",
		in->end - in->start);
	x->first_event = true;
	x->nr_open = 0;
	x->at = in->start;
	for (size_t i = 0; i < nsl; i++) {
		if (sl[i].kind == TL_ONCPU)
			oncpu(x, &sl[i], sa, nsa, &k);
		else
			segment(x, marker_of(&sl[i]), sl[i].stack, sl[i].start, sl[i].end);
		/* samples inside a wait are left where the wait is */
		while (k < nsa && sa[k].time <= sl[i].end)
			k++;
		x->w->slices++;
	}
	if (!nsl) {
		/* no waits recorded: the samples alone */
		struct tl_slice all = { .start = in->start, .end = in->end, .kind = TL_ONCPU };
		uint64_t at = in->start;

		for (; k < nsa; k++) {
			uint64_t s = sa[k].time > sa[k].period ? sa[k].time - sa[k].period : 0;

			s = s < at ? at : s;
			segment(x, marker_of(&all), sa[k].stack, s, sa[k].time);
			at = sa[k].time;
			x->w->samples++;
		}
	}
	while (x->nr_open)
		event(x, 'C', x->open[--x->nr_open], x->at);
	fprintf(x->f, "]}");
	x->w->threads++;
}

static void shared_frames(struct ss *x)
{
	char buf[512];

	fprintf(x->f, "],\n\"shared\":{\"frames\":[");
	for (int i = 0; i < NR_MARKERS; i++) {
		fprintf(x->f, "%s{\"name\":", i ? "," : "");
		json_str(x->f, markers[i]);
		fprintf(x->f, "}");
	}
	for (size_t i = 0; i < x->nr_order; i++) {
		const struct frame *f = session__frame(x->s, x->order[i]);

		fprintf(x->f, ",\n{\"name\":");
		json_str(x->f, frame__name(f, buf, sizeof(buf)));
		if (f->dso) {
			fprintf(x->f, ",\"file\":");
			json_str(x->f, f->dso);
		}
		fprintf(x->f, "}");
	}
	fprintf(x->f, "]}}\n");
}

/* What speedscope cannot show, said. */
static void left_out(const struct timeline *tl, const struct msg_sink *ms)
{
	uint64_t n = 0, ns = 0, wakes = 0;

	for (uint32_t i = 0; i < timeline__nr_threads(tl); i++) {
		size_t nsu, nw;
		const struct tl_summed *su = timeline__summed(tl, i, &nsu);

		for (size_t k = 0; k < nsu; k++) {
			n += su[k].count;
			ns += su[k].total;
		}
		timeline__wakes_by(tl, i, &nw);
		wakes += nw;
	}
	if (n)
		msg__say(ms, MSG_NOTE, "%" PRIu64 " summed short waits (%.3f ms) left out: they have no times "
			 "(record --off-cpu-thresh 0 times every wait)", n, ns / 1e6);
	if (wakes)
		msg__say(ms, MSG_NOTE, "%" PRIu64 " wakeups left out: speedscope draws no arrows "
			 "(the Perfetto trace has them)", wakes);
}

int timeline__speedscope(const struct timeline *tl, const char *path, const struct msg_sink *ms,
			 struct tl_written *w, char *err, size_t errlen)
{
	const struct tl_info *in = timeline__info(tl);
	struct ss x = { .tl = tl, .s = timeline__session(tl), .base = in->start, .w = w };
	struct outfile of;
	long pos;
	int ret;

	err[0] = 0;
	memset(w, 0, sizeof(*w));
	x.index = calloc(session__nr_frames(x.s) + 1, sizeof(*x.index));
	if (!x.index)
		return -ENOMEM;
	ret = outfile__open(&of, path, 0644);
	if (ret) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(-ret));
		goto cleanup;
	}
	x.f = fdopen(of.fd, "w");
	if (!x.f) {
		close(of.fd);
		ret = outfile__commit(&of, -ENOMEM);
		goto cleanup;
	}
	setvbuf(x.f, NULL, _IOFBF, 1 << 20);
	fprintf(x.f, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
		     "\"exporter\":\"offcpu timeline\",\"name\":");
	json_str(x.f, "offcpu timeline");
	fprintf(x.f, ",\"activeProfileIndex\":0,\"profiles\":[");
	for (uint32_t i = 0; i < timeline__nr_threads(tl) && !x.err; i++) {
		size_t nsl, nsa;

		timeline__slices(tl, i, &nsl);
		timeline__samples(tl, i, &nsa);
		if (nsl || nsa)
			thread_profile(&x, i, in);
	}
	shared_frames(&x);
	pos = ftell(x.f);
	w->bytes = pos > 0 ? (uint64_t)pos : 0;
	if (ferror(x.f) && !x.err)
		x.err = -EIO;
	if (fclose(x.f) && !x.err)
		x.err = -EIO;
	ret = outfile__commit(&of, x.err);
	if (ret == -EIO)
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(EIO));
	if (!ret)
		left_out(tl, ms);
	if (!ret && w->bytes > SPEEDSCOPE_LARGE)
		msg__say(ms, MSG_HINT, "%.0f MB of speedscope events: more than a browser tab holds "
			 "well; --pid, --tid, --comm or --time narrow it (Perfetto's format is far smaller)",
			 w->bytes / 1e6);
cleanup:
	free(x.index);
	free(x.order);
	free(x.open);
	free(x.path);
	return ret;
}
