// SPDX-License-Identifier: GPL-2.0-only
/*
 * offcpu's kernel half: every interval a task spends off the CPU waiting
 * (state S or D), with the user and kernel stacks it blocked in.
 *
 *   switch-out (prev is current): note the time, the state and where it
 *                                 stops: its stacks, as ids (below);
 *   switch-in  (next):            the wait ended at its wakeup (the
 *                                 scheduler's own accounting tells when);
 *                                 a long one is sent at once on the ring
 *                                 buffer, a short one added to the task's
 *                                 accumulator while its key repeats, else
 *                                 to the in-kernel sums user space drains.
 *
 * Stacks are sent once: a stack's id is a hash of its frames, its frames go
 * to user space the first time it is seen (stack_announce), and every
 * sample, sum and task carries the 8-byte id. Kernel and DWARF user stacks
 * come from caches by blocking point; a hit is served only when what the
 * stack was made of is still in place, read once and checked as read.
 *
 * Exactly once: the accumulators and the sum maps are double-buffered
 * (sum_active picks the half programs write); user space drains the other
 * half after a grace period: each program run counts itself in and out of
 * a per-CPU counter (run_begin, run_end), and user space waits until every
 * CPU has been seen outside (offcpu_bpf.c, wait_quiet). The stop is the
 * same wait, after `stopping` is set: the programs start and end no wait
 * but note what the stop iterator needs, which ends every wait still open
 * (stop_switch, stop_task); then `stopped`. Every loss is counted in
 * `drops`.
 *
 * How the file reads: the knobs, the state and the maps; the steps
 * declared, as a table of contents; then the programs, in the order a wait
 * meets them (switch, waking, wakeup, fork, exit, rename, exec; then the
 * CPU-sample programs and the iterators, in iter.bpf.h); then the steps,
 * each section in the order its callers use them: a program run; the
 * switch (run-queue delay, --sched-delay, is part of it); counting a wait;
 * stacks; wakers; waits in progress; targets and counters.
 *
 * Its size (about 2 100 lines, a third of them comments): the programs
 * share the task storage, the maps and most of the steps, and BPF has no
 * linking between files, so they stay together; the parts that stand apart
 * are in included files: the DWARF unwinder (unwind.bpf.h) and the
 * iterators (iter.bpf.h). The steps that take stacks are global functions
 * (stack_user, stack_kernel, stack_announce), verified once each, not at
 * every call: what keeps the programs at a fifth of the verifier's limit.
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
/* A global function's argument that is the program's context. */
#define __arg_ctx __attribute__((btf_decl_tag("arg:ctx")))

/* ---- knobs, set by user space between open and load ---- */

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
const volatile __u64 ttwu_lo = 0, ttwu_hi = 0;   /* try_to_wake_up's */
const volatile __u64 sys_lo = 0, sys_hi = 0;     /* do_syscall_64's */
const volatile bool use_kcache = true;      /* kernel stacks from the cache */
const volatile bool want_wakeups = false;    /* --wakeups */
const volatile bool want_sched_delay = false; /* --sched-delay */
/*
 * The sched_wakeup program times the wakeups of off-CPU intervals (kernels
 * without sched_info, or OFFCPU_TEST_WAKEUP_PROG); with --sched-delay it
 * also starts the run-queue wait of a sleep off-CPU leaves out.
 */
const volatile bool wakeup_times_intervals = false;
/*
 * Tests only (OFFCPU_TEST_HIDE): act as if 1 in test_hide of the switch-ins
 * and wakeups had not reached the programs, as the kernel does at times, so
 * that the repair in interval_unclosed is exercised. 0: off (the verifier
 * drops the branches).
 */
const volatile __u32 test_hide = 0;
/*
 * Tests only (OFFCPU_TEST_HIDE_WAKING): act as if 1 in N sched_waking hits
 * had not reached the programs, as the kernel hides an interrupt's wakeup
 * while a hidden agent's thread is current. 0: off.
 */
const volatile __u32 test_hide_waking = 0;
/*
 * Tests only (OFFCPU_TEST_STALL): 1 in 8 of the waits counted stall this
 * CPU for test_stall_ns inside the switch program, after the program read
 * the half of the sums it writes and the task's accumulator there, and
 * before it writes either (or ends the wait), as a vCPU the host stops
 * there would: drains and the stop must wait for it.
 */
const volatile __u64 test_stall_ns = 0;

/* ---- state shared with user space (.bss) ---- */

__u32 sum_active;      /* the half of the accumulators and sums programs write */
__u32 stopped;         /* the recording stopped: programs do nothing */
/*
 * The recording is stopping (set before `stopped`): the stop iterator ends
 * every wait still open, and the programs start and end none (stop_switch).
 */
__u32 stopping;
__u32 flush_half;      /* offcpu_flush: the half it takes (both, when stopped) */
__u32 sum_entries[2];  /* entries created in each sum map since its drain */
__u32 kcache_audit_mask; /* walk 1 served kernel stack cache hit in mask+1 (user space sets it) */
__u32 kstack_skip[4];  /* per hook: frames of BPF and tracing glue above its kernel function */
__u32 calib_done[4];
__u32 exec_tgid;       /* the command (record -- CMD): traced from its first exec on */
__u32 targets_gen;     /* processes that left the targets (target_known) */
__u64 cgroup_id;       /* -G: the cgroup's id, for the iterators (not current) */
/* user space: samples up to this time are written; one stamped before it would be out of order */
__u64 written_upto;
/* The recording's window, on a run queue's clock and on the samples' clock. */
__u64 rec_start, rec_start_mono, rec_stop, rec_stop_mono;

/*
 * The program whose stacks are taken, each with its scratch slots: its
 * kernel stacks start at the function that calls its tracepoint (the
 * switch's at __schedule, a waker's at try_to_wake_up).
 */
enum offcpu_hook {
	OFFCPU_HOOK_SWITCH = 0, /* = UNW_SCRATCH_SWITCH, and so on */
	OFFCPU_HOOK_WAKING,
	OFFCPU_HOOK_CPU,
	OFFCPU_HOOK_ITER,       /* the start iterator (another task's stacks) */
	OFFCPU_HOOK__NR,
};

/* ---- per-task state ---- */

/*
 * A task's last kernel stack at one hook (its own at its switch-out, its
 * last waker's at sched_waking), in its storage: while the task blocks
 * where it blocked last, that stack is checked in place (kmemo_verify)
 * and the cache is not looked up. Written only by the task's own program
 * runs (its switch-out; its wakers, which the scheduler serialises), so
 * read without a seal. The copy of a cache entry it is made from is
 * checked as it is made (kstack_verify).
 */
#define OFFCPU_KMEMO_FRAMES 32
struct offcpu_kmemo {
	struct offcpu_kfp key;
	__u64 id;
	__u32 nr;   /* frames; 0: none kept */
	__u32 slot; /* the syscall's slot found last time, + 1 (kstack_syscall_slot) */
	__u32 uses; /* for the audit (audit_due) */
	__u32 pad;
	__u64 frames[OFFCPU_KMEMO_FRAMES];
	__u16 off[OFFCPU_KMEMO_FRAMES];
};

/*
 * A task's last DWARF user stack at its switch-out (unwind.bpf.h), in its
 * storage: while it blocks where it blocked last (the unw_cache key, the
 * same rbp if the walk used it), the words the walk used are read again in
 * one span and compared here, and the cache is not looked up. Made from a
 * confirmed hit of the cache or from a walk. Written only by the task's
 * own switch-outs, so read without a seal. Its last waker's (--wakeups)
 * is kept alike, written by its wakers, which the scheduler serialises.
 */
#define OFFCPU_UMEMO_WORDS 16
struct offcpu_umemo {
	__u64 ip, sp, bp, exec_id;
	__u64 id;         /* the stack's */
	__u64 missing_pc; /* its facts, counted on a hit as the cache's are */
	__u64 lo, hi;     /* the span read: the lowest word used to the end of the highest */
	__u32 tgid, gen;
	__u32 stats;
	__u32 uses;       /* for the audit (audit_due) */
	__u8 valid;
	__u8 bp_used;
	__u8 nw;          /* words */
	__u8 over;        /* more words, or a wider span, than kept: not valid */
	__u32 pad;
	__u64 addr[OFFCPU_UMEMO_WORDS];
	__u64 val[OFFCPU_UMEMO_WORDS];
};

/* --wakeups: a waker of a waiting task, as sched_waking noted it (waker_note). */
struct offcpu_waker_note {
	__u64 time; /* of the sched_waking; 0 when none is pending */
	struct offcpu_who who;
	char comm[16];
	/*
	 * Noted before the wait's switch-out was traced (untied): the
	 * sched_info.pcount + 1 of the run it came in, written last (waker_of).
	 */
	__u32 tag;
	__u32 pad;
};

/* --wakeups: the last waker of a waiting task, with memos of its stacks. */
struct offcpu_waker {
	struct offcpu_waker_note n;
	__u64 interval; /* the wait it ended (its ts_out): ties the waker to it; 0: untied */
	struct offcpu_kmemo kmemo; /* its kernel stack (stack_kernel) */
	struct offcpu_umemo umemo; /* its DWARF user stack (stack_user_memo) */
};

/*
 * Short waits of one key, summed in the task's own storage while the key
 * repeats (plain adds: only the task's own switch-in and exit write it),
 * flushed to the sum map of its half when the key changes, at exit and
 * exec, and by the offcpu_flush iterator at a drain. v.count 0: empty.
 */
struct offcpu_acc {
	struct offcpu_sum_key k;
	struct offcpu_sum v;
};

/* Accumulator slots: the half (sum_active & 1), plus 2 for run-queue waits. */
#define OFFCPU_ACC_DELAY 2

struct offcpu_task {
	struct offcpu_who who; /* identity, and where it last switched out */
	__u64 ts_out;     /* switch-out of a measured wait, rq clock; 0 when not waiting */
	__u64 ts_wake;    /* its wakeup, rq clock (sched_wakeup program); 0 until known */
	__u32 state;      /* OFFCPU_STATE_* of that wait */
	__u32 pcount_out; /* sched_info.pcount (switch-ins) at its switch-out */
	__u64 delay_out;  /* sched_info.run_delay then */
	/* --sched-delay: a wait for a CPU that off-CPU does not measure */
	__u64 ts_queued;     /* runnable since (preemption, wakeup, fork), rq clock; 0: not waiting */
	__u32 delay_state;   /* what it did before: 0 preempted, OFFCPU_STATE_S/D/OTHER/NEW */
	__u32 delay_pending; /* asleep in a state off-CPU leaves out: the wakeup starts the wait */
	__u32 summed;     /* has summed waits: note its exit */
	__u32 gen;        /* execs and renames seen: the sum keys' gen */
	__u32 start_pending; /* OFFCPU_START_*: waiting since the recording started (see starts) */
	__u32 target_gen; /* targets_gen + 1 when known a target (target_known) */
	__u64 stop_wake;  /* stopping: the wakeup of its open wait, noted at its switch-in */
	__u64 stop_owner; /* stopping: who ends its waits (stop_claim: OFFCPU_STOP_*) */
	struct offcpu_kmemo kmemo; /* its last kernel stack (stack_kernel) */
	struct offcpu_umemo umemo; /* its last DWARF user stack (unwind_user) */
	struct offcpu_waker waker;
	/*
	 * A waker noted before a sleep's switch-out was traced while the
	 * waker of the task's last wait, whose switch-in the kernel hid,
	 * still waits for that switch-out to end the wait: kept aside until
	 * then (waker_note, waker_of).
	 */
	struct offcpu_waker_note early;
	struct offcpu_acc acc[4];
};

/* Who ends a task's waits at the stop (offcpu_task.stop_owner, stop_claim). */
enum {
	OFFCPU_STOP_ITER = 1, /* the stop iterator */
	OFFCPU_STOP_PROG = 2, /* a program: its exit, or a switch that repairs its wait */
};

/* ---- maps ---- */

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct offcpu_task);
} tasks SEC(".maps");

/* Stacks (struct offcpu_stack) and direct samples (struct offcpu_sample). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20); /* resized by user space */
} events SEC(".maps");

/* The sums of short waits, two halves (sum_active picks one). */
struct offcpu_sum_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* memory follows use */
	__uint(max_entries, 8192); /* resized by user space */
	__type(key, struct offcpu_sum_key);
	__type(value, struct offcpu_sum);
} sum0 SEC(".maps"), sum1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct offcpu_sum_map);
} sums SEC(".maps") = {
	.values = { &sum0, &sum1 },
};

/*
 * Per CPU, for the switch program: the samples' clock at a time of the run
 * queue's (now_of), and the task it last saw switched in there (switch_in:
 * current, unless the kernel hid the switch to it).
 */
struct offcpu_cpu_state {
	__u64 clk;
	__u64 mono;
	__u32 last_in; /* its tid */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct offcpu_cpu_state);
} cpu_state SEC(".maps");

