/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * record --chains: every wait of every thread of the machine, one switch
 * record each, for the analysis of wait chains (src/profile/chains.h).
 * The waker of a target is rarely a target: a chain goes through threads
 * of other processes and kernel threads (a disk's journal thread), so
 * these records are kept for all, compactly (88 bytes on the ring, 80 in
 * the file). Stacks are the switch program's: ids, each stack sent once
 * (stack_announce), taken by its global functions (stack_user: DWARF
 * where the process has tables, else frame pointers; stack_kernel: the
 * cache by blocking point). User space turns the ids into the file's
 * stack records, each once.
 *
 *   switch-out (prev):  its time, state (S, D; R when preempted: the
 *                       thread that took its CPU), the stacks it left with
 *                       (a target's: those the switch program just took);
 *   sched_waking (p):   the wakeup's time, the waker (current) and its
 *                       stacks (a target's waker: those waker_note took);
 *   wakeup_new (p):     a new thread: created now by current;
 *   switch-in (next):   the switch record, with the thread's count of
 *                       switch-outs (the reader finds lost records by it).
 *
 * Included by offcpu.bpf.c, whose programs call it at four places:
 * offcpu_switch (chain_switch, inside its run), offcpu_waking
 * (chain_waking), offcpu_wakeup_new (chain_new), offcpu_cpu_sample
 * (want_chains keeps the CPU samples of threads outside the targets).
 */
#ifndef OFFCPU_CHAINS_BPF_H
#define OFFCPU_CHAINS_BPF_H

#include "chains.h"

const volatile bool want_chains = false; /* --chains */

/* A thread's wait while it lasts. */
struct offcpu_chain_task {
	__u64 out;        /* switch-out (0: before the programs saw it) */
	__u64 wake;       /* sched_waking's time, 0 until woken */
	__u64 delay_out;  /* sched_info.run_delay at the switch-out */
	__u64 ustack;     /* the stacks it left with (ids) */
	__u64 kstack;
	__u64 wustack;    /* its waker's */
	__u64 wkstack;
	__u32 pcount_out; /* sched_info.pcount (switch-ins) at the switch-out */
	__u32 nsw_out;    /* nvcsw + nivcsw (switch-outs, this one included) */
	__u32 waker;      /* tid of the waker, or of the thread that preempted it */
	__u32 wpid;       /* and its thread group */
	__u8 state;       /* 'S', 'D', 'R', 'N', 'T' */
	__u8 pending;     /* a switch record is due at its switch-in */
	__u16 flags;      /* OFFCPU_CHAIN_* of that record */
	__u32 lost;       /* a record of it was lost: the next one says so (OFFCPU_CHAIN_GAP) */
	/*
	 * A waking that came before the switch-out was seen (chain_waking):
	 * the waker, its stacks, and e_tag, sched_info.pcount + 1 of the run
	 * it came in (0: none), written last. chain_out never writes them: a
	 * waking on another CPU may be writing them meanwhile.
	 */
	__u64 e_time;
	__u64 e_ustack;
	__u64 e_kstack;
	__u32 e_tid;
	__u32 e_pid;
	__u32 e_tag;
	struct offcpu_kmemo kmemo; /* its last kernel stack at a switch-out (stack_kernel) */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct offcpu_chain_task);
} chain_tasks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096); /* resized by user space with --chains */
} chain_events SEC(".maps");

/*
 * Per CPU: the kernel-stack memo of wakers and makers (stack_kernel), [0]
 * at sched_waking, [1] at wakeup_new. Both run with interrupts off (the
 * wakee's pi_lock), so they never interleave on a CPU.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct offcpu_kmemo);
} chain_kmemo SEC(".maps");

/* Ring flags: wake the reader when a quarter is full, else let it poll. */
static __always_inline __u64 chain_ring_flags(void)
{
	return bpf_ringbuf_query(&chain_events, BPF_RB_AVAIL_DATA) >
			       bpf_ringbuf_query(&chain_events, BPF_RB_RING_SIZE) / 4
		       ? BPF_RB_FORCE_WAKEUP
		       : BPF_RB_NO_WAKEUP;
}

/*
 * current's stacks at hook (kernel memo m) as ids. wakeup_new takes the
 * CPU sample's hook: its kernel stacks are walked (no calibration there),
 * and user space cuts them at wake_up_new_task.
 */
static __always_inline void chain_stacks(void *ctx, struct task_struct *cur, __u32 hook,
					 struct offcpu_kmemo *m, __u64 *ustack, __u64 *kstack)
{
	__u64 u = want_ustack && cur->mm ? stack_user(ctx, hook, 0, 0) : 0;

