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
const volatile bool use_entry_time = false; /* sched_entry_tp is there */

/* Runtime state shared with user space (.bss). */
__u32 sum_active;     /* which sum map switch-in adds to */
__u32 sum_entries[2]; /* entries created in each sum map since its drain */
__u32 kstack_skip;    /* frames of BPF/tracing glue above __schedule */
__u32 calib_len;      /* calibration: a raw kernel stack, once */
__u64 calib_stack[OFFCPU_MAX_STACK];

struct offcpu_task {
	__u64 ts_out;  /* switch-out time; 0 when not waiting */
	__u64 ts_wake; /* wakeup time; 0 until woken */
	__u32 summed;  /* has added to a sum map: note its exit */
	__u32 pad;
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

/* Per CPU: when __schedule was entered (sched_entry_tp). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} entry_time SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OFFCPU_DROP__NR);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

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

/* Note a task leaving the CPU to wait: time, state, stacks. */
static __always_inline void switch_out(void *ctx, struct task_struct *prev, __u32 state, __u64 now)
{
	struct offcpu_task *t;
	long n;

	t = bpf_task_storage_get(&tasks, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t) {
		drop(OFFCPU_DROP_TASK_STORAGE);
		return;
	}
	t->s.pid = prev->tgid;
	t->s.tid = prev->pid;
	t->s.start_time = prev->start_time;
	t->s.state = state;
	t->s.cgroup = bpf_get_current_cgroup_id();
	t->s.ulen = 0;
	t->s.klen = 0;
	if (want_kstack) {
		if (!calib_len) {
			n = bpf_get_stack(ctx, calib_stack, sizeof(calib_stack), 0);
			if (n > 0)
				calib_len = n / 8;
		}
		n = bpf_get_stack(ctx, &t->s.stack[OFFCPU_MAX_STACK], OFFCPU_MAX_STACK * 8,
				  kstack_skip & BPF_F_SKIP_FIELD_MASK);
		if (n > 0)
			t->s.klen = n / 8;
		else
			drop(OFFCPU_DROP_KSTACK);
	}
	if (want_ustack && prev->mm) {
		n = bpf_get_stack(ctx, t->s.stack, OFFCPU_MAX_STACK * 8, BPF_F_USER_STACK);
		if (n > 0)
			t->s.ulen = n / 8;
		else
			drop(OFFCPU_DROP_USTACK);
	}
	t->ts_wake = 0;
	t->ts_out = now;
	if (use_entry_time) {
		/*
		 * The task stopped running when __schedule was entered:
		 * picking the next task (idle balancing included) can take
		 * tens of microseconds that are already the wait.
		 */
		__u32 zero = 0;
		__u64 *e = bpf_map_lookup_elem(&entry_time, &zero);

		if (e && *e && *e <= now && now - *e < 10000000ULL)
			t->ts_out = *e;
	}
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

/* A waiting task is back: emit its interval or add it to the sums. */
static __always_inline void switch_in(struct task_struct *next, __u64 now)
{
	struct offcpu_task *t;
	struct offcpu_sum_key k;
	__u64 delta;

	t = bpf_task_storage_get(&tasks, next, 0, 0);
	if (!t || !t->ts_out)
		return;
	/* Off-CPU ends at the wakeup: from there on it waits for a CPU. */
	delta = (t->ts_wake ? t->ts_wake : now) - t->ts_out;
	t->ts_out = 0;

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
	k.uhash = hash_frames(t->s.stack, t->s.ulen);
	k.khash = hash_frames(&t->s.stack[OFFCPU_MAX_STACK], t->s.klen);
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

SEC("tp_btf/sched_switch")
int BPF_PROG(offcpu_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 state = prev_state & (OFFCPU_STATE_S | OFFCPU_STATE_D);

	/*
	 * The state, not `preempt`, decides: a task preempted after it set
	 * S or D is not on the run queue's books (schedstat counts it as
	 * asleep), and perf --off-cpu counts it too.
	 */
	if ((state & state_mask) && (kernel_threads || !(prev->flags & PF_KTHREAD)) &&
	    wanted(prev->tgid, prev->pid))
		switch_out(ctx, prev, state, now);
	switch_in(next, now);
	return 0;
}

SEC("tp_btf/sched_entry_tp")
int BPF_PROG(offcpu_sched_entry, bool preempt)
{
	__u32 zero = 0;
	__u64 *e = bpf_map_lookup_elem(&entry_time, &zero);

	if (e)
		*e = bpf_ktime_get_ns();
	return 0;
}

/*
 * A waiting task is woken (queued on a run queue): its off-CPU interval
 * ends here, as the kernel's own accounting (schedstat) has it; the time to
 * its switch-in is run-queue delay.
 */
SEC("tp_btf/sched_wakeup")
int BPF_PROG(offcpu_wakeup, struct task_struct *p)
{
	struct offcpu_task *t = bpf_task_storage_get(&tasks, p, 0, 0);

	if (t && t->ts_out && !t->ts_wake)
		t->ts_wake = bpf_ktime_get_ns();
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

	if (t && t->summed) {
		struct offcpu_exit_key k = { .tid = p->pid, .start_time = p->start_time };
		__u64 now = bpf_ktime_get_ns();

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
