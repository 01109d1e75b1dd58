/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Types shared by offcpu.bpf.c and user space. Names are prefixed: vmlinux.h
 * already defines short ones such as `struct key` and `struct stack`.
 */
#ifndef OFFCPU_BPF_H
#define OFFCPU_BPF_H

#define OFFCPU_MAX_STACK 127 /* frames per stack, perf's default maximum */

/* Task states as the scheduler passes them in prev_state. */
#define OFFCPU_STATE_S 0x1 /* TASK_INTERRUPTIBLE */
#define OFFCPU_STATE_D 0x2 /* TASK_UNINTERRUPTIBLE */
/* Only in sched-delay samples: what the task did before it waited for a CPU. */
#define OFFCPU_STATE_OTHER 0x4 /* slept in another state (stopped, traced...) */
#define OFFCPU_STATE_NEW 0x8   /* was just created (its first run) */
/*
 * Flag in offcpu_sample.state: the sample is run-queue delay (--sched-delay),
 * time from a wakeup, a preemption (no state bit) or a fork until the task
 * runs; not off-CPU time.
 */
#define OFFCPU_SCHED_DELAY 0x100
/*
 * Flags in offcpu_sample.state of a direct sample: the wait was in progress
 * when the recording started (it counts from the start) or when it stopped
 * (it counts up to the stop). Such waits are never summed.
 */
#define OFFCPU_IN_PROGRESS_START 0x200
#define OFFCPU_IN_PROGRESS_STOP 0x400

/*
 * What a drop loses, for user space: whether the record summary's status
 * line counts it as lost, and which event's PERF_RECORD_LOST (perf report
 * warns of those) it is booked to. The ring buffer and the sum map are
 * shared by offcpu-time and sched-delay samples: booked to offcpu-time.
 */
enum offcpu_loss {
	OFFCPU_LOSS_PART = 0, /* the sample is kept without a part (a stack): not lost */
	OFFCPU_LOSS_DATA,     /* lost (or timed late), no LOST record */
	OFFCPU_LOSS_OFFCPU,   /* a sample lost: LOST record of offcpu-time */
	OFFCPU_LOSS_WAKEUP,   /* a waker lost: LOST record of offcpu-wakeup */
	OFFCPU_LOSS_DELAY,    /* a run-queue wait lost: LOST record of sched-delay */
};

/*
 * Every place the BPF side can lose data, counted in the `drops` map, named
 * once: X(ID, KEY, WHAT, LOSS) gives OFFCPU_DROP_ID (the enum, in this
 * order), KEY in the file's offcpu section (offcpu report --header reads
 * every drop.* key), WHAT in the record summary's "lost:" line, LOSS an
 * enum offcpu_loss. A new counter: a row here, its increment in
 * offcpu.bpf.c.
 */
