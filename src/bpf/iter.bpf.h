/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The task iterators, included by offcpu.bpf.c after its programs, whose
 * state (task storage, `starts`, the accumulators) and steps
 * (interval_unclosed, sum_add, stop_task) they use: the targets' names at
 * the start (offcpu_names), the waits in progress at the start and the
 * stop of a recording (offcpu_start, offcpu_stop; "waits in progress" in
 * offcpu.bpf.c says how the two halves meet), each run once, and the flush
 * of the tasks' accumulators at every drain (offcpu_flush).
 * Run from user space (record/offcpu_bpf.c), never on the hot path.
 */
#ifndef OFFCPU_ITER_BPF_H
#define OFFCPU_ITER_BPF_H

/*
 * Is p a target? wanted(), for a task that is not current (the iterators);
 * one exiting too.
 */
static __always_inline bool wanted_task(struct task_struct *p)
{
	__u32 tgid = p->tgid, tid = p->pid;

	if (!tid || !thread_kind_wanted(p->flags))
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
 * p's user stack into stack[] by its frame pointers (its number of frames),
 * as ustack_fp, for a task that is not current: its registers as saved at
 * its entry to the kernel, its memory read through its own mm (a sleepable
 * program only).
 */
static __always_inline __u32 ustack_walk_task(struct task_struct *p, __u64 *stack)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(p);
	struct offcpu_uframe f;
	__u64 fp;
	__u32 i;

	if (!regs || BPF_CORE_READ(regs, cs) != OFFCPU_USER_CS) {
		drop(OFFCPU_DROP_USTACK);
		return 0;
	}
	stack[0] = BPF_CORE_READ(regs, ip);
	fp = BPF_CORE_READ(regs, bp);
	for (i = 1; i < OFFCPU_MAX_STACK; i++) {
		if (fp < 4096 || fp > OFFCPU_USER_MAX - sizeof(f))
			break;
		if (bpf_copy_from_user_task(&f, sizeof(f), (const void *)fp, p, 0))
			break;
		if (f.ret < 4096)
			break;
		stack[i] = f.ret;
		fp = f.next;
	}
	return i;
}

/*
 * take_stacks for a task p that is not current (its stacks sent, as ids).
 * defer > 0: its user stack was kept raw (iter_defer), for user space to
 * unwind: its ip and the copy's mark stand for it.
 */
static __always_inline void take_task_stacks(struct task_struct *p, struct offcpu_who *who,
					     __s64 defer)
{
	__u32 slot = OFFCPU_HOOK_ITER;
	struct offcpu_stack *st = bpf_map_lookup_elem(&stack_scratch, &slot);
	long n;

	who->cgroup = BPF_CORE_READ(p, cgroups, dfl_cgrp, kn, id);
	who->ustack = 0;
	who->kstack = 0;
	if (!st)
		return;
	if (defer > 0) {
		st->frames[0] = BPF_CORE_READ((struct pt_regs *)bpf_task_pt_regs(p), ip);
		st->frames[1] = OFFCPU_USTACK_DEFERRED | (defer & 0xffffffffffffULL);
		st->nr = 2;
		who->ustack = stack_announce(st);
	} else if (want_ustack && p->mm) {
		st->nr = ustack_walk_task(p, st->frames);
		who->ustack = stack_announce(st);
	}
	if (want_kstack) {
		n = bpf_get_task_stack(p, st->frames, sizeof(st->frames), 0);
		if (n > 0) {
			st->nr = n / 8;
			who->kstack = stack_announce(st);
		} else {
			drop(OFFCPU_DROP_KSTACK);
		}
	}
}

/*
 * --call-graph dwarf: the user stack of p, a task waiting at the start,
 * kept raw for user space (OFFCPU_ITER_STACK: its registers and the top
 * of its stack, read through its own mm, faulted in if need be), as the
 * switch program keeps a stack it cannot finish (unw_defer): the id of
 * the copy, 0 when p has no user registers to start from, -1 when the
 * record did not fit in the iterator's buffer (the task is then shown
 * again, with an empty buffer: nothing else may have been done for it).
 */
