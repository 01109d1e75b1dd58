// SPDX-License-Identifier: GPL-2.0-only
/*
 * What the user sees of a recording, said to the recorder's sink: the
 * status line while it runs (MSG_STATUS: on a terminal, without -q) and
 * the summary at its end (MSG_SUMMARY: a line each, framed by the sink).
 */
#include <stdio.h>
#include <string.h>

#include "perfdata/perf_writer.h"
#include "record/recorder_int.h"
#include "util/clock.h"

/*
 * Losses so far, as the status line counts them, in *total: 0, or the BPF
 * counters' read error (they count as 0 then: what is lost is not known).
 */
static int total_drops(struct recorder *r, uint64_t *total)
{
	uint64_t drops[OFFCPU_DROP__NR], sum = 0;
	int err = offcpu_bpf__drops(r->bpf, drops);

	for (int i = 0; i < OFFCPU_DROP__NR; i++)
		if (offcpu_drop_loss(i) != OFFCPU_LOSS_PART)
			sum += drops[i];
	*total = sum + cpu_events__lost(r->cpu) + r->nr_sideband_nomem;
	return err;
}

void recorder__show_status(struct recorder *r, uint64_t start)
{
	uint64_t lost;
	uint64_t samples = offcpu_bpf__samples(r->bpf) + offcpu_bpf__wakeup_samples(r->bpf) +
			   offcpu_bpf__delay_samples(r->bpf) + cpu_events__samples(r->cpu) +
			   offcpu_bpf__cpu_samples(r->bpf);
	char lost_s[32] = "? lost"; /* the counters unreadable: not "0 lost" */

	if (!total_drops(r, &lost))
		snprintf(lost_s, sizeof(lost_s), "%llu lost", (unsigned long long)lost);
	msg__say(r->ms, MSG_STATUS, "%.1f s, %llu samples, %s, %.2f MB", (mono_ns() - start) / 1e9,
		 (unsigned long long)samples, lost_s, perf_writer__data_size(r->w) / 1048576.0);
}

void recorder__clear_status(struct recorder *r)
{
	if (r->status_line)
		msg__say(r->ms, MSG_STATUS, "%s", "");
}

/* -m/-M: how many waits were left out, and why. */
static void print_filtered(const struct recorder *r, const uint64_t ks[OFFCPU_STAT__NR])
{
	const struct record_opts *o = r->o;
	struct msg_line l = { .len = 0 };

	if (!o->min_ns && o->max_ns == UINT64_MAX)
		return;
	msg_line__add(&l, "%llu off-CPU waits left out: ", (unsigned long long)ks[OFFCPU_STAT_FILTERED]);
	if (o->min_ns)
		msg_line__add(&l, "shorter than %llu us (-m)%s", (unsigned long long)(o->min_ns / 1000),
			      o->max_ns != UINT64_MAX ? " or " : "");
	if (o->max_ns != UINT64_MAX)
		msg_line__add(&l, "longer than %llu us (-M)", (unsigned long long)(o->max_ns / 1000));
	msg__say(r->ms, MSG_SUMMARY, "%s", l.text);
}

/* -v: the facts of how the recording went, before the unwinder's lines. */
static void print_verbose(const struct recorder *r, const uint64_t ks[OFFCPU_STAT__NR])
{
	uint64_t start = offcpu_bpf__in_progress(r->bpf, OFFCPU_IN_PROGRESS_OFFCPU_START);
	uint64_t stop = offcpu_bpf__in_progress(r->bpf, OFFCPU_IN_PROGRESS_OFFCPU_STOP);

	if (ks[OFFCPU_STAT_KSTACK_CACHED] || ks[OFFCPU_STAT_KSTACK_CHECKED])
		msg__say(r->ms, MSG_SUMMARY, "kernel stacks: %llu walked, %llu from the cache of "
			 "blocking points; of %llu checked by a walk, %llu differed (%llu keys no longer "
			 "cached)",
			 (unsigned long long)ks[OFFCPU_STAT_KSTACK_WALKED],
			 (unsigned long long)ks[OFFCPU_STAT_KSTACK_CACHED],
			 (unsigned long long)ks[OFFCPU_STAT_KSTACK_CHECKED],
			 (unsigned long long)ks[OFFCPU_STAT_KSTACK_STALE],
			 (unsigned long long)ks[OFFCPU_STAT_KSTACK_EVICTED]);
	if (r->nr_ustack_cut)
		msg__say(r->ms, MSG_SUMMARY, "%llu user stacks cut at a frame outside the process's "
			 "executable mappings (a frame-pointer walk through code built without frame "
			 "pointers)", (unsigned long long)r->nr_ustack_cut);
	if (start || stop)
		msg__say(r->ms, MSG_SUMMARY, "waits in progress, counted from the start or up to the "
			 "stop only: %llu at the start, %llu at the stop",
			 (unsigned long long)start, (unsigned long long)stop);
}

