// SPDX-License-Identifier: GPL-2.0-only
/*
 * offcpu's kernel half: measure every interval a task spends off the CPU
 * waiting (state S or D), with the user and kernel stacks it blocked in.
 *
 *   switch-out (prev is `current`): note time, state and both stacks in the
 *                                   task's own storage;
 *   wakeup:                         note the time: the wait ends there, what
 *                                   follows is waiting for a CPU;
 *   switch-in  (next):              delta = wakeup - switch-out; a long wait is
 *                                   emitted at once on the ring buffer, a
 *                                   short one is added to an in-kernel sum
 *                                   that user space drains periodically.
 *
 * The sums are double-buffered (sum0/sum1, `sum_active` picks the one being
 * written) so that user space drains a map nobody writes to any more: each
 * interval is counted exactly once. Every loss is counted in `drops`.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "offcpu.h"

#define PF_KTHREAD 0x00200000
#define EEXIST 17
/* x86-64's THREAD_SIZE without KASAN; only used to tell stack depths apart. */
#define OFFCPU_THREAD_SIZE 16384
#define OFFCPU_USER_CS 0x33 /* x86-64 __USER_CS: a 64-bit user task */
#define OFFCPU_USER_MAX 0x00fffffffffff000ULL /* user addresses, 5-level paging included */

/* Knobs, set by user space between open and load. */
const volatile __u64 thresh_ns = 500000000ULL;
const volatile __u32 state_mask = OFFCPU_STATE_S | OFFCPU_STATE_D;
const volatile bool want_ustack = true;
const volatile bool want_kstack = true;
const volatile bool kernel_threads = false;
const volatile bool filter_tgid = false;
const volatile bool filter_tid = false;
const volatile bool filter_cpu = false;
const volatile bool filter_cgroup = false;
const volatile bool follow_children = false;
const volatile __u64 sched_lo = 0, sched_hi = 0; /* __schedule's text */
const volatile bool use_kcache = true;      /* kernel stacks from the cache */
const volatile __u32 kcache_check_mask = 15; /* walk 1 cache hit in mask+1 */

/* Runtime state shared with user space (.bss). */
__u32 sum_active;     /* which sum map switch-in adds to */
__u32 sum_entries[2]; /* entries created in each sum map since its drain */
__u32 kstack_skip;    /* frames of BPF/tracing glue above __schedule */
__u32 calib_done;
__u64 dbg[8];     /* kstack_skip was measured */
__u64 calib_stack[16];

struct offcpu_task {
	__u64 ts_out;  /* switch-out, rq clock; 0 when not waiting */
	__u64 ts_wake; /* wakeup, rq clock; 0 until woken */
	__u32 summed;  /* has added to a sum map: note its exit */
	__u32 pad;
	__u64 uhash;   /* hashes of the stacks in s */
	__u64 khash;
	__u64 sp;      /* scratch: the kernel stack pointer at switch-out */
	struct offcpu_sample s;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct offcpu_task);
} tasks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20); /* resized by user space */
} events SEC(".maps");

struct offcpu_sum_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* memory follows use */
	__uint(max_entries, 8192); /* resized by user space */
	__type(key, struct offcpu_sum_key);
	__type(value, struct offcpu_sample);
};
struct offcpu_sum_map sum0 SEC(".maps");
struct offcpu_sum_map sum1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct offcpu_exit_key);
	__type(value, __u64);
} exits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OFFCPU_DROP__NR);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

/*
 * Kernel stacks by blocking point (struct offcpu_kfp). Walking a kernel
 * stack with the ORC unwinder is most of the cost of a context switch
 * here (about 1.1 us of 1.9 us), and a task blocks at the same few points
 * again and again: a hit copies the stack instead of walking it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct offcpu_kfp);
	__type(value, struct offcpu_kstack);
} kcache SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OFFCPU_STAT__NR);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* Per CPU: a cache entry being built (too big for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct offcpu_kstack);
} kscratch SEC(".maps");


/* Target filters: a key present means "trace it". */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} tgids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} tids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} cpus SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cgroup SEC(".maps");

static __always_inline void drop(__u32 what)
{
	__u64 *n = bpf_map_lookup_elem(&drops, &what);

	if (n)
		*n += 1;
}