	*ustack = u;
	*kstack = want_kstack && m ? stack_kernel(ctx, hook, u, m) : 0;
}

static __always_inline void chain_emit(struct task_struct *p, struct offcpu_chain_task *ct,
				       __u64 in, __u64 wake, __u16 flags);

/*
 * OFFCPU_CHAIN_WAKE_UNSEEN for a sleep (S, D) whose sched_waking the
 * program did not see: the kernel hid it (an interrupt's wakeup while a
 * hidden agent's thread was current, or the agent's own): its waker is
 * not known, and the reader says so rather than "no waker".
 */
static __always_inline __u16 chain_unseen(const struct offcpu_chain_task *ct)
{
	return (ct->state == 'S' || ct->state == 'D') && !ct->wake ? OFFCPU_CHAIN_WAKE_UNSEEN : 0;
}

/*
 * A sleep (S, D) of ct, queued again at queued (the samples' clock) with no
 * waking seen since its switch-out: when the waking noted before that
 * switch-out (e_*) was the sleep's (woken_before_out), it is copied as the
 * sleep's waker; else the waking stays unseen.
 */
static __always_inline void chain_early(struct offcpu_chain_task *ct, __u64 queued)
{
	if (ct->wake || (ct->state != 'S' && ct->state != 'D') ||
	    !woken_before_out(ct->e_tag, ct->pcount_out, ct->out, queued))
		return;
	ct->wake = ct->e_time; /* before out: chain_emit makes it out */
	ct->waker = ct->e_tid;
	ct->wpid = ct->e_pid;
	ct->wustack = ct->e_ustack;
	ct->wkstack = ct->e_kstack;
	stat(OFFCPU_STAT_CHAIN_WOKEN_EARLY);
}

/*
 * prev runs, but its last wait's switch-in was never seen (the kernel hides
 * a tracepoint hit at times: while another program attaches, or while a
 * hidden agent's thread is current): when it was switched in once since,
 * that switch-in and its wakeup are in sched_info (on the run queue's
 * clock, r->clk): the record is written from there. Else it is not: its
 * reader finds the gap in the switch count.
 */
static __always_inline void chain_repair(struct task_struct *prev, struct offcpu_chain_task *ct,
					 const struct offcpu_run *r)
{
	__u64 arrival, waited, in, wake, now = r->now, clk = r->clk;

	if (!bpf_core_field_exists(prev->sched_info.last_arrival) ||
	    prev->sched_info.pcount != ct->pcount_out + 1 || prev->sched_info.run_delay < ct->delay_out)
		return;
	arrival = prev->sched_info.last_arrival;
	waited = prev->sched_info.run_delay - ct->delay_out;
	if (arrival > clk || clk - arrival > now || arrival - waited > arrival)
		return;
	in = now - (clk - arrival);
	chain_early(ct, in - waited);
	wake = ct->state == 'R' || ct->state == 'N' ? ct->out : ct->wake ? ct->wake : in - waited;
	if (in < ct->out || wake > in)
		return;
	chain_emit(prev, ct, in, wake, OFFCPU_CHAIN_REPAIRED | chain_unseen(ct));
}

/*
 * prev leaves the CPU: note its wait. A target whose switch-out the switch
 * program noted with stacks (a measured wait; any with --sched-delay) has
 * them in its storage (t->who): they are not taken twice. Else its
 * storage is returned, for the caller to take its stacks into.
 */
