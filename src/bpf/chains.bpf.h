/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * record --chains: every wait of every thread of the machine, one switch
 * record each, for the analysis of wait chains (src/profile/chains.h).
 * The waker of a target is rarely a target: a chain goes through threads
 * of other processes and kernel threads (a disk's journal thread), so
 * these records are kept for all, compactly (56 bytes on the ring, 80 in
 * the file), each stack written once (a stack record) and named by its id
 * after that.
 *
 *   switch-out (prev):  its time, state (S, D; R when preempted: the
 *                       thread that took its CPU), the stack it left with;
 *   sched_waking (p):   the wakeup's time, the waker (current) and its stack;
 *   wakeup_new (p):     a new thread: created now by current;
 *   switch-in (next):   the switch record, with sched_info's count of
 *                       switch-ins (the reader finds lost records by it).
 *
 * Included by offcpu.bpf.c, whose programs call it at four places:
 * offcpu_switch (chain_switch), offcpu_waking (chain_waking),
 * offcpu_wakeup_new (chain_new), offcpu_cpu_sample (want_chains keeps the
 * CPU samples of threads outside the targets). A target's stack at its
 * switch-out is the one the switch program took; other stacks are taken
 * here by frame pointers (kernel and user).
 */
#ifndef OFFCPU_CHAINS_BPF_H
#define OFFCPU_CHAINS_BPF_H

#include "chains.h"

const volatile bool want_chains = false; /* --chains */
const volatile __u32 chain_nr_cpus = 1;  /* possible CPUs: stack ids are n * chain_nr_cpus + cpu + 1 */

/* A thread's wait while it lasts. */
struct offcpu_chain_task {
	__u64 out;     /* switch-out (0: before the programs saw it) */
	__u64 wake;    /* sched_waking's time, 0 until woken */
	__u64 delay_out; /* sched_info.run_delay at the switch-out */
	__u32 pcount_out; /* sched_info.pcount (switch-ins) at the switch-out */
	__u32 nsw_out;    /* nvcsw + nivcsw (switch-outs, this one included) */
	__u32 stack;   /* the stack it left with */
	__u32 waker;   /* tid of the waker, or of the thread that preempted it */
	__u32 wstack;  /* the waker's stack */
	__u8 state;    /* 'S', 'D', 'R', 'N', 'T' */
	__u8 pending;  /* a switch record is due at its switch-in */
	__u16 flags;   /* OFFCPU_CHAIN_* of that record */
	__u32 lost;    /* a record of it was lost: the next one says so (OFFCPU_CHAIN_GAP) */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct offcpu_chain_task);
} chain_tasks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct offcpu_chain_key);
	__type(value, __u32);
} chain_ids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096); /* resized by user space with --chains */
} chain_events SEC(".maps");

/*
 * Per CPU: the stack records it wrote. The scheduler's tracepoints run
 * with interrupts off (their programs do not nest on a CPU), so a plain
 * increment is enough; no id is given twice in 2^32 / CPUs of them.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} chain_seq SEC(".maps");

/* Per CPU: [0] a stack being taken, [1] a sleeper's stack at its wakeup. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct offcpu_chain_stack);
} chain_scratch SEC(".maps");

/* Ring flags: wake the reader when a quarter is full, else let it poll. */
static __always_inline __u64 chain_ring_flags(void)
{
	return bpf_ringbuf_query(&chain_events, BPF_RB_AVAIL_DATA) >
			       bpf_ringbuf_query(&chain_events, BPF_RB_RING_SIZE) / 4
		       ? BPF_RB_FORCE_WAKEUP
		       : BPF_RB_NO_WAKEUP;
}

/*
 * current's stacks into r by the kernel's unwinder and by frame pointers.
 * (The DWARF unwinder inlined here a third time in the switch program
 * costs the verifier some 400 000 instructions.)
 */
static __always_inline void chain_take(void *ctx, struct offcpu_chain_stack *r, bool user)
{
	long n;

	r->ulen = 0;
	r->klen = 0;
	if (want_kstack) {
		n = bpf_get_stack(ctx, &r->stack[OFFCPU_MAX_STACK], OFFCPU_MAX_STACK * 8, 0);
		if (n > 0)
			r->klen = n / 8;
	}
	if (want_ustack && user) {
		n = bpf_get_stack(ctx, r->stack, OFFCPU_MAX_STACK * 8, BPF_F_USER_STACK);
		if (n > 0)
			r->ulen = n / 8;
	}
}

/*
 * The id of a stack of thread pid/tid (ulen, klen frames at src, laid out
 * as r->stack, hashing to uhash, khash): the one given before, else a new
 * one, the stack written to the ring (through r) first. 0: no stack, or
 * lost (counted).
 */
