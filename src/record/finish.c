// SPDX-License-Identifier: GPL-2.0-only
/*
 * The end of a recording: the command and the events stopped, the waits
 * still in progress ended, the last records written, then what only the
 * end knows: LOST records, the sample time range, the offcpu section
 * (every counter by name), the build ids of the DSOs samples hit.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "perfdata/perf_format.h"
#include "perfdata/perf_writer.h"
#include "record/recorder_int.h"
#include "util/vec.h"

/*
 * The offcpu section being built: a count, then each counter as
 * {u32 name length (NUL included, padded to 8), name, u64 value}. The
 * first failure sticks: later puts do nothing.
 */
struct counter_buf {
	uint8_t *b;
	size_t len, cap;
	uint32_t nr;
	int err;
};

static void put(struct counter_buf *c, const char *name, uint64_t v)
{
	uint32_t nl = (strlen(name) + 1 + 7) / 8 * 8;
	size_t need = 4 + nl + 8;

	if (c->err)
		return;
	if (vec__reserve((void **)&c->b, &c->cap, c->len + need, 1, 256)) {
		c->err = -ENOMEM;
		return;
	}
	memcpy(c->b + c->len, &nl, 4);
	memset(c->b + c->len + 4, 0, nl);
	memcpy(c->b + c->len + 4, name, strlen(name));
	memcpy(c->b + c->len + 4 + nl, &v, 8);
	c->len += need;
	c->nr++;
}

static int put_cb(void *ctx, const char *name, uint64_t v)
{
	struct counter_buf *c = ctx;

	put(c, name, v);
	return c->err;
}

/* Were off-CPU intervals filtered by their length (-m/-M)? */
static bool block_filtered(const struct record_opts *o)
{
	return o->min_ns || o->max_ns != UINT64_MAX;
}

/* Losses, samples, the options that shaped them, the unwinder's counters. */
static void put_counts(struct recorder *r, struct counter_buf *c)
{
	const struct record_opts *o = r->o;

	/* unread, they are left out: a reader then says the losses are unknown */
	for (int i = 0; !r->drops_err && i < OFFCPU_DROP__NR; i++)
		put(c, offcpu_drop_key(i), r->drops[i]);
	put(c, "drop.perf_lost", cpu_events__lost(r->cpu));
	put(c, "drop.sideband_nomem", r->nr_sideband_nomem);
	put(c, "records.out_of_order", merge__late(r->m));
	put(c, "threads.named_late", thread_names__named_late(r->names));
	put(c, "threads.unnamed", thread_names__unnamed(r->names));
	put(c, "samples.before_start", r->nr_before_start);
	put(c, "ustack.cut", r->nr_ustack_cut);
	put(c, "offcpu.thresh_ns", o->thresh_ns);
	put(c, "offcpu.flush_ms", o->flush_ms);
	put(c, "offcpu.state_mask", o->state_mask);
	put(c, "samples.offcpu", offcpu_bpf__samples(r->bpf));
	put(c, "samples.cpu", cpu_events__samples(r->cpu) + offcpu_bpf__cpu_samples(r->bpf));
	put(c, "unwind.dwarf", o->dwarf);
	if (!c->err && r->unwind)
		c->err = unwind_loader__counters(r->unwind, r->bpf, put_cb, c);
	if (r->fix) {
		put(c, "unwind.deferred_unwound", ustack_fix__stat(r->fix, USTACK_FIX_UNWOUND));
		put(c, "unwind.deferred_failed", ustack_fix__stat(r->fix, USTACK_FIX_FAILED));
		put(c, "unwind.deferred_after_exit", ustack_fix__stat(r->fix, USTACK_FIX_GONE));
		put(c, "unwind.deferred_dropped", ustack_fix__stat(r->fix, USTACK_FIX_DROPPED));
		put(c, "unwind.deferred_unknown", ustack_fix__stat(r->fix, USTACK_FIX_UNKNOWN));
	}
	put(c, "python.enabled", r->py != NULL);
	if (!c->err && r->py)
		c->err = pyframes__counters(r->py, put_cb, c);
	if (o->wakeups)
		put(c, "samples.offcpu_wakeup", offcpu_bpf__wakeup_samples(r->bpf));
	if (o->sched_delay)
		put(c, "samples.sched_delay", offcpu_bpf__delay_samples(r->bpf));
}

