// SPDX-License-Identifier: GPL-2.0-only
/*
 * The timeline as a Perfetto trace: the Trace message of Perfetto's
 * perfetto_trace.proto, a sequence of TracePackets, written one packet at
 * a time in time order.
 *
 * The encoding: TrackEvent with interned data, on one packet sequence.
 * Perfetto's other way to show scheduling, ftrace's compact_sched bundles,
 * is a per-CPU stream of every sched_switch (the task leaving, its state,
 * the task coming in) and sched_waking; trace processor rebuilds each
 * thread's states from the whole sequence of each CPU. A recording holds
 * no such sequence: it has the waits of the measured threads (and of the
 * others nothing), the shorter ones summed without times. Fed to
 * compact_sched, a thread switched in would run until another switch that
 * was never recorded, and each CPU would show only the measured threads.
 * TrackEvent says exactly what is known, per thread: a slice per wait and
 * per stretch between waits (named for what it may hold when the
 * recording could not time every wait), with its callstack (callstack_iid,
 * interned: each frame, function name and mapping once), a flow from each
 * waker, and instants for what has no duration; CPU samples are
 * PerfSample packets, the packet of Perfetto's own Linux perf profiler,
 * which the UI shows per thread and as flame graphs.
 *
 * Time: CLOCK_MONOTONIC, the recording's clock, declared the trace's
 * primary clock by a ClockSnapshot and every packet's by the sequence's
 * defaults. Packets are in time order (a merge of the threads' streams),
 * a waker's instant before the slice its flow ends at when both fall on
 * the same nanosecond, so that each flow starts at its waker.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output/format.h"
#include "output/pprof/pb.h"
#include "output/timeline.h"
#include "util/intern.h"
#include "util/outfile.h"

/* Field numbers of perfetto_trace.proto (the messages' names in front). */
enum {
	TRACE_PACKET = 1,
	PKT_CLOCK_SNAPSHOT = 6, PKT_TIMESTAMP = 8, PKT_SEQ_ID = 10, PKT_TRACK_EVENT = 11,
	PKT_INTERNED = 12, PKT_SEQ_FLAGS = 13, PKT_PREV_DROPPED = 42, PKT_DEFAULTS = 59,
	PKT_TRACK_DESCRIPTOR = 60, PKT_PERF_SAMPLE = 66, PKT_FIRST_ON_SEQ = 87,
	CS_CLOCKS = 1, CS_PRIMARY = 2, CLK_ID = 1, CLK_TIMESTAMP = 2,
	DEF_PERF_SAMPLE = 12, DEF_CLOCK_ID = 58, PSD_TIMEBASE = 1, TB_COUNTER = 4, TB_NAME = 10,
	TD_UUID = 1, TD_NAME = 2, TD_PROCESS = 3, TD_THREAD = 4, TD_PARENT = 5, TD_DESCRIPTION = 14,
	PD_PID = 1, PD_NAME = 6,
	THD_PID = 1, THD_TID = 2, THD_NAME = 5,
	TE_DEBUG = 4, TE_TYPE = 9, TE_NAME_IID = 10, TE_TRACK_UUID = 11, TE_FLOW_IDS = 47,
	TE_TERMINATING_FLOW_IDS = 48, TE_CALLSTACK_IID = 56,
	DA_NAME_IID = 1, DA_UINT = 3, DA_STRING_IID = 17,
	ID_EVENT_NAMES = 2, ID_DA_NAMES = 3, ID_FUNCTION_NAMES = 5, ID_FRAMES = 6, ID_CALLSTACKS = 7,
	ID_MAPPING_PATHS = 17, ID_MAPPINGS = 19, ID_DA_STRINGS = 29,
	NAME_IID = 1, NAME_NAME = 2, STR_IID = 1, STR_STR = 2,
	MAP_IID = 1, MAP_PATH_IDS = 7,
	FR_IID = 1, FR_NAME_ID = 2, FR_MAPPING_ID = 3, FR_REL_PC = 4, FR_KIND = 7,
	CSK_IID = 1, CSK_FRAME_IDS = 2,
	PS_CPU = 1, PS_PID = 2, PS_TID = 3, PS_CALLSTACK_IID = 4,
};
enum { TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2, TYPE_INSTANT = 3 };
enum { SEQ_INCREMENTAL_STATE_CLEARED = 1, SEQ_NEEDS_INCREMENTAL_STATE = 2 };
enum { CLOCK_MONOTONIC_ID = 3, SW_CPU_CLOCK = 1, FRAME_KIND_NATIVE = 1, FRAME_KIND_KERNEL = 2 };
#define SEQ_ID 1

/* The debug annotations' names (interned once, in the first packet): iid = index + 1. */
enum { DA_WOKEN_BY, DA_ENDS, DA_BEGAN, DA_WHOLE_NS, DA_MAY_HOLD, DA_WAITS, DA_TOTAL_NS, DA_NOTE,
       DA_RECORDING, DA_ONCPU, DA_SUMMED, DA_LOST, DA_TIME, DA_DEPTH, DA_STACK, DA_CHAINS, NR_DA };