/*
 * Is this task one of the targets? `t` is current when cgroup filtering
 * applies (switch-out and CPU samples), which is what the cgroup helper
 * needs. Kernel threads are judged by the caller.
 */
static __always_inline bool wanted(__u32 tgid, __u32 tid)
{
	if (!tid)
		return false; /* idle */
	if (filter_cpu) {
		__u32 cpu = bpf_get_smp_processor_id();
		__u8 *ok = bpf_map_lookup_elem(&cpus, &cpu);

		if (!ok || !*ok)
			return false;
	}
	if (filter_tgid || filter_tid) {
		/* -p and -t together select the union, as in perf. */
		bool hit = false;

		if (filter_tgid && bpf_map_lookup_elem(&tgids, &tgid))
			hit = true;
		if (!hit && filter_tid && bpf_map_lookup_elem(&tids, &tid))
			hit = true;
		if (!hit)
			return false;
	}
	if (filter_cgroup && bpf_current_task_under_cgroup(&cgroup, 0) != 1)
		return false;
	return true;
}

static __always_inline void stat(__u32 what)
{
	__u64 *n = bpf_map_lookup_elem(&stats, &what);

	if (n)
		*n += 1;
}

/*
 * The clock of the run queue p is on (its rq->clock, sched_clock ns, one
 * time line for all CPUs). Intervals are measured on it, as the kernel's
 * own accounting (schedstat) is: a task leaves at the clock __schedule
 * read before dequeuing it, and is back at the clock of the run queue it
 * is enqueued on. The run queue is reached through the task's CFS queue
 * (per-CPU symbols are not in kallsyms here); without group scheduling,
 * monotonic time stands in for it on both ends.
 */
static __always_inline __u64 task_rq_clock(struct task_struct *p)
{
	if (bpf_core_field_exists(p->se.cfs_rq))
		return p->se.cfs_rq->rq->clock;
	return bpf_ktime_get_ns();
}

static __always_inline __u64 hash_frames(const __u64 *f, __u32 n)
{
	__u64 h = 0xcbf29ce484222325ULL ^ n;

	for (__u32 i = 0; i < OFFCPU_MAX_STACK; i++) {
		if (i >= n)
			break;
		h ^= f[i];
		h *= 0x100000001b3ULL;
		h ^= h >> 29;
	}
	return h;
}

struct offcpu_uframe {
	__u64 next; /* the caller's frame pointer */
	__u64 ret;  /* the return address into the caller */
};

/*
 * prev's user stack into t->s by its frame pointers, as perf's user
 * callchain walks it: the user instruction pointer, then one return
 * address per frame until a frame cannot be read. One 16-byte read a
 * frame costs about half of bpf_get_stack(BPF_F_USER_STACK), which reads
 * the two words apart and clears the whole buffer. 32-bit tasks are left
 * to bpf_get_stack.
 */
static __always_inline void ustack_walk(void *ctx, struct task_struct *prev, struct offcpu_task *t)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(prev);
	struct offcpu_uframe f;
	__u64 fp;
	__u32 i;
	long n;

	if (!regs || BPF_CORE_READ(regs, cs) != OFFCPU_USER_CS) {
		n = bpf_get_stack(ctx, t->s.stack, OFFCPU_MAX_STACK * 8, BPF_F_USER_STACK);
		if (n > 0)
			t->s.ulen = n / 8;
		else
			drop(OFFCPU_DROP_USTACK);
		return;
	}
	t->s.stack[0] = BPF_CORE_READ(regs, ip);
	fp = BPF_CORE_READ(regs, bp);
	for (i = 1; i < OFFCPU_MAX_STACK; i++) {
		if (fp < 4096 || fp > OFFCPU_USER_MAX - sizeof(f))
			break;
		if (bpf_probe_read_user(&f, sizeof(f), (const void *)fp))
			break;
		if (f.ret < 4096)
			break;
		t->s.stack[i] = f.ret;
		fp = f.next;
	}
	t->s.ulen = i;
}

