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
 *
 * Options that cost nothing unless asked for (see "wakers and run-queue
 * delay" below): --wakeups notes who woke each waiting task, --sched-delay
 * measures the wait for a CPU that follows a wakeup, preemption or fork.
 *
 * Its size (about 1 600 lines): what is left here is the hot path and what
 * it calls inline, the switch program and the tracepoints that share its
 * task storage and maps (wakeup, waking, fork, exit, exec, rename) and the
 * CPU-sample programs, kept in one file so that the switch path reads top
 * to bottom beside the maps and knobs it uses. The parts that stand apart
 * are in included files: the DWARF unwinder (unwind.bpf.h) and the start
 * and stop iterators of the waits in progress (iter.bpf.h).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "offcpu.h"
#include "unwind.bpf.h"

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
const volatile bool user_threads = true;     /* -k clears it: kernel threads only */
const volatile bool filter_kind_cpu = false; /* -u/-k: CPU samples of the other kind left out too */
/* -m/-M: off-CPU intervals shorter or longer than these are left out (counted) */
const volatile __u64 min_ns = 0;
const volatile __u64 max_ns = ~0ULL;
const volatile bool filter_tgid = false;
const volatile bool filter_tid = false;
const volatile bool filter_cpu = false;
const volatile bool filter_cgroup = false;
const volatile bool follow_children = false;
const volatile __u64 sched_lo = 0, sched_hi = 0; /* __schedule's text */
const volatile __u64 sys_lo = 0, sys_hi = 0;     /* do_syscall_64's text */
const volatile bool use_kcache = true;      /* kernel stacks from the cache */
/*
 * Walk 1 served cache hit in mask+1 and compare. Every hit is verified
 * against the stack's own return addresses (kstack_verify): this only
 * audits that, at a walk's cost (1.1 us) each time.
 */
const volatile __u32 kcache_check_mask = 63;
const volatile bool want_wakeups = false;    /* --wakeups */
const volatile bool want_sched_delay = false; /* --sched-delay */
/*
 * Tests only (OFFCPU_TEST_HIDE): act as if 1 in test_hide of the switch-ins
 * and wakeups had not reached the programs, as the kernel does at times, so
 * that the repair in interval_unclosed is exercised. 0: off (the verifier
 * drops the branches).
 */
const volatile __u32 test_hide = 0;

/* Runtime state shared with user space (.bss). */
__u32 sum_active;     /* which sum map switch-in adds to */
__u32 sum_entries[2]; /* entries created in each sum map since its drain */
__u32 wsum_entries[2]; /* the same for the wakeup sum maps */
__u32 kstack_skip;    /* frames of BPF/tracing glue above __schedule */
__u32 calib_done;     /* kstack_skip was measured */
__u64 calib_stack[16];
__u32 exec_tgid;      /* the command (record -- CMD): traced from its first exec on */
__u64 cgroup_id;      /* -G: the cgroup's id, for the iterators (not current) */
/* The recording's window, on a run queue's clock and on the samples' clock. */
__u64 rec_start, rec_start_mono, rec_stop, rec_stop_mono;

struct offcpu_task {
	__u64 ts_out;  /* switch-out, rq clock; 0 when not waiting */
	__u64 ts_wake; /* wakeup, rq clock; 0 until known (woken_at) */
	__u32 summed;  /* has added to a sum map: note its exit */
	__u32 gen;     /* execs seen: the sum keys' gen */
	__u64 last_sum; /* sample time of its last summed interval */
	__u32 pcount_out; /* sched_info.pcount (switch-ins) at switch-out */
	__u64 delay_out;  /* sched_info.run_delay at switch-out */
	__u64 uhash;   /* hashes of the stacks in s */
	__u64 khash;
	__u64 sp;      /* scratch: the kernel stack pointer at switch-out */
	__u64 start_pending; /* OFFCPU_START_*: waiting since the recording started (see starts) */
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

/* --wakeups: the last waker of a waiting task; sums of intervals with one. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct offcpu_waker);
} wakers SEC(".maps");

struct offcpu_wsum_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1); /* resized by user space with --wakeups */
	__type(key, struct offcpu_wsum_key);
	__type(value, struct offcpu_wsample);
};
struct offcpu_wsum_map wsum0 SEC(".maps");
struct offcpu_wsum_map wsum1 SEC(".maps");

/* Per CPU: an off-CPU sample joined to its waker, too big for the stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct offcpu_wsample);
} wscratch SEC(".maps");

/* --sched-delay: a task waiting for a CPU that off-CPU does not track. */
struct offcpu_delay {
	__u64 ts_queued; /* runnable since (preemption, wakeup, fork), rq clock; 0: not waiting */
	__u32 pending;   /* asleep in a state off-CPU leaves out: the wakeup starts the wait */
	__u32 pad;
	__u64 uhash;     /* hashes of the stacks in s */
	__u64 khash;
	__u64 sp;        /* scratch: the kernel stack pointer at switch-out */
	struct offcpu_sample s; /* who, and the stacks where it stopped */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct offcpu_delay);
} delays SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct offcpu_exit_key);
	__type(value, __u64);
} exits SEC(".maps");

/* --call-graph dwarf: CPU samples with the stacks unwound here. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} cpu_samples SEC(".maps");

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

/*
 * Per CPU: the words of a task's kernel stack from the switch program's
 * context up to its pt_regs, read once per switch-out for the cache key
 * and the check of a hit (kstack_take). Deeper stacks are walked.
 */
#define OFFCPU_KSCAN_WORDS 512
struct offcpu_kscan {
	__u64 w[OFFCPU_KSCAN_WORDS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct offcpu_kscan);
} kscan SEC(".maps");

/*
 * A target that was already waiting when the recording started (found by
 * the offcpu_start iterator): how it waited, its stacks, and the scheduler's
 * count of its switch-ins then. Written by the iterator only, read when the
 * wait ends (start_in) or at the stop (offcpu_stop).
 */
enum {
	OFFCPU_START_SLEEP = 1,  /* asleep in a recorded state: an off-CPU interval */
	OFFCPU_START_QUEUED = 2, /* runnable, waiting for a CPU (--sched-delay) */
	OFFCPU_START_OTHER = 3,  /* asleep in another state: its run-queue wait follows (--sched-delay) */
};

struct offcpu_start {
	__u32 kind;      /* OFFCPU_START_* */
	__u32 pad;
	__u64 pcount;    /* sched_info.pcount: not switched in since, while equal */
	__u64 run_delay; /* sched_info.run_delay then */
	struct offcpu_sample s;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct offcpu_start);
} starts SEC(".maps");

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

/* Is a task of these flags of a kind recorded: kernel thread or user thread (-u/-k)? */
static __always_inline bool thread_kind_wanted(unsigned int flags)
{
	return flags & PF_KTHREAD ? kernel_threads : user_threads;
}

/*
 * -m/-M: is an off-CPU interval of delta ns inside the block-time range?
 * One outside is counted, never emitted nor summed. The bounds are
 * constants to the verifier: without -m/-M, two compares that never fail.
 */