static __always_inline struct offcpu_chain_task *chain_out(const struct offcpu_run *r,
							   struct task_struct *prev,
							   struct task_struct *next,
							   unsigned int prev_state)
{
	__u32 state = prev_state & (OFFCPU_STATE_S | OFFCPU_STATE_D);
	struct offcpu_chain_task *ct;
	struct offcpu_task *t;

	if (!prev->pid || prev->exit_state)
		return NULL;
	ct = task_storage_make(&chain_tasks, prev);
	if (!ct) {
		drop(OFFCPU_DROP_CHAIN_STORAGE);
		return NULL;
	}
	if (ct->pending)
		chain_repair(prev, ct, r);
	if (ct->pending) /* not repaired */
		ct->lost = 1;
	if (bpf_core_field_exists(prev->sched_info.pcount)) {
		ct->pcount_out = prev->sched_info.pcount;
		ct->delay_out = prev->sched_info.run_delay;
	}
	ct->nsw_out = prev->nvcsw + prev->nivcsw;
	ct->out = r->now;
	ct->wake = 0;
	ct->waker = 0;
	ct->wpid = 0;
	ct->wustack = 0;
	ct->wkstack = 0;
	ct->state = state & OFFCPU_STATE_D ? 'D' : state ? 'S' : prev_state ? 'T' : 'R';
	if (!prev_state) { /* preempted: who took the CPU */
		ct->waker = next->pid;
		ct->wpid = next->tgid;
	}
	ct->flags = thread_kind_wanted(prev->flags) && wanted(prev->tgid, prev->pid)
			    ? OFFCPU_CHAIN_TARGET : 0;
	barrier(); /* a waking that sees pending sees the fields reset (x86: stores in order) */
	ct->pending = 1;
	t = bpf_task_storage_get(&tasks, prev, 0, 0);
	/* stopping: switch_out did not run, t->who is an older wait's */
	if (!stopping && t && target_known(t) && ((state & state_mask) || want_sched_delay)) {
		ct->ustack = t->who.ustack; /* switch_out's, just taken */
		ct->kstack = t->who.kstack;
		return NULL;
	}
	return ct;
}

/* The switch record of p's wait (ct), back on a CPU at in, woken at wake. */
static __always_inline void chain_emit(struct task_struct *p, struct offcpu_chain_task *ct,
				       __u64 in, __u64 wake, __u16 flags)
{
	struct offcpu_chain_switch *r;

	ct->pending = 0;
	r = bpf_ringbuf_reserve(&chain_events, sizeof(*r), 0);
	if (!r) {
		drop(OFFCPU_DROP_CHAIN_RINGBUF);
		ct->lost = 1;
		return;
	}
	/* switch times are the run queue's clock made monotonic (now_of), a wakeup's read in full */
	if (wake < ct->out)
		wake = ct->out;
	if (wake > in)
		wake = in;
	r->type = OFFCPU_CHAIN_SWITCH;
	r->pid = p->tgid;
	r->tid = p->pid;
	r->cpu = bpf_get_smp_processor_id();
	r->time = in;
	r->out = ct->out;
	r->wake = wake;
	r->ustack = ct->ustack;
	r->kstack = ct->kstack;
	r->waker_ustack = ct->wustack;
	r->waker_kstack = ct->wkstack;
	r->waker_tid = ct->waker;
	r->seq = ct->nsw_out;
	r->state = ct->state;
	r->pad = 0;
	r->flags = ct->flags | flags | (ct->lost ? OFFCPU_CHAIN_GAP : 0);
	ct->lost = 0;
	r->waker_pid = ct->wpid;
	bpf_ringbuf_submit(r, chain_ring_flags());
}

/*
 * next gets the CPU: its switch record. A thread the programs never saw
 * leave (it waited since before they were attached) has one too, marked
 * OFFCPU_CHAIN_FROM_START.
 */
static __always_inline void chain_in(const struct offcpu_run *r, struct task_struct *next)
{
	struct offcpu_chain_task *ct;
	__u64 wake, queued, now = r->now, clk = r->clk;

	if (!next->pid)
		return;
	ct = bpf_task_storage_get(&chain_tasks, next, 0, 0);
	if (!ct) { /* runnable since before the recording */
		ct = task_storage_make(&chain_tasks, next);
		if (!ct) {
			drop(OFFCPU_DROP_CHAIN_STORAGE);
			return;
		}
		ct->state = 'R';
		ct->flags = OFFCPU_CHAIN_FROM_START;
		ct->pcount_out = next->sched_info.pcount;
		ct->nsw_out = next->nvcsw + next->nivcsw;
		ct->pending = 1;
	}
	if (!ct->pending)
		return;
	wake = ct->wake;
	if (ct->state == 'R' || ct->state == 'N') {
		wake = ct->out;
	} else if (!wake) { /* sched_waking not seen: sched_info's enqueue, as woken_at */
		queued = bpf_core_field_exists(next->sched_info.last_queued) ? next->sched_info.last_queued : 0;
		wake = queued && queued <= clk && clk - queued < now ? now - (clk - queued) : now;
		chain_early(ct, wake);
		if (ct->wake)
			wake = ct->wake;
	}
	chain_emit(next, ct, now, wake, chain_unseen(ct));
}

/*
 * One context switch (offcpu_switch, inside its run r): prev's wait
 * begins, next's ends. Returns prev's storage when its stacks are to be
 * taken (chain_stacks, by the caller: a step of its own, so that this
 * step's frame is not under the stacks' walk).
 */