/* The kernel's unwinder: prev's kernel stack into t->s, from __schedule on. */
static __always_inline void kstack_walk(void *ctx, struct offcpu_task *t)
{
	long n;

	if (!calib_done && sched_lo) {
		/*
		 * Once: count the BPF and tracing frames above __schedule,
		 * so that every later stack starts at the scheduler.
		 */
		n = bpf_get_stack(ctx, calib_stack, sizeof(calib_stack), 0);
		for (__u32 i = 0; i < 16 && n > 0; i++) {
			if (i < n / 8 && calib_stack[i] >= sched_lo && calib_stack[i] < sched_hi) {
				kstack_skip = i;
				break;
			}
		}
		calib_done = 1;
	}
	n = bpf_get_stack(ctx, &t->s.stack[OFFCPU_MAX_STACK], OFFCPU_MAX_STACK * 8,
			  kstack_skip & BPF_F_SKIP_FIELD_MASK);
	if (n > 0) {
		t->s.klen = n / 8;
	} else {
		t->s.klen = 0;
		drop(OFFCPU_DROP_KSTACK);
	}
	t->khash = hash_frames(&t->s.stack[OFFCPU_MAX_STACK], t->s.klen);
	stat(OFFCPU_STAT_KSTACK_WALKED);
}

/*
 * Where prev blocks, as a cache key (struct offcpu_kfp); false when it
 * cannot be told (no user context, or the stack pointer is not on prev's
 * stack). Depth is measured from the top of the task's stack, down to this
 * tracepoint's frame: the glue between __schedule and here is the same
 * at every switch.
 */
static __always_inline bool kstack_fingerprint(void *ctx, struct task_struct *prev,
					       struct offcpu_task *t, struct offcpu_kfp *k)
{
	struct pt_regs *regs;
	__u64 sp, base, depth;

	regs = (struct pt_regs *)bpf_task_pt_regs(prev);
	if (!regs) {
		dbg[0]++;
		return false;
	}
	/*
	 * The program's own stack may be a private one; its context (the
	 * tracepoint's argument array) is on the task's kernel stack, a fixed
	 * distance below __schedule. A pointer as a number: through memory,
	 * as the verifier wants.
	 */
	*(volatile __u64 *)&t->sp = (__u64)ctx;
	sp = *(volatile __u64 *)&t->sp;
	base = (__u64)BPF_CORE_READ(prev, stack);
	dbg[2] = sp; dbg[3] = base;
	if (sp < base || sp - base >= OFFCPU_THREAD_SIZE) {
		dbg[1]++;
		return false;
	}
	depth = base + OFFCPU_THREAD_SIZE - sp;
	k->sysnr = (__s32)BPF_CORE_READ(regs, orig_ax);
	/*
	 * A syscall's frames sit below a random gap (RANDOMIZE_KSTACK_OFFSET:
	 * an alloca of up to 1 KiB, chosen anew at every syscall), so one
	 * blocking point has up to 64 depths, hence keys: they fill in after
	 * a few dozen walks of a point that recurs, and a point that does not
	 * recur costs nothing to miss. (The per-CPU offset itself is not
	 * readable: kallsyms has no data symbols on this kind of kernel.)
	 */
	k->depth = depth;
	k->uip = BPF_CORE_READ(regs, ip);
	k->uhash = t->uhash;
	return true;
}

/*
 * prev's kernel stack into t->s (klen frames, khash): from the cache when
 * this blocking point was seen before, else by walking, which also fills
 * the cache. One hit in kcache_check_mask+1 is walked anyway, and a stack
 * that differs from the cached one is counted (stale) and replaces it: the
 * recording states how often the cache was checked and how often wrong.
 */
static __always_inline void kstack_take(void *ctx, struct task_struct *prev, struct offcpu_task *t)
{
	struct offcpu_kfp k = {};
	struct offcpu_kstack *e, *scratch;
	__u32 zero = 0, n;

	dbg[4] = kstack_skip; dbg[5]++;
	if (!use_kcache || !prev->mm || !kstack_skip || !kstack_fingerprint(ctx, prev, t, &k)) {
		kstack_walk(ctx, t);
		return;
	}
	e = bpf_map_lookup_elem(&kcache, &k);
	/* uses is a racy count: a lost increment only moves the next check */
	if (e && (e->uses++ & kcache_check_mask)) {
		n = e->klen;
		if (n > OFFCPU_MAX_STACK)
			n = OFFCPU_MAX_STACK;
		if (bpf_probe_read_kernel(&t->s.stack[OFFCPU_MAX_STACK], (n & 0x7f) * 8, e->frames))
			n = 0;
		t->s.klen = n;
		t->khash = e->khash;
		stat(OFFCPU_STAT_KSTACK_CACHED);
		return;
	}
	kstack_walk(ctx, t);
	if (!t->s.klen)
		return;
	if (e) {
		stat(OFFCPU_STAT_KSTACK_CHECKED);
		if (e->khash == t->khash)
			return;
		stat(OFFCPU_STAT_KSTACK_STALE);
	}
	scratch = bpf_map_lookup_elem(&kscratch, &zero);
	if (!scratch)
		return;
	scratch->khash = t->khash;
	scratch->klen = t->s.klen;
	scratch->uses = 1;
	if (bpf_probe_read_kernel(scratch->frames, sizeof(scratch->frames),
				  &t->s.stack[OFFCPU_MAX_STACK]))
		return;
	bpf_map_update_elem(&kcache, &k, scratch, BPF_ANY);
}