static __always_inline bool block_time_kept(__u64 delta)
{
	if (delta >= min_ns && delta <= max_ns)
		return true;
	stat(OFFCPU_STAT_FILTERED);
	return false;
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
 * A user stack by its frame pointers, as perf's user callchain walks it:
 * ip, then one return address per frame until a frame cannot be read. One
 * 16-byte read a frame costs about half of bpf_get_stack(BPF_F_USER_STACK),
 * which reads the two words apart and clears the whole buffer.
 */
static __always_inline __u32 ustack_fp(__u64 ip, __u64 fp, __u64 *stack)
{
	struct offcpu_uframe f;
	__u32 i;

	stack[0] = ip;
	for (i = 1; i < OFFCPU_MAX_STACK; i++) {
		if (fp < 4096 || fp > OFFCPU_USER_MAX - sizeof(f))
			break;
		if (bpf_probe_read_user(&f, sizeof(f), (const void *)fp))
			break;
		if (f.ret < 4096)
			break;
		stack[i] = f.ret;
		fp = f.next;
	}
	return i;
}

/*
 * current's user stack from its user registers ip, sp, bp into stack[]
 * (*ulen frames): from the DWARF tables with --call-graph dwarf when its
 * process has them, else by frame pointers. scratch: the calling program's
 * unwinder slot (UNW_SCRATCH_*).
 */
static __always_inline void ustack_regs(__u64 ip, __u64 sp, __u64 bp, __u64 *stack, __u32 *ulen,
					__u32 scratch)
{
	if (unwind_dwarf && unwind_user(ip, sp, bp, stack, ulen, scratch))
		return;
	*ulen = ustack_fp(ip, bp, stack);
}

/*
 * current's user stack into stack[] (*ulen frames) from its registers at
 * kernel entry (regs). 32-bit tasks are left to bpf_get_stack; a failure
 * counts udrop.
 */
static __always_inline void ustack_walk(void *ctx, struct pt_regs *regs, __u64 *stack, __u32 *ulen,
					__u32 scratch, __u32 udrop)
{
	long n;

	if (!regs || BPF_CORE_READ(regs, cs) != OFFCPU_USER_CS) {
		n = bpf_get_stack(ctx, stack, OFFCPU_MAX_STACK * 8, BPF_F_USER_STACK);
		if (n > 0)
			*ulen = n / 8;
		else
			drop(udrop);
		return;
	}
	ustack_regs(BPF_CORE_READ(regs, ip), BPF_CORE_READ(regs, sp), BPF_CORE_READ(regs, bp), stack,
		    ulen, scratch);
}

/* The kernel's unwinder: prev's kernel stack into s (hash: *khash), from __schedule on. */
static __always_inline void kstack_walk(void *ctx, struct offcpu_sample *s, __u64 *khash)
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
	n = bpf_get_stack(ctx, &s->stack[OFFCPU_MAX_STACK], OFFCPU_MAX_STACK * 8,
			  kstack_skip & BPF_F_SKIP_FIELD_MASK);
	if (n > 0) {
		s->klen = n / 8;
	} else {
		s->klen = 0;
		drop(OFFCPU_DROP_KSTACK);
	}
	*khash = hash_frames(&s->stack[OFFCPU_MAX_STACK], s->klen);
	stat(OFFCPU_STAT_KSTACK_WALKED);
}

/* Is a a return address into do_syscall_64 (from any of its calls)? */
static __always_inline bool in_syscall_entry(__u64 a)
{
	return a >= sys_lo && a < sys_hi;
}

/*
 * The slot of do_syscall_64's current call (into the syscall, or into the
 * exit work after it) among the nw words of the stack in b, or -1: every
 * call do_syscall_64 makes after allocating the random offset pushes its
 * return address there. It lies under do_syscall_64's frame and that
 * offset (0-1023 bytes, chosen anew at each syscall): in the top
 * OFFCPU_SYSCALL_WORDS words. They are scanned from the deepest up: above
 * the slot is the offset's area, never written, where older syscalls with
 * smaller offsets left such return addresses; below it are the live
 * frames of this syscall (an unwritten word there can hold one too: a few
 * % of the time, checked away by kstack_verify).
 */
#define OFFCPU_SYSCALL_WORDS 160
static __always_inline int kstack_syscall_slot(const struct offcpu_kscan *b, __u32 nw)
{
	__u32 first = nw > OFFCPU_SYSCALL_WORDS ? nw - OFFCPU_SYSCALL_WORDS : 0;

	for (__u32 j = 0; j < OFFCPU_SYSCALL_WORDS; j++) {
		__u32 i = first + j;

		if (i >= nw)
			break;
		if (in_syscall_entry(b->w[i & (OFFCPU_KSCAN_WORDS - 1)]))
			return i;
	}
	return -1;
}

/*
 * Where prev blocks, as a cache key (struct offcpu_kfp), its kernel stack
 * from the context up read into b (*nw words); false when it cannot be
 * told (no user context, the context not on prev's stack, a stack deeper
 * than b). spword: a word of a map value, for the stack pointer.
 */
static __always_inline bool kstack_fingerprint(void *ctx, struct task_struct *prev,
					       struct pt_regs *regs, __u64 *spword, __u64 uhash,
					       struct offcpu_kfp *k, struct offcpu_kscan *b, __u32 *nw)
{
	__u64 sp, base, top, n;
	int slot = -1;

	if (!regs)
		return false;
	/*
	 * The program's own stack may be a private one; its context (the
	 * tracepoint's argument array) is on the task's kernel stack, a fixed
	 * distance below __schedule. A pointer as a number: through memory,
	 * as the verifier wants.
	 */
	*(volatile __u64 *)spword = (__u64)ctx;
	sp = *(volatile __u64 *)spword;
	base = (__u64)BPF_CORE_READ(prev, stack);
	if (sp < base || sp - base >= OFFCPU_THREAD_SIZE)
		return false;
	top = base + OFFCPU_THREAD_SIZE;
	n = top - bpf_core_type_size(struct pt_regs) - sp;
	if (n < 8 || n > sizeof(b->w) || bpf_probe_read_kernel(b->w, n, (const void *)sp))
		return false;
	*nw = n / 8;
	k->sysnr = (__s32)BPF_CORE_READ(regs, orig_ax);
	/*
	 * A syscall's frames sit below a random gap (RANDOMIZE_KSTACK_OFFSET:
	 * an alloca of up to 1 KiB, chosen anew at every syscall): measured
	 * from the top of the stack, one blocking point has up to 64 depths,
	 * and two blocking points of one syscall (fsync waits on pages, then
	 * on buffers, then on the disk's flush) share a depth whenever their
	 * offsets make up for the difference between them. Measured from the
	 * syscall's first frame, below the gap, each point has one depth.
	 * Outside syscalls (page faults, sysnr -1) there is no gap. (The
	 * per-CPU offset itself is not readable: kallsyms has no data
	 * symbols on this kind of kernel, and it changes at every syscall's
	 * exit anyway.)
	 */
	if (k->sysnr >= 0 && sys_lo)
		slot = kstack_syscall_slot(b, *nw);
	k->depth = slot >= 0 ? (__u32)slot * 8 | OFFCPU_KFP_SYSCALL : top - sp;
	k->uip = BPF_CORE_READ(regs, ip);
	k->uhash = uhash;
	return true;
}