static __noinline struct offcpu_chain_task *chain_switch(const struct offcpu_run *r,
							 struct task_struct *prev,
							 struct task_struct *next,
							 unsigned int prev_state)
{
	struct offcpu_chain_task *ct = chain_out(r, prev, next, prev_state);

	chain_in(r, next);
	return ct;
}

/*
 * p is woken by current (sched_waking runs in the waker's context: current
 * is the waker, or the task an interrupt came upon; the reader tells the
 * two apart by the stack). noted: the waker's stacks waker_note just took
 * (p a target in a measured wait), else NULL. A thread asleep since before
 * the recording gets its storage here, with its blocking stack.
 */
static __always_inline void chain_waking(void *ctx, struct task_struct *p,
					 const struct offcpu_who *noted)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct offcpu_chain_task *ct;
	__u32 slot = OFFCPU_HOOK_WAKING, zero = 0;
	struct offcpu_stack *st;
	long n;

	if (!p->pid)
		return;
	ct = bpf_task_storage_get(&chain_tasks, p, 0, 0);
	if (!ct) {
		ct = task_storage_make(&chain_tasks, p);
		if (!ct) {
			drop(OFFCPU_DROP_CHAIN_STORAGE);
			return;
		}
		ct->out = 0;
		ct->state = p->__state & OFFCPU_STATE_D ? 'D' : 'S';
		ct->flags = OFFCPU_CHAIN_FROM_START;
		ct->pcount_out = p->sched_info.pcount;
		ct->nsw_out = p->nvcsw + p->nivcsw;
		ct->pending = 1;
		ct->ustack = 0;
		ct->kstack = 0;
		st = bpf_map_lookup_elem(&stack_scratch, &slot);
		if (st && want_kstack) {
			n = bpf_get_task_stack(p, st->frames, sizeof(st->frames), 0);
			st->nr = n > 0 ? (__u64)n / 8 : 0;
			ct->kstack = stack_announce(st);
		}
	}
	if (!ct->pending) {
		/*
		 * Not waiting as far as the programs saw: on its way, its
		 * switch-out not yet traced on its CPU (sched_waking fires once
		 * p's sleeping state matches, and try_to_wake_up waits for that
		 * switch-out after it). Noted apart, for chain_early to take at
		 * the sleep's end; a waking that found p still running is
		 * replaced by the next.
		 */
		if (!bpf_core_field_exists(p->sched_info.pcount))
			return;
		ct->e_time = bpf_ktime_get_ns();
		ct->e_tid = cur->pid;
		ct->e_pid = cur->tgid;
		if (noted) { /* taken once */
			ct->e_ustack = noted->ustack;
			ct->e_kstack = noted->kstack;
		} else {
			chain_stacks(ctx, cur, OFFCPU_HOOK_WAKING,
				     bpf_map_lookup_elem(&chain_kmemo, &zero), &ct->e_ustack,
				     &ct->e_kstack);
		}
		barrier();
		ct->e_tag = p->sched_info.pcount + 1;
		return;
	}
	if (ct->wake || ct->state == 'R')
		return; /* woken already, or not asleep */
	ct->wake = bpf_ktime_get_ns();
	ct->waker = cur->pid;
	ct->wpid = cur->tgid;
	if (noted) {
		ct->wustack = noted->ustack;
		ct->wkstack = noted->kstack;
		return;
	}
	chain_stacks(ctx, cur, OFFCPU_HOOK_WAKING, bpf_map_lookup_elem(&chain_kmemo, &zero),
		     &ct->wustack, &ct->wkstack);
}

/* p is a new thread, made by current: its first wait is for a CPU, woken by its maker. */
static __always_inline void chain_new(void *ctx, struct task_struct *p)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct offcpu_chain_task *ct;
	__u32 one = 1;

	ct = task_storage_make(&chain_tasks, p);
	if (!ct) {
		drop(OFFCPU_DROP_CHAIN_STORAGE);
		return;
	}
	ct->out = bpf_ktime_get_ns();
	ct->wake = ct->out;
	ct->pcount_out = p->sched_info.pcount;
	ct->nsw_out = 0;
	ct->state = 'N';
	ct->flags = 0;
	ct->ustack = 0;
	ct->kstack = 0;
	ct->waker = cur->pid;
	ct->wpid = cur->tgid;
	chain_stacks(ctx, cur, OFFCPU_HOOK_CPU, bpf_map_lookup_elem(&chain_kmemo, &one),
		     &ct->wustack, &ct->wkstack);
	ct->pending = 1;
}

#endif