/* The recording's window, its waits in progress, the kernel stacks, -m/-M. */
static void put_window(struct recorder *r, struct counter_buf *c)
{
	static const char *const pkeys[OFFCPU_IN_PROGRESS__NR] = {
		"offcpu.in_progress_start", "offcpu.in_progress_stop",
		"sched_delay.in_progress_start", "sched_delay.in_progress_stop",
	};
	const struct record_opts *o = r->o;
	uint64_t start, stop, ks[OFFCPU_STAT__NR];

	/* the recording's window (CLOCK_MONOTONIC ns): waits count inside it only */
	offcpu_bpf__window(r->bpf, &start, &stop);
	put(c, "record.start_ns", start);
	put(c, "record.stop_ns", stop);
	for (int i = 0; i < OFFCPU_IN_PROGRESS__NR; i++)
		if (i < OFFCPU_IN_PROGRESS_DELAY_START || o->sched_delay)
			put(c, pkeys[i], offcpu_bpf__in_progress(r->bpf, i));
	if (!c->err)
		c->err = offcpu_bpf__stats(r->bpf, ks);
	for (int i = 0; !c->err && i < OFFCPU_STAT__NR; i++)
		if (i != OFFCPU_STAT_FILTERED || block_filtered(o))
			put(c, offcpu_stat_key(i), ks[i]);
	/* -m/-M: the range kept, beside the count of intervals left out */
	if (block_filtered(o))
		put(c, "offcpu.min_ns", o->min_ns);
	if (block_filtered(o) && o->max_ns != UINT64_MAX)
		put(c, "offcpu.max_ns", o->max_ns);
}

/* The offcpu section: drop counters and recording facts, by name. */
static int write_offcpu_feature(struct recorder *r)
{
	struct counter_buf c = { .len = 4 };

	c.err = vec__reserve((void **)&c.b, &c.cap, c.len, 1, 256) ? -ENOMEM : 0;
	put_counts(r, &c);
	put_window(r, &c);
	if (!c.err) {
		memcpy(c.b, &c.nr, 4);
		c.err = perf_writer__set_feature(r->w, PERF_FEAT_OFFCPU, c.b, c.len);
	}
	free(c.b);
	return c.err;
}

/* One LOST record: n samples of the event `id` lost. */
static int write_lost_record(struct recorder *r, uint64_t id, uint64_t n)
{
	struct {
		struct perf_event_header h;
		uint64_t id, lost;
		struct sample_id sid;
	} rec = {
		.h = { .type = PERF_RECORD_LOST, .size = sizeof(rec) },
		.id = id,
		.lost = n,
		.sid = { .time = r->last_time, .id = id },
	};

	return n ? perf_writer__write(r->w, &rec, sizeof(rec)) : 0;
}

/*
 * Lost data as LOST records too, so that perf report warns about it: each
 * drop counter's LOSS (bpf/offcpu.h) says which event's.
 */
static int write_lost(struct recorder *r)
{
	uint64_t n = 0, nw = 0, nd = 0;
	int err;

	for (int i = 0; i < OFFCPU_DROP__NR; i++) {
		enum offcpu_loss loss = offcpu_drop_loss(i);

		n += loss == OFFCPU_LOSS_OFFCPU ? r->drops[i] : 0;
		nw += loss == OFFCPU_LOSS_WAKEUP ? r->drops[i] : 0;
		nd += loss == OFFCPU_LOSS_DELAY ? r->drops[i] : 0;
	}
	if (!n && !nw && !nd)
		return 0;
	err = write_lost_record(r, OFFCPU_ID_OFFCPU, n);
	if (!err)
		err = write_lost_record(r, OFFCPU_ID_WAKEUP, nw);
	if (!err)
		err = write_lost_record(r, OFFCPU_ID_SCHED_DELAY, nd);
	return err ? err : perf_writer__finished_round(r->w);
}