static __always_inline __u32 chain_stack_id(struct offcpu_chain_stack *r, const __u64 *src,
					    __u32 ulen, __u32 klen, __u64 uhash, __u64 khash,
					    __u32 pid, __u32 tid, __u32 kind)
{
	struct offcpu_chain_key k = { pid, kind, uhash, khash };
	__u32 *v, id, zero = 0, cpu = bpf_get_smp_processor_id();

	if (!ulen && !klen)
		return 0;
	v = bpf_map_lookup_elem(&chain_ids, &k);
	if (v)
		return *v;
	v = bpf_map_lookup_elem(&chain_seq, &zero);
	if (!v)
		return 0;
	id = (*v)++ * chain_nr_cpus + cpu + 1;
	if (src != r->stack)
		bpf_probe_read_kernel(r->stack, sizeof(r->stack), src);
	r->type = OFFCPU_CHAIN_STACK;
	r->id = id;
	r->pid = pid;
	r->tid = tid;
	r->kind = kind;
	r->ulen = ulen;
	r->klen = klen;
	r->cpu = cpu;
	r->time = bpf_ktime_get_ns();
	if (bpf_ringbuf_output(&chain_events, r, sizeof(*r), chain_ring_flags())) {
		drop(OFFCPU_DROP_CHAIN_RINGBUF);
		return 0;
	}
	bpf_map_update_elem(&chain_ids, &k, &id, BPF_ANY);
	return id;
}

/* current's stacks, taken now, as an id (kind OFFCPU_CHAIN_STACK_*). */
static __always_inline __u32 chain_current_stack(void *ctx, struct task_struct *cur, __u32 kind)
{
	__u32 zero = 0;
	struct offcpu_chain_stack *r = bpf_map_lookup_elem(&chain_scratch, &zero);

	if (!r)
		return 0;
	chain_take(ctx, r, cur->mm != NULL);
	return chain_stack_id(r, r->stack, r->ulen, r->klen, hash_frames(r->stack, r->ulen),
			      hash_frames(&r->stack[OFFCPU_MAX_STACK], r->klen), cur->tgid, cur->pid,
			      kind);
}

static __always_inline void chain_emit(struct task_struct *p, struct offcpu_chain_task *ct,
				       __u64 in, __u64 wake, __u16 flags);

/*
 * prev runs, but its last wait's switch-in was never seen (the kernel hides
 * a tracepoint hit at times: while another program attaches, or while a
 * hidden agent's thread is current): when it was switched in once since,
 * that switch-in and its wakeup are in sched_info (on the run queue's
 * clock, clk now): the record is written from there. Else it is not: its
 * reader finds the gap in the switch count.
 */
static __always_inline void chain_repair(struct task_struct *prev, struct offcpu_chain_task *ct,
					 __u64 now, __u64 clk)
{
	__u64 arrival, waited, in, wake;

	if (!bpf_core_field_exists(prev->sched_info.last_arrival) ||
	    prev->sched_info.pcount != ct->pcount_out + 1 || prev->sched_info.run_delay < ct->delay_out)
		return;
	arrival = prev->sched_info.last_arrival;
	waited = prev->sched_info.run_delay - ct->delay_out;
	if (arrival > clk || clk - arrival > now || arrival - waited > arrival)
		return;
	in = now - (clk - arrival);
	wake = ct->state == 'R' || ct->state == 'N' ? ct->out : ct->wake ? ct->wake : in - waited;
	if (in < ct->out || wake > in)
		return;
	chain_emit(prev, ct, in, wake, OFFCPU_CHAIN_REPAIRED);
}

/*
 * prev leaves the CPU: note its wait. A target measured by the switch
 * program (measured) has its stacks in its task storage already.
 */