/* Per CPU: program runs inside (run_begin to run_end), for user space's grace period. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} active SEC(".maps");

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

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OFFCPU_STAT__NR);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* The ids of the stacks sent to user space (stack_announce): never twice. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u8);
} stacks_sent SEC(".maps");

/* Per CPU and hook: a stack being taken (too big for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OFFCPU_HOOK__NR);
	__type(key, __u32);
	__type(value, struct offcpu_stack);
} stack_scratch SEC(".maps");

/*
 * Kernel stacks by blocking point (struct offcpu_kfp). Walking a kernel
 * stack with the ORC unwinder costs about 1.1 us, and a task blocks at
 * the same few points again and again: a hit gives the stack's id instead.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct offcpu_kfp);
	__type(value, struct offcpu_kstack);
} kcache SEC(".maps");

/* Per CPU and hook: a cache entry being built. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OFFCPU_HOOK__NR);
	__type(key, __u32);
	__type(value, struct offcpu_kstack);
} kscratch SEC(".maps");

/*
 * The words of current's kernel stack from the program's context up to its
 * pt_regs, where a cache key is found and a hit checked (stack_kernel):
 * read in place (loads through task->stack, which the verifier makes
 * fault-safe), never copied.
 */
#define OFFCPU_STACK_WORDS (OFFCPU_THREAD_SIZE / 8)
struct offcpu_kview {
	const __u64 *stk; /* the task's stack */
	__u32 at;         /* the word of the context in it */
	__u32 nw;         /* words from there up to pt_regs */
};

/*
 * A target that was already waiting when the recording started (found by
 * the offcpu_start iterator): how it waited, where (stack ids), and the
 * scheduler's count of its switch-ins then. Written by the iterator only,
 * read when the wait ends (start_in) or at the stop (offcpu_stop).
 */
enum {
	OFFCPU_START_SLEEP = 1,  /* asleep in a recorded state: an off-CPU interval */
	OFFCPU_START_QUEUED = 2, /* runnable, waiting for a CPU (--sched-delay) */
	OFFCPU_START_OTHER = 3,  /* asleep in another state: its run-queue wait follows (--sched-delay) */
};

struct offcpu_start {
	__u32 kind;      /* OFFCPU_START_* */
	__u32 state;     /* OFFCPU_STATE_* */
	__u64 pcount;    /* sched_info.pcount: not switched in since, while equal */
	__u64 run_delay; /* sched_info.run_delay then */
	struct offcpu_who who;
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


/* ---- the steps, defined below the programs in this order ---- */

/* What every run of a program that counts waits works with. */
struct offcpu_run {
	__u64 now;     /* the samples' clock, as run_begin's `clock` says */
	__u64 clk;     /* the intervals' clock: the run queue of the task of the event */
	__u64 *active; /* this CPU's count of runs inside (the grace period) */
	struct offcpu_cpu_state *cs; /* the switch program's: this CPU's (may be NULL) */
	__u32 half;    /* sum_active as read once inside: the half this run writes */
	__u32 cpu;
	bool direct;   /* the stop iterator: every wait a direct sample (wait_done) */
};

/* a program run: the samples' clock it reads (run_begin) */
enum {
	RUN_SWITCH,    /* the switch: the run queue's clock, just updated, advanced to it (now_of) */
	RUN_CURRENT,   /* a program of current's own (exit, exec): bpf_ktime_get_ns */
	RUN_ELSEWHERE, /* of another task's event (waking, wakeup, rename): none, 0 */
};

static __always_inline bool run_begin(struct offcpu_run *r, struct task_struct *p, __u32 clock);
static __always_inline __u64 now_of(struct offcpu_cpu_state *c, __u64 clk);
static __always_inline void run_end(struct offcpu_run *r);
/* the switch */
static __noinline struct offcpu_task *switch_out(const struct offcpu_run *r,
						 struct task_struct *prev, unsigned int prev_state);
static __noinline void switch_in(const struct offcpu_run *r, struct task_struct *next);
static __always_inline void preempted(struct task_struct *prev, const struct offcpu_run *r);
static __always_inline void interval_unclosed(struct offcpu_task *t, struct task_struct *p,
					      const struct offcpu_run *r);
/* What wait_unclosed works with: p's sched_info, and its caller's run (its scalars). */
struct offcpu_unclosed {
	__u64 delay, arrival; /* sched_info's run_delay and last_arrival */
	__u64 now, clk;       /* the run's, as offcpu_run's */
	__u32 pcount;         /* sched_info's */
	__u32 half, cpu;
	__u32 direct;
};
__u64 wait_unclosed(struct offcpu_task *t, struct offcpu_unclosed *u);
static __always_inline __u64 woken_at(struct task_struct *p, const struct offcpu_task *t,
				      __u64 clk);
static __always_inline bool queued_early(struct task_struct *p);
static __always_inline void unclosed_why(__u64 pcount, __u64 pcount_then);
static __always_inline __u64 interval_end(struct task_struct *p, const struct offcpu_task *t,
					  __u64 clk);
/* counting a wait */
static __always_inline void wait_done(struct offcpu_task *t, const struct offcpu_run *r,
				      __u32 state, __u64 delta, bool waker, __u64 at);
static __always_inline __u64 mono_of(__u64 now, __u64 clk_now, __u64 clk);
static __always_inline void key_fill(struct offcpu_sum_key *k, const struct offcpu_task *t,
				     __u32 state);
static __always_inline bool key_is(const struct offcpu_sum_key *k, const struct offcpu_task *t,
				   __u32 state);
static __always_inline void value_fill(struct offcpu_sum *v, const struct offcpu_task *t,
				       __u32 state, __u64 time, __u64 delta, __u32 cpu);
static __always_inline struct offcpu_sample *sample_reserve(__u32 flags, __u32 state, __u32 lost);
static __always_inline void sample_submit(struct offcpu_sample *s);
static __always_inline bool sample_emit(const struct offcpu_sum_key *k, const struct offcpu_sum *v,
					__u32 flags, __u32 lost);
static __always_inline void one_wait_fill(struct offcpu_sample *s, const struct offcpu_who *who,
					  __u32 state, __u64 time, __u64 period, __u32 cpu);
static __always_inline __u64 ringbuf_flags(void);
static __always_inline void sum_add(__u32 half, const struct offcpu_sum_key *k,
				    const struct offcpu_sum *v);
static __always_inline void acc_flush(struct offcpu_task *t, const struct offcpu_run *r);
static __always_inline void gen_end(struct offcpu_task *t, __u32 tid, __u64 start_time);
static __always_inline void test_stall(void);
/* stacks */
static __always_inline void take_stacks(void *ctx, struct task_struct *cur, __u32 hook,
					struct offcpu_who *who, struct offcpu_kmemo *kmemo,
					struct offcpu_umemo *umemo);
__u64 stack_user(void *ctx, __u32 hook, __u32 keep, __u64 memo_check);
__u64 stack_user_memo(void *ctx, __u32 hook, struct offcpu_umemo *um);
#define UNW_CALL_KEEP 0x100
#define UNW_CALL_FRAMES 0x200
#define UNW_CALL_NO_TABLES (~0ULL)
__u64 unwind_user_call(__u64 ip, __u64 sp, __u64 bp, __u32 how, __u64 memo_check);
static __always_inline __u32 ustack_fp(__u64 ip, __u64 fp, __u64 *stack);
__u64 stack_kernel(void *ctx, __u32 hook, __u64 uhash, struct offcpu_kmemo *m);
static __always_inline void kstack_calibrate(void *ctx, __u32 hook);
static __always_inline bool kstack_fingerprint(void *ctx, struct task_struct *cur, __u32 hook,
					       __u64 uhash, __u32 *hint, struct offcpu_kfp *k,
					       struct offcpu_kview *v, __u64 *word);
static __always_inline __u64 kview_word(const struct offcpu_kview *v, __u32 w);
static __always_inline bool in_syscall_entry(__u64 a);
static __always_inline int kstack_syscall_slot(const struct offcpu_kview *v, __u32 *hint);
static __always_inline __u64 kmemo_verify(const struct offcpu_kmemo *m, const struct offcpu_kfp *k,
					  const struct offcpu_kview *v);
static __always_inline __u64 kstack_lookup(void *ctx, struct offcpu_kfp *k,
					   const struct offcpu_kview *v, struct offcpu_kstack *sc,
					   struct offcpu_kmemo *m);
static __always_inline __u64 kstack_audit(void *ctx, __u32 hook, struct offcpu_kstack *sc, __u64 id,
					  struct offcpu_kmemo *m, struct offcpu_kstack *e,
					  const struct offcpu_kfp *k);
static __always_inline __u64 kstack_verify(const struct offcpu_kstack *e, __u32 nr,
					   const struct offcpu_kview *v, struct offcpu_kmemo *m);
static __always_inline void kmemo_keep(struct offcpu_kmemo *m, const struct offcpu_kfp *k,
				       const struct offcpu_kstack *sc);
static __always_inline __u64 kstack_seal(const struct offcpu_kstack *e);
static __always_inline bool kstack_locate(struct offcpu_kstack *e, const struct offcpu_kview *v,
					  __u32 hook);
static __always_inline __u64 kstack_walk(void *ctx, __u32 hook, struct offcpu_stack *st);
__u64 stack_announce(struct offcpu_stack *st);
static __always_inline __u64 stack_hash(const __u64 *f, __u32 n);
static __always_inline bool audit_due(__u32 *uses, __u32 mask);
/* wakers */
static __always_inline struct offcpu_who *waker_note(void *ctx, const struct offcpu_run *r,
						     struct offcpu_task *t, struct task_struct *p,
						     bool open);
static __always_inline bool waker_of(struct offcpu_task *t, __u64 end);
static __always_inline bool wait_open(const struct offcpu_task *t, struct task_struct *p);
static __always_inline bool woken_before_out(__u32 tag, __u32 pcount_out, __u64 out, __u64 queued);
/* waits in progress */
static __always_inline void start_in(struct offcpu_task *t, struct task_struct *next,
				     const struct offcpu_run *r);
static __always_inline void start_unclosed(struct offcpu_task *t, struct task_struct *p,
					   const struct offcpu_run *r);
static __always_inline void start_end(const struct offcpu_start *st, __u64 wake, __u64 run,
				      const struct offcpu_run *r);
static __always_inline void start_emit(const struct offcpu_start *st, __u32 state, __u64 period,
				       const struct offcpu_run *r);
static __noinline void stop_switch(const struct offcpu_run *r, struct task_struct *prev,
				    struct task_struct *next);
static __always_inline void stop_task(struct seq_file *seq, struct task_struct *p,
				      const struct offcpu_run *r);
static __always_inline bool stop_claim(struct offcpu_task *t, __u64 owner);
static __always_inline void stop_emit(struct seq_file *seq, struct task_struct *p,
				      const struct offcpu_who *who, __u32 state, __u64 from, __u64 to);
/* targets and counters */
static __always_inline bool target_known(const struct offcpu_task *t);
static __always_inline void target_note(struct offcpu_task *t);
static __always_inline struct offcpu_task *task_of(struct task_struct *p);
static __always_inline void *task_storage_make(void *map, struct task_struct *p);
static __always_inline void who_init(struct offcpu_who *who, struct task_struct *p);
static __always_inline bool wanted(__u32 tgid, __u32 tid);
static __always_inline bool thread_kind_wanted(unsigned int flags);
static __always_inline bool block_time_kept(__u64 delta);
static __always_inline __u64 task_rq_clock(struct task_struct *p);
static __always_inline __u64 task_cgroup(struct task_struct *p);
static __always_inline void drop(__u32 what);
static __always_inline void stat(__u32 what);

/* A user stack frame, as frame pointers chain them. */
struct offcpu_uframe {
	__u64 next; /* the caller's frame pointer */
	__u64 ret;  /* the return address into the caller */
};

#include "unwind.bpf.h"
#include "python.bpf.h"
/* record --chains: every wait of every thread (the switch, waking and fork sides). */
#include "chains.bpf.h"

/* ==== the programs ==== */

/*
 * Every context switch: prev stops (its wait, if it waits, starts), next
 * runs (its wait, if it was waiting, ends). The state, not `preempt`,
 * decides: a task preempted after it set S or D is not on the run queue's
 * books (schedstat counts it as asleep), and perf --off-cpu counts it too.
 * While the recording is stopping, only what the stop needs is noted
 * (stop_switch). --chains notes every switch of every thread, stopping or
 * not (chain_switch). The steps are functions of their own, and the
 * stacks are taken here, after them: a tracepoint program and what it
 * calls share 512 bytes of stack where the kernel gives it no private
 * one (before 6.13, and some builds since), and the user stack's walk
 * needs most of it.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(offcpu_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	struct offcpu_chain_task *ct;
	struct offcpu_task *t;
	struct offcpu_run r;

	if (!run_begin(&r, prev, RUN_SWITCH))
		return 0;
	if (stopping) {
		stop_switch(&r, prev, next);
	} else {
		t = switch_out(&r, prev, prev_state);
		if (t)
			take_stacks(ctx, prev, OFFCPU_HOOK_SWITCH, &t->who, &t->kmemo, &t->umemo);
		switch_in(&r, next);
	}
	if (want_chains) {
		ct = chain_switch(&r, prev, next, prev_state);
		if (ct)
			chain_stacks(ctx, prev, OFFCPU_HOOK_SWITCH, &ct->kmemo, &ct->ustack, &ct->kstack);
	}
	run_end(&r);
	return 0;
}

/*
 * --wakeups: a waiting task is being woken by current: note who, with its
 * stacks, for the task's switch-in. Only tasks inside a measured off-CPU
 * interval, not yet woken, qualify. In an interrupt, current is the task
 * it came upon: user space recognises the interrupt in the kernel stack.
 */
SEC("tp_btf/sched_waking")
int BPF_PROG(offcpu_waking, struct task_struct *p)
{
	struct offcpu_who *who;
	struct offcpu_task *t;
	struct offcpu_run r;
	bool open;

	if (test_hide_waking && bpf_get_prandom_u32() % test_hide_waking == 0)
		return 0;
	t = bpf_task_storage_get(&tasks, p, 0, 0);
	open = t && wait_open(t, p);
	/* in a measured wait not yet woken, or about to be (waker_note): its state says which */
	if (!t || (open ? t->ts_wake : t->start_pending || !(p->__state & state_mask)) ||
	    !run_begin(&r, p, RUN_ELSEWHERE)) {
		if (want_chains)
			chain_waking(ctx, p, NULL);
		return 0;
	}
	who = waker_note(ctx, &r, t, p, open);
	run_end(&r);
	if (want_chains) /* with the stacks waker_note took */
		chain_waking(ctx, p, who);
	return 0;
}

/*
 * A task is woken (queued on a run queue): on a kernel without sched_info
 * (or with OFFCPU_TEST_WAKEUP_PROG), its off-CPU interval ends here, at
 * the clock of that run queue, as the kernel's own accounting has it;
 * elsewhere interval_end reads the same time at the switch-in, unless
 * sched_info's queue time is older than this wakeup (queued_early): then
 * here too. With --sched-delay, the wakeup of a sleep off-CPU leaves out
 * starts its wait for a CPU.
 */
SEC("tp_btf/sched_wakeup")
int BPF_PROG(offcpu_wakeup, struct task_struct *p)
{
	struct offcpu_task *t;
	struct offcpu_run r;
	bool early;

	if (test_hide && bpf_get_prandom_u32() % test_hide == 0)
		return 0;
	early = queued_early(p);
	if (!early && !wakeup_times_intervals && !want_sched_delay)
		return 0;
	t = bpf_task_storage_get(&tasks, p, 0, 0);
	if (!t || !run_begin(&r, p, RUN_ELSEWHERE))
		return 0;
	if ((wakeup_times_intervals || early) && t->ts_out && !t->ts_wake) {
		t->ts_wake = r.clk;
		if (early)
			stat(OFFCPU_STAT_QUEUED_BEFORE_WAKEUP);
	}
	if (want_sched_delay && t->delay_pending && !t->ts_queued && !stopping) {
		t->delay_pending = 0;
		t->ts_queued = r.clk;
	}
	run_end(&r);
	return 0;
}

/*
 * --sched-delay: a new task is queued for its first run; its wait for a
 * CPU starts here (there is no stack of its own yet). Its task storage is
 * made here too: made at its first switch-in instead, the creation failed
 * for 1-2 new tasks of every waitmix run.
 */
SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(offcpu_wakeup_new, struct task_struct *p)
{
	struct offcpu_task *t;
	struct offcpu_run r;

	if (want_chains)
		chain_new(ctx, p);
	if (!want_sched_delay || !thread_kind_wanted(p->flags) || !wanted(p->tgid, p->pid) ||
	    !run_begin(&r, p, RUN_ELSEWHERE))
		return 0;
	/* stopping (read inside the run, as run_begin reads `stopped`): no new wait */
	t = stopping ? NULL : task_of(p);
	if (t) {
		t->who.cgroup = task_cgroup(p);
		t->who.ustack = 0;
		t->who.kstack = 0;
		t->delay_state = OFFCPU_STATE_NEW;
		t->delay_pending = 0;
		t->ts_queued = r.clk;
	} else if (!stopping) {
		drop(OFFCPU_DROP_DELAY_STORAGE);
	}
	run_end(&r);
	return 0;
}

/*
 * Follow the process tree of the command and of the -p targets, as perf's
 * inherit: a child of a traced process is traced. Threads share the tgid
 * and need nothing. A child the full map cannot take is counted.
 */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(offcpu_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ctgid = child->tgid;
	__u8 one = 1;

	if (ptgid == ctgid)
		return 0;
	if (follow_children && bpf_map_lookup_elem(&tgids, &ptgid) &&
	    bpf_map_update_elem(&tgids, &ctgid, &one, BPF_ANY))
		drop(OFFCPU_DROP_CHILD_UNTRACED);
	if (unwind_dwarf)
		unwind_fork(ptgid, ctgid);
	return 0;
}

/*
 * A task exits: a wait left open ends, its accumulated waits go to the
 * sums, and when it has sums pending its exit time is noted, so that they
 * are timed inside its lifetime. A dead thread group leaves the target
 * set, so that a process reusing its pid is not traced by mistake. While
 * the recording is stopping its waits end at the stop, here: the stop
 * iterator may not see it any more (reaped before it gets there).
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(offcpu_exit, struct task_struct *p)
{
	struct offcpu_task *t = bpf_task_storage_get(&tasks, p, 0, 0);
	bool last = !p->signal->live.counter;
	struct offcpu_run r;

	if (t && run_begin(&r, p, RUN_CURRENT)) {
		if (stopping)
			stop_task(NULL, p, &r);
		else if (t->ts_out || t->start_pending)
			interval_unclosed(t, p, &r);
		acc_flush(t, &r);
		if (t->summed) {
			struct offcpu_exit_key k = { .tid = p->pid, .gen = t->gen,
						     .start_time = p->start_time };

			if (bpf_map_update_elem(&exits, &k, &r.now, BPF_ANY))
				drop(OFFCPU_DROP_EXITS_FULL);
		}
		run_end(&r);
	}
	if (filter_tgid && last) {
		__u32 tgid = p->tgid;

		if (!bpf_map_delete_elem(&tgids, &tgid))
			__sync_fetch_and_add(&targets_gen, 1);
	}
	if (unwind_dwarf && last) {
		unwind_exit(p->tgid);
		py_forget(p->tgid);
	}
	return 0;
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
	struct offcpu_run r;

	/* a thread exec'ing in its leader's place has its old tid in its sums: offcpu_exec */
	if (!t || !t->summed || t->who.tid != (__u32)task->pid || !run_begin(&r, task, RUN_ELSEWHERE))
		return 0;
	gen_end(t, task->pid, task->start_time);
	run_end(&r);
	return 0;
}