/*
 * Are the frames of cache entry e the stack in b (nw words)? Each frame's
 * return address must be at its place. The kernel's unwinder finds each
 * frame from the return address of the one before (the frame's size is a
 * property of its code), so a stack whose return addresses are those, at
 * those places, is the stack a walk would give. Two blocking points that
 * share a key (an older return address taken for the syscall's slot, two
 * waits at one depth) differ at least at the frame where their paths part.
 */
static __always_inline bool kstack_verify(const struct offcpu_kstack *e, const struct offcpu_kscan *b,
					  __u32 nw)
{
	for (__u32 j = 0; j < OFFCPU_MAX_STACK; j++) {
		__u32 w;

		if (j >= e->klen)
			break;
		w = e->off[j];
		if (w & OFFCPU_KOFF_TOP)
			w = nw - (w & ~OFFCPU_KOFF_TOP);
		if (w >= nw || b->w[w & (OFFCPU_KSCAN_WORDS - 1)] != e->frames[j])
			return false;
	}
	return true;
}

struct offcpu_locate {
	struct offcpu_kstack *e;
	const struct offcpu_kscan *b;
	__u32 nw;
	__u32 j;    /* the next frame to find */
	__u32 slot; /* of do_syscall_64's call, once found: the frames above are counted from the top */
};

/* bpf_loop callback of kstack_locate: word w of the stack. */
static long kstack_locate_word(__u64 w, void *arg)
{
	struct offcpu_locate *c = arg;
	__u32 j = c->j;

	if (w >= c->nw || j >= c->e->klen || j >= OFFCPU_MAX_STACK)
		return 1;
	if (c->b->w[w & (OFFCPU_KSCAN_WORDS - 1)] == c->e->frames[j]) {
		c->e->off[j] = c->slot ? (c->nw - w) | OFFCPU_KOFF_TOP : w;
		if (in_syscall_entry(c->e->frames[j]))
			c->slot = w;
		c->j = j + 1;
	}
	return 0;
}

/*
 * Where each frame of the walked stack in e lies in b (nw words): the
 * first word above the previous frame's that holds its return address;
 * the frames above do_syscall_64's call (the syscall entry's, above the
 * random offset) counted from the top. false when a frame is
 * not found (not cached then). A bpf_loop: only misses pay for it, and
 * the verifier sees the body once.
 */
static __always_inline bool kstack_locate(struct offcpu_kstack *e, const struct offcpu_kscan *b,
					  __u32 nw)
{
	struct offcpu_locate c = { .e = e, .b = b, .nw = nw };

	if (!e->klen || e->klen > OFFCPU_MAX_STACK)
		return false;
	bpf_loop(OFFCPU_KSCAN_WORDS, kstack_locate_word, &c, 0);
	return c.j == e->klen;
}

/*
 * prev's kernel stack into s (klen frames, *khash), its user stack (hashing
 * to uhash) already in s: from the cache when this blocking point was seen
 * before and its frames are still in place (kstack_verify), else by
 * walking, which also fills the cache. One hit in kcache_check_mask+1 that
 * the cache would serve is walked anyway and compared; a stack that
 * differs is counted (stale) and its key evicted for good (the entry
 * stays, marked OFFCPU_KSTACK_NOCACHE: every later stack of that key is
 * walked). The recording states how often the cache was checked, how
 * often wrong, how many keys were evicted and how many hits were walked
 * because their frames were not in place.
 */
static __always_inline void kstack_take(void *ctx, struct task_struct *prev, struct pt_regs *regs,
					struct offcpu_sample *s, __u64 uhash, __u64 *khash,
					__u64 *spword)
{
	struct offcpu_kfp k = {};
	struct offcpu_kstack *e, *scratch;
	struct offcpu_kscan *b;
	__u32 zero = 0, n, nw = 0;

	b = bpf_map_lookup_elem(&kscan, &zero);
	if (!use_kcache || !prev->mm || !kstack_skip || !b ||
	    !kstack_fingerprint(ctx, prev, regs, spword, uhash, &k, b, &nw)) {
		kstack_walk(ctx, s, khash);
		return;
	}
	e = bpf_map_lookup_elem(&kcache, &k);
	if (e) {
		/* uses is a racy count: a lost increment only moves the next check */
		bool check = !(e->uses++ & kcache_check_mask);

		if (e->klen == OFFCPU_KSTACK_NOCACHE) {
			kstack_walk(ctx, s, khash);
			return;
		}
		if (!kstack_verify(e, b, nw)) {
			/*
			 * Another blocking point with this key: walked. When
			 * the walk finds the cached stack after all, a word
			 * taken for one of its frames was an older copy of that
			 * return address (left in an unwritten slot by an
			 * earlier call at another depth): locate them again.
			 */
			stat(OFFCPU_STAT_KSTACK_UNVERIFIED);
			kstack_walk(ctx, s, khash);
			if (s->klen && *khash == e->khash)
				kstack_locate(e, b, nw);
			return;
		}
		if (!check) {
			n = e->klen;
			if (n > OFFCPU_MAX_STACK)
				n = OFFCPU_MAX_STACK;
			if (bpf_probe_read_kernel(&s->stack[OFFCPU_MAX_STACK], (n & 0x7f) * 8, e->frames))
				n = 0;
			s->klen = n;
			*khash = e->khash;
			stat(OFFCPU_STAT_KSTACK_CACHED);
			return;
		}
		/* a hit the cache would serve, walked and compared */
		kstack_walk(ctx, s, khash);
		if (!s->klen)
			return;
		stat(OFFCPU_STAT_KSTACK_CHECKED);
		if (e->khash == *khash)
			return;
		stat(OFFCPU_STAT_KSTACK_STALE);
		e->klen = OFFCPU_KSTACK_NOCACHE;
		stat(OFFCPU_STAT_KSTACK_EVICTED);
		return;
	}
	kstack_walk(ctx, s, khash);
	if (!s->klen)
		return;
	scratch = bpf_map_lookup_elem(&kscratch, &zero);
	if (!scratch)
		return;
	scratch->khash = *khash;
	scratch->klen = s->klen;
	scratch->uses = 1;
	if (bpf_probe_read_kernel(scratch->frames, sizeof(scratch->frames),
				  &s->stack[OFFCPU_MAX_STACK]))
		return;
	if (kstack_locate(scratch, b, nw))
		bpf_map_update_elem(&kcache, &k, scratch, BPF_NOEXIST);
}

/*
 * A sum's time (its sample's, in user space) is the end of the last
 * interval it holds: inside the life and the name of its task (its gen
 * ends where it is renamed or exits), and never before an interval it
 * holds. The sums of a key are one task's: its intervals end one after
 * the other, a plain store will do.
 */
static __always_inline void sum_ended(struct offcpu_sample *v, __u64 now)
{
	if (now > v->time)
		v->time = now;
}

/*
 * Add one interval of delta ns, ending now, to the sum under key k. A new
 * entry is a copy of `init`, a value whose first member is the
 * offcpu_sample that carries the sums (sum maps: the sample; wakeup sum
 * maps: sample and waker); `entries` counts the entries created. The
 * sum's time is the end of its last interval (sum_ended). false: the map
 * is full.
 */
