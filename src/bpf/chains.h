/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * record --chains, shared by chains.bpf.h and user space: the records of
 * the chain ring. Every thread of the machine, target or not, gets one
 * switch record per wait (written at its switch-in), naming its stacks by
 * the switch program's ids.
 */
#ifndef OFFCPU_BPF_CHAINS_H
#define OFFCPU_BPF_CHAINS_H

#define OFFCPU_CHAIN_SWITCH 1
#define OFFCPU_CHAIN_STACK 2 /* (user space only) */

/* Flags of a switch record (as the file's OFFCPU_SWITCH_*). */
#define OFFCPU_CHAIN_TARGET 0x1     /* a thread of the targets */
#define OFFCPU_CHAIN_FROM_START 0x2 /* its wait began before the programs saw it: out is 0 */
#define OFFCPU_CHAIN_REPAIRED 0x4   /* its switch-in was not seen: timed from sched_info */
#define OFFCPU_CHAIN_GAP 0x8        /* a record of this thread before it was lost */
#define OFFCPU_CHAIN_WAKE_UNSEEN 0x10 /* asleep, its sched_waking not seen: wake from sched_info */

/* What a stack record's stack is: which glue frames lead its kernel part. */
#define OFFCPU_CHAIN_STACK_SLEEP 0 /* taken in the switch program: from __schedule on */
#define OFFCPU_CHAIN_STACK_WAKER 1 /* taken at sched_waking or wakeup_new: from try_to_wake_up on */
#define OFFCPU_CHAIN_STACK_TASK 2  /* of another task (bpf_get_task_stack): no glue */
#define OFFCPU_CHAIN_STACK_NEW 3   /* taken at wakeup_new: from wake_up_new_task on */

/*
 * One wait of one thread (times: the samples' clock). Its stacks are the
 * switch program's ids (struct offcpu_stack, each sent once on the events
 * ring); user space writes each (thread, stack pair) once as an
 * offcpu-stack record and names it by a 32-bit id in the file.
 */
struct offcpu_chain_switch {
	__u32 type; /* OFFCPU_CHAIN_SWITCH */
	__u32 pid;
	__u32 tid;
	__u32 cpu;
	__u64 time;        /* switch-in */
	__u64 out;         /* switch-out; 0 with OFFCPU_CHAIN_FROM_START */
	__u64 wake;        /* woken (sched_waking, else sched_info); = out after a preemption */
	__u64 ustack;      /* ids of the stacks it left with (kernel's of another task */
	__u64 kstack;      /*   with OFFCPU_CHAIN_FROM_START), 0: none */
	__u64 waker_ustack; /* ids of its waker's stacks (its maker's at wake_up_new_task */
	__u64 waker_kstack; /*   for state 'N'), 0: none */
	__u32 waker_tid;   /* the waker, or after a preemption the task that took the CPU */
	__u32 seq;         /* the thread's switch-outs (nvcsw + nivcsw) up to this wait's:
			      one more each record, a jump says a switch-out was not seen */
	__u8 state;        /* 'S', 'D', 'R', 'N', 'T' */
	__u8 pad;
	__u16 flags;       /* OFFCPU_CHAIN_* */
	__u32 waker_pid;   /* the waker's thread group (its stacks are that process's) */
};

/*
 * A stack, once (user space builds it from the ids of a switch record):
 * ulen user frames, then klen kernel frames from stack[OFFCPU_MAX_STACK].
 */
struct offcpu_chain_stack {
	__u32 type; /* OFFCPU_CHAIN_STACK */
	__u32 id;
	__u32 pid;
	__u32 tid;
	__u32 kind; /* OFFCPU_CHAIN_STACK_* */
	__u32 ulen;
	__u32 klen;
	__u32 cpu;
	__u64 time; /* when it was taken */
	__u64 stack[2 * OFFCPU_MAX_STACK];
};


#endif