/*
 * The command recorded starts at its exec, as perf's enable_on_exec: the
 * child forked by the recorder is not traced until it has become the
 * command (its own name and maps, written by the exec before this
 * tracepoint), so that nothing of the recorder's image is recorded under
 * its pid, which would show as ":PID" with [unknown] frames. Its CPU
 * samples are kept from here on too (offcpu_cpu_filter reads the same map).
 *
 * A task with pending sums execs: its sums so far belong to the old image,
 * whose maps the exec's COMM and MMAP records (written before this
 * tracepoint) replace: their gen ends. A thread other than the leader
 * takes the leader's pid and start time in the exec: its earlier sums are
 * keyed by its old ones, its later ones by the new.
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(offcpu_exec, struct task_struct *p, pid_t old_pid)
{
	struct offcpu_task *t = bpf_task_storage_get(&tasks, p, 0, 0);
	struct offcpu_run r;
	__u64 start_time;

	if (exec_tgid && p->tgid == exec_tgid) {
		__u32 tgid = p->tgid;
		__u8 one = 1;

		long err = bpf_map_update_elem(&tgids, &tgid, &one, BPF_NOEXIST);

		if (err && err != -EEXIST) /* there already at its later execs */
			drop(OFFCPU_DROP_CHILD_UNTRACED);
	}
	if (unwind_dwarf) {
		unwind_exec(p, (kernel_threads || !(p->flags & PF_KTHREAD)) && wanted(p->tgid, p->pid));
		py_forget(p->tgid);
	}
	if (!t || !run_begin(&r, p, RUN_CURRENT))
		return 0;
	acc_flush(t, &r);
	if (t->summed) {
		start_time = p->start_time;
		barrier_var(start_time); /* two loads, not one of two pointers */
		if (old_pid != p->pid)
			start_time = t->who.start_time;
		gen_end(t, old_pid, start_time);
	}
	who_init(&t->who, p);
	run_end(&r);
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
	__u64 id = bpf_get_current_pid_tgid(), cs = ctx->regs.csx, sid;
	/* where it was interrupted: read here, once (a context field is loaded directly) */
	__u64 ip = ctx->regs.ip, sp = ctx->regs.sp, bp = ctx->regs.bp;
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
	s->ip = ip;
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
		regs = (struct pt_regs *)bpf_task_pt_regs(task);
		if (user && (cs & 0xffff) == OFFCPU_USER_CS) {
			/* its registers are the user stack's */
		} else if (!user && regs && regs->cs == OFFCPU_USER_CS) {
			ip = regs->ip;
			sp = regs->sp;
			bp = regs->bp;
		} else {
			/* a 32-bit task: the kernel's walk */
			n = bpf_get_stack(ctx, s->stack, OFFCPU_MAX_STACK * 8, BPF_F_USER_STACK);
			if (n > 0)
				s->ulen = n / 8;
			goto out;
		}
		if (!unwind_dwarf ||
		    !unwind_user(ip, sp, bp, OFFCPU_HOOK_CPU, &sid, s->stack, &s->ulen, 0, 0))
			s->ulen = ustack_fp(ip, bp, s->stack);
		else if (want_python && py_maybe(id >> 32))
			s->ulen = py_frames((struct py_ustack *)s->stack, s->ulen, OFFCPU_HOOK_CPU);
	}
out:
	bpf_ringbuf_submit(s, bpf_ringbuf_query(&cpu_samples, BPF_RB_AVAIL_DATA) > (4 << 20) / 4
				      ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
	return 0;
}

/* CPU samples of the perf events: keep only the targets' (return 1). */
SEC("perf_event")
int offcpu_cpu_filter(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();

	if (filter_kind_cpu && !thread_kind_wanted(bpf_get_current_task_btf()->flags))
		return 0;
	return wanted(id >> 32, (__u32)id) ? 1 : 0;
}

/* The iterators: waits in progress at the start and the stop, the drains' flush. */
#include "iter.bpf.h"

/* ==== a program run ==== */

/*
 * Count this run in on this CPU (an atomic add: a full barrier, so that
 * what follows reads `stopped` and `sum_active` after user space sees the
 * run counted; see wait_quiet in offcpu_bpf.c) and read what the run works
 * with: the clock of p's run queue, and the samples' clock as `clock`
 * says (RUN_*). false: the recording has stopped, nothing to do.
 */
static __always_inline bool run_begin(struct offcpu_run *r, struct task_struct *p, __u32 clock)
{
	__u32 zero = 0;

	r->active = bpf_map_lookup_elem(&active, &zero);
	if (!r->active)
		return false;
	__sync_fetch_and_add(r->active, 1);
	if (stopped) {
		__sync_fetch_and_add(r->active, -1);
		return false;
	}
	r->half = sum_active & 1;
	r->clk = task_rq_clock(p);
	r->cs = clock == RUN_SWITCH ? bpf_map_lookup_elem(&cpu_state, &zero) : NULL;
	r->now = clock == RUN_SWITCH ? now_of(r->cs, r->clk) : clock == RUN_CURRENT ? bpf_ktime_get_ns() : 0;
	r->cpu = bpf_get_smp_processor_id();
	r->direct = false;
	return true;
}

/*
 * The samples' clock (CLOCK_MONOTONIC, as bpf_ktime_get_ns) near now, in
 * the switch program, from this CPU's run-queue clock clk, which
 * __schedule has just updated: read once a millisecond on each CPU with
 * the clock it stands for, and advanced by clk in between. A call of
 * bpf_ktime_get_ns costs about 60 ns here, a tenth of the switch program.
 * It is the time of a sum's last interval, which needs no more than that:
 * it may be a few us off (the reference was read that much after its
 * clk, as this run is), and user space keeps a sum before the exit or
 * exec that ends its task's gen (exits map). A direct sample's time is
 * read in full (sample_emit).
 */
static __always_inline __u64 now_of(struct offcpu_cpu_state *c, __u64 clk)
{
	__u64 now;

	if (c && clk >= c->clk && clk - c->clk < 1000000)
		return c->mono + (clk - c->clk);
	now = bpf_ktime_get_ns();
	if (c) {
		c->clk = clk;
		c->mono = now;
	}
	return now;
}

/*
 * The samples' time of clk, a time on the run queue's clock of this CPU (a
 * switch-in the kernel hid, from sched_info), from the clock read now and
 * the run queue's clock of this run, clk_now: 0 (the sample takes its own
 * time) where there is none (now 0: not the switch program), or where
 * user space has written samples past it already (one stamped before
 * them would be out of order). Not from now_of's reference: taken at a
 * run-queue clock __schedule had not updated (after a preempting wakeup it
 * keeps the wakeup's, which lazy preemption may leave a tick behind), it
 * put such waits 2 ms late. clk_now may be behind alike, less often.
 */
static __always_inline __u64 mono_of(__u64 now, __u64 clk_now, __u64 clk)
{
	__u64 at;

	if (!now || !clk || clk > clk_now)
		return 0;
	now = bpf_ktime_get_ns();
	if (clk_now - clk >= now)
		return 0;
	at = now - (clk_now - clk);
	return at > written_upto ? at : 0;
}