static const char *const da_names[NR_DA] = {
	[DA_WOKEN_BY] = "woken by", [DA_ENDS] = "ends", [DA_BEGAN] = "began",
	[DA_WHOLE_NS] = "whole ns", [DA_MAY_HOLD] = "may hold", [DA_WAITS] = "waits",
	[DA_TOTAL_NS] = "total ns", [DA_NOTE] = "note", [DA_RECORDING] = "recording",
	[DA_ONCPU] = "on-CPU slices", [DA_SUMMED] = "summed short waits", [DA_LOST] = "lost",
	[DA_TIME] = "time", [DA_DEPTH] = "hops from the sleeper", [DA_STACK] = "stack",
	[DA_CHAINS] = "critical paths",
};

/* Order of a thread's items at one nanosecond; across threads too. */
enum { R_END, R_CRIT_END, R_WAKE, R_BEGIN, R_CRIT_BEGIN, R_SUMMED, R_SAMPLE };

/* A thread's stream of items, merged with the others' by time. */
struct cur {
	uint32_t ti;
	const struct tl_slice *sl;
	const struct tl_sample *sa;
	const struct tl_summed *su;
	const uint32_t *wk;
	const struct tl_crit *cr;
	size_t nsl, nsa, nsu, nwk, ncr, isl, isa, isu, iwk, icr;
	bool open;           /* isl's BEGIN written */
	bool cr_open;        /* icr's (a piece's) BEGIN written */
	size_t cr_wait;      /* the wait whose slice is open: its index + 1, else 0 */
	uint64_t time;       /* its next item */
	int rank;
};

struct pf {
	const struct timeline *tl;
	struct session *s;
	const struct tl_info *info;
	FILE *f;
	struct pb *pk, *in;          /* the packet being made, its interned data */
	struct intern names, strs, fnames, paths, maps;
	uint8_t *frame_sent, *stack_sent, *flow_ok;
	size_t nr_wakes;
	uint64_t *thread_uuid, *summed_uuid, *crit_uuid;
	struct tl_written *w;
	int err;
};

/* ---- packets ---- */

static void pkt_begin(struct pf *p, uint64_t ts)
{
	pb__reset(p->pk);
	pb__reset(p->in);
	if (ts)
		pb__uint_present(p->pk, PKT_TIMESTAMP, ts);
	pb__uint(p->pk, PKT_SEQ_ID, SEQ_ID);
}

/* The packet made, with its interned data, to the file as one Trace.packet. */
static void pkt_end(struct pf *p)
{
	uint8_t hdr[11];
	size_t n = 0, len;

	if (pb__len(p->in))
		pb__bytes(p->pk, PKT_INTERNED, pb__data(p->in), pb__len(p->in));
	if (pb__error(p->pk) || pb__error(p->in)) {
		p->err = -ENOMEM;
		return;
	}
	len = pb__len(p->pk);
	hdr[n++] = TRACE_PACKET << 3 | 2;
	for (size_t v = len; ; v >>= 7) {
		hdr[n++] = (uint8_t)(v >= 0x80 ? (v & 0x7f) | 0x80 : v);
		if (v < 0x80)
			break;
	}
	if (fwrite(hdr, 1, n, p->f) != n || fwrite(pb__data(p->pk), 1, len, p->f) != len)
		p->err = -EIO;
	p->w->bytes += n + len;
}

/* ---- interned data, each entry in the first packet that uses it ---- */

/* iid of str in table t, new ones written as InternedString (or EventName) field `field`. */
static uint64_t str_iid(struct pf *p, struct intern *t, uint32_t field, const char *str)
{
	size_t before = intern__n(t);
	uint32_t id;
	size_t m;

	if (intern__id(t, str, &id)) {
		p->err = -ENOMEM;
		return 0;
	}
	if (id >= before) {
		m = pb__begin(p->in, field);
		pb__uint(p->in, NAME_IID, id + 1); /* STR_IID, STR_STR are the same numbers */
		pb__string(p->in, NAME_NAME, str);
		pb__end(p->in, m);
	}
	return id + 1;
}

/* A mapping per DSO (iid: its index in p->maps), its path in components ("usr", "lib", "libc.so.6"). */
static uint64_t mapping_iid(struct pf *p, const char *dso)
{
	size_t before = intern__n(&p->maps), m, n = 0;
	uint64_t comp[64];
	char buf[4096];
	uint32_t id;

	if (intern__id(&p->maps, dso, &id)) {
		p->err = -ENOMEM;
		return 0;
	}
	if (id < before)
		return id + 1;
	snprintf(buf, sizeof(buf), "%s", dso);
	for (char *save = NULL, *c = strtok_r(buf, "/", &save); c && n < 64; c = strtok_r(NULL, "/", &save))
		comp[n++] = str_iid(p, &p->paths, ID_MAPPING_PATHS, c);
	m = pb__begin(p->in, ID_MAPPINGS);
	pb__uint(p->in, MAP_IID, id + 1);
	for (size_t i = 0; i < n; i++)
		pb__uint(p->in, MAP_PATH_IDS, comp[i]);
	pb__end(p->in, m);
	return id + 1;
}

static uint64_t frame_iid(struct pf *p, uint32_t fid)
{
	const struct frame *f;
	uint64_t name, map;
	char buf[512];
	size_t m;

	if (p->frame_sent[fid])
		return fid + 1;
	p->frame_sent[fid] = 1;
	f = session__frame(p->s, fid);
	name = str_iid(p, &p->fnames, ID_FUNCTION_NAMES, frame__name(f, buf, sizeof(buf)));
	map = f->dso ? mapping_iid(p, f->dso) : 0;
	m = pb__begin(p->in, ID_FRAMES);
	pb__uint(p->in, FR_IID, fid + 1);
	pb__uint(p->in, FR_NAME_ID, name);
	if (map) {
		pb__uint(p->in, FR_MAPPING_ID, map);
		pb__uint_present(p->in, FR_REL_PC, f->addr);
	}
	pb__uint(p->in, FR_KIND, f->kernel ? FRAME_KIND_KERNEL : FRAME_KIND_NATIVE);
	pb__end(p->in, m);
	return fid + 1;
}