static __always_inline void chain_out(void *ctx, struct task_struct *prev, struct task_struct *next,
				      unsigned int prev_state, bool measured, __u64 now, __u64 clk)
{
	struct offcpu_chain_task *ct;
	struct offcpu_task *t = NULL;
	__u32 zero = 0;
	struct offcpu_chain_stack *r;
	__u32 state = prev_state & (OFFCPU_STATE_S | OFFCPU_STATE_D);

	if (!prev->pid || prev->exit_state)
		return;
	ct = bpf_task_storage_get(&chain_tasks, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!ct) {
		drop(OFFCPU_DROP_CHAIN_STORAGE);
		return;
	}
	if (ct->pending)
		chain_repair(prev, ct, now, clk);
	if (ct->pending) /* not repaired */
		ct->lost = 1;
	if (bpf_core_field_exists(prev->sched_info.pcount)) {
		ct->pcount_out = prev->sched_info.pcount;
		ct->delay_out = prev->sched_info.run_delay;
	}
	ct->nsw_out = prev->nvcsw + prev->nivcsw;
	ct->out = now;
	ct->wake = 0;
	ct->waker = 0;
	ct->wstack = 0;
	ct->state = state & OFFCPU_STATE_D ? 'D' : state ? 'S' : prev_state ? 'T' : 'R';
	if (!prev_state)
		ct->waker = next->pid; /* preempted: who took the CPU */
	ct->flags = thread_kind_wanted(prev->flags) && wanted(prev->tgid, prev->pid)
			    ? OFFCPU_CHAIN_TARGET : 0;
	ct->pending = 1;
	r = bpf_map_lookup_elem(&chain_scratch, &zero);
	if (!r)
		return;
	if (measured)
		t = bpf_task_storage_get(&tasks, prev, 0, 0);
	if (t) {
		ct->stack = chain_stack_id(r, t->s.stack, t->s.ulen, t->s.klen, t->uhash, t->khash,
					   prev->tgid, prev->pid, OFFCPU_CHAIN_STACK_SLEEP);
		return;
	}
	chain_take(ctx, r, prev->mm != NULL);
	ct->stack = chain_stack_id(r, r->stack, r->ulen, r->klen, hash_frames(r->stack, r->ulen),
				   hash_frames(&r->stack[OFFCPU_MAX_STACK], r->klen), prev->tgid,
				   prev->pid, OFFCPU_CHAIN_STACK_SLEEP);
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
	r->type = OFFCPU_CHAIN_SWITCH;
	r->pid = p->tgid;
	r->tid = p->pid;
	r->cpu = bpf_get_smp_processor_id();
	r->time = in;
	r->out = ct->out;
	r->wake = wake;
	r->stack = ct->stack;
	r->waker_tid = ct->waker;
	r->waker_stack = ct->wstack;
	r->seq = ct->nsw_out;
	r->state = ct->state;
	r->pad = 0;
	r->flags = ct->flags | flags | (ct->lost ? OFFCPU_CHAIN_GAP : 0);
	ct->lost = 0;
	r->pad2 = 0;
	bpf_ringbuf_submit(r, chain_ring_flags());
}

/*
 * next gets the CPU: its switch record. A thread the programs never saw
 * leave (it waited since before they were attached) has one too, marked
 * OFFCPU_CHAIN_FROM_START.
 */
static __always_inline void chain_in(struct task_struct *next, __u64 now, __u64 clk)
{
	struct offcpu_chain_task *ct;
	__u64 wake, queued;

	if (!next->pid)
		return;
	ct = bpf_task_storage_get(&chain_tasks, next, 0, 0);
	if (!ct) { /* runnable since before the recording */
		ct = bpf_task_storage_get(&chain_tasks, next, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
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
	}
	chain_emit(next, ct, now, wake, 0);
}

/* One context switch (offcpu_switch): prev's wait begins, next's ends. */
static __always_inline void chain_switch(void *ctx, struct task_struct *prev,
					 struct task_struct *next, unsigned int prev_state,
					 bool measured, __u64 now, __u64 clk)
{
	chain_out(ctx, prev, next, prev_state, measured, now, clk);
	chain_in(next, now, clk);
}

/*
 * p is woken by current (sched_waking runs in the waker's context: current
 * is the waker, or the task an interrupt came upon; the reader tells the
 * two apart by the stack). A thread asleep since before the recording gets
 * its storage here, with its blocking stack.
 */
static __always_inline void chain_waking(void *ctx, struct task_struct *p)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct offcpu_chain_task *ct;
	struct offcpu_chain_stack *r;
	__u32 one = 1;
	long n;

	if (!p->pid)
		return;
	ct = bpf_task_storage_get(&chain_tasks, p, 0, 0);
	if (!ct) {
		ct = bpf_task_storage_get(&chain_tasks, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
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
		r = bpf_map_lookup_elem(&chain_scratch, &one);
		if (r && want_kstack) {
			n = bpf_get_task_stack(p, &r->stack[OFFCPU_MAX_STACK], OFFCPU_MAX_STACK * 8, 0);
			r->ulen = 0;
			r->klen = n > 0 ? (__u64)n / 8 : 0;
			ct->stack = chain_stack_id(r, r->stack, 0, r->klen, 0,
						   hash_frames(&r->stack[OFFCPU_MAX_STACK], r->klen),
						   p->tgid, p->pid, OFFCPU_CHAIN_STACK_TASK);
		}
	}
	if (!ct->pending || ct->wake || ct->state == 'R')
		return; /* not waiting, or woken already */
	ct->wake = bpf_ktime_get_ns();
	ct->waker = cur->pid;
	ct->wstack = chain_current_stack(ctx, cur, OFFCPU_CHAIN_STACK_WAKER);
}

/* p is a new thread, made by current: its first wait is for a CPU, woken by its maker. */
static __always_inline void chain_new(void *ctx, struct task_struct *p)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct offcpu_chain_task *ct;

	ct = bpf_task_storage_get(&chain_tasks, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
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
	ct->stack = 0;
	ct->waker = cur->pid;
	ct->wstack = chain_current_stack(ctx, cur, OFFCPU_CHAIN_STACK_NEW);
	ct->pending = 1;
}

#endif