/* Count this run out: what it wrote is written (an atomic add). */
static __always_inline void run_end(struct offcpu_run *r)
{
	__sync_fetch_and_add(r->active, -1);
}

/* ==== the switch ==== */

/*
 * prev leaves the CPU. Waiting in a recorded state: its wait starts, and
 * its storage is returned for its stacks (the caller takes them).
 * Otherwise (preempted, or asleep in another state) only --sched-delay
 * notes it (with stacks too): its wait for a CPU starts now, or at its
 * wakeup. A preemption needs no storage lookup either, unless the kernel
 * hid the task's switch-in (preempted).
 */
static __noinline struct offcpu_task *switch_out(const struct offcpu_run *r,
						 struct task_struct *prev, unsigned int prev_state)
{
	__u32 state = prev_state & (OFFCPU_STATE_S | OFFCPU_STATE_D);
	bool measured = state & state_mask;
	struct offcpu_task *t;
	__u64 arrival;

	if (!measured && !want_sched_delay) {
		if (!prev_state && !(r->cs && r->cs->last_in == prev->pid))
			preempted(prev, r); /* its switch-in hidden */
		return NULL;
	}
	t = bpf_task_storage_get(&tasks, prev, 0, 0);
	if (!t || !target_known(t)) {
		if (!thread_kind_wanted(prev->flags) || !wanted(prev->tgid, prev->pid))
			return NULL;
		t = task_of(prev);
		if (!t) {
			drop(measured ? OFFCPU_DROP_TASK_STORAGE : OFFCPU_DROP_DELAY_STORAGE);
			return NULL;
		}
		target_note(t);
	}
	if (t->ts_out || t->start_pending || (want_sched_delay && (t->ts_queued || t->delay_pending)))
		interval_unclosed(t, prev, r); /* its switch-in was missed */
	if (bpf_core_field_exists(prev->sched_info.last_arrival)) {
		t->pcount_out = prev->sched_info.pcount;
		t->delay_out = prev->sched_info.run_delay;
	}
	if (!measured) {
		/* --sched-delay: preempted (runnable: it waits from now) or asleep */
		if (!prev_state) {
			t->delay_state = 0;
			t->delay_pending = 0;
			t->ts_queued = r->clk;
		} else {
			t->delay_state = state ? state : OFFCPU_STATE_OTHER;
			t->delay_pending = 1; /* from its wakeup (offcpu_wakeup) */
			t->ts_queued = 0;
		}
		return t;
	}
	t->state = state;
	t->ts_wake = 0;
	arrival = r->clk;
	t->ts_out = arrival;
	return t;
}

/*
 * next gets the CPU. Its off-CPU interval ends (at its wakeup: from there
 * on it waited for a CPU); with --sched-delay, that wait for a CPU too, or
 * the one that followed a preemption. A switch-in missed since its
 * switch-out (the scheduler counted one more than the program saw) ends
 * the interval from sched_info first.
 */
static __noinline void switch_in(const struct offcpu_run *r, struct task_struct *next)
{
	struct offcpu_task *t;
	__u64 end, delta;

	if (test_hide && bpf_get_prandom_u32() % test_hide == 0) {
		if (r->cs) /* as when the kernel hides one: no switch to next seen */
			r->cs->last_in = (__u32)-1;
		return;
	}
	if (r->cs)
		r->cs->last_in = next->pid;
	t = bpf_task_storage_get(&tasks, next, 0, 0);
	if (!t)
		return;
	if (t->start_pending)
		start_in(t, next, r);
	if (t->ts_out && bpf_core_field_exists(next->sched_info.pcount) &&
	    next->sched_info.pcount != t->pcount_out)
		interval_unclosed(t, next, r);
	if (want_sched_delay) {
		/* a wait for a CPU: from the wakeup, or from when it was queued */
		end = t->ts_out ? interval_end(next, t, r->clk) : t->ts_queued;
		if (end && end < r->clk)
			wait_done(t, r, OFFCPU_SCHED_DELAY | (t->ts_out ? t->state : t->delay_state),
				  r->clk - end, false, 0);
		t->ts_queued = 0;
		t->delay_pending = 0;
	}
	if (!t->ts_out)
		return;
	/*
	 * The two ends may be read on two CPUs' clocks, which can be a few ns
	 * apart: never let that make a negative interval.
	 */
	end = interval_end(next, t, r->clk);
	delta = end > t->ts_out ? end - t->ts_out : 0;
	if (block_time_kept(delta))
		wait_done(t, r, t->state, delta, want_wakeups && waker_of(t, end), 0);
	t->waker.n.time = 0;
	t->ts_out = 0;
}

/*
 * A task is preempted whose switch-in the program did not see (this CPU's
 * last_in is another task: the kernel hid the switch to it, as it does on
 * some hosts whenever a hidden agent's thread is the one switched out; or
 * OFFCPU_TEST_HIDE). If it still has an interval open, end that interval
 * now, while sched_info can time it: a second missed switch-in, after this
 * preemption, would leave its end unknown (drop.unclosed, "switched in
 * again unseen"). Any other preemption costs no storage lookup.
 */
static __always_inline void preempted(struct task_struct *prev, const struct offcpu_run *r)
{
	struct offcpu_task *t = bpf_task_storage_get(&tasks, prev, 0, 0);

	if (t && (t->ts_out || t->start_pending)) {
		stat(OFFCPU_STAT_CLOSED_AT_PREEMPTION);
		interval_unclosed(t, prev, r);
	}
}

/*
 * The task p runs (it switches out again, is switched in after a switch-in
 * the program did not see, or exits) but its last interval is still open.
 * The kernel skips a tracepoint's programs at times (while another program
 * attaches to it; on some hosts whenever a hidden agent's thread is the one
 * switched out), and the wakeup may be missed alike. End the interval at
 * its wakeup:
 *  - seen by the wakeup program: its time;
 *  - else, when p has been switched in exactly once since (sched_info's
 *    count), that switch-in's time less the run-queue wait before it, both
 *    from sched_info: the time it was queued, i.e. woken;
 *  - else the end is not known: count the interval lost.
 * With --sched-delay the run-queue wait before the missed switch-in is
 * counted too when sched_info gives it (the growth of its run_delay); so
 * is a wait for a CPU open alone (after a preemption, or a wakeup from a
 * sleep off-CPU leaves out), which was overwritten uncounted before. What
 * sched_info times is timed at the missed switch-in (mono_of), as far as
 * user space has not written samples past it.
 */
static __always_inline void interval_unclosed(struct offcpu_task *t, struct task_struct *p,
					      const struct offcpu_run *r)
{
	struct offcpu_unclosed u = {
		.now = r->now, .clk = r->clk, .half = r->half, .cpu = r->cpu, .direct = r->direct,
	};

	if (t->start_pending)
		start_unclosed(t, p, r);
	/* --sched-delay: no interval, but a wait for a CPU (after a preemption, or a wakeup) */
	if (!t->ts_out && !(want_sched_delay && (t->ts_queued || t->delay_pending)))
		return;
	if (bpf_core_field_exists(p->sched_info.last_arrival)) {
		u.pcount = p->sched_info.pcount;
		u.delay = p->sched_info.run_delay;
		u.arrival = p->sched_info.last_arrival;
	}
	wait_unclosed(t, &u);
}

/*
 * interval_unclosed's work, from p's sched_info as it read it (all 0 on a
 * kernel without it). A global function: verified once, not again at every
 * caller's state, which kept the switch program within half the
 * verifier's budget. It gets the run's scalars only (u): one given the
 * run itself could, for the verifier, overwrite the run's pointers.
 */
__noinline __u64 wait_unclosed(struct offcpu_task *t, struct offcpu_unclosed *u)
{
	__u64 wait = 0, wake = 0, at = 0, delay, arrival;
	struct offcpu_run run = {}, *r = &run;
	bool once, queued;
	__u32 pcount;

	if (!t || !u)
		return 0;
	run.now = u->now;
	run.clk = u->clk;
	run.half = u->half & 1;
	run.cpu = u->cpu;
	run.direct = u->direct;
	pcount = u->pcount;
	delay = u->delay;
	arrival = u->arrival;
	queued = !t->ts_out;
	once = pcount && pcount == t->pcount_out + 1 && delay >= t->delay_out &&
	       (queued || arrival >= t->ts_out);
	if (once) {
		wait = delay - t->delay_out;
		if (!queued && arrival - t->ts_out >= wait)
			wake = arrival - wait;
		at = mono_of(u->now, u->clk, arrival); /* the samples' time: that switch-in's */
	}
	if (queued) {
		/* only its wait for a CPU: below, from sched_info, or lost */
		if (once) {
			stat(OFFCPU_STAT_DELAY_CLOSED_BY_SCHED_INFO);
		} else {
			drop(OFFCPU_DROP_UNCLOSED);
			unclosed_why(pcount, t->pcount_out);
		}
		t->ts_queued = 0;
		t->delay_pending = 0;
	} else if (t->ts_wake && t->ts_wake >= t->ts_out) {
		if (block_time_kept(t->ts_wake - t->ts_out))
			wait_done(t, r, t->state, t->ts_wake - t->ts_out,
				  want_wakeups && waker_of(t, t->ts_wake), at);
		stat(OFFCPU_STAT_CLOSED_AT_WAKEUP);
	} else if (wake) {
		if (block_time_kept(wake - t->ts_out))
			wait_done(t, r, t->state, wake - t->ts_out, want_wakeups && waker_of(t, wake), at);
		stat(OFFCPU_STAT_CLOSED_BY_SCHED_INFO);
	} else {
		drop(OFFCPU_DROP_UNCLOSED);
		unclosed_why(pcount, t->pcount_out);
	}
	if (want_sched_delay && once && (wait || !queued))
		wait_done(t, r, OFFCPU_SCHED_DELAY | (queued ? t->delay_state : t->state), wait, false, at);
	/*
	 * A waker noted in this interval is done with; one noted before a
	 * switch-out, untied (interval 0), may be the coming sleep's: the
	 * task ran since this interval, and was woken before its next
	 * switch-out was traced (its tag decides, at that sleep's end).
	 */
	if (t->waker.interval)
		t->waker.n.time = 0;
	t->ts_out = 0;
	return 0;
}

/*
 * Why an interval's end was not seen (drop.unclosed), from sched_info's
 * count of switch-ins, pcount now against pcount_then at its start: the
 * task was switched in more than once since, unseen, and sched_info keeps
 * only the last; or once, and sched_info's times of it come before the
 * interval's start (the run queue's clock it ran on behind the one it left).
 */
static __always_inline void unclosed_why(__u64 pcount, __u64 pcount_then)
{
	stat(pcount > pcount_then + 1 ? OFFCPU_STAT_UNCLOSED_RAN_AGAIN : OFFCPU_STAT_UNCLOSED_CLOCK);
}

/*
 * When p, switched in at clk after waiting since t->ts_out, was woken: the
 * start of its wait for a CPU by the scheduler's own accounting (sched_info,
 * as /proc/PID/schedstat has it). Its enqueue's time (last_queued, on
 * this run queue's clock) is not yet accounted at this tracepoint; any
 * earlier part of the wait, on the queue of another CPU it was moved
 * from, was added to run_delay since the switch-out. 0 when sched_info
 * cannot tell: a switch-in missed since (pcount moved), or no such
 * accounting (the sched_wakeup program then times the wakeup).
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

/*
 * Is p, just woken, queued since before this wakeup by sched_info? The
 * kernel sets last_queued at an enqueue only when it is 0, from this run
 * queue's clock, which the wakeup has just read: a wakeup that queued p
 * leaves the two equal. A task that went to sleep still queued (EEVDF's
 * delayed dequeue keeps one with negative lag on its run queue until it is
 * picked) and was moved to another CPU meanwhile got last_queued at that
 * move; the wakeup keeps it, and the switch-in would take the sleep after
 * it for a wait for a CPU (a 400 ms sleep timed 5 ms, and 400 ms on a run
 * queue; schedstat's run_delay counts it so too).
 */
static __always_inline bool queued_early(struct task_struct *p)
{
	__u64 queued;

	if (!bpf_core_field_exists(p->sched_info.last_queued))
		return false;
	queued = p->sched_info.last_queued;
	return queued && queued < task_rq_clock(p);
}

/* The end of p's off-CPU interval (t: its storage): its wakeup, else clk. */
static __always_inline __u64 interval_end(struct task_struct *p, const struct offcpu_task *t,
					  __u64 clk)
{
	__u64 wake = t->ts_wake ? t->ts_wake : woken_at(p, t, clk);

	return wake ? wake : clk;
}

/* ==== counting a wait ==== */

/*
 * t's wait (state: OFFCPU_STATE_* and OFFCPU_SCHED_DELAY) of delta ns ended
 * now, where its last switch-out noted (t->who), with its waker (t->waker)
 * when `waker`: a long one is one sample on the ring buffer, a short one is
 * added to the task's accumulator of its kind, unless the run is the stop
 * iterator's (r->direct), which is not the task's own: the task may be
 * flushing its accumulators in its exit meanwhile.
 */