/*
 * The lost line: every loss by name, or that nothing was lost; for
 * intervals whose end was not seen, why (ks: the BPF side's stats).
 */
static void print_lost(const struct recorder *r, const uint64_t *ks)
{
	uint64_t lost = cpu_events__lost(r->cpu);
	struct msg_line l = { .len = 0 };
	uint64_t unnamed = thread_names__unnamed(r->names);
	bool any = lost || r->nr_sideband_nomem || unnamed;

	if (r->drops_err) {
		msg__say(r->ms, MSG_SUMMARY, "lost: unknown (the drop counters could not be read); "
			 "cpu samples (perf ring full) %llu", (unsigned long long)lost);
		return;
	}
	for (int i = 0; i < OFFCPU_DROP__NR; i++)
		any |= r->drops[i] != 0;
	if (!any) {
		msg__say(r->ms, MSG_SUMMARY, "nothing lost");
		return;
	}
	msg_line__add(&l, "lost:");
	for (int i = 0; i < OFFCPU_DROP__NR; i++) {
		if (!r->drops[i])
			continue;
		msg_line__add(&l, " %s %llu", offcpu_drop_name(i), (unsigned long long)r->drops[i]);
		if (i == OFFCPU_DROP_UNCLOSED &&
		    (ks[OFFCPU_STAT_UNCLOSED_RAN_AGAIN] || ks[OFFCPU_STAT_UNCLOSED_CLOCK]))
			msg_line__add(&l, " (%llu switched in again unseen, the scheduler keeping only "
				      "the last; %llu with the scheduler's switch-in time before the "
				      "switch-out, two CPUs' clocks apart)",
				      (unsigned long long)ks[OFFCPU_STAT_UNCLOSED_RAN_AGAIN],
				      (unsigned long long)ks[OFFCPU_STAT_UNCLOSED_CLOCK]);
		msg_line__add(&l, ";");
	}
	if (lost)
		msg_line__add(&l, " cpu samples (perf ring full) %llu;", (unsigned long long)lost);
	if (r->nr_sideband_nomem)
		msg_line__add(&l, " children's mappings and names (out of memory) %llu;",
			      (unsigned long long)r->nr_sideband_nomem);
	if (unnamed)
		msg_line__add(&l, " names of threads (gone before they were read) %llu;",
			      (unsigned long long)unnamed);
	msg__say(r->ms, MSG_SUMMARY, "%s", l.text);
}

/*
 * The end of a recording: what was written, what -m/-M left out, what was
 * lost, in at most three lines; the lost line says every loss. -v adds the
 * facts of how the recording went (kernel stack cache, cut user stacks,
 * waits in progress, missed switch-ins).
 */
void recorder__print_summary(struct recorder *r)
{
	uint64_t ks[OFFCPU_STAT__NR];

	recorder__clear_status(r);
	msg__say(r->ms, MSG_SUMMARY, "Captured and wrote %.3f MB %s (%llu samples)",
		 perf_writer__data_size(r->w) / 1048576.0, r->o->output,
		 (unsigned long long)r->nr_written_samples);
	if (offcpu_bpf__stats(r->bpf, ks))
		memset(ks, 0, sizeof(ks));
	print_filtered(r, ks);
	if (r->o->verbose)
		print_verbose(r, ks);
	if (r->unwind)
		unwind_loader__summary(r->unwind, r->bpf, r->o->verbose, r->ms);
	if (r->py)
		pyframes__summary(r->py, r->o->verbose, r->ms);
	if (r->o->verbose && (ks[OFFCPU_STAT_CLOSED_AT_WAKEUP] || ks[OFFCPU_STAT_CLOSED_BY_SCHED_INFO]))
		msg__say(r->ms, MSG_SUMMARY, "%llu intervals ended at their wakeup, their switch-in "
			 "unseen (the kernel skipped offcpu's tracepoint); %llu of them timed by "
			 "the scheduler's run-delay accounting",
			 (unsigned long long)(ks[OFFCPU_STAT_CLOSED_AT_WAKEUP] +
					      ks[OFFCPU_STAT_CLOSED_BY_SCHED_INFO]),
			 (unsigned long long)ks[OFFCPU_STAT_CLOSED_BY_SCHED_INFO]);
	print_lost(r, ks);
}