static __always_inline bool sum_add(void *map, __u32 *entries, const void *k,
				    struct offcpu_sample *init, __u64 delta, __u64 now)
{
	struct offcpu_sample *v;
	long err;

	v = bpf_map_lookup_elem(map, k);
	if (!v) {
		init->time = now;
		init->period = delta;
		init->count = 1;
		err = bpf_map_update_elem(map, k, init, BPF_NOEXIST);
		if (!err) {
			__sync_fetch_and_add(entries, 1);
			return true;
		}
		if (err != -EEXIST)
			return false;
		v = bpf_map_lookup_elem(map, k); /* lost a race to another CPU */
		if (!v)
			return false;
	}
	__sync_fetch_and_add(&v->period, delta);
	__sync_fetch_and_add(&v->count, 1);
	sum_ended(v, now);
	return true;
}

/* ---- wakers and run-queue delay (--wakeups, --sched-delay) ---- */

/* Ring buffer flags: wake the reader only once a quarter is filled. */
static __always_inline __u64 ringbuf_flags(void)
{
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > (8 << 20) / 4 ? BPF_RB_FORCE_WAKEUP
									      : BPF_RB_NO_WAKEUP;
}

/*
 * Add an interval of delta ns ending now to the active sums under k; when
 * the sum cannot take it (the map full, or an entry's memory or the
 * bucket's lock not to be had in this context: rare, but seen with
 * --sched-delay), the interval goes out alone as a direct sample rather
 * than being lost (counted: sum.direct). s: the sample, its cpu set.
 */
static __always_inline void sum_or_emit(const struct offcpu_sum_key *k, struct offcpu_sample *s,
					__u64 delta, __u64 now)
{
	if (sum_active & 1 ? sum_add(&sum1, &sum_entries[1], k, s, delta, now)
			   : sum_add(&sum0, &sum_entries[0], k, s, delta, now))
		return;
	s->time = now;
	s->period = delta;
	s->count = 1;
	if (bpf_ringbuf_output(&events, s, sizeof(*s), ringbuf_flags()))
		drop(OFFCPU_DROP_SUM_FULL);
	else
		stat(OFFCPU_STAT_SUM_DIRECT);
}

/* The sum key of sample s, whose stacks hash to uhash and khash. */
static __always_inline void sum_key_init(struct offcpu_sum_key *k, const struct offcpu_sample *s,
					 __u64 uhash, __u64 khash)
{
	k->pid = s->pid;
	k->tid = s->tid;
	k->start_time = s->start_time;
	k->uhash = uhash;
	k->khash = khash;
	k->cgroup = s->cgroup;
	k->state = s->state;
	k->gen = 0;
}

/*
 * Both stacks of current into stack[] (user frames first, kernel frames
 * from stack[OFFCPU_MAX_STACK]), kernel frames skipping kskip; a failed
 * walk leaves the stack empty and counts udrop or kdrop.
 */
static __always_inline void take_stacks(void *ctx, __u64 *stack, __u32 *ulen, __u32 *klen,
					bool user, __u64 kskip, __u32 udrop, __u32 kdrop)
{
	long n;

	*ulen = 0;
	*klen = 0;
	if (want_kstack) {
		n = bpf_get_stack(ctx, &stack[OFFCPU_MAX_STACK], OFFCPU_MAX_STACK * 8,
				  kskip & BPF_F_SKIP_FIELD_MASK);
		if (n > 0)
			*klen = n / 8;
		else
			drop(kdrop);
	}
	if (want_ustack && user && unwind_dwarf) {
		ustack_walk(ctx, (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf()), stack,
			    ulen, UNW_SCRATCH_WAKING, udrop);
	} else if (want_ustack && user) {
		n = bpf_get_stack(ctx, stack, OFFCPU_MAX_STACK * 8, BPF_F_USER_STACK);
		if (n > 0)
			*ulen = n / 8;
		else
			drop(udrop);
	}
}

/*
 * t adds a sample of time now to the sums: note it, so that its exit or
 * exec is noted, and its sums are timed before either. Returns the key's gen.
 */
static __always_inline __u32 summed_at(struct offcpu_task *t, __u64 now)
{
	t->summed = 1;
	t->last_sum = now;
	return t->gen;
}