static __always_inline void wait_done(struct offcpu_task *t, const struct offcpu_run *r,
				      __u32 state, __u64 delta, bool waker, __u64 at)
{
	__u32 slot = r->half | (state & OFFCPU_SCHED_DELAY ? OFFCPU_ACC_DELAY : 0);
	struct offcpu_acc *a = &t->acc[slot & 3];
	struct offcpu_sample *s;
	__u64 count, period, time = at ? at : r->now;

	if (waker)
		state |= OFFCPU_WAKER;
	/* the accumulator, read once: it is written below from what was read */
	count = a->v.count;
	period = a->v.period;
	if (test_stall_ns && bpf_get_prandom_u32() % 8 == 0)
		test_stall(); /* the worst place to be stopped: between that read and the writes */
	if (delta >= thresh_ns || r->direct) {
		s = sample_reserve(OFFCPU_SAMPLE_TIMED, state, OFFCPU_DROP_RINGBUF);
		if (!s)
			return;
		key_fill(&s->k, t, state);
		/* its time is its own: read in full */
		value_fill(&s->v, t, state, at ? at : bpf_ktime_get_ns(), delta, r->cpu);
		sample_submit(s);
		return;
	}
	t->summed = 1;
	if (count && key_is(&a->k, t, state)) {
		a->v.period = period + delta;
		a->v.count = count + 1;
		a->v.time = time;
		a->v.cpu = r->cpu;
		return;
	}
	if (count)
		sum_add(r->half, &a->k, &a->v);
	key_fill(&a->k, t, state);
	value_fill(&a->v, t, state, time, delta, r->cpu);
}

/*
 * The sum key of t's wait in state (OFFCPU_WAKER set: with its waker),
 * written in place (a sample being written, an accumulator): no copy of
 * its 88 bytes on the BPF stack, which tracepoint programs share with
 * every function they call (512 bytes in all, without a private stack).
 */
static __always_inline void key_fill(struct offcpu_sum_key *k, const struct offcpu_task *t,
				     __u32 state)
{
	k->who = t->who;
	k->state = state;
	k->gen = t->gen;
	if (state & OFFCPU_WAKER)
		k->waker = t->waker.n.who;
	else
		__builtin_memset(&k->waker, 0, sizeof(k->waker));
}

/* Is k the key key_fill would write (word by word: BPF has no memcmp)? */
static __always_inline bool key_is(const struct offcpu_sum_key *k, const struct offcpu_task *t,
				   __u32 state)
{
	const __u64 *x = (const __u64 *)&k->who, *y = (const __u64 *)&t->who;
	const __u64 *w = (const __u64 *)&k->waker, *z = (const __u64 *)&t->waker.n.who;
	bool has_waker = state & OFFCPU_WAKER;

	if (k->state != state || k->gen != t->gen)
		return false;
	for (__u32 i = 0; i < sizeof(k->who) / 8; i++)
		if (x[i] != y[i] || w[i] != (has_waker ? z[i] : 0))
			return false;
	return true;
}

/* A wait's figures, in place: one interval of delta ns ending at time. */
static __always_inline void value_fill(struct offcpu_sum *v, const struct offcpu_task *t,
				       __u32 state, __u64 time, __u64 delta, __u32 cpu)
{
	v->time = time;
	v->period = delta;
	v->count = 1;
	v->cpu = cpu;
	v->pad = 0;
	if (state & OFFCPU_WAKER)
		__builtin_memcpy(v->wcomm, t->waker.n.comm, sizeof(v->wcomm));
	else
		__builtin_memset(v->wcomm, 0, sizeof(v->wcomm));
}

/*
 * Room for one sample on the ring buffer (kind and flags written), for the
 * caller to fill and sample_submit. NULL, counted as `lost` (and its
 * waker's sample too, when state has OFFCPU_WAKER): the ring buffer is
 * full.
 */
static __always_inline struct offcpu_sample *sample_reserve(__u32 flags, __u32 state, __u32 lost)
{
	struct offcpu_sample *s = bpf_ringbuf_reserve(&events, sizeof(*s), 0);

	if (!s) {
		drop(lost);
		if (state & OFFCPU_WAKER)
			drop(OFFCPU_DROP_WAKER_LOST);
		return NULL;
	}
	s->kind = OFFCPU_REC_SAMPLE;
	s->flags = flags;
	return s;
}

static __always_inline void sample_submit(struct offcpu_sample *s)
{
	bpf_ringbuf_submit(s, ringbuf_flags());
}

/*
 * A sum that could not go to the sum map (key k, value v), as one sample
 * on the ring buffer. false, counted as `lost`: the ring buffer is full.
 */
static __always_inline bool sample_emit(const struct offcpu_sum_key *k, const struct offcpu_sum *v,
					__u32 flags, __u32 lost)
{
	struct offcpu_sample *s = sample_reserve(flags, k->state, lost);

	if (!s)
		return false;
	s->k = *k;
	s->v = *v;
	sample_submit(s);
	return true;
}

/*
 * The key and figures of one wait of who in state, of period ns ending at
 * time, outside any task's sums (a wait in progress at the start or at
 * the stop): no generation, no waker.
 */
static __always_inline void one_wait_fill(struct offcpu_sample *s, const struct offcpu_who *who,
					  __u32 state, __u64 time, __u64 period, __u32 cpu)
{
	__builtin_memset(&s->k, 0, sizeof(s->k));
	__builtin_memset(&s->v, 0, sizeof(s->v));
	s->k.who = *who;
	s->k.state = state;
	s->v.time = time;
	s->v.period = period;
	s->v.count = 1;
	s->v.cpu = cpu;
}

/* Ring buffer flags: wake the reader only once a quarter is filled. */
static __always_inline __u64 ringbuf_flags(void)
{
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > (8 << 20) / 4 ? BPF_RB_FORCE_WAKEUP
									      : BPF_RB_NO_WAKEUP;
}

/*
 * Add a sum (key k, value v) to the sum map of half `half`; when the map
 * cannot take it (full, or an entry's memory or the bucket's lock not to be
 * had in this context: rare, but seen with --sched-delay), it goes out on
 * the ring buffer as a sum of its own rather than being lost (counted:
 * sum.direct). The sums of a key are one task's: they end one after the
 * other, a plain store of the time will do.
 */
static __always_inline void sum_add(__u32 half, const struct offcpu_sum_key *k,
				    const struct offcpu_sum *v)
{
	void *map = bpf_map_lookup_elem(&sums, &half);
	struct offcpu_sum *s;
	long err;

	if (!map)
		return;
	s = bpf_map_lookup_elem(map, k);
	if (!s) {
		err = bpf_map_update_elem(map, k, v, BPF_NOEXIST);
		if (!err) {
			__sync_fetch_and_add(&sum_entries[half & 1], 1);
			return;
		}
		if (err == -EEXIST)
			s = bpf_map_lookup_elem(map, k); /* lost a race to another CPU */
	}
	if (s) {
		__sync_fetch_and_add(&s->period, v->period);
		__sync_fetch_and_add(&s->count, v->count);
		if (v->time > s->time)
			s->time = v->time;
		return;
	}
	if (sample_emit(k, v, OFFCPU_SAMPLE_SUM, OFFCPU_DROP_SUM_FULL))
		stat(OFFCPU_STAT_SUM_DIRECT);
}

/*
 * t's accumulators to the sums, from its own context (exit, exec): those
 * of this run's half as their owner; those of the other half only if the
 * drain's flush did not take them first (an exchange decides).
 */
static __always_inline void acc_flush(struct offcpu_task *t, const struct offcpu_run *r)
{
	for (__u32 i = 0; i < 4; i++) {
		struct offcpu_acc *a = &t->acc[i];
		__u64 n;

		if (!a->v.count)
			continue;
		if ((i & 1) == r->half) {
			sum_add(r->half, &a->k, &a->v);
			a->v.count = 0;
			continue;
		}
		n = __sync_lock_test_and_set(&a->v.count, 0);
		if (n) {
			struct offcpu_sum v = a->v;

			v.count = n;
			sum_add(r->half, &a->k, &v);
		}
	}
}

/*
 * End the generation of a task's sums: those so far are noted under their
 * gen (with the task's tid and start time, as they are keyed) with the
 * time it ended, now: user space times them before it. Later sums go
 * under the next gen; its accumulated waits keep their gen in their key.
 */
static __always_inline void gen_end(struct offcpu_task *t, __u32 tid, __u64 start_time)
{
	struct offcpu_exit_key k = { .tid = tid, .gen = t->gen, .start_time = start_time };
	__u64 now = bpf_ktime_get_ns();

	if (bpf_map_update_elem(&exits, &k, &now, BPF_ANY))
		drop(OFFCPU_DROP_EXITS_FULL);
	t->gen++;
	t->summed = 0;
}

/* OFFCPU_TEST_STALL: spin here for test_stall_ns (bpf_loop: at most 2^23 clock reads). */
static long stall_step(__u32 i, void *deadline)
{
	return bpf_ktime_get_ns() >= *(__u64 *)deadline;
}

static __always_inline void test_stall(void)
{
	__u64 deadline = bpf_ktime_get_ns() + test_stall_ns;

	bpf_loop(1 << 23, stall_step, &deadline, 0);
}

/* ==== stacks ==== */

/*
 * current's cgroup and stacks, as of this program's hook, into who (its
 * identity is the caller's): each stack as its id (0: not taken, or lost,
 * counted). kmemo: the last kernel stack taken there (stack_kernel);
 * umemo: the last DWARF user stack (NULL: none kept at this hook).
 */
static __always_inline void take_stacks(void *ctx, struct task_struct *cur, __u32 hook,
					struct offcpu_who *who, struct offcpu_kmemo *kmemo,
					struct offcpu_umemo *umemo)
{
	who->cgroup = task_cgroup(cur);
	if (umemo)
		who->ustack = want_ustack && cur->mm ? stack_user_memo(ctx, hook, umemo) : 0;
	else
		who->ustack = want_ustack && cur->mm ? stack_user(ctx, hook, 0, 0) : 0;
	who->kstack = want_kstack ? stack_kernel(ctx, hook, who->ustack, kmemo) : 0;
}

/*
 * current's user stack, from its user registers at kernel entry: from the
 * DWARF tables with --call-graph dwarf when its process has them (cached
 * by blocking point: unwind.bpf.h), then its Python frames (python.bpf.h;
 * not cached: a stack with them has an id of its own), else by frame
 * pointers. keep (0 or 1): a DWARF stack's memo is kept for
 * stack_user_memo (unw_memos); memo_check: the id of a memo's hit due its
 * check (unw_memo_try). 32-bit tasks are left to the kernel's walk. A
 * global function: verified once, not at every call.
 */
__noinline __u64 stack_user(void *ctx __arg_ctx, __u32 hook, __u32 keep, __u64 memo_check)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	__u32 slot = hook & 3;
	struct offcpu_stack *st = bpf_map_lookup_elem(&stack_scratch, &slot);
	__u64 id;
	long n;

	if (!st)
		return 0;
	if (!regs || regs->cs != OFFCPU_USER_CS) {
		n = bpf_get_stack(ctx, st->frames, sizeof(st->frames), BPF_F_USER_STACK);
		if (n <= 0) {
			drop(slot == OFFCPU_HOOK_WAKING ? OFFCPU_DROP_WAKER_USTACK : OFFCPU_DROP_USTACK);
			return 0;
		}
		st->nr = n / 8;
		return stack_announce(st);
	}
	if (unwind_dwarf && want_python && py_maybe(bpf_get_current_pid_tgid() >> 32)) {
		/* the native frames, then the thread's Python frames: a stack of its own */
		id = unwind_user_call(regs->ip, regs->sp, regs->bp, slot | UNW_CALL_FRAMES, 0);
		if (id == UNW_CALL_NO_TABLES)
			goto fp;
		n = py_frames((struct py_ustack *)st->frames, st->nr, slot);
		if (n == st->nr)
			return id;
		st->nr = n;
		return stack_announce(st);
	}
	if (unwind_dwarf) {
		id = unwind_user_call(regs->ip, regs->sp, regs->bp, slot | (keep ? UNW_CALL_KEEP : 0),
				      memo_check);
		if (id != UNW_CALL_NO_TABLES)
			return id;
	}
fp:
	st->nr = ustack_fp(regs->ip, regs->bp, st->frames);
	return stack_announce(st);
}

/*
 * unwind_user for the tracepoint programs, as a function of its own: its
 * frame is not on stack_user's, so that the Python walk stack_user calls
 * after it does not stack on it (a tracepoint program and the functions
 * it calls share 512 bytes of stack where the kernel gives it no private
 * one). how: the slot (UNW_SCRATCH_*), UNW_CALL_KEEP (unwind_user's keep),
 * UNW_CALL_FRAMES (the frames into the slot's stack_scratch, nr set).
 * Returns the stack's id, or UNW_CALL_NO_TABLES (unwind_user's false).
 */
__noinline __u64 unwind_user_call(__u64 ip, __u64 sp, __u64 bp, __u32 how, __u64 memo_check)
{
	__u32 slot = how & 3;
	struct offcpu_stack *st = NULL;
	__u64 id = 0;

	if (how & UNW_CALL_FRAMES) {
		st = bpf_map_lookup_elem(&stack_scratch, &slot);
		if (!st)
			return UNW_CALL_NO_TABLES;
	}
	if (!unwind_user(ip, sp, bp, slot, &id, st ? st->frames : NULL, st ? &st->nr : NULL,
			 !!(how & UNW_CALL_KEEP), memo_check))
		return UNW_CALL_NO_TABLES;
	return id;
}

