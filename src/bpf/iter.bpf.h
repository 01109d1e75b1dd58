/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The waits in progress at the start and the stop of a recording: the
 * task iterators offcpu_start and offcpu_stop and their helpers, included
 * by offcpu.bpf.c after the switch path, whose state (task storage,
 * `starts`, interval_unclosed) they read; "waits in progress" there says
 * how the two halves meet. Run once each from user space
 * (record/offcpu_bpf.c, offcpu_bpf__start and __stop), never on the hot
 * path.
 */
#ifndef OFFCPU_ITER_BPF_H
#define OFFCPU_ITER_BPF_H

/* Is p a target? wanted(), for a task that is not current (the iterators). */
static __always_inline bool wanted_task(struct task_struct *p)
{
	__u32 tgid = p->tgid, tid = p->pid;

	if (!tid || p->exit_state || !thread_kind_wanted(p->flags))
		return false;
	if (filter_cpu) {
		__u32 cpu = BPF_CORE_READ(p, thread_info.cpu);
		__u8 *ok = bpf_map_lookup_elem(&cpus, &cpu);

		if (!ok || !*ok)
			return false;
	}
	if ((filter_tgid || filter_tid) && !(filter_tgid && bpf_map_lookup_elem(&tgids, &tgid)) &&
	    !(filter_tid && bpf_map_lookup_elem(&tids, &tid)))
		return false;
	if (filter_cgroup) {
		struct cgroup *cg = BPF_CORE_READ(p, cgroups, dfl_cgrp), *anc;
		int level = BPF_CORE_READ(cg, level);

		for (int i = 0; i < 64; i++) {
			if (i > level)
				return false;
			if (bpf_core_read(&anc, sizeof(anc), &cg->ancestors[i]))
				return false;
			if (BPF_CORE_READ(anc, kn, id) == cgroup_id)
				break;
		}
	}
	return true;
}

/*
 * p's user stack into s by its frame pointers, as ustack_walk, for a task
 * that is not current: its registers as saved at its entry to the kernel,
 * its memory read through its own mm (a sleepable program only).
 */
static __always_inline void ustack_walk_task(struct task_struct *p, struct offcpu_sample *s)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(p);
	struct offcpu_uframe f;
	__u64 fp;
	__u32 i;

	if (!regs || BPF_CORE_READ(regs, cs) != OFFCPU_USER_CS) {
		drop(OFFCPU_DROP_USTACK);
		return;
	}
	s->stack[0] = BPF_CORE_READ(regs, ip);
	fp = BPF_CORE_READ(regs, bp);
	for (i = 1; i < OFFCPU_MAX_STACK; i++) {
		if (fp < 4096 || fp > OFFCPU_USER_MAX - sizeof(f))
			break;
		if (bpf_copy_from_user_task(&f, sizeof(f), (const void *)fp, p, 0))
			break;
		if (f.ret < 4096)
			break;
		s->stack[i] = f.ret;
		fp = f.next;
	}
	s->ulen = i;
}

/*
 * ---- waits in progress: the iterators (see "waits in progress" in offcpu.bpf.c) ----
 *
 * Both run once, from user space, over every task. The first call of each
 * notes the time (start or stop) on the run-queue clock of the CPU it runs
 * on (user space has just brought that clock up to date) and on the
 * samples' clock.
 */
static __always_inline void note_time(__u64 *clk, __u64 *mono)
{
	if (*clk)
		return;
	*clk = task_rq_clock(bpf_get_current_task_btf());
	*mono = bpf_ktime_get_ns();
}

/*
 * The start: every target waiting (asleep, or with --sched-delay runnable
 * or asleep in another state) that the programs have not seen switch out
 * since they were attached gets its stacks noted in `starts` and its task
 * storage marked. Sleepable: the user stack of another task is read from
 * its memory with bpf_copy_from_user_task. Every target is also written to
 * user space with its name (struct offcpu_seen_task).
 */