/* LOST records and the feature sections, then the file's header: the end of the file. */
static int write_end(struct recorder *r)
{
	uint64_t times[2] = { r->first_time, r->last_time };
	uint8_t *bid = NULL;
	size_t bidlen = 0;
	int err;

	r->drops_err = offcpu_bpf__drops(r->bpf, r->drops);
	if (r->drops_err) {
		recorder__clear_status(r);
		msg__say(r->ms, MSG_WARNING, "cannot read the drop counters: %s; what was lost is "
			 "unknown (the file says so)", strerror(-r->drops_err));
	}
	/* before the build ids: the Python symbol file is one of the files samples hit */
	err = r->py ? pyframes__finish(r->py) : 0;
	if (err) {
		recorder__clear_status(r);
		msg__say(r->ms, MSG_WARNING, "cannot write %s: %s; the recording's Python frames stay "
			 "unnamed", pyframes__path(r->py), strerror(-err));
	}
	err = thread_names__error(r->names);
	if (!err)
		err = write_lost(r);
	if (!err)
		err = perf_writer__set_feature(r->w, PERF_FEAT_SAMPLE_TIME, times, sizeof(times));
	if (!err)
		err = write_offcpu_feature(r);
	if (!err)
		err = dso_hits__build_id_feature(r->hits, &bid, &bidlen);
	if (!err && bidlen)
		err = perf_writer__set_feature(r->w, PERF_FEAT_BUILD_ID, bid, bidlen);
	free(bid);
	if (!err)
		err = perf_writer__finish(r->w);
	return err;
}

/*
 * The waits still in progress end now, at the stop. Out of memory fails
 * the recording; any other failure leaves them out, said.
 */
static int stop_waits(struct recorder *r)
{
	int err = offcpu_bpf__stop(r->bpf, r->m);

	if (err && err != -ENOMEM) {
		recorder__clear_status(r);
		msg__say(r->ms, MSG_WARNING, "cannot end the waits in progress at the stop: %s; "
			 "they are left out", strerror(-err));
		err = 0;
	}
	return err;
}

int recorder__finish(struct recorder *r, int loop_err)
{
	int err = loop_err;

	if (r->have_child && !r->child_done) {
		/* we were told to stop: so is the command, as perf does */
		kill(r->wl.pid, SIGTERM);
		recorder__reap_child(r, true);
	}
	cpu_events__disable(r->cpu);
	/* the recording stops here: waits still in progress end now */
	if (!err)
		err = stop_waits(r);
	/* the programs are detached: a failure of the unwinder from now on loses nothing */
	recorder__check_unwinder(r);
	if (!err)
		err = recorder__round_trip(r, true, true);
	unwind_loader__stop(r->unwind);
	if (!err)
		err = write_end(r);
	if (err) {
		recorder__clear_status(r);
		msg__say(r->ms, MSG_ERROR, "writing %s failed: %s; what was written stays readable",
			 r->o->output, strerror(-err));
		return err;
	}
	if (!r->o->quiet)
		recorder__print_summary(r);
	if (r->unwind_err) {
		/* the file is whole, its user stacks are not: the exit status says so */
		msg__say(r->ms, MSG_ERROR, "the recording is incomplete: the DWARF unwinder's loader "
			 "failed %.1f s in (%s), user stacks since may miss callers",
			 r->unwind_err_at / 1e9, strerror(-r->unwind_err));
		return r->unwind_err;
	}
	return 0;
}