static __always_inline __s64 iter_defer(struct seq_file *seq, struct task_struct *p)
{
	__u32 slot = UNW_SCRATCH__NR, len = 0, n;
	struct unw_defer_buf *b = bpf_map_lookup_elem(&unw_defer_bufs, &slot);
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(p);
	struct offcpu_unw_deferred *d;
	struct offcpu_iter_hdr *h;
	__u64 addr;

	if (!b || !regs || BPF_CORE_READ(regs, cs) != OFFCPU_USER_CS)
		return 0;
	d = &b->d;
	d->pid = p->tgid;
	d->tid = p->pid;
	addr = BPF_CORE_READ(regs, sp);
	unw_defer_regs(d, regs, BPF_CORE_READ(regs, ip), addr, BPF_CORE_READ(regs, bp));
	d->flags |= OFFCPU_UNW_DEFER_START;
	for (int i = 0; i < UNW_DEFER_PAGES; i++) {
		n = 4096 - (addr & 4095);
		if (len >= OFFCPU_UNW_DEFER_STACK || n > 4096 ||
		    bpf_copy_from_user_task(&d->stack[len & (OFFCPU_UNW_DEFER_STACK - 1)], n,
					    (const void *)addr, p, 0))
			break;
		len += n;
		addr += n;
	}
	if (len > OFFCPU_UNW_DEFER_STACK)
		len = OFFCPU_UNW_DEFER_STACK;
	if (!len)
		return 0;
	d->len = len;
	/* the record's header in the word before d, kept for it */
	h = (struct offcpu_iter_hdr *)&b->hdr;
	h->kind = OFFCPU_ITER_STACK;
	h->size = sizeof(*h) + OFFCPU_UNW_DEFERRED_HDR + len;
	if (bpf_seq_write(seq, h, sizeof(*h) + OFFCPU_UNW_DEFERRED_HDR + len))
		return -1;
	return d->id;
}

/*
 * ---- waits in progress: the iterators (see "waits in progress" in offcpu.bpf.c) ----
 *
 * Both run once, from user space, over every task. The first call of each
 * notes the time (start or stop) on the run-queue clock of the CPU it runs
 * on (user space has just brought that clock up to date) and on the
 * samples' clock; the stop's, once the recording is stopping, is noted
 * first by the switch that comes first (stop_switch), or an exit.
 */
static __always_inline void note_time(__u64 *clk, __u64 *mono)
{
	if (*clk)
		return;
	*clk = task_rq_clock(bpf_get_current_task_btf());
	*mono = bpf_ktime_get_ns();
}

/*
 * The targets' names at the start (OFFCPU_ITER_SEEN), exiting ones too: a
 * thread sampled since the attach and gone before /proc is read is named
 * from here. A pass of its own, run first, over in tens of microseconds
 * where offcpu_start's, reading stacks, takes milliseconds: the threads
 * that end before it reaches them are that many fewer.
 */