/* summed_at for a task whose storage is not at hand. */
static __always_inline __u32 mark_summed(struct task_struct *task, __u64 now)
{
	struct offcpu_task *t = bpf_task_storage_get(&tasks, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (t)
		return summed_at(t, now);
	drop(OFFCPU_DROP_TASK_STORAGE);
	return 0;
}

/*
 * A waiting task is back and was woken by someone noted at sched_waking:
 * emit (or sum) its interval of delta ns together with that waker, so
 * that one off-CPU sample and one offcpu-wakeup sample come out of it.
 * false: no waker, or no room for it; the caller counts the interval
 * alone, as without --wakeups.
 */
static __always_inline bool waker_in(struct task_struct *next, struct offcpu_task *t, __u64 delta,
				     __u64 now)
{
	struct offcpu_waker *w = bpf_task_storage_get(&wakers, next, 0, 0);
	struct offcpu_sample *v;
	struct offcpu_wsum_key k;
	struct offcpu_wsample *ws;
	__u32 zero = 0, idx = sum_active & 1;
	void *map = idx ? (void *)&wsum1 : (void *)&wsum0;
	bool ok;

	if (!w || !w->time || w->interval != t->ts_out)
		return false; /* none, or one of an interval that ended unseen */
	w->time = 0;
	if (delta < thresh_ns) {
		sum_key_init(&k.k, &t->s, t->uhash, t->khash);
		k.wpid = w->pid;
		k.wtid = w->tid;
		k.wuhash = hash_frames(w->stack, w->ulen);
		k.wkhash = hash_frames(&w->stack[OFFCPU_MAX_STACK], w->klen);
		k.k.gen = summed_at(t, now);
		v = bpf_map_lookup_elem(map, &k);
		if (v) { /* the common case: no copy */
			__sync_fetch_and_add(&v->period, delta);
			__sync_fetch_and_add(&v->count, 1);
			sum_ended(v, now);
			return true;
		}
	}
	ws = bpf_map_lookup_elem(&wscratch, &zero);
	if (!ws)
		return false;
	bpf_probe_read_kernel(&ws->s, sizeof(ws->s), &t->s);
	bpf_probe_read_kernel(&ws->w, sizeof(ws->w), w);
	ws->s.cpu = bpf_get_smp_processor_id();
	if (delta >= thresh_ns) {
		ws->s.time = now;
		ws->s.period = delta;
		ws->s.count = 1;
		ok = !bpf_ringbuf_output(&events, ws, sizeof(*ws), ringbuf_flags());
	} else {
		ok = sum_add(map, &wsum_entries[idx], &k, &ws->s, delta, now);
	}
	if (!ok)
		drop(OFFCPU_DROP_WAKER_LOST);
	return ok;
}

/*
 * One wait for a CPU of `delay` ns, ending now, with the identity and
 * stacks of s (hashing to uhash, khash): a sched-delay sample, direct or
 * summed like off-CPU ones. s's scratch fields (time, period, count, cpu)
 * are overwritten; its state is restored.
 */
static __always_inline void delay_emit(struct task_struct *task, struct offcpu_sample *s,
				       __u64 uhash, __u64 khash, __u32 kind, __u64 delay, __u64 now)
{
	__u32 state = s->state;
	struct offcpu_sum_key k;

	s->state = OFFCPU_SCHED_DELAY | kind;
	s->cpu = bpf_get_smp_processor_id();
	if (delay >= thresh_ns) {
		s->time = now;
		s->period = delay;
		s->count = 1;
		if (bpf_ringbuf_output(&events, s, sizeof(*s), ringbuf_flags()))
			drop(OFFCPU_DROP_RINGBUF);
	} else {
		sum_key_init(&k, s, uhash, khash);
		k.gen = mark_summed(task, now);
		sum_or_emit(&k, s, delay, now);
	}
	s->state = state;
}

/*
 * prev leaves the CPU without an off-CPU interval: preempted (still
 * runnable: the wait for a CPU starts now) or asleep in a state off-CPU
 * leaves out (it starts at the wakeup). Note who and where.
 */
static __always_inline void delay_out(void *ctx, struct task_struct *prev, unsigned int prev_state,
				      __u64 clk)
{
	struct offcpu_delay *d;
	struct pt_regs *regs;

	d = bpf_task_storage_get(&delays, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!d) {
		drop(OFFCPU_DROP_DELAY_STORAGE);
		return;
	}
	d->s.pid = prev->tgid;
	d->s.tid = prev->pid;
	d->s.start_time = prev->start_time;
	d->s.cgroup = bpf_get_current_cgroup_id();
	/* as switch_out: own user walk, kernel stacks from the cache */
	d->s.ulen = 0;
	d->s.klen = 0;
	d->khash = 0;
	regs = (struct pt_regs *)bpf_task_pt_regs(prev);
	if (want_ustack && prev->mm)
		ustack_walk(ctx, regs, d->s.stack, &d->s.ulen, UNW_SCRATCH_SWITCH, OFFCPU_DROP_USTACK);
	d->uhash = hash_frames(d->s.stack, d->s.ulen);
	if (want_kstack)
		kstack_take(ctx, prev, regs, &d->s, d->uhash, &d->khash, &d->sp);
	if (!prev_state) {
		d->s.state = 0;
		d->ts_queued = clk;
		d->pending = 0;
	} else {
		d->s.state = prev_state & (OFFCPU_STATE_S | OFFCPU_STATE_D);
		if (!d->s.state)
			d->s.state = OFFCPU_STATE_OTHER;
		d->ts_queued = 0;
		d->pending = 1;
	}
}

/*
 * When p, switched in at clk after waiting since t->ts_out, was woken: the
 * start of its wait for a CPU by the scheduler's own accounting (sched_info,
 * as /proc/PID/schedstat has it). Its enqueue's time (last_queued, on
 * this run queue's clock) is not yet accounted at this tracepoint; any
 * earlier part of the wait, on the queue of another CPU it was moved
 * from, was added to run_delay since the switch-out. 0 when sched_info
 * cannot tell: a switch-in missed since (pcount moved), or no such
 * accounting (the sched_wakeup program then times the wakeup). Reading
 * it here, rather than running a program at every wakeup, is the same
 * time: the wakeup's enqueue sets last_queued from the clock it reads.
 */
static __always_inline __u64 woken_at(struct task_struct *p, const struct offcpu_task *t, __u64 clk)
{
	__u64 queued, before, waited;

	if (!bpf_core_field_exists(p->sched_info.last_queued))
		return 0;
	queued = p->sched_info.last_queued;
	before = p->sched_info.run_delay;
	if (!queued || queued > clk || p->sched_info.pcount != t->pcount_out || before < t->delay_out)
		return 0;
	waited = clk - queued + (before - t->delay_out);
	return clk - t->ts_out > waited ? clk - waited : t->ts_out;
}

/* The end of next's off-CPU interval (t: its storage): its wakeup, else clk. */
static __always_inline __u64 interval_end(struct task_struct *next, const struct offcpu_task *t,
					  __u64 clk)
{
	__u64 wake = t->ts_wake ? t->ts_wake : woken_at(next, t, clk);

	return wake ? wake : clk;
}

/*
 * next gets the CPU at clk (its run queue's clock, as the intervals') and
 * now (the samples' time line): its wait for it ends. After an off-CPU
 * interval the wait started at the wakeup and the stack is the one it
 * slept in; otherwise it is what delay_out (or the fork) noted.
 */
static __always_inline void delay_in(struct task_struct *next, struct offcpu_task *t, __u64 now,
				     __u64 clk)
{
	struct offcpu_delay *d;
	__u64 since;

	if (t && t->ts_out) {
		since = interval_end(next, t, clk);
		if (since < clk)
			delay_emit(next, &t->s, t->uhash, t->khash, t->s.state, clk - since, now);
		return;
	}
	d = bpf_task_storage_get(&delays, next, 0, 0);
	if (!d)
		return;
	since = d->ts_queued;
	d->ts_queued = 0;
	d->pending = 0;
	if (since && since < clk)
		delay_emit(next, &d->s, d->uhash, d->khash, d->s.state, clk - since, now);
}

/* The run-queue delay side of one context switch (--sched-delay). */
static __always_inline void sched_delay_switch(void *ctx, struct task_struct *prev,
					       struct task_struct *next, struct offcpu_task *tn,
					       unsigned int prev_state, bool measured, __u64 now,
					       __u64 clk)
{
	if (!measured && thread_kind_wanted(prev->flags) && wanted(prev->tgid, prev->pid))
		delay_out(ctx, prev, prev_state, clk);
	delay_in(next, tn, now, clk);
}

/* ---- end of wakers and run-queue delay ---- */

/*
 * ---- waits in progress at the start and the stop of the recording ----
 *
 * A target already waiting when the recording starts has no switch-out
 * for the programs to see: the offcpu_start iterator finds it (asleep, or
 * runnable with --sched-delay), notes its stacks in `starts` and marks its
 * task storage (start_pending); its wait counts from the start (rec_start)
 * and ends at its wakeup, read at its switch-in from the scheduler's own
 * accounting (sched_info.last_queued: the time it was queued, i.e. woken).
 * At the stop, the offcpu_stop iterator ends every wait still open at the
 * stop (rec_stop). Both kinds are direct samples flagged
 * OFFCPU_IN_PROGRESS_START / _STOP: only time inside the recording counts.
 *
 * The iterator and the switch program never write the same storage: a
 * target seen by the iterator has no task storage yet (the programs have
 * not seen it switch out since they were attached), and the iterator's
 * only write to the one it creates is start_pending. A wait is taken as
 * in progress only while the task's count of switch-ins is the one the
 * iterator read (st->pcount): a task that ran meanwhile is not waiting
 * since the start.
 */

/* Emit s as one direct sample of period ns, now, with this state. */
static __always_inline void emit_direct(struct offcpu_sample *s, __u32 state, __u64 period, __u64 now)
{
	s->state = state;
	s->time = now;
	s->period = period;
	s->count = 1;
	s->cpu = bpf_get_smp_processor_id();
	if (bpf_ringbuf_output(&events, s, sizeof(*s), ringbuf_flags()))
		drop(OFFCPU_DROP_RINGBUF);
}

/*
 * The wait in progress at the start of task p (st, of kind `kind`) ended:
 * p was woken at `wake` (0: unknown) and gets the CPU at `run` (run-queue
 * clock; now: the samples' clock). Off-CPU up to the wakeup, run-queue
 * delay after it.
 */
static __always_inline void start_end(struct offcpu_start *st, __u32 kind, __u64 wake, __u64 run,
				      __u64 now)
{
	__u32 state = st->s.state;
	__u64 off;

	if (kind == OFFCPU_START_QUEUED) {
		if (run > rec_start)
			emit_direct(&st->s, OFFCPU_SCHED_DELAY | OFFCPU_IN_PROGRESS_START, run - rec_start,
				    now);
		return;
	}
	if (!wake || wake < rec_start || wake > run)
		wake = kind == OFFCPU_START_SLEEP ? run : 0;
	off = wake > rec_start ? wake - rec_start : 0;
	/* -m/-M judge the part inside the recording: the period written */
	if (kind == OFFCPU_START_SLEEP && block_time_kept(off))
		emit_direct(&st->s, state | OFFCPU_IN_PROGRESS_START, off, now);
	if (want_sched_delay && wake && wake < run)
		emit_direct(&st->s, OFFCPU_SCHED_DELAY | state, run - wake, now);
}

/* next, waiting since the start (t->start_pending), gets the CPU. */
static __always_inline void start_in(struct task_struct *next, struct offcpu_task *t, __u64 now,
				     __u64 clk)
{
	__u32 kind = t->start_pending;
	struct offcpu_start *st;

	t->start_pending = 0;
	st = bpf_task_storage_get(&starts, next, 0, 0);
	if (!st)
		return;
	/* pcount counts this switch-in only after the tracepoint */
	if (next->sched_info.pcount != st->pcount) {
		drop(OFFCPU_DROP_UNCLOSED);
		return;
	}
	start_end(st, kind, next->sched_info.last_queued, clk, now);
}

/*
 * p, waiting since the start, runs (it switches out, is preempted or
 * exits) without its switch-in seen: as interval_unclosed, end its wait
 * from sched_info when it was switched in exactly once since.
 */
static __always_inline void start_unclosed(struct offcpu_task *t, struct task_struct *p, __u64 now)
{
	__u32 kind = t->start_pending;
	struct offcpu_start *st;
	__u64 pcount, delay, arrival;

	t->start_pending = 0;
	st = bpf_task_storage_get(&starts, p, 0, 0);
	if (!st)
		return;
	pcount = p->sched_info.pcount;
	delay = p->sched_info.run_delay;
	arrival = p->sched_info.last_arrival;
	if (pcount != st->pcount + 1 || delay < st->run_delay || arrival < rec_start ||
	    arrival - rec_start < delay - st->run_delay) {
		drop(OFFCPU_DROP_UNCLOSED);
		return;
	}
	if (kind == OFFCPU_START_SLEEP)
		stat(OFFCPU_STAT_CLOSED_BY_SCHED_INFO);
	start_end(st, kind, arrival - (delay - st->run_delay), arrival, now);
}

/* ---- end of waits in progress (the iterators: iter.bpf.h, included below) ---- */

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
	k.gen = summed_at(t, now);
	t->s.cpu = bpf_get_smp_processor_id();
	sum_or_emit(&k, &t->s, delta, now);
}