/* The callstack of a timeline stack (its id is the iid), frames outermost first. */
static uint64_t stack_iid(struct pf *p, uint32_t stack)
{
	uint32_t depth, parent, frame, id = stack;
	uint64_t *ids;
	size_t m;

	if (!stack || p->stack_sent[stack])
		return stack;
	p->stack_sent[stack] = 1;
	depth = timeline__stack_depth(p->tl, stack);
	ids = malloc(depth * sizeof(*ids));
	if (!ids) {
		p->err = -ENOMEM;
		return 0;
	}
	for (uint32_t i = depth; i-- > 0; id = parent) {
		timeline__stack_node(p->tl, id, &parent, &frame);
		ids[i] = frame_iid(p, frame);
	}
	m = pb__begin(p->in, ID_CALLSTACKS);
	pb__uint(p->in, CSK_IID, stack);
	for (uint32_t i = 0; i < depth; i++)
		pb__uint(p->in, CSK_FRAME_IDS, ids[i]); /* unpacked: a proto2 repeated field */
	pb__end(p->in, m);
	free(ids);
	return stack;
}

/* ---- debug annotations ---- */

static void da_str(struct pf *p, int name, const char *v)
{
	uint64_t iid = str_iid(p, &p->strs, ID_DA_STRINGS, v);
	size_t m = pb__begin(p->pk, TE_DEBUG);

	pb__uint(p->pk, DA_NAME_IID, (uint64_t)name + 1);
	pb__uint(p->pk, DA_STRING_IID, iid);
	pb__end(p->pk, m);
}

static void da_uint(struct pf *p, int name, uint64_t v)
{
	size_t m = pb__begin(p->pk, TE_DEBUG);

	pb__uint(p->pk, DA_NAME_IID, (uint64_t)name + 1);
	pb__uint_present(p->pk, DA_UINT, v);
	pb__end(p->pk, m);
}

/* ---- the start: clock, sequence, tracks ---- */

static void clock_packet(struct pf *p)
{
	size_t cs, c;

	pb__reset(p->pk);
	pb__reset(p->in);
	cs = pb__begin(p->pk, PKT_CLOCK_SNAPSHOT);
	c = pb__begin(p->pk, CS_CLOCKS);
	pb__uint(p->pk, CLK_ID, CLOCK_MONOTONIC_ID);
	pb__uint_present(p->pk, CLK_TIMESTAMP, p->info->start);
	pb__end(p->pk, c);
	pb__uint(p->pk, CS_PRIMARY, CLOCK_MONOTONIC_ID);
	pb__end(p->pk, cs);
	pkt_end(p);
}

/* The sequence's first packet: its state cleared, its defaults, the annotations' names. */
static void sequence_packet(struct pf *p)
{
	size_t d, ps, tb, m;

	pb__reset(p->pk);
	pb__reset(p->in);
	pb__uint(p->pk, PKT_SEQ_ID, SEQ_ID);
	pb__uint(p->pk, PKT_SEQ_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED | SEQ_NEEDS_INCREMENTAL_STATE);
	pb__uint(p->pk, PKT_FIRST_ON_SEQ, 1);
	pb__uint(p->pk, PKT_PREV_DROPPED, 1);
	d = pb__begin(p->pk, PKT_DEFAULTS);
	pb__uint(p->pk, DEF_CLOCK_ID, CLOCK_MONOTONIC_ID);
	if (p->info->cpu_event) {
		ps = pb__begin(p->pk, DEF_PERF_SAMPLE);
		tb = pb__begin(p->pk, PSD_TIMEBASE);
		if (!strcmp(p->info->cpu_event, "cpu-clock"))
			pb__uint(p->pk, TB_COUNTER, SW_CPU_CLOCK);
		pb__string(p->pk, TB_NAME, p->info->cpu_event);
		pb__end(p->pk, tb);
		pb__end(p->pk, ps);
	}
	pb__end(p->pk, d);
	for (int i = 0; i < NR_DA; i++) {
		m = pb__begin(p->in, ID_DA_NAMES);
		pb__uint(p->in, NAME_IID, (uint64_t)i + 1);
		pb__string(p->in, NAME_NAME, da_names[i]);
		pb__end(p->in, m);
	}
	pkt_end(p);
}

static bool thread_shown(const struct timeline *tl, uint32_t ti)
{
	size_t n1, n2, n3, n4, n5;

	timeline__slices(tl, ti, &n1);
	timeline__samples(tl, ti, &n2);
	timeline__summed(tl, ti, &n3);
	timeline__wakes_by(tl, ti, &n4);
	timeline__critical(tl, ti, &n5);
	return n1 || n2 || n3 || n4 || n5;
}