#define OFFCPU_DROPS(X)                                                                         \
	/* ring buffer full: a direct sample lost */                                            \
	X(RINGBUF, "drop.ringbuf_full", "ring buffer full", OFFCPU_LOSS_OFFCPU)                 \
	/* sum map full, and the ring buffer too: a short interval lost */                      \
	X(SUM_FULL, "drop.sum_full", "sum map full", OFFCPU_LOSS_OFFCPU)                        \
	/* user stack could not be read (kept, empty) */                                        \
	X(USTACK, "drop.ustack_failed", "user stack unreadable", OFFCPU_LOSS_PART)              \
	/* kernel stack could not be read (kept, empty) */                                      \
	X(KSTACK, "drop.kstack_failed", "kernel stack unreadable", OFFCPU_LOSS_PART)            \
	/* a new stack's frames not sent (ring buffer full): samples keep it empty */           \
	X(STACK_LOST, "drop.stack_lost", "stacks lost (ring buffer full)", OFFCPU_LOSS_PART)     \
	/* no task storage: interval not measured */                                            \
	X(TASK_STORAGE, "drop.task_storage", "task storage unavailable", OFFCPU_LOSS_OFFCPU)    \
	/* exit map full: summed sample timed at drain */                                       \
	X(EXITS_FULL, "drop.exits_full", "exit map full", OFFCPU_LOSS_DATA)                     \
	/* neither switch-in nor wakeup seen: interval lost */                                  \
	X(UNCLOSED, "drop.unclosed", "interval end not seen", OFFCPU_LOSS_DATA)                 \
	/* --wakeups: an interval lost with its waker (counted above too): the waker's sample */ \
	X(WAKER_LOST, "drop.waker_lost", "waker lost (ring buffer or sum map full)",             \
	  OFFCPU_LOSS_WAKEUP)                                                                   \
	/* waker's user stack unreadable (kept, empty) */                                       \
	X(WAKER_USTACK, "drop.waker_ustack_failed", "waker user stack unreadable",              \
	  OFFCPU_LOSS_PART)                                                                     \
	/* waker's kernel stack unreadable (kept, empty) */                                     \
	X(WAKER_KSTACK, "drop.waker_kstack_failed", "waker kernel stack unreadable",            \
	  OFFCPU_LOSS_PART)                                                                     \
	/* --sched-delay (ring buffer and sum map full count as above) */                       \
	/* no task storage: a run-queue wait not measured */                                    \
	X(DELAY_STORAGE, "drop.sched_delay_storage", "sched-delay storage unavailable",         \
	  OFFCPU_LOSS_DELAY)                                                                    \
	/* -p or a command: a child forked by a target (or the command, at its exec) not      \
	   followed: the target map full */                                                     \
	X(CHILD_UNTRACED, "drop.child_untraced", "child process not followed (target map full)",  \
	  OFFCPU_LOSS_DATA)                                                                     \
	/* --call-graph dwarf: CPU samples come through a BPF ring buffer */                    \
	/* its ring buffer full: a CPU sample lost */                                           \
	X(CPU_RINGBUF, "drop.cpu_ringbuf_full", "cpu samples (BPF ring buffer full)",           \
	  OFFCPU_LOSS_DATA)                                                                     \
	/* --chains: a switch or stack record lost (the analysis marks what it breaks) */       \
	X(CHAIN_RINGBUF, "drop.chain_ringbuf_full", "chain records (ring buffer full)",         \
	  OFFCPU_LOSS_DATA)                                                                     \
	/* --chains: no task storage: a thread's wait not noted */                              \
	X(CHAIN_STORAGE, "drop.chain_storage", "chain task storage unavailable", OFFCPU_LOSS_DATA)

#define OFFCPU_DROP_ENUM(id, key, what, loss) OFFCPU_DROP_##id,
enum offcpu_drop {
	OFFCPU_DROPS(OFFCPU_DROP_ENUM)
	OFFCPU_DROP__NR,
};
#undef OFFCPU_DROP_ENUM

/*
 * Facts of the recording that are not losses (the `stats` map), named once
 * as the drops: X(ID, KEY) gives OFFCPU_STAT_ID and the KEY of the file's
 * offcpu section. Kernel stacks are walked by the kernel's unwinder or
 * taken from the cache of stacks by blocking point; a sample of the cache
 * hits is walked anyway to check the cache (`checked`), and `stale` counts
 * the checks that found a different stack. `closed_by_sched_info` counts
 * intervals whose switch-in the switch program never saw (the kernel can
 * hide a tracepoint hit from one BPF program while another is attached or
 * detached), ended at their wakeup instead, when the task next switched
 * out or exited; `closed_at_wakeup` the same on kernels without
 * sched_info, where the sched_wakeup program notes the wakeup.
 */