/*
 * The scheduler's own run-delay accounting (sched_info, as in
 * /proc/PID/schedstat), kept whatever the tracepoints show: the number of
 * switch-ins, the time spent waiting on a run queue, the last switch-in (rq
 * clock). false when the kernel has no such accounting.
 */
static __always_inline bool task_sched_info(struct task_struct *p, __u32 *pcount, __u64 *delay,
					    __u64 *arrival)
{
	if (!bpf_core_field_exists(p->sched_info.last_arrival))
		return false;
	*pcount = p->sched_info.pcount; /* BTF pointer: plain loads */
	*delay = p->sched_info.run_delay;
	*arrival = p->sched_info.last_arrival;
	return true;
}

/*
 * The task p runs (it switches out again, or exits) but its last interval
 * is still open: the switch program missed its switch-in. The kernel skips
 * a tracepoint's programs at times (while another program attaches to it;
 * on some hosts whenever a hidden agent's thread is the one switched out),
 * and the wakeup may be missed alike. End the interval at its wakeup:
 *  - seen by the wakeup program: its time;
 *  - else, when p has been switched in exactly once since (sched_info's
 *    count), that switch-in's time less the run-queue wait before it, both
 *    from sched_info: the time it was queued, i.e. woken;
 *  - else the end is not known: count the interval lost.
 * With --sched-delay the run-queue wait before the missed switch-in is
 * emitted too when sched_info gives it.
 */
static __always_inline void interval_unclosed(struct offcpu_task *t, struct task_struct *p,
					      __u64 now)
{
	__u64 delay = 0, arrival = 0, wait = 0, wake = 0;
	__u32 pcount = 0;
	bool once;

	if (t->start_pending)
		start_unclosed(t, p, now);
	if (!t->ts_out)
		return;
	once = task_sched_info(p, &pcount, &delay, &arrival) && pcount == t->pcount_out + 1 &&
	       delay >= t->delay_out && arrival >= t->ts_out;
	if (once) {
		wait = delay - t->delay_out;
		if (arrival - t->ts_out >= wait)
			wake = arrival - wait;
	}
	if (t->ts_wake && t->ts_wake >= t->ts_out) {
		if (block_time_kept(t->ts_wake - t->ts_out))
			interval_done(t, t->ts_wake - t->ts_out, now);
		stat(OFFCPU_STAT_CLOSED_AT_WAKEUP);
	} else if (wake) {
		if (block_time_kept(wake - t->ts_out))
			interval_done(t, wake - t->ts_out, now);
		stat(OFFCPU_STAT_CLOSED_BY_SCHED_INFO);
	} else {
		drop(OFFCPU_DROP_UNCLOSED);
	}
	if (want_sched_delay && once)
		delay_emit(p, &t->s, t->uhash, t->khash, t->s.state, wait, now);
	t->ts_out = 0;
}

/* Note a task leaving the CPU to wait: time, state, stacks. */
static __always_inline void switch_out(void *ctx, struct task_struct *prev, __u32 state, __u64 now,
				       __u64 clk)
{
	struct offcpu_task *t;
	struct pt_regs *regs;
	__u64 arrival;

	t = bpf_task_storage_get(&tasks, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t) {
		drop(OFFCPU_DROP_TASK_STORAGE);
		return;
	}
	interval_unclosed(t, prev, now);
	t->s.pid = prev->tgid;
	t->s.tid = prev->pid;
	t->s.start_time = prev->start_time;
	t->s.state = state;
	t->s.cgroup = bpf_get_current_cgroup_id();
	t->s.ulen = 0;
	t->s.klen = 0;
	/* prev's user registers, read once for both stacks */
	regs = (struct pt_regs *)bpf_task_pt_regs(prev);
	if (want_ustack && prev->mm)
		ustack_walk(ctx, regs, t->s.stack, &t->s.ulen, UNW_SCRATCH_SWITCH, OFFCPU_DROP_USTACK);
	t->uhash = hash_frames(t->s.stack, t->s.ulen);
	if (want_kstack)
		kstack_take(ctx, prev, regs, &t->s, t->uhash, &t->khash, &t->sp);
	t->ts_wake = 0;
	task_sched_info(prev, &t->pcount_out, &t->delay_out, &arrival);
	t->ts_out = clk;
}