SEC("iter/task")
int offcpu_names(struct bpf_iter__task *ctx)
{
	struct task_struct *p = ctx->task;
	struct offcpu_seen_task seen;

	if (!p || !wanted_task(p))
		return 0;
	seen.h.kind = OFFCPU_ITER_SEEN;
	seen.h.size = sizeof(seen);
	seen.pid = p->tgid;
	seen.tid = p->pid;
	__builtin_memcpy(seen.comm, p->comm, sizeof(seen.comm));
	bpf_seq_write(ctx->meta->seq, &seen, sizeof(seen));
	return 0;
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
	struct offcpu_start *st;
	struct offcpu_task *t;
	__u32 state = 0, kind = 0;
	__u64 pcount = 0;
	__s64 defer = 0;

	note_time(&rec_start, &rec_start_mono);
	if (!p || !wanted_task(p))
		return 0;
	/* what it is, first: nothing is changed before its records are written */
	if (!p->exit_state && !p->on_cpu && !bpf_task_storage_get(&tasks, p, 0, 0)) {
		pcount = p->sched_info.pcount; /* before the state: a later wakeup changes it */
		state = p->__state & (OFFCPU_STATE_S | OFFCPU_STATE_D);
		if (state & state_mask)
			kind = OFFCPU_START_SLEEP; /* the state decides, as at switch-out */
		else if (want_sched_delay)
			kind = p->__state || (p->on_rq && p->se.sched_delayed) ? OFFCPU_START_OTHER
									       : p->on_rq ? OFFCPU_START_QUEUED : 0;
	}
	if (kind && want_ustack && unwind_dwarf && p->mm) {
		defer = iter_defer(ctx->meta->seq, p);
		if (defer < 0)
			return 0; /* shown again with room: see iter_defer */
	}
	if (!kind)
		return 0;
	st = task_storage_make(&starts, p);
	if (!st) {
		drop(OFFCPU_DROP_TASK_STORAGE);
		return 0;
	}
	st->kind = kind;
	st->pcount = pcount;
	st->run_delay = p->sched_info.run_delay;
	who_init(&st->who, p);
	st->state = state ? state : OFFCPU_STATE_OTHER;
	if (kind == OFFCPU_START_QUEUED)
		st->state = 0;
	take_task_stacks(p, &st->who, defer);
	/*
	 * Storage made meanwhile by p's switch-out (found here, or this
	 * creation fails, having lost the race to make it) is not the
	 * iterator's: p ran, its wait is not in progress since the start.
	 */
	t = bpf_task_storage_get(&tasks, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t) {
		if (!bpf_task_storage_get(&tasks, p, 0, 0))
			drop(OFFCPU_DROP_TASK_STORAGE);
		return 0;
	}
	if (t->who.tid || p->sched_info.pcount != pcount)
		return 0;
	who_init(&t->who, p);
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
 * The stop: every wait still open ends at the stop and is written to user
 * space (bpf_seq_write: as many as there are, none lost; stop_task), while
 * the programs, stopping, note what it needs (stop_switch) and a task that
 * exits meanwhile has its waits ended in its exit. A wait whose task ran
 * since (its switch-in unseen) is ended as interval_unclosed does, on the
 * ring buffer.
 */
SEC("iter/task")
int offcpu_stop(struct bpf_iter__task *ctx)
{
	struct task_struct *p = ctx->task;
	struct offcpu_run r = {};

	note_time(&rec_stop, &rec_stop_mono);
	if (!p)
		return 0;
	r.now = rec_stop_mono;
	r.clk = rec_stop;
	r.half = sum_active & 1;
	r.cpu = bpf_get_smp_processor_id();
	r.direct = true;
	stop_task(ctx->meta->seq, p, &r);
	return 0;
}

/*
 * A drain's flush, run by user space after the grace period that follows
 * the switch of halves (or, at the stop, after the programs stopped): the
 * accumulators of the half drained (flush_half; both when stopped) go to
 * that half's sum map, which user space reads next. The exchange takes
 * each from its task's exit, which may flush it too. Writes nothing to
 * user space: shown again (bpf_seq_read's retry), it finds them empty.
 */
SEC("iter/task")
int offcpu_flush(struct bpf_iter__task *ctx)
{
	struct task_struct *p = ctx->task;
	struct offcpu_task *t;
	__u32 half = flush_half & 1;

	if (!p)
		return 0;
	t = bpf_task_storage_get(&tasks, p, 0, 0);
	if (!t)
		return 0;
	for (__u32 i = 0; i < 4; i++) {
		struct offcpu_acc *a = &t->acc[i];
		struct offcpu_sum v;
		__u64 n;

		if (!a->v.count || (!stopped && (i & 1) != half))
			continue;
		n = __sync_lock_test_and_set(&a->v.count, 0);
		if (!n)
			continue;
		v = a->v;
		v.count = n;
		sum_add(half, &a->k, &v);
	}
	return 0;
}

#endif