static __always_inline void sum_add(void *map, __u32 idx, struct offcpu_sum_key *k,
				    struct offcpu_task *t, __u64 delta)
{
	struct offcpu_sample *v;
	long err;

	v = bpf_map_lookup_elem(map, k);
	if (!v) {
		t->s.time = 0;
		t->s.period = delta;
		t->s.count = 1;
		err = bpf_map_update_elem(map, k, &t->s, BPF_NOEXIST);
		if (!err) {
			__sync_fetch_and_add(&sum_entries[idx & 1], 1);
			return;
		}
		if (err != -EEXIST) {
			drop(OFFCPU_DROP_SUM_FULL);
			return;
		}
		v = bpf_map_lookup_elem(map, k); /* lost a race to another CPU */
		if (!v) {
			drop(OFFCPU_DROP_SUM_FULL);
			return;
		}
	}
	__sync_fetch_and_add(&v->period, delta);
	__sync_fetch_and_add(&v->count, 1);
}

/*
 * t's interval of delta ns is over: emit it (a long one) or add it to the
 * sums. now is the time of the sample, a time when the task is alive.
 */
static __always_inline void interval_done(struct offcpu_task *t, __u64 delta, __u64 now)
{
	struct offcpu_sum_key k;

	if (delta >= thresh_ns) {
		__u64 flags = BPF_RB_NO_WAKEUP;

		t->s.time = now;
		t->s.period = delta;
		t->s.count = 1;
		t->s.cpu = bpf_get_smp_processor_id();
		if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > (8 << 20) / 4)
			flags = BPF_RB_FORCE_WAKEUP;
		if (bpf_ringbuf_output(&events, &t->s, sizeof(t->s), flags))
			drop(OFFCPU_DROP_RINGBUF);
		return;
	}

	k.pid = t->s.pid;
	k.tid = t->s.tid;
	k.start_time = t->s.start_time;
	k.uhash = t->uhash;
	k.khash = t->khash;
	k.cgroup = t->s.cgroup;
	k.state = t->s.state;
	k.pad = 0;
	t->s.cpu = bpf_get_smp_processor_id();
	t->summed = 1;
	if (sum_active & 1)
		sum_add(&sum1, 1, &k, t, delta);
	else
		sum_add(&sum0, 0, &k, t, delta);
}

/*
 * The task runs (it switches out again, or exits) but its last interval is
 * still open: the switch program missed its switch-in. End the interval at
 * its wakeup when that was seen (what switch-in would have done), else
 * count it lost: its end is not known.
 */
static __always_inline void interval_unclosed(struct offcpu_task *t, __u64 now)
{
	if (!t->ts_out)
		return;
	if (t->ts_wake && t->ts_wake >= t->ts_out) {
		interval_done(t, t->ts_wake - t->ts_out, now);
		stat(OFFCPU_STAT_CLOSED_AT_WAKEUP);
	} else {
		drop(OFFCPU_DROP_UNCLOSED);
	}
	t->ts_out = 0;
}