static void descriptor(struct pf *p, uint64_t uuid, uint64_t parent, const char *name,
		       const char *description)
{
	size_t td;

	pkt_begin(p, 0);
	td = pb__begin(p->pk, PKT_TRACK_DESCRIPTOR);

	pb__uint(p->pk, TD_UUID, uuid);
	if (parent)
		pb__uint(p->pk, TD_PARENT, parent);
	if (name)
		pb__string(p->pk, TD_NAME, name);
	if (description)
		pb__string(p->pk, TD_DESCRIPTION, description);
	pb__end(p->pk, td);
	pkt_end(p);
}

/* A process's track: named after its main thread (tid = pid), else its first one shown. */
static uint64_t process_track(struct pf *p, uint32_t first, uint64_t uuid)
{
	const struct timeline *tl = p->tl;
	const struct tl_thread *t = timeline__thread(tl, first), *main = t;
	size_t td, d;

	for (uint32_t j = first; j < timeline__nr_threads(tl) && timeline__thread(tl, j)->pid == t->pid; j++)
		if (timeline__thread(tl, j)->tid == t->pid)
			main = timeline__thread(tl, j);
	pkt_begin(p, 0);
	td = pb__begin(p->pk, PKT_TRACK_DESCRIPTOR);
	pb__uint(p->pk, TD_UUID, uuid);
	d = pb__begin(p->pk, TD_PROCESS);
	pb__uint(p->pk, PD_PID, t->pid);
	pb__string(p->pk, PD_NAME, main->comm ? main->comm : "[unknown]");
	pb__end(p->pk, d);
	pb__end(p->pk, td);
	pkt_end(p);
	return uuid;
}

/*
 * A track per thread shown, "comm tid", under one per process; beside it
 * one for its summed waits when it has some. uuids from 2 (1: the note).
 */
static void tracks(struct pf *p)
{
	const struct timeline *tl = p->tl;
	uint32_t n = timeline__nr_threads(tl), pid = 0;
	uint64_t next = 2, proc = 0;
	char name[128];

	for (uint32_t i = 0; i < n; i++) {
		const struct tl_thread *t = timeline__thread(tl, i);
		const char *comm = t->comm ? t->comm : "[unknown]";
		size_t td, d, nsu, ncr;

		if (!thread_shown(tl, i))
			continue;
		if (!proc || t->pid != pid) {
			proc = process_track(p, i, next++);
			pid = t->pid;
		}
		p->thread_uuid[i] = next++;
		snprintf(name, sizeof(name), "%s %u", comm, t->tid);
		pkt_begin(p, 0);
		td = pb__begin(p->pk, PKT_TRACK_DESCRIPTOR);
		pb__uint(p->pk, TD_UUID, p->thread_uuid[i]);
		pb__uint(p->pk, TD_PARENT, proc);
		pb__string(p->pk, TD_NAME, name);
		d = pb__begin(p->pk, TD_THREAD);
		pb__uint(p->pk, THD_PID, t->pid);
		pb__uint(p->pk, THD_TID, t->tid);
		pb__string(p->pk, THD_NAME, comm);
		pb__end(p->pk, d);
		pb__end(p->pk, td);
		pkt_end(p);
		p->w->threads++;
		if (timeline__critical(tl, i, &ncr) && ncr) {
			p->crit_uuid[i] = next++;
			snprintf(name, sizeof(name), "%s %u: critical path", comm, t->tid);
			descriptor(p, p->crit_uuid[i], p->thread_uuid[i], name,
				   "Each wait of --chain-min or more, followed back through its wakers "
				   "(offcpu report --chains): the pieces its time is made of, in time "
				   "order, each the time of one thread (the sleeper's waker, that "
				   "thread's own waker...), on a CPU, waiting for one, or asleep until "
				   "a timer or an interrupt, with its stack there.");
		}
		timeline__summed(tl, i, &nsu);
		if (!nsu)
			continue;
		p->summed_uuid[i] = next++;
		snprintf(name, sizeof(name), "%s %u: summed short waits", comm, t->tid);
		descriptor(p, p->summed_uuid[i], p->thread_uuid[i], name,
			   "Waits shorter than the recording's --off-cpu-thresh (and waits for a CPU) are "
			   "summed in the kernel per stack and written every --flush-interval: each instant "
			   "is one such sum, at the end of the last wait it holds, with their number and "
			   "total. The single waits' times were not recorded.");
	}
}