#define OFFCPU_STATS(X)                                               \
	X(KSTACK_WALKED, "kstack.walked")                             \
	X(KSTACK_CACHED, "kstack.cached")                             \
	X(KSTACK_CHECKED, "kstack.checked")                           \
	X(KSTACK_STALE, "kstack.stale")                               \
	/* switch-in missed, wakeup seen (sched_wakeup program) */    \
	X(CLOSED_AT_WAKEUP, "offcpu.closed_at_wakeup")                \
	/* switch-in missed, wakeup from sched_info */                \
	X(CLOSED_BY_SCHED_INFO, "offcpu.closed_by_sched_info")        \
	/* cache keys whose check differed: never cached again */     \
	X(KSTACK_EVICTED, "kstack.evicted")                           \
	/* hits whose frames were not on the stack: walked */         \
	X(KSTACK_UNVERIFIED, "kstack.unverified")                     \
	/* -m/-M: intervals outside the block-time range, left out */ \
	X(FILTERED, "offcpu.filtered")                                \
	/* short intervals the sums could not take: sent alone */    \
	X(SUM_DIRECT, "sum.direct")                                   \
	/* woken with sched_info's queue time from before the wakeup */ \
	X(QUEUED_BEFORE_WAKEUP, "offcpu.queued_before_wakeup")        \
	/* drop.unclosed: switched in more than once unseen */          \
	X(UNCLOSED_RAN_AGAIN, "offcpu.unclosed_ran_again")            \
	/* drop.unclosed: sched_info's times before the switch-out */  \
	X(UNCLOSED_CLOCK, "offcpu.unclosed_clock")                    \
	/* a task preempted, its switch-in unseen: its interval ended */ \
	X(CLOSED_AT_PREEMPTION, "offcpu.closed_at_preemption")        \
	/* --sched-delay: a wait for a CPU ended unseen, timed by sched_info */ \
	X(DELAY_CLOSED_BY_SCHED_INFO, "offcpu.delay_closed_by_sched_info") \
	/* --chains: a sleep's sched_waking came before its switch-out */ \
	X(CHAIN_WOKEN_EARLY, "chain.woken_before_switch_out")      \
	/* --wakeups: a wait's sched_waking came before its switch-out */ \
	X(WAKER_EARLY, "wakeup.woken_before_switch_out")

#define OFFCPU_STAT_ENUM(id, key) OFFCPU_STAT_##id,
enum offcpu_stat {
	OFFCPU_STATS(OFFCPU_STAT_ENUM)
	OFFCPU_STAT__NR,
};
#undef OFFCPU_STAT_ENUM

/*
 * The records of the `events` ring buffer, each starting with its kind: a
 * stack, sent once before any sample refers to it by its id, and samples.
 */
enum offcpu_rec_kind {
	OFFCPU_REC_STACK = 1,
	OFFCPU_REC_SAMPLE = 2,
};

/*
 * A stack, innermost frame first: user frames (from the user registers
 * at kernel entry, or where a sample interrupted) or kernel frames. Its id
 * is a hash of its frames (stack_hash in offcpu.bpf.c), never 0: samples,
 * sums and the per-task state carry the 8-byte id, and user space keeps
 * the frames of every id it was sent (only the first nr frames travel).
 * 0 stands for no stack.
 */
struct offcpu_stack {
	__u32 kind; /* OFFCPU_REC_STACK */
	__u32 nr;
	__u64 id;
	__u64 frames[OFFCPU_MAX_STACK];
};

#define OFFCPU_STACK_HDR_SIZE 16

/*
 * Who was where: a task's identity and the stacks it was in (a sleeper at
 * its switch-out, a waker at its sched_waking).
 */
struct offcpu_who {
	__u32 pid; /* thread group id */
	__u32 tid;
	__u64 start_time; /* task->start_time: tells reused tids apart */
	__u64 cgroup;     /* cgroup v2 id */
	__u64 ustack;     /* stack ids (struct offcpu_stack), 0: none */
	__u64 kstack;
};

/*
 * What an off-CPU (or sched-delay) sample counts: the key of the in-kernel
 * sums. state: OFFCPU_STATE_* and the flags above (OFFCPU_WAKER: waker
 * set); gen: the task's execs and renames seen, so that the sums of each
 * image and name stay apart.
 */
struct offcpu_sum_key {
	struct offcpu_who who;
	__u32 state;
	__u32 gen;
	struct offcpu_who waker; /* --wakeups: who woke it (zero without) */
};

/* A sum's value, and a sample's figures. */
struct offcpu_sum {
	__u64 time;   /* the end of its last interval (samples' clock) */
	__u64 period; /* ns */
	__u64 count;  /* intervals */
	__u32 cpu;    /* of the last interval's end */
	__u32 pad;
	char wcomm[16]; /* the waker's name */
};

/*
 * A sample on the ring buffer (and from the iterators): a direct one, one
 * interval or wait, or (OFFCPU_SAMPLE_SUM) a sum of short ones that could
 * not be kept in the kernel, timed at its last.
 */
#define OFFCPU_SAMPLE_SUM 0x1
/* a direct one timed by the program: a wait ended by a switch-in the kernel hid, at its time */
#define OFFCPU_SAMPLE_TIMED 0x2
struct offcpu_sample {
	__u32 kind;  /* OFFCPU_REC_SAMPLE */
	__u32 flags; /* OFFCPU_SAMPLE_* */
	struct offcpu_sum_key k;
	struct offcpu_sum v;
};