/* A waiting task is back: emit its interval or add it to the sums (t: its storage). */
static __always_inline void switch_in(struct task_struct *next, struct offcpu_task *t, __u64 now,
				      __u64 clk)
{
	__u64 end, delta;

	if (test_hide && bpf_get_prandom_u32() % test_hide == 0)
		return;
	if (!t)
		return;
	if (!t->ts_out) {
		if (t->start_pending)
			start_in(next, t, now, clk);
		return;
	}
	/*
	 * Off-CPU ends at the wakeup: from there on it waits for a CPU. The
	 * two ends may be read on two CPUs' clocks, which can be a few ns
	 * apart: never let that make a negative interval.
	 */
	end = interval_end(next, t, clk);
	delta = end > t->ts_out ? end - t->ts_out : 0;
	if (block_time_kept(delta) && !(want_wakeups && waker_in(next, t, delta, now)))
		interval_done(t, delta, now);
	t->ts_out = 0;
}

/*
 * A task is preempted: if it still has an interval open, its switch-in was
 * missed; end that interval now, while sched_info can still time it, and
 * before a later switch-in would stretch it over this run (and --sched-delay
 * would count this run as a wait).
 */
static __always_inline void preempted(struct task_struct *prev, __u64 now)
{
	struct offcpu_task *t = bpf_task_storage_get(&tasks, prev, 0, 0);

	if (t && (t->ts_out || t->start_pending))
		interval_unclosed(t, prev, now);
}

/* record --chains: every wait of every thread (the switch, waking and fork sides). */
#include "chains.bpf.h"

SEC("tp_btf/sched_switch")
int BPF_PROG(offcpu_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u64 now = bpf_ktime_get_ns(); /* the samples' time line */
	__u64 clk = task_rq_clock(prev); /* the intervals': this CPU's run queue */
	__u32 state = prev_state & (OFFCPU_STATE_S | OFFCPU_STATE_D);
	struct offcpu_task *tn; /* next's, for both switch-in sides */
	bool measured;

	/*
	 * The state, not `preempt`, decides: a task preempted after it set
	 * S or D is not on the run queue's books (schedstat counts it as
	 * asleep), and perf --off-cpu counts it too.
	 */
	measured = (state & state_mask) && thread_kind_wanted(prev->flags) &&
		   wanted(prev->tgid, prev->pid);
	if (measured)
		switch_out(ctx, prev, state, now, clk);
	else if (!prev_state && thread_kind_wanted(prev->flags))
		preempted(prev, now);
	tn = bpf_task_storage_get(&tasks, next, 0, 0);
	if (want_sched_delay) /* before switch_in: it reads next's interval */
		sched_delay_switch(ctx, prev, next, tn, prev_state, measured, now, clk);
	switch_in(next, tn, now, clk);
	if (want_chains)
		chain_switch(ctx, prev, next, prev_state, measured, now, clk);
	return 0;
}

/*
 * A waiting task is woken (queued on a run queue): its off-CPU interval
 * ends here, at the clock of that run queue, as the kernel's own accounting
 * (schedstat) has it; the time to its switch-in is run-queue delay. Loaded
 * only on a kernel without sched_info: elsewhere woken_at reads the same
 * time at the switch-in.
 */
SEC("tp_btf/sched_wakeup")
int BPF_PROG(offcpu_wakeup, struct task_struct *p)
{
	struct offcpu_task *t;

	if (test_hide && bpf_get_prandom_u32() % test_hide == 0)
		return 0;
	t = bpf_task_storage_get(&tasks, p, 0, 0);
	if (t && t->ts_out && !t->ts_wake)
		t->ts_wake = task_rq_clock(p);
	return 0;
}

/*
 * --wakeups: a waiting task is being woken by current: note who, with both
 * stacks, for the task's switch-in. Only tasks inside a measured off-CPU
 * interval, not yet woken, qualify. In an interrupt, current is the task
 * it came upon: user space sees the interrupt in the kernel stack.
 */
SEC("tp_btf/sched_waking")
int BPF_PROG(offcpu_waking, struct task_struct *p)
{
	struct offcpu_task *t = bpf_task_storage_get(&tasks, p, 0, 0);
	struct task_struct *cur;
	struct offcpu_waker *w;

	if (want_chains)
		chain_waking(ctx, p);
	if (!t || !t->ts_out || t->ts_wake)
		return 0;
	w = bpf_task_storage_get(&wakers, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!w) {
		drop(OFFCPU_DROP_WAKER_STORAGE);
		return 0;
	}
	cur = bpf_get_current_task_btf();
	w->pid = cur->tgid;
	w->tid = cur->pid;
	bpf_get_current_comm(w->comm, sizeof(w->comm));
	take_stacks(ctx, w->stack, &w->ulen, &w->klen, cur->mm != NULL, 0,
		    OFFCPU_DROP_WAKER_USTACK, OFFCPU_DROP_WAKER_KSTACK);
	w->interval = t->ts_out;
	w->time = bpf_ktime_get_ns();
	return 0;
}

/*
 * --sched-delay: a new task is queued for its first run; its wait for a
 * CPU starts here (there is no stack of its own yet).
 */
SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(offcpu_wakeup_new, struct task_struct *p)
{
	struct offcpu_delay *d;

	if (want_chains)
		chain_new(ctx, p);
	if (!want_sched_delay || !thread_kind_wanted(p->flags) || !wanted(p->tgid, p->pid))
		return 0;
	d = bpf_task_storage_get(&delays, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!d) {
		drop(OFFCPU_DROP_DELAY_STORAGE);
		return 0;
	}
	d->s.pid = p->tgid;
	d->s.tid = p->pid;
	d->s.start_time = p->start_time;
	d->s.cgroup = bpf_get_current_cgroup_id();
	d->s.state = OFFCPU_STATE_NEW;
	d->s.ulen = 0;
	d->s.klen = 0;
	d->uhash = hash_frames(d->s.stack, 0);
	d->khash = d->uhash;
	d->pending = 0;
	d->ts_queued = task_rq_clock(p);
	/*
	 * Its task storage too, now: made at its first switch-in instead (to
	 * note a summed first wait, so that its exit times the sum), the
	 * creation failed for 1-2 new tasks of every waitmix run, and those
	 * sums were timed at the drain, perhaps after the task's EXIT.
	 */
	if (!bpf_task_storage_get(&tasks, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE))
		drop(OFFCPU_DROP_TASK_STORAGE);
	return 0;
}