/* Note a task leaving the CPU to wait: time, state, stacks. */
static __always_inline void switch_out(void *ctx, struct task_struct *prev, __u32 state, __u64 now,
				       __u64 clk)
{
	struct offcpu_task *t;
	long n;

	t = bpf_task_storage_get(&tasks, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t) {
		drop(OFFCPU_DROP_TASK_STORAGE);
		return;
	}
	interval_unclosed(t, now);
	t->s.pid = prev->tgid;
	t->s.tid = prev->pid;
	t->s.start_time = prev->start_time;
	t->s.state = state;
	t->s.cgroup = bpf_get_current_cgroup_id();
	t->s.ulen = 0;
	t->s.klen = 0;
	if (want_ustack && prev->mm)
		ustack_walk(ctx, prev, t);
	t->uhash = hash_frames(t->s.stack, t->s.ulen);
	if (want_kstack)
		kstack_take(ctx, prev, t);
	t->ts_wake = 0;
	t->ts_out = clk;
}

/* A waiting task is back: emit its interval or add it to the sums. */
static __always_inline void switch_in(struct task_struct *next, __u64 now, __u64 clk)
{
	struct offcpu_task *t;
	__u64 end, delta;

	t = bpf_task_storage_get(&tasks, next, 0, 0);
	if (!t || !t->ts_out)
		return;
	/*
	 * Off-CPU ends at the wakeup: from there on it waits for a CPU. The
	 * two ends may be read on two CPUs' clocks, which can be a few ns
	 * apart: never let that make a negative interval.
	 */
	end = t->ts_wake ? t->ts_wake : clk;
	delta = end > t->ts_out ? end - t->ts_out : 0;
	t->ts_out = 0;
	interval_done(t, delta, now);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(offcpu_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u64 now = bpf_ktime_get_ns(); /* the samples' time line */
	__u64 clk = task_rq_clock(prev); /* the intervals': this CPU's run queue */
	__u32 state = prev_state & (OFFCPU_STATE_S | OFFCPU_STATE_D);

	/*
	 * The state, not `preempt`, decides: a task preempted after it set
	 * S or D is not on the run queue's books (schedstat counts it as
	 * asleep), and perf --off-cpu counts it too.
	 */
	if ((state & state_mask) && (kernel_threads || !(prev->flags & PF_KTHREAD)) &&
	    wanted(prev->tgid, prev->pid))
		switch_out(ctx, prev, state, now, clk);
	switch_in(next, now, clk);
	return 0;
}

/*
 * A waiting task is woken (queued on a run queue): its off-CPU interval
 * ends here, at the clock of that run queue, as the kernel's own accounting
 * (schedstat) has it; the time to its switch-in is run-queue delay.
 */
SEC("tp_btf/sched_wakeup")
int BPF_PROG(offcpu_wakeup, struct task_struct *p)
{
	struct offcpu_task *t = bpf_task_storage_get(&tasks, p, 0, 0);

	if (t && t->ts_out && !t->ts_wake)
		t->ts_wake = task_rq_clock(p);
	return 0;
}

/*
 * Follow the command's process tree: a child of a traced process is traced.
 * Threads share the tgid and need nothing.
 */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(offcpu_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ctgid = child->tgid;
	__u8 one = 1;

	if (ptgid != ctgid && bpf_map_lookup_elem(&tgids, &ptgid))
		bpf_map_update_elem(&tgids, &ctgid, &one, BPF_ANY);
	return 0;
}

/*
 * A task with pending sums exits: note when, so that its summed samples are
 * timed inside its lifetime. A dead thread group leaves the target set, so
 * that a process reusing its pid is not traced by mistake.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(offcpu_exit, struct task_struct *p)
{
	struct offcpu_task *t = bpf_task_storage_get(&tasks, p, 0, 0);
	__u64 now = bpf_ktime_get_ns();

	if (t)
		interval_unclosed(t, now);
	if (t && t->summed) {
		struct offcpu_exit_key k = { .tid = p->pid, .start_time = p->start_time };

		if (bpf_map_update_elem(&exits, &k, &now, BPF_ANY))
			drop(OFFCPU_DROP_EXITS_FULL);
	}
	if (filter_tgid && !BPF_CORE_READ(p, signal, live.counter)) {
		__u32 tgid = p->tgid;

		bpf_map_delete_elem(&tgids, &tgid);
	}
	return 0;
}

/* CPU samples of the perf events: keep only the targets' (return 1). */
SEC("perf_event")
int offcpu_cpu_filter(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();

	return wanted(id >> 32, (__u32)id) ? 1 : 0;
}

char LICENSE[] SEC("license") = "GPL";