/* What the recording lets the timeline show: a track of its own, an instant at the start. */
static void note_track(struct pf *p)
{
	const struct tl_info *in = p->info;
	uint64_t summed = 0, summed_ns = 0;
	char rec[256], oncpu[512], sum[256], lost[128];
	size_t te;

	for (uint32_t i = 0; i < timeline__nr_threads(p->tl); i++) {
		const struct tl_thread *t = timeline__thread(p->tl, i);

		summed += t->summed_off + t->summed_runq;
		summed_ns += t->summed_off_ns + t->summed_runq_ns;
	}
	if (!in->offcpu)
		snprintf(rec, sizeof(rec), "CPU samples only: no off-CPU event (a recording by perf?)");
	else if (in->thresh_ns == UINT64_MAX)
		snprintf(rec, sizeof(rec), "off-CPU waits (threshold not said)%s%s",
			 in->sched_delay ? ", run-queue waits (--sched-delay)" : "",
			 in->wakeups ? ", wakers (--wakeups)" : "");
	else
		snprintf(rec, sizeof(rec), "off-CPU waits, one by one from %.3f ms (--off-cpu-thresh)%s%s",
			 in->thresh_ns / 1e6, in->sched_delay ? ", run-queue waits (--sched-delay)" : "",
			 in->wakeups ? ", wakers (--wakeups)" : "");
	snprintf(oncpu, sizeof(oncpu),
		 "'on CPU' where every wait of the thread was recorded one by one; 'on CPU or "
		 "runnable' where waits for a CPU were not (record --sched-delay); 'on CPU or short "
		 "waits' where waits were summed or not measured (record --off-cpu-thresh 0)");
	snprintf(sum, sizeof(sum), "%llu waits, %.3f ms in all, without times: instants on each "
		 "thread's 'summed short waits' track", (unsigned long long)summed, summed_ns / 1e6);
	snprintf(lost, sizeof(lost), "%llu samples or parts of samples (offcpu report --header)",
		 (unsigned long long)in->lost);
	descriptor(p, 1, 0, "offcpu: what this timeline holds", NULL);
	pkt_begin(p, in->start);
	pb__uint(p->pk, PKT_SEQ_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
	te = pb__begin(p->pk, PKT_TRACK_EVENT);
	pb__uint(p->pk, TE_TYPE, TYPE_INSTANT);
	pb__uint(p->pk, TE_TRACK_UUID, 1);
	pb__uint(p->pk, TE_NAME_IID, str_iid(p, &p->names, ID_EVENT_NAMES, "recording"));
	da_str(p, DA_RECORDING, rec);
	da_str(p, DA_ONCPU, oncpu);
	da_str(p, DA_SUMMED, sum);
	da_str(p, DA_LOST, lost);
	if (in->chains) {
		char cp[256];

		snprintf(cp, sizeof(cp), "%llu waits of --chain-min or more followed through their "
			 "wakers: a 'critical path' track beside each sleeper's", (unsigned long long)in->crit_waits);
		da_str(p, DA_CHAINS, cp);
	}
	pb__end(p->pk, te);
	pkt_end(p);
}

/* ---- the items of each thread ---- */

/* The wakeup ending the off-CPU slice before sl (sl[-1]) when its flow is drawn: its index + 1. */
static uint32_t flow_into(const struct pf *p, const struct tl_slice *sl, size_t i)
{
	const struct tl_slice *prev = i ? &sl[i - 1] : NULL;

	if (!prev || prev->kind != TL_OFFCPU || !prev->wake || prev->end != sl[i].start)
		return 0;
	return p->flow_ok[prev->wake - 1] ? prev->wake : 0;
}

/* "comm pid/tid" of a wakeup's waker, or "[irq]". */
static const char *waker_label(const struct pf *p, const struct tl_wake *w, char *buf, size_t len)
{
	if (w->waker == TL_NO_THREAD)
		snprintf(buf, len, "[irq]");
	else
		tl_thread__label(timeline__thread(p->tl, w->waker), buf, len);
	return buf;
}

static void slice_begin(struct pf *p, const struct cur *c)
{
	const struct tl_slice *sl = &c->sl[c->isl];
	uint32_t flow = flow_into(p, c->sl, c->isl);
	char name[320], who[160];
	const char *may;
	size_t te;

	pkt_begin(p, sl->start);
	pb__uint(p->pk, PKT_SEQ_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
	te = pb__begin(p->pk, PKT_TRACK_EVENT);
	pb__uint(p->pk, TE_TYPE, TYPE_SLICE_BEGIN);
	pb__uint(p->pk, TE_TRACK_UUID, p->thread_uuid[c->ti]);
	pb__uint(p->pk, TE_NAME_IID, str_iid(p, &p->names, ID_EVENT_NAMES,
					     tl_slice__name(p->tl, sl, name, sizeof(name))));
	if (sl->stack)
		pb__uint(p->pk, TE_CALLSTACK_IID, stack_iid(p, sl->stack));
	if (flow)
		pb__fixed64(p->pk, TE_TERMINATING_FLOW_IDS, flow);
	if (sl->kind == TL_OFFCPU && sl->wake)
		da_str(p, DA_WOKEN_BY, waker_label(p, timeline__wake(p->tl, sl->wake - 1), who, sizeof(who)));
	if (sl->flags & TL_WAKE_UNKNOWN)
		da_str(p, DA_ENDS, "at its switch-in: the run-queue wait after its wakeup was not "
				   "recorded one by one, so it ended earlier by that much");
	if (sl->flags & TL_FROM_START)
		da_str(p, DA_BEGAN, "before the recording: in progress at its start");
	if (sl->flags & TL_TO_STOP)
		da_str(p, DA_ENDS, "after the recording: in progress at its stop");
	if (sl->flags & TL_CUT)
		da_uint(p, DA_WHOLE_NS, sl->whole);
	if ((may = tl_slice__may_hold(sl)))
		da_str(p, DA_MAY_HOLD, may);
	pb__end(p->pk, te);
	pkt_end(p);
	p->w->slices++;
}

static void slice_end(struct pf *p, const struct cur *c)
{
	size_t te;

	pkt_begin(p, c->sl[c->isl].end);
	te = pb__begin(p->pk, PKT_TRACK_EVENT);
	pb__uint(p->pk, TE_TYPE, TYPE_SLICE_END);
	pb__uint(p->pk, TE_TRACK_UUID, p->thread_uuid[c->ti]);
	pb__end(p->pk, te);
	pkt_end(p);
}

/* A wakeup this thread made: an instant with the waker's stack, where the flow starts. */
static void wake_instant(struct pf *p, const struct cur *c)
{
	uint32_t idx = c->wk[c->iwk];
	const struct tl_wake *w = timeline__wake(p->tl, idx);
	const struct tl_thread *sleeper = timeline__thread(p->tl, w->sleeper);
	char name[160];
	size_t te;

	snprintf(name, sizeof(name), "wakes %s %u", sleeper->comm ? sleeper->comm : "[unknown]",
		 sleeper->tid);
	pkt_begin(p, w->time);
	pb__uint(p->pk, PKT_SEQ_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
	te = pb__begin(p->pk, PKT_TRACK_EVENT);
	pb__uint(p->pk, TE_TYPE, TYPE_INSTANT);
	pb__uint(p->pk, TE_TRACK_UUID, p->thread_uuid[c->ti]);
	pb__uint(p->pk, TE_NAME_IID, str_iid(p, &p->names, ID_EVENT_NAMES, name));
	if (w->stack)
		pb__uint(p->pk, TE_CALLSTACK_IID, stack_iid(p, w->stack));
	if (p->flow_ok[idx]) {
		pb__fixed64(p->pk, TE_FLOW_IDS, (uint64_t)idx + 1);
		p->w->flows++;
	}
	if (!w->exact)
		da_str(p, DA_TIME, "the sleeper's switch-in: the wakeup itself was earlier, by a "
				   "run-queue wait not recorded one by one");
	pb__end(p->pk, te);
	pkt_end(p);
}

static void summed_instant(struct pf *p, const struct cur *c)
{
	const struct tl_summed *su = &c->su[c->isu];
	struct tl_slice as = { .kind = su->kind, .state = su->state, .stack = su->stack };
	char name[320], full[360], who[160];
	size_t te;

	tl_slice__name(p->tl, &as, name, sizeof(name));
	snprintf(full, sizeof(full), "%s (summed)", name);
	pkt_begin(p, su->time);
	pb__uint(p->pk, PKT_SEQ_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
	te = pb__begin(p->pk, PKT_TRACK_EVENT);
	pb__uint(p->pk, TE_TYPE, TYPE_INSTANT);
	pb__uint(p->pk, TE_TRACK_UUID, p->summed_uuid[c->ti]);
	pb__uint(p->pk, TE_NAME_IID, str_iid(p, &p->names, ID_EVENT_NAMES, full));
	if (su->stack)
		pb__uint(p->pk, TE_CALLSTACK_IID, stack_iid(p, su->stack));
	da_uint(p, DA_WAITS, su->count);
	da_uint(p, DA_TOTAL_NS, su->total);
	if (su->wake)
		da_str(p, DA_WOKEN_BY, waker_label(p, timeline__wake(p->tl, su->wake - 1), who, sizeof(who)));
	da_str(p, DA_NOTE, "summed in the kernel: timed at the end of the last of them");
	pb__end(p->pk, te);
	pkt_end(p);
	p->w->summed++;
}

static void sample(struct pf *p, const struct cur *c)
{
	const struct tl_sample *sa = &c->sa[c->isa];
	const struct tl_thread *t = timeline__thread(p->tl, c->ti);
	size_t ps;

	pkt_begin(p, sa->time);
	pb__uint(p->pk, PKT_SEQ_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
	ps = pb__begin(p->pk, PKT_PERF_SAMPLE);
	pb__uint_present(p->pk, PS_CPU, sa->cpu);
	pb__uint(p->pk, PS_PID, t->pid);
	pb__uint(p->pk, PS_TID, t->tid);
	if (sa->stack)
		pb__uint(p->pk, PS_CALLSTACK_IID, stack_iid(p, sa->stack));
	/* no timebase_count: trace processor keeps none, and cpu-clock's is the same for all */
	pb__end(p->pk, ps);
	pkt_end(p);
	p->w->samples++;
}

/* A piece's name: whose time it was, and what it was ("tl-writer 1006: on CPU", "[timer]"). */
static const char *crit_name(const struct pf *p, const struct tl_crit *e, char *buf, size_t len)
{
	const struct tl_thread *t = e->thread == TL_NO_THREAD ? NULL : timeline__thread(p->tl, e->thread);
	const char *what = e->kind == CHAIN_SEG_ON_CPU ? "on CPU" :
			   e->kind == CHAIN_SEG_RUNQ ? "runnable" : chain_seg__tag(e->kind);

	if (t)
		snprintf(buf, len, "%s %u: %s", t->comm ? t->comm : "[unknown]", t->tid, what ? what : "?");
	else
		snprintf(buf, len, "%s", what ? what : "?");
	return buf;
}

/* A critical path's wait, or one of its pieces, begins on its sleeper's critical-path track. */
static void crit_begin(struct pf *p, const struct cur *c)
{
	const struct tl_crit *e = &c->cr[c->icr];
	char name[320], full[360];
	size_t te;

	if (e->kind == TL_CRIT_WAIT) {
		struct tl_slice as = { .kind = TL_OFFCPU, .state = e->state, .stack = e->stack };

		snprintf(full, sizeof(full), "critical path of %s", tl_slice__name(p->tl, &as, name, sizeof(name)));
	} else {
		crit_name(p, e, full, sizeof(full));
	}
	pkt_begin(p, e->start);
	pb__uint(p->pk, PKT_SEQ_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
	te = pb__begin(p->pk, PKT_TRACK_EVENT);
	pb__uint(p->pk, TE_TYPE, TYPE_SLICE_BEGIN);
	pb__uint(p->pk, TE_TRACK_UUID, p->crit_uuid[c->ti]);
	pb__uint(p->pk, TE_NAME_IID, str_iid(p, &p->names, ID_EVENT_NAMES, full));
	if (e->stack)
		pb__uint(p->pk, TE_CALLSTACK_IID, stack_iid(p, e->stack));
	if (e->kind != TL_CRIT_WAIT)
		da_uint(p, DA_DEPTH, e->depth);
	if (e->kind == CHAIN_SEG_ON_CPU && !e->sampled)
		da_str(p, DA_STACK, "at the wakeup it made (no CPU sample in the piece)");
	pb__end(p->pk, te);
	pkt_end(p);
	p->w->slices++;
}

static void crit_end(struct pf *p, const struct cur *c)
{
	const struct tl_crit *e = c->cr_open ? &c->cr[c->icr] : &c->cr[c->cr_wait - 1];
	size_t te;

	pkt_begin(p, e->end);
	te = pb__begin(p->pk, PKT_TRACK_EVENT);
	pb__uint(p->pk, TE_TYPE, TYPE_SLICE_END);
	pb__uint(p->pk, TE_TRACK_UUID, p->crit_uuid[c->ti]);
	pb__end(p->pk, te);
	pkt_end(p);
}

/* ---- the merge ---- */

/*
 * c's next item of its critical paths (each wait a slice, its pieces
 * slices inside it): the end of the open wait once its pieces are
 * written, else the next begin or end. false when none is left.
 */
static bool crit_next(const struct cur *c, uint64_t *t, int *rank)
{
	const struct tl_crit *e = c->icr < c->ncr ? &c->cr[c->icr] : NULL;

	if (c->cr_wait && !c->cr_open && (!e || e->kind == TL_CRIT_WAIT)) {
		*t = c->cr[c->cr_wait - 1].end;
		*rank = R_CRIT_END;
		return true;
	}
	if (!e)
		return false;
	*t = c->cr_open ? e->end : e->start;
	*rank = c->cr_open ? R_CRIT_END : R_CRIT_BEGIN;
	return true;
}

/* c's next item (time, rank); false when it has none left. */
static bool cur_next(const struct timeline *tl, struct cur *c)
{
	uint64_t t = UINT64_MAX;
	int r = -1;

#define TAKE(cond, time_, rank_)                                                    \
	do {                                                                         \
		if ((cond) && ((time_) < t || ((time_) == t && (rank_) < r))) {      \
			t = (time_);                                                 \
			r = (rank_);                                                 \
		}                                                                    \
	} while (0)
	if (c->isl < c->nsl)
		TAKE(true, c->open ? c->sl[c->isl].end : c->sl[c->isl].start, c->open ? R_END : R_BEGIN);
	TAKE(c->iwk < c->nwk, timeline__wake(tl, c->wk[c->iwk < c->nwk ? c->iwk : 0])->time, R_WAKE);
	TAKE(c->isu < c->nsu, c->su[c->isu < c->nsu ? c->isu : 0].time, R_SUMMED);
	TAKE(c->isa < c->nsa, c->sa[c->isa < c->nsa ? c->isa : 0].time, R_SAMPLE);
	{
		uint64_t ct;
		int cr;

		if (crit_next(c, &ct, &cr))
			TAKE(true, ct, cr);
	}
#undef TAKE
	c->time = t;
	c->rank = r;
	return r >= 0;
}

static bool cur_before(const struct cur *a, const struct cur *b)
{
	if (a->time != b->time)
		return a->time < b->time;
	if (a->rank != b->rank)
		return a->rank < b->rank;
	return a->ti < b->ti;
}

static void heap_down(struct cur **h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		struct cur *t;

		if (l < n && cur_before(h[l], h[m]))
			m = l;
		if (l + 1 < n && cur_before(h[l + 1], h[m]))
			m = l + 1;
		if (m == i)
			return;
		t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

/* Write c's next item and step past it. */
static void emit(struct pf *p, struct cur *c)
{
	switch (c->rank) {
	case R_BEGIN:
		slice_begin(p, c);
		c->open = true;
		break;
	case R_END:
		slice_end(p, c);
		c->open = false;
		c->isl++;
		break;
	case R_WAKE:
		wake_instant(p, c);
		c->iwk++;
		break;
	case R_SUMMED:
		summed_instant(p, c);
		c->isu++;
		break;
	case R_CRIT_BEGIN:
		crit_begin(p, c);
		if (c->cr[c->icr].kind == TL_CRIT_WAIT)
			c->cr_wait = ++c->icr;
		else
			c->cr_open = true;
		break;
	case R_CRIT_END:
		crit_end(p, c);
		if (c->cr_open) {
			c->cr_open = false;
			c->icr++;
		} else {
			c->cr_wait = 0;
		}
		break;
	default:
		sample(p, c);
		c->isa++;
	}
}

/* Which wakeups get a flow: a waker's track, and a slice right after the wait they ended. */
static void flows(struct pf *p)
{
	const struct timeline *tl = p->tl;

	for (uint32_t ti = 0; ti < timeline__nr_threads(tl); ti++) {
		size_t n, nw;
		const struct tl_slice *sl = timeline__slices(tl, ti, &n);
		const uint32_t *wk = timeline__wakes_by(tl, ti, &nw);

		for (size_t i = 0; i < nw; i++)
			p->flow_ok[wk[i]] |= 1; /* on its waker's track */
		for (size_t i = 0; i + 1 < n; i++)
			if (sl[i].kind == TL_OFFCPU && sl[i].wake && sl[i + 1].start == sl[i].end)
				p->flow_ok[sl[i].wake - 1] |= 2; /* and ends at a slice */
	}
	for (size_t i = 0; i < p->nr_wakes; i++)
		p->flow_ok[i] = p->flow_ok[i] == 3;
}

static void events(struct pf *p, struct cur *cs, struct cur **h)
{
	const struct timeline *tl = p->tl;
	size_t n = 0;

	for (uint32_t ti = 0; ti < timeline__nr_threads(tl); ti++) {
		struct cur *c = &cs[ti];

		if (!p->thread_uuid[ti])
			continue;
		*c = (struct cur){ .ti = ti };
		c->sl = timeline__slices(tl, ti, &c->nsl);
		c->sa = timeline__samples(tl, ti, &c->nsa);
		c->su = timeline__summed(tl, ti, &c->nsu);
		c->wk = timeline__wakes_by(tl, ti, &c->nwk);
		c->cr = timeline__critical(tl, ti, &c->ncr);
		if (cur_next(tl, c))
			h[n++] = c;
	}
	for (size_t i = n / 2; i-- > 0;)
		heap_down(h, n, i);
	while (n && !p->err) {
		struct cur *c = h[0];

		emit(p, c);
		if (!cur_next(tl, c))
			h[0] = h[--n];
		heap_down(h, n, 0);
	}
}

/* What the trace cannot show of this recording, and how to record it so that it can. */
static void hints(const struct pf *p, const struct msg_sink *ms)
{
	const struct tl_info *in = p->info;

	if (!in->offcpu)
		msg__say(ms, MSG_HINT, "no off-CPU samples: the trace holds CPU samples only");
	else if (!in->sched_delay || in->thresh_ns)
		msg__say(ms, MSG_HINT, "on-CPU slices are exact where every wait was recorded: "
			 "record --off-cpu-thresh 0 --sched-delay%s", in->wakeups ? "" : " --wakeups");
	else if (!in->wakeups)
		msg__say(ms, MSG_HINT, "no wakers in the recording (record --wakeups): no flows");
	if (p->w->summed)
		msg__say(ms, MSG_NOTE, "%zu sums of short waits, without times: instants on the "
			 "threads' 'summed short waits' tracks", p->w->summed);
}

int timeline__perfetto(const struct timeline *tl, const char *path, const struct msg_sink *ms,
		       struct tl_written *w, char *err, size_t errlen)
{
	struct pf p = { .tl = tl, .s = timeline__session(tl), .info = timeline__info(tl), .w = w };
	uint32_t nth = timeline__nr_threads(tl);
	size_t nw;
	struct cur *cs = NULL, **h = NULL;
	struct outfile of;
	int ret;

	err[0] = 0;
	memset(w, 0, sizeof(*w));
	nw = timeline__nr_wakes(tl);
	intern__init(&p.names);
	intern__init(&p.strs);
	intern__init(&p.fnames);
	intern__init(&p.paths);
	intern__init(&p.maps);
	p.pk = pb__new();
	p.in = pb__new();
	p.frame_sent = calloc(session__nr_frames(p.s) + 1, 1);
	p.stack_sent = calloc(timeline__nr_stacks(tl) + 1, 1);
	p.flow_ok = calloc(nw + 1, 1);
	p.nr_wakes = nw;
	p.thread_uuid = calloc(nth + 1, sizeof(uint64_t));
	p.summed_uuid = calloc(nth + 1, sizeof(uint64_t));
	p.crit_uuid = calloc(nth + 1, sizeof(uint64_t));
	cs = calloc(nth + 1, sizeof(*cs));
	h = calloc(nth + 1, sizeof(*h));
	ret = -ENOMEM;
	if (!p.pk || !p.in || !p.frame_sent || !p.stack_sent || !p.flow_ok || !p.thread_uuid ||
	    !p.summed_uuid || !p.crit_uuid || !cs || !h)
		goto cleanup;
	ret = outfile__open(&of, path, 0644);
	if (ret) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(-ret));
		goto cleanup;
	}
	p.f = fdopen(of.fd, "w");
	if (!p.f) {
		close(of.fd);
		ret = outfile__commit(&of, -ENOMEM);
		goto cleanup;
	}
	setvbuf(p.f, NULL, _IOFBF, 1 << 20);
	clock_packet(&p);
	sequence_packet(&p);
	note_track(&p);
	tracks(&p);
	flows(&p);
	events(&p, cs, h);
	if (fclose(p.f) && !p.err)
		p.err = -EIO;
	ret = outfile__commit(&of, p.err);
	if (ret == -EIO)
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(EIO));
	if (!ret)
		hints(&p, ms);
cleanup:
	intern__free(&p.names);
	intern__free(&p.strs);
	intern__free(&p.fnames);
	intern__free(&p.paths);
	intern__free(&p.maps);
	pb__free(p.pk);
	pb__free(p.in);
	free(p.frame_sent);
	free(p.stack_sent);
	free(p.flow_ok);
	free(p.thread_uuid);
	free(p.summed_uuid);
	free(p.crit_uuid);
	free(cs);
	free(h);
	return ret;
}