/* --sched-delay: the wakeup of a sleep off-CPU left out starts its wait. */
SEC("tp_btf/sched_wakeup")
int BPF_PROG(offcpu_delay_wakeup, struct task_struct *p)
{
	struct offcpu_delay *d = bpf_task_storage_get(&delays, p, 0, 0);

	if (d && d->pending && !d->ts_queued) {
		d->pending = 0;
		d->ts_queued = task_rq_clock(p);
	}
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

	if (ptgid == ctgid)
		return 0;
	if (follow_children && bpf_map_lookup_elem(&tgids, &ptgid))
		bpf_map_update_elem(&tgids, &ctgid, &one, BPF_ANY);
	if (unwind_dwarf)
		unwind_fork(ptgid, ctgid);
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
		interval_unclosed(t, p, now);
	if (t && t->summed) {
		struct offcpu_exit_key k = { .tid = p->pid, .gen = t->gen, .start_time = p->start_time };

		if (bpf_map_update_elem(&exits, &k, &now, BPF_ANY))
			drop(OFFCPU_DROP_EXITS_FULL);
	}
	if (filter_tgid && !BPF_CORE_READ(p, signal, live.counter)) {
		__u32 tgid = p->tgid;

		bpf_map_delete_elem(&tgids, &tgid);
	}
	if (unwind_dwarf && !BPF_CORE_READ(p, signal, live.counter))
		unwind_exit(p->tgid);
	return 0;
}

/*
 * The command recorded starts at its exec, as perf's enable_on_exec: the
 * child forked by the recorder is not traced until it has become the
 * command (its own name and maps, written by the exec before this
 * tracepoint), so that nothing of the recorder's image is recorded under
 * its pid, which would show as ":PID" with [unknown] frames. Its CPU
 * samples are kept from here on too (offcpu_cpu_filter reads the same map).
 */
static __always_inline void trace_from_exec(struct task_struct *p)
{
	__u32 tgid = p->tgid;
	__u8 one = 1;

	bpf_map_update_elem(&tgids, &tgid, &one, BPF_NOEXIST);
}

/*
 * End the generation of a task's sums: those so far are noted under their
 * gen (with the task's tid and start time, as they are keyed), timed at the
 * last of them; later sums go under the next gen.
 */
static __always_inline void gen_end(struct offcpu_task *t, __u32 tid, __u64 start_time)
{
	struct offcpu_exit_key k = { .tid = tid, .gen = t->gen, .start_time = start_time };

	if (bpf_map_update_elem(&exits, &k, &t->last_sum, BPF_ANY))
		drop(OFFCPU_DROP_EXITS_FULL);
	t->gen++;
	t->summed = 0;
}

/*
 * A task with pending sums is renamed (prctl, or its exec, which renames it
 * before it loads the new image): its sums so far were taken under the old
 * name, which the COMM record written at this point replaces. They are timed
 * before it, so that readers name them as they were; waits later in the
 * exec (reading the new image) go under the next gen.
 */
SEC("tp_btf/task_rename")
int BPF_PROG(offcpu_rename, struct task_struct *task, const char *comm)
{
	struct offcpu_task *t = bpf_task_storage_get(&tasks, task, 0, 0);

	/* a thread exec'ing in its leader's place has its old tid in its sums: offcpu_exec */
	if (!t || !t->summed || t->s.tid != (__u32)task->pid)
		return 0;
	gen_end(t, task->pid, BPF_CORE_READ(task, start_time));
	return 0;
}

/*
 * A task with pending sums execs: its sums so far belong to the old image,
 * whose maps the exec's COMM and MMAP records (written before this
 * tracepoint) replace. Note them under their gen, timed at the last of
 * them, which is before the exec; later sums go under the next gen. A
 * thread other than the leader takes the leader's pid and start time in
 * the exec: its earlier sums are keyed by its old ones.
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(offcpu_exec, struct task_struct *p, pid_t old_pid)
{
	struct offcpu_task *t = bpf_task_storage_get(&tasks, p, 0, 0);

	if (exec_tgid && p->tgid == exec_tgid)
		trace_from_exec(p);
	if (unwind_dwarf)
		unwind_exec(p, (kernel_threads || !(p->flags & PF_KTHREAD)) && wanted(p->tgid, p->pid));
	if (!t || !t->summed)
		return 0;
	gen_end(t, old_pid, old_pid != p->pid ? t->s.start_time : BPF_CORE_READ(p, start_time));
	return 0;
}

/*
 * --call-graph dwarf: CPU samples of the perf events, unwound here and
 * emitted on the cpu_samples ring (the kernel writes none of its own: the
 * program returns 0). The perf event is opened without callchains, so the
 * kernel does not walk the stacks first.
 */
SEC("perf_event")
int offcpu_cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), cs = ctx->regs.csx;
	struct task_struct *task = bpf_get_current_task_btf();
	struct offcpu_cpu_sample *s;
	struct pt_regs *regs;
	bool user = (cs & 3) == 3; /* the sample interrupted user mode */
	bool other = (filter_kind_cpu && !thread_kind_wanted(task->flags)) ||
		     !wanted(id >> 32, (__u32)id);
	long n;

	if (other && !want_chains) /* --chains keeps the others' too, marked */
		return 0;
	s = bpf_ringbuf_reserve(&cpu_samples, sizeof(*s), 0);
	if (!s) {
		drop(OFFCPU_DROP_CPU_RINGBUF);
		return 0;
	}
	s->time = bpf_ktime_get_ns();
	s->period = ctx->sample_period;
	s->ip = ctx->regs.ip;
	s->pid = id >> 32;
	s->tid = (__u32)id;
	s->cpu = bpf_get_smp_processor_id();
	s->user = user | (other ? OFFCPU_CPU_SAMPLE_OTHER : 0);
	s->ulen = 0;
	s->klen = 0;
	if (!user && want_kstack) {
		n = bpf_get_stack(ctx, &s->stack[OFFCPU_MAX_STACK], OFFCPU_MAX_STACK * 8, 0);
		if (n > 0)
			s->klen = n / 8;
	}
	if (want_ustack && task->mm) {
		if (user && (cs & 0xffff) == OFFCPU_USER_CS) {
			ustack_regs(ctx->regs.ip, ctx->regs.sp, ctx->regs.bp, s->stack, &s->ulen,
				    UNW_SCRATCH_CPU);
		} else if (user) {
			n = bpf_get_stack(ctx, s->stack, OFFCPU_MAX_STACK * 8, BPF_F_USER_STACK);
			if (n > 0)
				s->ulen = n / 8;
		} else {
			regs = (struct pt_regs *)bpf_task_pt_regs(task);
			ustack_walk(ctx, regs, s->stack, &s->ulen, UNW_SCRATCH_CPU, OFFCPU_DROP__NR);
		}
	}
	bpf_ringbuf_submit(s, bpf_ringbuf_query(&cpu_samples, BPF_RB_AVAIL_DATA) > (4 << 20) / 4
				      ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
	return 0;
}

/* The iterators of the waits in progress (after interval_unclosed, which they use). */
#include "iter.bpf.h"

/* CPU samples of the perf events: keep only the targets' (return 1). */
SEC("perf_event")
int offcpu_cpu_filter(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();

	if (filter_kind_cpu && !thread_kind_wanted(bpf_get_current_task_btf()->flags))
		return 0;
	return wanted(id >> 32, (__u32)id) ? 1 : 0;
}

char LICENSE[] SEC("license") = "GPL";