SEC("iter.s/task")
int offcpu_start(struct bpf_iter__task *ctx)
{
	struct task_struct *p = ctx->task;
	struct offcpu_seen_task seen;
	struct offcpu_start *st;
	struct offcpu_task *t;
	__u32 state, kind = 0;
	__u64 pcount;
	long n;

	note_time(&rec_start, &rec_start_mono);
	if (!p || !wanted_task(p))
		return 0;
	seen.pid = p->tgid;
	seen.tid = p->pid;
	__builtin_memcpy(seen.comm, p->comm, sizeof(seen.comm));
	bpf_seq_write(ctx->meta->seq, &seen, sizeof(seen));
	if (p->on_cpu || bpf_task_storage_get(&tasks, p, 0, 0))
		return 0;
	pcount = p->sched_info.pcount; /* before the state: a later wakeup changes it */
	state = p->__state & (OFFCPU_STATE_S | OFFCPU_STATE_D);
	if (state & state_mask)
		kind = OFFCPU_START_SLEEP; /* the state decides, as at switch-out */
	else if (want_sched_delay)
		kind = p->__state || (p->on_rq && p->se.sched_delayed) ? OFFCPU_START_OTHER
								       : p->on_rq ? OFFCPU_START_QUEUED : 0;
	if (!kind)
		return 0;
	st = bpf_task_storage_get(&starts, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!st) {
		drop(OFFCPU_DROP_TASK_STORAGE);
		return 0;
	}
	st->kind = kind;
	st->pcount = pcount;
	st->run_delay = p->sched_info.run_delay;
	st->s.pid = p->tgid;
	st->s.tid = p->pid;
	st->s.start_time = p->start_time;
	st->s.state = state ? state : OFFCPU_STATE_OTHER;
	if (kind == OFFCPU_START_QUEUED)
		st->s.state = 0;
	st->s.cgroup = BPF_CORE_READ(p, cgroups, dfl_cgrp, kn, id);
	st->s.ulen = 0;
	st->s.klen = 0;
	if (want_ustack && p->mm)
		ustack_walk_task(p, &st->s);
	if (want_kstack) {
		n = bpf_get_task_stack(p, &st->s.stack[OFFCPU_MAX_STACK], OFFCPU_MAX_STACK * 8, 0);
		if (n > 0)
			st->s.klen = n / 8;
		else
			drop(OFFCPU_DROP_KSTACK);
	}
	t = bpf_task_storage_get(&tasks, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t) {
		drop(OFFCPU_DROP_TASK_STORAGE);
		return 0;
	}
	/*
	 * Publish (an atomic add to 0, a full barrier: st is written
	 * before), then make sure p did not run meanwhile.
	 */
	__sync_fetch_and_add(&t->start_pending, kind);
	if (p->sched_info.pcount != pcount)
		t->start_pending = 0;
	return 0;
}

/*
 * A wait that ran from `from` to `to` (run-queue clock), written at the
 * stop as a direct sample (the samples' time: the stop): to user space
 * through the iterator's seq, or, from the exit program (seq NULL), on the
 * ring buffer.
 */
static __always_inline void stop_emit(struct seq_file *seq, struct task_struct *p,
				      struct offcpu_sample *s, __u32 state, __u64 from, __u64 to)
{
	if (!(state & OFFCPU_SCHED_DELAY) && !block_time_kept(to > from ? to - from : 0))
		return; /* -m/-M, on the part inside the recording */
	s->state = state;
	s->time = rec_stop_mono;
	s->period = to > from ? to - from : 0;
	s->count = 1;
	s->cpu = BPF_CORE_READ(p, thread_info.cpu);
	if (seq)
		bpf_seq_write(seq, s, sizeof(*s));
	else if (bpf_ringbuf_output(&events, s, sizeof(*s), 0))
		drop(OFFCPU_DROP_RINGBUF);
}