/*
 * stack_user with the task's memo um of its last DWARF stack (struct
 * offcpu_umemo): while it blocks where it blocked last, the memo's stack
 * (unw_memo_try), else stack_user's, kept in the memo. Only a stack
 * stack_user would take from the tables alone (user mode registers, no
 * Python frames) is served from or kept in it. A global function: um's
 * checks stay out of stack_user's verification, the walk's.
 */
__noinline __u64 stack_user_memo(void *ctx __arg_ctx, __u32 hook, struct offcpu_umemo *um)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	__u32 slot = hook & 3;
	__u64 id;
	int r;

	if (!um || !unwind_dwarf || !regs || regs->cs != OFFCPU_USER_CS ||
	    (want_python && py_maybe(bpf_get_current_pid_tgid() >> 32)))
		return stack_user(ctx, hook, 0, 0);
	r = unw_memo_try(um, regs->ip, regs->sp, regs->bp, slot);
	if (r == UNW_MEMO_SERVED)
		return um->id;
	id = stack_user(ctx, hook, 1, r == UNW_MEMO_AUDIT ? um->id : 0);
	if (r != UNW_MEMO_AUDIT || id != um->id)
		unw_memo_take(um, slot); /* a check that held keeps the memo */
	return id;
}

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
 * current's kernel stack from the function that calls this hook's
 * tracepoint on (uhash: its user stack's id, part of the cache key): the
 * memo's (m: the last one taken there) when it blocks there again and its
 * frames are in place, else from the cache when this blocking point was
 * seen before and its frames are still in place (kstack_lookup), else by
 * walking, which also fills the cache. One served memo hit in
 * kcache_audit_mask+1 is walked and compared, as a cache hit is. A global
 * function: verified once, not at every call.
 */
__noinline __u64 stack_kernel(void *ctx __arg_ctx, __u32 hook, __u64 uhash, struct offcpu_kmemo *m)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	__u32 slot = hook & 3;
	struct offcpu_kstack *sc = bpf_map_lookup_elem(&kscratch, &slot);
	struct offcpu_kfp k = {};
	struct offcpu_kview v;
	__u64 id;

	if (!sc || !m)
		return 0;
	kstack_calibrate(ctx, slot);
	if (!use_kcache || !cur->mm || !kstack_skip[slot & 3] ||
	    !kstack_fingerprint(ctx, cur, slot, uhash, &m->slot, &k, &v, &sc->word))
		return kstack_walk(ctx, slot, &sc->st);
	id = kmemo_verify(m, &k, &v);
	if (!id)
		return kstack_lookup(ctx, &k, &v, sc, m);
	if (!audit_due(&m->uses, kcache_audit_mask)) {
		stat(OFFCPU_STAT_KSTACK_CACHED);
		return id;
	}
	return kstack_audit(ctx, slot, sc, id, m, NULL, &k); /* a hit the memo would serve */
}

/*
 * Once per hook: count the BPF and tracing frames above the function that
 * calls its tracepoint, so that every later stack starts there (the
 * kernel stack cache needs it: its frames are found on the stack above
 * the program's context). A hook without one (0 frames found) is walked.
 */
static __always_inline void kstack_calibrate(void *ctx, __u32 hook)
{
	struct offcpu_stack *st;
	__u64 lo = sched_lo, hi = sched_hi;
	long n;

	if (calib_done[hook & 3] || hook > OFFCPU_HOOK_WAKING)
		return;
	st = bpf_map_lookup_elem(&stack_scratch, &hook);
	if (!st)
		return;
	if (hook == OFFCPU_HOOK_WAKING) {
		lo = ttwu_lo;
		hi = ttwu_hi;
	}
	n = bpf_get_stack(ctx, st->frames, 24 * 8, 0);
	if (n <= 0)
		n = 0;
	for (__u32 i = 0; i < 24 && lo; i++) {
		if (i < (__u64)n / 8 && st->frames[i] >= lo && st->frames[i] < hi) {
			kstack_skip[hook & 3] = i;
			break;
		}
	}
	calib_done[hook & 3] = 1;
}

/*
 * Where current blocks, as a cache key (struct offcpu_kfp), and its kernel
 * stack from the context up (v); false when it cannot be told (no user
 * context, the context not on its stack). hint: the caller's for
 * kstack_syscall_slot; word: a per-CPU scratch word.
 */
static __always_inline bool kstack_fingerprint(void *ctx, struct task_struct *cur, __u32 hook,
					       __u64 uhash, __u32 *hint, struct offcpu_kfp *k,
					       struct offcpu_kview *v, __u64 *word)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(cur);
	__u64 sp, base, top;
	int slot = -1;

	if (!regs)
		return false;
	/*
	 * The program's own stack may be a private one; its context (the
	 * tracepoint's argument array) is on the task's kernel stack, a fixed
	 * distance below the hook's function. Pointers as numbers: through
	 * memory, as the verifier wants.
	 */
	*(volatile __u64 *)word = (__u64)ctx;
	sp = *(volatile __u64 *)word;
	*(volatile __u64 *)word = (__u64)cur->stack;
	base = *(volatile __u64 *)word;
	if (sp < base || sp - base >= OFFCPU_THREAD_SIZE || (sp & 7))
		return false;
	top = base + OFFCPU_THREAD_SIZE - bpf_core_type_size(struct pt_regs);
	if (top <= sp)
		return false;
	v->stk = cur->stack;
	v->at = (sp - base) / 8;
	v->nw = (top - sp) / 8;
	k->sysnr = (__s32)regs->orig_ax;
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
		slot = kstack_syscall_slot(v, hint);
	k->depth = slot >= 0 ? (__u32)slot * 8 | OFFCPU_KFP_SYSCALL : top - sp;
	k->uip = regs->ip;
	k->uhash = uhash;
	k->hook = hook;
	return true;
}

/* Word w (from the context up) of the stack in v. */
static __always_inline __u64 kview_word(const struct offcpu_kview *v, __u32 w)
{
	return v->stk[(v->at + w) & (OFFCPU_STACK_WORDS - 1)];
}

/* Is a a return address into do_syscall_64 (from any of its calls)? */
static __always_inline bool in_syscall_entry(__u64 a)
{
	return a - sys_lo < sys_hi - sys_lo;
}

/*
 * The slot of do_syscall_64's current call (into the syscall, or into the
 * exit work after it) among the words of the stack in v, or -1: every call
 * do_syscall_64 makes after allocating the random offset pushes its return
 * address there. It lies under do_syscall_64's frame and that offset
 * (0-1023 bytes, chosen anew at each syscall): in the top
 * OFFCPU_SYSCALL_WORDS words. They are scanned from the deepest up: above
 * the slot is the offset's area, never written, where older syscalls with
 * smaller offsets left such return addresses; below it are the live
 * frames of this syscall (an unwritten word there can hold one too: a few
 * % of the time, checked away by kstack_verify).
 *
 * A thread blocks at the same few points, each its own distance below its
 * syscall's slot whatever the offset: the slot found last time (*hint,
 * kept by the caller, +1) is tried first, and is taken when it holds such
 * a return address. It is a guess the cache's check makes safe: a wrong
 * slot makes a key whose entry's frames are not in place (walked), never
 * a wrong stack.
 */
#define OFFCPU_SYSCALL_WORDS 160
static __always_inline int kstack_syscall_slot(const struct offcpu_kview *v, __u32 *hint)
{
	__u32 nw = v->nw, first = nw > OFFCPU_SYSCALL_WORDS ? nw - OFFCPU_SYSCALL_WORDS : 0;
	__u32 h = *hint;

	if (h && h - 1 >= first && h - 1 < nw && in_syscall_entry(kview_word(v, h - 1)))
		return h - 1;
	for (__u32 j = 0; j < OFFCPU_SYSCALL_WORDS; j++) {
		__u32 i = first + j;

		if (i >= nw)
			break;
		if (in_syscall_entry(kview_word(v, i))) {
			*hint = i + 1;
			return i;
		}
	}
	return -1;
}

/*
 * The memo's id when it holds this stack: the same key, and its frames in
 * place in v (as kstack_verify checks a cache entry); else 0.
 */
static __always_inline __u64 kmemo_verify(const struct offcpu_kmemo *m, const struct offcpu_kfp *k,
					  const struct offcpu_kview *v)
{
	const __u64 *x = (const __u64 *)&m->key, *y = (const __u64 *)k;
	__u32 nr = m->nr, nw = v->nw;

	if (!nr || nr > OFFCPU_KMEMO_FRAMES)
		return 0;
	for (__u32 i = 0; i < sizeof(*k) / 8; i++)
		if (x[i] != y[i])
			return 0;
	for (__u32 j = 0; j < OFFCPU_KMEMO_FRAMES; j++) {
		__u32 w;

		if (j >= nr)
			break;
		w = m->off[j];
		if (w & OFFCPU_KOFF_TOP)
			w = nw - (w & ~OFFCPU_KOFF_TOP);
		if (w >= nw || kview_word(v, w) != m->frames[j])
			return 0;
	}
	return m->id;
}

/*
 * The cache of kernel stacks, with its audit: the id of the stack at key k
 * (its words from the context up in b, nw of them). A hit is served when
 * its frames are in place (kstack_verify); one served hit in
 * kcache_audit_mask+1 is walked anyway and compared: a stack that differs
 * is counted (stale) and its key evicted for good (the entry stays, marked
 * OFFCPU_KSTACK_NOCACHE: every later stack of that key is walked). A hit
 * whose frames are not in place (another blocking point with this key) is
 * walked; a miss is walked and cached. The recording states how often the
 * cache was audited, how often wrong, how many keys were evicted and how
 * many hits were walked because their frames were not in place.
 */
static __always_inline __u64 kstack_lookup(void *ctx, struct offcpu_kfp *k,
					   const struct offcpu_kview *v, struct offcpu_kstack *sc,
					   struct offcpu_kmemo *m)
{
	__u32 hook = k->hook & 3, nr;
	struct offcpu_kstack *e;
	__u64 id, eid;
	bool audit;

	e = bpf_map_lookup_elem(&kcache, k);
	if (!e) {
		/* a miss: walked, and cached when every frame is found on the stack */
		id = kstack_walk(ctx, hook, &sc->st);
		if (id && kstack_locate(sc, v, hook)) {
			sc->uses = 1;
			sc->seal = kstack_seal(sc);
			bpf_map_update_elem(&kcache, k, sc, BPF_NOEXIST);
			kmemo_keep(m, k, sc);
		}
		return id;
	}
	nr = e->st.nr;
	eid = e->st.id;
	if (nr == OFFCPU_KSTACK_NOCACHE)
		return kstack_walk(ctx, hook, &sc->st);
	audit = audit_due(&e->uses, kcache_audit_mask);
	m->nr = 0;
	id = kstack_verify(e, nr, v, m);
	if (!id) {
		/*
		 * Another blocking point with this key, or the entry recycled
		 * meanwhile: walked. When the walk finds the cached stack after
		 * all, a word taken for one of its frames was an older copy of
		 * that return address (left in an unwritten slot by an earlier
		 * call at another depth): cache it again with its frames found
		 * anew.
		 */
		stat(OFFCPU_STAT_KSTACK_UNVERIFIED);
		id = kstack_walk(ctx, hook, &sc->st);
		if (id && id == eid && kstack_locate(sc, v, hook)) {
			sc->uses = 1;
			sc->seal = kstack_seal(sc);
			bpf_map_update_elem(&kcache, k, sc, BPF_ANY);
			kmemo_keep(m, k, sc);
		}
		return id;
	}
	if (nr <= OFFCPU_KMEMO_FRAMES) {
		/* the frames kstack_verify copied, as it checked them */
		m->key = *k;
		m->id = id;
		m->nr = nr;
	}
	if (!audit) {
		stat(OFFCPU_STAT_KSTACK_CACHED);
		return id;
	}
	return kstack_audit(ctx, hook, sc, id, m, e, k); /* a hit the cache would serve */
}

/*
 * A hit of id (from the memo m, or the cache's entry e, looked up by its
 * key k when NULL), walked and compared: the walk's id. One that differs
 * is the stack's, and the entry is stale: never served again (it stays
 * until the LRU takes it), and the memo forgets it.
 */
static __always_inline __u64 kstack_audit(void *ctx, __u32 hook, struct offcpu_kstack *sc, __u64 id,
					  struct offcpu_kmemo *m, struct offcpu_kstack *e,
					  const struct offcpu_kfp *k)
{
	__u64 wid = kstack_walk(ctx, hook, &sc->st);

	if (!wid)
		return 0;
	stat(OFFCPU_STAT_KSTACK_CHECKED);
	if (wid != id) {
		stat(OFFCPU_STAT_KSTACK_STALE);
		m->nr = 0;
		if (!e)
			e = bpf_map_lookup_elem(&kcache, k);
		if (e)
			e->st.nr = OFFCPU_KSTACK_NOCACHE;
		stat(OFFCPU_STAT_KSTACK_EVICTED);
	}
	return wid;
}