/* Flag in offcpu_sum_key.state: the sample carries its waker (--wakeups). */
#define OFFCPU_WAKER 0x800

/*
 * Key of the kernel stack cache. At switch-out a task's kernel stack is
 * fixed by where it entered the kernel and how deep it went: the syscall
 * number, the user stack (its id and the user instruction pointer), and
 * the depth of the kernel stack. In a syscall the depth is measured from
 * the syscall's own first frame (OFFCPU_KFP_SYSCALL set), below the
 * per-syscall random offset (RANDOMIZE_KSTACK_OFFSET): the raw depth
 * includes that offset, and two blocking points of one syscall then share
 * a depth whenever their offsets make up for the difference between them.
 * hook: the program (enum offcpu_hook in offcpu.bpf.c) whose stacks these
 * are: the switch's start at __schedule, a waker's at try_to_wake_up.
 */
struct offcpu_kfp {
	__u64 uhash;
	__u64 uip;
	__s32 sysnr;
	__u32 depth;
	__u32 hook;
	__u32 pad;
};

#define OFFCPU_KFP_SYSCALL 0x80000000u /* in offcpu_kfp.depth */
/* offcpu_kstack.st.nr of a key whose check failed: walk, never cache it again */
#define OFFCPU_KSTACK_NOCACHE 0xffffffffu

/*
 * A cached kernel stack: its frames, and where each frame's return address
 * lies on the stack, in words from the program's context (the stack
 * pointer of the key) or, with OFFCPU_KOFF_TOP, from the stack's pt_regs
 * (the syscall entry's frames, above the random offset): a hit is served
 * only when the words there are still those frames (kstack_verify in
 * offcpu.bpf.c). seal: the sum of the id, the frame count and every frame
 * and offset, so that an entry read while another CPU recycles it (an LRU
 * map reuses its elements in place) is told from a whole one.
 */
#define OFFCPU_KOFF_TOP 0x8000
struct offcpu_kstack {
	struct offcpu_stack st;
	__u64 seal;
	__u32 uses;
	__u32 pad;
	__u64 word; /* scratch of the per-CPU copy: a pointer read back as a number */
	__u16 off[OFFCPU_MAX_STACK + 1];
};

/*
 * --call-graph dwarf: a CPU sample taken by the BPF program on the perf
 * event, with its stacks (ulen user frames, then klen kernel frames from
 * stack[OFFCPU_MAX_STACK], innermost first).
 */
#define OFFCPU_CPU_SAMPLE_OTHER 0x2 /* --chains: a thread outside the targets */
struct offcpu_cpu_sample {
	__u64 time;
	__u64 period;
	__u64 ip;   /* where it was interrupted */
	__u32 pid;
	__u32 tid;
	__u32 cpu;
	__u32 user; /* it interrupted user mode (1), outside the targets (OFFCPU_CPU_SAMPLE_OTHER) */
	__u32 ulen;
	__u32 klen;
	__u64 stack[2 * OFFCPU_MAX_STACK];
};

/*
 * What the start iterator writes: records of `size` bytes (this header
 * included), of a kind:
 *   OFFCPU_ITER_SEEN   a target it saw (one for every one, waiting or not):
 *                      its name, for a thread that exits before /proc is
 *                      read, whose FORK and COMM came before the recording
 *                      and whose samples would otherwise show as ':PID'
 *   OFFCPU_ITER_STACK  --call-graph dwarf: the user stack of a target
 *                      waiting at the start, kept raw (struct
 *                      offcpu_unw_deferred, bpf/unwind.h), before its SEEN
 */
enum { OFFCPU_ITER_SEEN = 1, OFFCPU_ITER_STACK };

struct offcpu_iter_hdr {
	__u32 kind;
	__u32 size;
};

struct offcpu_seen_task {
	struct offcpu_iter_hdr h;
	__u32 pid;
	__u32 tid;
	char comm[16];
};

/*
 * Key of the exit map: a task that exited, or exec'd, while it had sums
 * pending; gen tells the sums of each image of the task (offcpu_sum_key).
 */
struct offcpu_exit_key {
	__u32 tid;
	__u32 gen;
	__u64 start_time;
};

#endif