/*
 * The stop for one task p (the programs still attached, in stopping mode):
 * every wait still open ends at the stop. A task woken but not yet running
 * ends its off-CPU interval at its wakeup; its wait for a CPU is then the
 * one in progress. A wakeup after the stop was noted at the task's
 * switch-in (stop_wake, see stop_switch). A wait whose task ran since
 * without a switch-in seen is ended as interval_unclosed does, on the ring
 * buffer.
 */
static __always_inline void stop_task(struct seq_file *seq, struct task_struct *p)
{
	struct offcpu_start *st = NULL;
	struct offcpu_delay *d;
	struct offcpu_task *t;
	__u64 pcount, queued, wake;
	__u32 state;

	t = bpf_task_storage_get(&tasks, p, 0, 0);
	if (t && (t->ts_out || t->start_pending) && stop_claim(&tasks, p)) {
		pcount = p->sched_info.pcount;
		/* on a run queue since then (woken or preempted), 0 when not */
		queued = t->stop_wake ? t->stop_wake : p->sched_info.last_queued;
		if (t->start_pending)
			st = bpf_task_storage_get(&starts, p, 0, 0);
		if (!t->stop_wake &&
		    ((t->ts_out && pcount != t->pcount_out) || (st && pcount != st->pcount)))
			interval_unclosed(t, p, rec_stop_mono);
		if (t->start_pending && st) {
			bool woken = queued >= rec_start && queued < rec_stop;

			state = st->s.state;
			if (st->kind == OFFCPU_START_QUEUED) {
				stop_emit(seq, p, &st->s, OFFCPU_SCHED_DELAY | OFFCPU_IN_PROGRESS_START |
						  OFFCPU_IN_PROGRESS_STOP, rec_start, rec_stop);
			} else if (st->kind == OFFCPU_START_SLEEP && !woken) {
				stop_emit(seq, p, &st->s, state | OFFCPU_IN_PROGRESS_START | OFFCPU_IN_PROGRESS_STOP,
					  rec_start, rec_stop);
			} else if (woken) {
				if (st->kind == OFFCPU_START_SLEEP)
					stop_emit(seq, p, &st->s, state | OFFCPU_IN_PROGRESS_START, rec_start, queued);
				if (want_sched_delay)
					stop_emit(seq, p, &st->s, OFFCPU_SCHED_DELAY | OFFCPU_IN_PROGRESS_STOP | state,
						  queued, rec_stop);
			}
		}
		if (t->ts_out) {
			state = t->s.state;
			wake = t->stop_wake ? t->stop_wake : t->ts_wake ? t->ts_wake : queued;
			if (wake >= t->ts_out && wake < rec_stop) {
				stop_emit(seq, p, &t->s, state, t->ts_out, wake);
				if (want_sched_delay)
					stop_emit(seq, p, &t->s, OFFCPU_SCHED_DELAY | OFFCPU_IN_PROGRESS_STOP | state,
						  wake, rec_stop);
			} else {
				stop_emit(seq, p, &t->s, state | OFFCPU_IN_PROGRESS_STOP, t->ts_out, rec_stop);
			}
		}
	}
	if (want_sched_delay) {
		d = bpf_task_storage_get(&delays, p, 0, 0);
		/* a wait queued after the stop (its wakeup program still runs) is outside */
		if (d && d->ts_queued && d->ts_queued < rec_stop && stop_claim(&delays, p))
			stop_emit(seq, p, &d->s, OFFCPU_SCHED_DELAY | OFFCPU_IN_PROGRESS_STOP | d->s.state,
				  d->ts_queued, rec_stop);
	}
}

/*
 * The stop: every wait still open ends at the stop and is written to user
 * space (bpf_seq_write: as many as there are, none lost), while the
 * programs, in stopping mode, note what the iterator needs (stop_switch)
 * and the exit program ends the waits of a task that exits meanwhile.
 */
SEC("iter/task")
int offcpu_stop(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *p = ctx->task;

	note_time(&rec_stop, &rec_stop_mono);
	if (p)
		stop_task(seq, p);
	return 0;
}

#endif