/*
 * The id of cache entry e (nr frames, read once) when its frames are the
 * stack in v, else 0; what was read is copied into the memo m as it is
 * checked (its first OFFCPU_KMEMO_FRAMES frames). Each frame's return address must be at its place.
 * The kernel's unwinder finds each frame from the return address of the
 * one before (the frame's size is a property of its code), so a stack
 * whose return addresses are those, at those places, is the stack a walk
 * would give. Two blocking points that share a key (an older return
 * address taken for the syscall's slot, two waits at one depth) differ at
 * least at the frame where their paths part. Every field is read once,
 * and what was read must add up to the entry's seal: another CPU
 * recycling the entry meanwhile (the LRU map reuses its elements in place)
 * leaves a mix that does not.
 */
static __always_inline __u64 kstack_verify(const struct offcpu_kstack *e, __u32 nr,
					   const struct offcpu_kview *v, struct offcpu_kmemo *m)
{
	__u64 id = e->st.id, seal = id + nr;
	__u32 nw = v->nw;

	if (!nr || nr > OFFCPU_MAX_STACK)
		return 0;
	for (__u32 j = 0; j < OFFCPU_MAX_STACK; j++) {
		__u64 f;
		__u32 w;

		if (j >= nr)
			break;
		f = e->st.frames[j];
		w = e->off[j];
		seal += f + w;
		if (j < OFFCPU_KMEMO_FRAMES) {
			m->frames[j] = f;
			m->off[j] = w;
		}
		if (w & OFFCPU_KOFF_TOP)
			w = nw - (w & ~OFFCPU_KOFF_TOP);
		if (w >= nw || kview_word(v, w) != f)
			return 0;
	}
	return seal == e->seal ? id : 0;
}

/* The stack just walked and located (sc, private to this CPU) into the memo. */
static __always_inline void kmemo_keep(struct offcpu_kmemo *m, const struct offcpu_kfp *k,
				       const struct offcpu_kstack *sc)
{
	__u32 nr = sc->st.nr;

	m->nr = 0;
	if (!nr || nr > OFFCPU_KMEMO_FRAMES)
		return;
	for (__u32 j = 0; j < OFFCPU_KMEMO_FRAMES; j++) {
		if (j >= nr)
			break;
		m->frames[j] = sc->st.frames[j];
		m->off[j] = sc->off[j];
	}
	m->key = *k;
	m->id = sc->st.id;
	m->nr = nr;
}

/* The seal of a kernel stack about to be cached: the sum kstack_verify checks. */
static __always_inline __u64 kstack_seal(const struct offcpu_kstack *e)
{
	__u64 seal = e->st.id + e->st.nr;

	for (__u32 j = 0; j < OFFCPU_MAX_STACK; j++) {
		if (j >= e->st.nr)
			break;
		seal += e->st.frames[j] + e->off[j];
	}
	return seal;
}

/*
 * kstack_locate's progress, in a per-CPU map value rather than on the BPF
 * stack: the verifier knows nothing of values loaded from a map, so it
 * verifies the loop's body once, where counters on the stack it would
 * follow through every iteration.
 */
struct offcpu_locate_state {
	__u32 at, nw; /* the stack's view (struct offcpu_kview) */
	__u32 j;      /* the next frame to find */
	__u32 slot;   /* of do_syscall_64's call, once found: the frames above are counted from the top */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OFFCPU_HOOK__NR);
	__type(key, __u32);
	__type(value, struct offcpu_locate_state);
} klocate SEC(".maps");

struct offcpu_locate {
	struct offcpu_kstack *e;
	struct offcpu_locate_state *s;
	const __u64 *stk;
};

/* bpf_loop callback of kstack_locate: word w of the stack. */
static long kstack_locate_word(__u64 w, void *arg)
{
	struct offcpu_locate *c = arg;
	struct offcpu_locate_state *s = c->s;
	__u32 j = s->j, nw = s->nw;
	__u64 f;

	if (w >= nw || j >= c->e->st.nr || j >= OFFCPU_MAX_STACK)
		return 1;
	f = c->e->st.frames[j];
	if (c->stk[(s->at + w) & (OFFCPU_STACK_WORDS - 1)] == f) {
		c->e->off[j] = s->slot ? (nw - w) | OFFCPU_KOFF_TOP : w;
		if (in_syscall_entry(f))
			s->slot = w;
		s->j = j + 1;
	}
	return 0;
}

/*
 * Where each frame of the walked stack in e lies in v: the first word above
 * the previous frame's that holds its return address; the frames above
 * do_syscall_64's call (the syscall entry's, above the random offset)
 * counted from the top. false when a frame is not found (not cached
 * then). A bpf_loop: only misses pay for it, and the verifier sees the
 * body once.
 */
static __always_inline bool kstack_locate(struct offcpu_kstack *e, const struct offcpu_kview *v,
					  __u32 hook)
{
	struct offcpu_locate c = { .e = e, .stk = v->stk };

	c.s = bpf_map_lookup_elem(&klocate, &hook);
	if (!c.s || !e->st.nr || e->st.nr > OFFCPU_MAX_STACK)
		return false;
	c.s->at = v->at;
	c.s->nw = v->nw;
	c.s->j = 0;
	c.s->slot = 0;
	bpf_loop(OFFCPU_STACK_WORDS, kstack_locate_word, &c, 0);
	return c.s->j == e->st.nr;
}

/* The kernel's unwinder: current's kernel stack into st, sent; its id. */
static __always_inline __u64 kstack_walk(void *ctx, __u32 hook, struct offcpu_stack *st)
{
	long n = bpf_get_stack(ctx, st->frames, sizeof(st->frames),
			       kstack_skip[hook & 3] & BPF_F_SKIP_FIELD_MASK);

	stat(OFFCPU_STAT_KSTACK_WALKED);
	if (n <= 0) {
		drop(hook == OFFCPU_HOOK_WAKING ? OFFCPU_DROP_WAKER_KSTACK : OFFCPU_DROP_KSTACK);
		return 0;
	}
	st->nr = n / 8;
	return stack_announce(st);
}

/*
 * Send the stack in st (st->nr frames) to user space, once: its id (the
 * hash of its frames), or 0 when it has no frames or could not be sent
 * (counted: stack_lost). The ids sent are remembered in stacks_sent (an
 * LRU: one forgotten is sent again, which user space ignores); one is
 * noted only once its stack is on the ring buffer, ahead of every sample
 * that can name it. A global function: verified once.
 */
__noinline __u64 stack_announce(struct offcpu_stack *st)
{
	__u32 nr;
	__u8 one = 1;
	__u64 id;

	if (!st)
		return 0;
	nr = st->nr;
	if (!nr || nr > OFFCPU_MAX_STACK)
		return 0;
	id = stack_hash(st->frames, nr);
	st->kind = OFFCPU_REC_STACK;
	st->id = id;
	if (bpf_map_lookup_elem(&stacks_sent, &id))
		return id;
	if (bpf_ringbuf_output(&events, st, OFFCPU_STACK_HDR_SIZE + (nr & 127) * 8, ringbuf_flags())) {
		drop(OFFCPU_DROP_STACK_LOST);
		return 0;
	}
	bpf_map_update_elem(&stacks_sent, &id, &one, BPF_ANY);
	return id;
}

/* A stack's id: a hash of its n frames, never 0. */
static __always_inline __u64 stack_hash(const __u64 *f, __u32 n)
{
	__u64 h = 0xcbf29ce484222325ULL ^ n;

	for (__u32 i = 0; i < OFFCPU_MAX_STACK; i++) {
		if (i >= n)
			break;
		h ^= f[i];
		h *= 0x100000001b3ULL;
		h ^= h >> 29;
	}
	return h ? h : 1;
}

/*
 * Is this served hit of a cache to be audited (walked and compared)? One
 * in mask+1, by the entry's count of uses (a racy count: a lost increment
 * only moves the next audit). User space sets the masks (offcpu_bpf.c).
 */
static __always_inline bool audit_due(__u32 *uses, __u32 mask)
{
	return !((*uses)++ & mask);
}

/* ==== wakers (--wakeups) ==== */

/*
 * current wakes t's task p, in its measured wait: note who (identity,
 * name, stacks: cached as a sleeper's are, with memos of the last waker's
 * stacks in p's storage: a task is mostly woken from the same place) in
 * the task's storage, for its switch-in. Wakers of a task are serialised by the scheduler (its
 * pi_lock), and the task is not running: no one else writes there.
 *
 * Or p is on its way to a wait, its switch-out not yet traced on its CPU:
 * sched_waking fires once p's sleeping state matches, and try_to_wake_up
 * waits for that switch-out after it. Noted the same, untied to a wait
 * (interval 0) and tagged with the run it came in, written last: the
 * switch-out on p's CPU writes none of these meanwhile, and the
 * switch-in that reads them comes after this program's end (waker_of).
 * open: the caller's wait_open(t, p), which tells the two apart. When the
 * kernel hid the switch-in of p's last wait, that wait's waker is still
 * noted (tied to it, or untied and tagged with the run before it) until
 * p's switch-out ends the wait: this one is kept aside then (t->early),
 * not over it (with one switch-in in three hidden, 1 of 400 pipe reads
 * lost its waker so). The waker's identity, as noted.
 */
static __always_inline struct offcpu_who *waker_note(void *ctx, const struct offcpu_run *r,
						     struct offcpu_task *t, struct task_struct *p,
						     bool open)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	/* the waker of p's last wait, its switch-in hidden, still pending */
	bool aside = !open && t->ts_out && t->waker.n.time &&
		     (t->waker.interval ? t->waker.interval == t->ts_out
					: t->waker.n.tag == t->pcount_out + 1);
	struct offcpu_waker_note *n = aside ? &t->early : &t->waker.n;

	who_init(&n->who, cur);
	bpf_get_current_comm(n->comm, sizeof(n->comm));
	take_stacks(ctx, cur, OFFCPU_HOOK_WAKING, &n->who, &t->waker.kmemo, &t->waker.umemo);
	if (!aside)
		t->waker.interval = open ? t->ts_out : 0;
	n->time = r->clk; /* the wakee's run queue's clock: only not 0 matters */
	barrier();
	n->tag = bpf_core_field_exists(p->sched_info.pcount) ? p->sched_info.pcount + 1 : 0;
	return &n->who;
}

/*
 * Is t's interval (ts_out) still p's wait? Not when the kernel hid the
 * switch-in that ended it: p has run since (its count of switch-ins moved
 * on), and a waking now is for the sleep p is on its way to, as one
 * before that sleep's switch-out is (noted untied to a wait).
 */
static __always_inline bool wait_open(const struct offcpu_task *t, struct task_struct *p)
{
	return t->ts_out && (!bpf_core_field_exists(p->sched_info.pcount) ||
			     p->sched_info.pcount == t->pcount_out);
}

/* How soon after a sleep's switch-out a waking that came before it queues the task. */
#define EARLY_WAKING_NS 200000

/*
 * Is a waking noted before a sleep's switch-out was traced (tag: the
 * sleeper's sched_info.pcount + 1 then; 0: none) the one that ended the
 * sleep that switch-out began (pcount_out, at out), the sleeper queued at
 * queued? sched_waking fires once the sleeper's state matches, and
 * try_to_wake_up then waits for that switch-out before it queues the
 * task: such a waking is the sleep's when it came in the same run and the
 * task was queued right after the switch-out. One that found the task
 * still running (it never slept then) is older than a later sleep's end.
 * The rule of both --wakeups (waker_of) and --chains (chain_early).
 */
static __always_inline bool woken_before_out(__u32 tag, __u32 pcount_out, __u64 out, __u64 queued)
{
	return tag && tag == pcount_out + 1 && queued <= out + EARLY_WAKING_NS;
}

/*
 * Did t's noted waker end its wait, from ts_out to its wakeup at end? One
 * noted in the wait did; one noted before its switch-out as
 * woken_before_out says (a later wait's own waking, seen, replaces it).
 * One kept aside (t->early) becomes the noted one once that is done with.
 */
static __always_inline bool waker_of(struct offcpu_task *t, __u64 end)
{
	if (!t->waker.n.time && t->early.time) {
		/* kept aside (waker_note), the waker before it now done with */
		t->waker.n = t->early;
		t->waker.interval = 0;
		t->early.time = 0;
	}
	if (!t->waker.n.time)
		return false;
	if (t->waker.interval)
		return t->waker.interval == t->ts_out;
	if (!woken_before_out(t->waker.n.tag, t->pcount_out, t->ts_out, end))
		return false;
	stat(OFFCPU_STAT_WAKER_EARLY);
	return true;
}

/* ==== waits in progress at the start and the stop of the recording ==== */
/*
 * A target already waiting when the recording starts has no switch-out
 * for the programs to see: the offcpu_start iterator finds it (asleep, or
 * runnable with --sched-delay), notes its stacks in `starts` and marks its
 * task storage (start_pending); its wait counts from the start (rec_start)
 * and ends at its wakeup, read at its switch-in from the scheduler's own
 * accounting (sched_info.last_queued: the time it was queued, i.e. woken).
 * At the stop, the offcpu_stop iterator ends every wait still open at the
 * stop (rec_stop), the programs still attached but stopping (stop_switch,
 * stop_task). Both kinds are direct samples flagged
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

/*
 * next, waiting since the start (t->start_pending), gets the CPU. When it
 * was switched in since, unseen, start_unclosed ends the wait instead.
 */
static __always_inline void start_in(struct offcpu_task *t, struct task_struct *next,
				     const struct offcpu_run *r)
{
	struct offcpu_start *st = bpf_task_storage_get(&starts, next, 0, 0);

	if (!st) {
		t->start_pending = 0;
		return;
	}
	/* pcount counts this switch-in only after the tracepoint */
	if (next->sched_info.pcount != st->pcount) {
		start_unclosed(t, next, r);
		return;
	}
	t->start_pending = 0;
	start_end(st, next->sched_info.last_queued, r->clk, r);
}

/*
 * p, waiting since the start, runs (it switches out, is switched in after
 * an unseen switch-in, or exits) without its switch-in seen: as
 * interval_unclosed, end its wait from sched_info when it was switched in
 * exactly once since.
 */
static __always_inline void start_unclosed(struct offcpu_task *t, struct task_struct *p,
					   const struct offcpu_run *r)
{
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
		unclosed_why(pcount, st->pcount);
		return;
	}
	if (st->kind == OFFCPU_START_SLEEP)
		stat(OFFCPU_STAT_CLOSED_BY_SCHED_INFO);
	start_end(st, arrival - (delay - st->run_delay), arrival, r);
}

/*
 * The wait in progress at the start of a task (st) ended: the task was
 * woken at `wake` (0: unknown) and gets the CPU at `run` (run-queue clock).
 * Off-CPU up to the wakeup, run-queue delay after it.
 */
static __always_inline void start_end(const struct offcpu_start *st, __u64 wake, __u64 run,
				      const struct offcpu_run *r)
{
	__u64 off;

	if (st->kind == OFFCPU_START_QUEUED) {
		if (run > rec_start)
			start_emit(st, OFFCPU_SCHED_DELAY | OFFCPU_IN_PROGRESS_START, run - rec_start, r);
		return;
	}
	if (!wake || wake < rec_start || wake > run)
		wake = st->kind == OFFCPU_START_SLEEP ? run : 0;
	off = wake > rec_start ? wake - rec_start : 0;
	/* -m/-M judge the part inside the recording: the period written */
	if (st->kind == OFFCPU_START_SLEEP && block_time_kept(off))
		start_emit(st, st->state | OFFCPU_IN_PROGRESS_START, off, r);
	if (want_sched_delay && wake && wake < run)
		start_emit(st, OFFCPU_SCHED_DELAY | st->state, run - wake, r);
}

/* A wait in progress at the start, of period ns, as one direct sample. */
static __always_inline void start_emit(const struct offcpu_start *st, __u32 state, __u64 period,
				       const struct offcpu_run *r)
{
	struct offcpu_sample *s = sample_reserve(0, state, OFFCPU_DROP_RINGBUF);

	if (!s)
		return;
	/* its time is its own: read in full */
	one_wait_fill(s, &st->who, state, bpf_ktime_get_ns(), period, r->cpu);
	sample_submit(s);
}

/*
 * The recording is stopping: the stop iterator ends every wait still open,
 * at the stop, and the programs start and end none, but note here what the
 * iterator could not tell later: the stop's time, at the first switch
 * after it, and the wakeup of a waiting task that gets the CPU now
 * (t->stop_wake). The iterator may reach that task only after it has run
 * and waited many times more, and sched_info keeps only the last of those
 * (a stop that detached the programs first counted such a wait lost,
 * "interval end not seen", on busy threads). A wait whose switch-in the
 * kernel hid (its task runs, or gets the CPU again, with the wait still
 * open) is ended at the first switch that shows it, while sched_info can
 * still time it, as the switch does in normal mode, and claimed, as the
 * iterator claims its waits (stop_claim).
 */
static __noinline void stop_switch(const struct offcpu_run *r, struct task_struct *prev,
				    struct task_struct *next)
{
	struct offcpu_start *st;
	struct offcpu_task *t;
	__u64 pcount, queued;

	note_time(&rec_stop, &rec_stop_mono);
	t = bpf_task_storage_get(&tasks, prev, 0, 0);
	if (t && (t->ts_out || t->start_pending) && !t->stop_wake && stop_claim(t, OFFCPU_STOP_PROG))
		interval_unclosed(t, prev, r);
	t = bpf_task_storage_get(&tasks, next, 0, 0);
	if (!t || t->stop_wake || !(t->ts_out || t->start_pending))
		return;
	/* pcount counts this switch-in only after the tracepoint */
	pcount = next->sched_info.pcount;
	if (t->ts_out && pcount == t->pcount_out) {
		t->stop_wake = interval_end(next, t, r->clk);
		return;
	}
	st = t->ts_out ? NULL : bpf_task_storage_get(&starts, next, 0, 0);
	if (st && pcount == st->pcount) {
		/* the value read first: one load may not serve two kinds of pointer */
		queued = next->sched_info.last_queued;
		barrier_var(queued);
		t->stop_wake = queued ? queued : r->clk;
	} else if (stop_claim(t, OFFCPU_STOP_PROG))
		interval_unclosed(t, next, r);
}

/*
 * The stop, for one task p: every wait of its still open ends at the stop
 * (rec_stop), written to seq by the stop iterator or, from p's exit (seq
 * NULL), on the ring buffer. A task woken but not yet running ends its
 * off-CPU interval at its wakeup; its wait for a CPU is then the one in
 * progress. A wakeup since the recording began stopping was noted at the
 * task's switch-in (t->stop_wake, stop_switch). A wait whose task ran
 * since without a switch-in seen is ended as interval_unclosed does, on
 * the ring buffer (the iterator's r->direct) or in the exiting task's
 * sums. Only the first to claim p's waits ends them (stop_claim).
 */
static __always_inline void stop_task(struct seq_file *seq, struct task_struct *p,
				      const struct offcpu_run *r)
{
	struct offcpu_task *t = bpf_task_storage_get(&tasks, p, 0, 0);
	struct offcpu_start *st = NULL;
	__u64 pcount, queued, wake;
	__u32 state;

	if (!t || !stop_claim(t, seq ? OFFCPU_STOP_ITER : OFFCPU_STOP_PROG))
		return;
	note_time(&rec_stop, &rec_stop_mono);
	pcount = p->sched_info.pcount;
	/* woken (or preempted) since then: on a run queue from here; 0 when not */
	queued = t->stop_wake ? t->stop_wake : p->sched_info.last_queued;
	if (t->start_pending)
		st = bpf_task_storage_get(&starts, p, 0, 0);
	if (!t->stop_wake &&
	    ((t->ts_out && pcount != t->pcount_out) || (st && pcount != st->pcount)))
		interval_unclosed(t, p, r);
	if (t->start_pending && st) {
		bool woken = queued >= rec_start && queued < rec_stop;

		state = st->state;
		if (st->kind == OFFCPU_START_QUEUED) {
			stop_emit(seq, p, &st->who, OFFCPU_SCHED_DELAY | OFFCPU_IN_PROGRESS_START |
					  OFFCPU_IN_PROGRESS_STOP, rec_start, rec_stop);
		} else if (st->kind == OFFCPU_START_SLEEP && !woken) {
			stop_emit(seq, p, &st->who, state | OFFCPU_IN_PROGRESS_START | OFFCPU_IN_PROGRESS_STOP,
				  rec_start, rec_stop);
		} else if (woken) {
			if (st->kind == OFFCPU_START_SLEEP)
				stop_emit(seq, p, &st->who, state | OFFCPU_IN_PROGRESS_START, rec_start, queued);
			if (want_sched_delay)
				stop_emit(seq, p, &st->who, OFFCPU_SCHED_DELAY | OFFCPU_IN_PROGRESS_STOP | state,
					  queued, rec_stop);
		}
	}
	if (t->ts_out) {
		state = t->state;
		wake = t->stop_wake ? t->stop_wake : t->ts_wake ? t->ts_wake : queued;
		if (wake >= t->ts_out && wake < rec_stop) {
			stop_emit(seq, p, &t->who, state, t->ts_out, wake);
			if (want_sched_delay)
				stop_emit(seq, p, &t->who, OFFCPU_SCHED_DELAY | OFFCPU_IN_PROGRESS_STOP | state,
					  wake, rec_stop);
		} else {
			stop_emit(seq, p, &t->who, state | OFFCPU_IN_PROGRESS_STOP, t->ts_out, rec_stop);
		}
	} else if (want_sched_delay && t->ts_queued) {
		stop_emit(seq, p, &t->who, OFFCPU_SCHED_DELAY | OFFCPU_IN_PROGRESS_STOP | t->delay_state,
			  t->ts_queued, rec_stop);
	}
}

/*
 * Take t's waits for the stop, as `owner`: the stop iterator, or a program
 * (the task's exit, or a switch that repairs its wait: stop_switch). The
 * first to take them ends them, no one else: the exchange decides. The
 * iterator takes a task again when it shows it again (its output did not
 * fit: bpf_seq_read's retry), and writes the same.
 */
static __always_inline bool stop_claim(struct offcpu_task *t, __u64 owner)
{
	__u64 old = __sync_val_compare_and_swap(&t->stop_owner, 0, owner);

	return !old || (old == owner && owner == OFFCPU_STOP_ITER);
}

/*
 * A wait of `who` in `state` that ran from `from` to `to` (run-queue
 * clock), ended at the stop, as a direct sample (the samples' time: the
 * stop): to user space through seq (the stop iterator), or on the ring
 * buffer (seq NULL: a task's exit). A wait that began after the stop (a
 * program run that had begun before the recording was stopping) is
 * outside the recording.
 */
static __always_inline void stop_emit(struct seq_file *seq, struct task_struct *p,
				      const struct offcpu_who *who, __u32 state, __u64 from, __u64 to)
{
	struct offcpu_sample s;

	if (to <= from)
		return;
	if (!(state & OFFCPU_SCHED_DELAY) && !block_time_kept(to - from))
		return; /* -m/-M, on the part inside the recording */
	__builtin_memset(&s, 0, sizeof(s)); /* all of it goes to user space */
	s.kind = OFFCPU_REC_SAMPLE;
	one_wait_fill(&s, who, state, rec_stop_mono, to - from, BPF_CORE_READ(p, thread_info.cpu));
	if (seq)
		bpf_seq_write(seq, &s, sizeof(s));
	else if (bpf_ringbuf_output(&events, &s, sizeof(s), ringbuf_flags()))
		drop(OFFCPU_DROP_RINGBUF);
}

/* ==== targets and counters ==== */

/*
 * Is t's task known to be a target (switch_out: its lookups in the target
 * maps are made once)? Only where being one depends on the task alone:
 * not with -C (the CPU it is on) nor -G (its cgroup). The target sets only
 * grow, but when a process leaves them at its exit (targets_gen moves).
 */
static __always_inline bool target_known(const struct offcpu_task *t)
{
	return !filter_cpu && !filter_cgroup && t->target_gen == targets_gen + 1;
}

/* t's task is a target (see target_known). */
static __always_inline void target_note(struct offcpu_task *t)
{
	t->target_gen = targets_gen + 1;
}

/* p's task storage, made when missing, with p's identity. */
static __always_inline struct offcpu_task *task_of(struct task_struct *p)
{
	struct offcpu_task *t = task_storage_make(&tasks, p);

	if (t && !t->who.tid)
		who_init(&t->who, p);
	return t;
}

/*
 * p's storage in the task-storage map `map`, made when missing. Two CPUs
 * that make storage for one task at once (its switch-out and the start
 * iterator; a waker's chain note and the wakee's switch-out) both miss it,
 * and one loses: -EEXIST when both make this map's, -EAGAIN when both make
 * the task's first storage of any map (1 recording in 75 lost a wait so at
 * its start). The loser asks again: it finds the winner's, or makes its
 * own beside it. NULL when none is to be had: no memory, or a program
 * inside the task-storage code on this CPU (the sleepable start iterator,
 * descheduled there), which makes every creation here fail.
 */
static __always_inline void *task_storage_make(void *map, struct task_struct *p)
{
	void *v = bpf_task_storage_get(map, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);

	return v ? v : bpf_task_storage_get(map, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
}

/* who is p: its ids (an exec by a thread other than the leader changes them). */
static __always_inline void who_init(struct offcpu_who *who, struct task_struct *p)
{
	who->pid = p->tgid;
	who->tid = p->pid;
	who->start_time = p->start_time;
}

/*
 * Is this task one of the targets? Called for current when cgroup
 * filtering applies (switch-out and CPU samples), which is what the cgroup
 * helper needs. Kernel threads are judged by the caller.
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

/*
 * p's cgroup v2 id, as bpf_get_current_cgroup_id gives current's, by plain
 * loads (p is the program's argument, under RCU here): no helper call.
 */
static __always_inline __u64 task_cgroup(struct task_struct *p)
{
	return p->cgroups->dfl_cgrp->kn->id;
}

static __always_inline void drop(__u32 what)
{
	__u64 *n = bpf_map_lookup_elem(&drops, &what);

	if (n)
		*n += 1;
}

static __always_inline void stat(__u32 what)
{
	__u64 *n = bpf_map_lookup_elem(&stats, &what);

	if (n)
		*n += 1;
}

char LICENSE[] SEC("license") = "GPL";
