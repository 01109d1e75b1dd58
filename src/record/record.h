/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `offcpu record`: the parts of a recording session and how they meet.
 *
 *   targets.c     who is recorded: pid/tid/cpu lists, the command
 *   offcpu_bpf.c  the sched_switch BPF program: load, filters, ring buffer,
 *                 drain of the in-kernel sums, drop counters
 *   offcpu_encode.c  its samples as perf records, its counters' names
 *   cpu_events.c  per-CPU perf events: cpu-clock samples and side-band
 *   synth.c       records synthesized from /proc; host facts for features
 *   merge.c       records from every source, written in time order
 *   dso_hits.c    which DSOs samples hit, for the BUILD_ID feature
 *   thread_names.c  a name for every thread sampled, where no record gave one
 *   unwind_loader.c  --call-graph dwarf: the unwind tables of the recorded
 *                 processes, kept up to date from their side-band
 *   cpu_samples.c --call-graph dwarf: CPU samples unwound in BPF, encoded
 *   ustack_fix.c  --call-graph dwarf: user stacks finished before they are
 *                 written (deferred stacks unwound with libdw, Python frames)
 *   pyframes.c    Python frames: the processes, their code objects' names,
 *                 the recording's Python symbol file
 *   recorder.c, loop.c, finish.c, summary.c  the recorder that ties them
 *                 together, in steps (recorder_int.h: its parts)
 */
#ifndef OFFCPU_RECORD_H
#define OFFCPU_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <linux/perf_event.h>

#include "bpf/offcpu.h"
#include "bpf/python.h"
#include "bpf/chains.h"
#include "bpf/unwind.h"
#include "perfdata/perf_format.h"
#include "util/msg.h"

struct perf_writer;

struct int_list {
	int *v;
	size_t n, cap;
};

struct record_opts {
	const char *output;
	struct int_list pids;
	struct int_list tids;
	struct int_list cpus; /* empty: all online CPUs */
	const char *cgroup;
	bool all_cpus;
	double duration;      /* seconds; 0 = until the command exits or a signal */
	unsigned int freq;
	bool freq_max;        /* -F max: the kernel's maximum (perf_event_max_sample_rate) */
	uint64_t period;      /* -c N: a CPU sample every N events (ns for cpu-clock); 0: -F */
	const char *event;    /* cpu-clock, task-clock, cycles */
	bool no_cpu;
	uint64_t thresh_ns;
	uint32_t state_mask;
	unsigned int flush_ms;
	bool ustack;
	bool kstack;
	bool kstack_cache;    /* kernel stacks from the cache of blocking points (--no-kstack-cache) */
	bool kernel_threads;
	bool user_threads;    /* cleared by -k: kernel threads only */
	bool thread_kind_cpu; /* -u/-k: CPU samples of the other kind left out too */
	uint64_t min_ns;      /* -m/-M: off-CPU intervals kept, both ends included */
	uint64_t max_ns;      /* UINT64_MAX: no maximum */
	bool wakeups;         /* --wakeups: offcpu-wakeup samples */
	bool sched_delay;     /* --sched-delay: sched-delay samples */
	bool chains;          /* --chains: offcpu-switch/offcpu-stack records of every thread */
	bool dwarf;           /* --call-graph dwarf (default): user stacks from .eh_frame */
	bool python;          /* --python (default with dwarf): Python frames in the stacks */
	uint32_t test_hide;   /* OFFCPU_TEST_HIDE: ignore 1 in N switch-ins, wakeups */
	uint32_t test_hide_waking; /* OFFCPU_TEST_HIDE_WAKING: ignore 1 in N sched_waking hits */
	uint32_t test_stall_ms; /* OFFCPU_TEST_STALL: 1 in 8 waits counted stall their CPU this long */
	uint32_t test_stop_delay_ms; /* OFFCPU_TEST_STOP_DELAY: the stop's iterator runs this late */
	bool test_wakeup_prog; /* OFFCPU_TEST_WAKEUP_PROG: the sched_wakeup program even with sched_info */
	uint32_t test_unwind_late_ms; /* OFFCPU_TEST_UNWIND_LATE: the unwinder's loader
					 writes no process table for this long */
	bool test_unwind_fail; /* OFFCPU_TEST_UNWIND_FAIL: the unwinder's loader fails */
	int nice;             /* --nice: the recorder's own nice value (0: as started) */
	bool quiet;           /* -q: no summary at the end */
	bool status_line;     /* a live status line (MSG_STATUS) while recording: the
				 messages go to a terminal, and no -q */
	bool verbose;         /* -v: the whole end-of-recording summary */
	char **argv;          /* the command, or NULL */
	const char *user;     /* --user: run the command as this user */
	bool give_output;     /* under sudo: the output goes to the user who ran sudo */
	uid_t owner_uid;      /* that user (SUDO_UID, SUDO_GID) */
	gid_t owner_gid;
	int orig_argc;
	char **orig_argv;     /* offcpu's own command line, for CMDLINE */
};

/* Sample ids of our events: far above the kernel's sequential event ids. */
#define OFFCPU_ID_OFFCPU OFFCPU_EVENT_ID                /* offcpu-time */
#define OFFCPU_ID_WAKEUP 0x4f46464350550002ULL      /* offcpu-wakeup */
#define OFFCPU_ID_SCHED_DELAY 0x4f46464350550003ULL /* sched-delay */
#define OFFCPU_ID_SWITCH 0x4f46464350550004ULL      /* offcpu-switch (--chains) */
#define OFFCPU_ID_STACK 0x4f46464350550005ULL       /* offcpu-stack (--chains) */
#define OFFCPU_ID_CHAIN_CPU 0x4f46464350550006ULL   /* chain-cpu-clock (--chains) */

/*
 * Where a sample record's TID field is, in bytes after its header (its
 * TIME follows): the perf events' samples and ours but one have
 * IDENTIFIER IP TID TIME first; offcpu-switch records IDENTIFIER TID TIME.
 * rec holds 16 bytes at least.
 */
static inline size_t sample_tid_at(const void *rec)
{
	uint64_t id;

	memcpy(&id, (const uint8_t *)rec + 8, 8);
	return id == OFFCPU_ID_SWITCH ? 8 : 16;
}
/* Is the sample one of the perf events' (the kernel's ids), not ours? */
static inline bool sample_of_perf_event(const void *rec)
{
	uint64_t id;

	memcpy(&id, (const uint8_t *)rec + 8, 8);
	return id >> 16 != OFFCPU_ID_OFFCPU >> 16;
}

/* CPU samples come from the BPF program on the perf event (its stacks unwound there). */
static inline bool record_opts__bpf_cpu_samples(const struct record_opts *o)
{
	return (o->dwarf || o->chains) && !o->no_cpu;
}

/* ---- targets.c ---- */
int int_list__parse(struct int_list *l, const char *s, bool ranges);
void int_list__free(struct int_list *l);
int online_cpus(struct int_list *l);
int possible_cpus(void);
bool pid_exists(int pid);
/* The process a thread belongs to (the tid itself when unknown). */
uint32_t tgid_of(uint32_t tid);
/* The process is gone or a zombie: it has exited. */
bool pid_exited(int pid);
struct target_watch;
/* Watch the -p processes and the -t threads (tgids[i]: the process of tids.v[i]);
 * -ESRCH with *gone set when a process has already gone. */
int target_watch__new(const struct record_opts *o, const uint32_t *tgids,
		      struct target_watch **out, int *gone);
void target_watch__free(struct target_watch *w);
int target_watch__epoll_add(struct target_watch *w, int epfd);
bool target_watch__all_gone(const struct target_watch *w);
int cgroup_resolve(const char *arg, char *path, size_t size);

/*
 * The command, forked but held before exec until workload__start(), so that
 * recording is set up before it runs.
 */
/* Who the command runs as (--user), resolved before the fork. */
struct run_as {
	uid_t uid;
	gid_t gid;
	gid_t *groups;   /* supplementary groups (getgrouplist) */
	int nr_groups;
	char *name, *home;
};
/* NAME or a numeric uid; -ENOENT when there is no such user. */
int run_as__resolve(struct run_as *r, const char *user);
void run_as__exit(struct run_as *r);

struct workload {
	pid_t pid;
	int go_fd;  /* write end: a byte releases the child */
	int err_fd; /* read end: {stage, errno} of a failed exec or identity change, EOF on success */
};
enum { WORKLOAD_ERR_EXEC, WORKLOAD_ERR_IDENTITY };
/* as: NULL to keep offcpu's identity. */
int workload__prepare(struct workload *wl, char **argv, const struct run_as *as);
/* Release the child; returns 0 or the errno of its failure as a negative
 * number, *stage saying which step failed (WORKLOAD_ERR_*). */
int workload__start(struct workload *wl, int *stage);

/* ---- merge.c: a time-ordered queue of records ---- */
struct merge;
struct merge *merge__new(void);
void merge__free(struct merge *m);
int merge__add(struct merge *m, uint64_t time, const void *rec, size_t len);
/*
 * Write every queued record with time <= upto, oldest first, then a
 * FINISHED_ROUND. on_rec (if any) sees each record first and returns false
 * to leave it out; it may shorten the record in place (*len, and the size
 * in its header). Records older than one already written are still
 * written, and counted (merge__late).
 */
int merge__flush(struct merge *m, uint64_t upto, struct perf_writer *w,
		 int (*on_rec)(void *ctx, void *rec, size_t *len), void *ctx);
size_t merge__bytes(const struct merge *m);
uint64_t merge__late(const struct merge *m);

/* ---- dso_hits.c: DSOs that samples hit (BUILD_ID feature), junk user frames ---- */
/* An executable mapping of a process; arrays of them sorted by exec_maps__sort. */
struct exec_map {
	uint64_t start, end;
	uint64_t end_max; /* the largest end of this map and those before it */
	int dso;          /* index of its file, -1: none (anonymous code, [vdso]) */
};
void exec_maps__sort(struct exec_map *m, size_t nr);
/* Is ip inside one of the (sorted) maps? */
bool exec_maps__covers(const struct exec_map *m, size_t nr, uint64_t ip);
/*
 * How many of the n user frames (innermost first) to keep: those before the
 * first one outside every map. All of them when no map is known.
 */
size_t ustack_keep(const struct exec_map *m, size_t nr, const uint64_t *frames, size_t n);
struct dso_hits;
struct dso_hits *dso_hits__new(void);
void dso_hits__free(struct dso_hits *h);
/*
 * Feed every record (side-band and samples) in file order: 0, or -ENOMEM
 * (kept: dso_hits__build_id_feature() fails with it too). Samples are read
 * as the recorder writes them (IDENTIFIER IP TID TIME CPU PERIOD
 * CALLCHAIN ...); offcpu-switch records, which have no callchain, are
 * skipped.
 */
int dso_hits__record(struct dso_hits *h, const void *rec, size_t len);
/*
 * Cut the user stack of a sample record at its first frame outside the
 * process's executable mappings, in place: returns the new length, *cut
 * set when frames were removed.
 */
size_t dso_hits__cut_user(struct dso_hits *h, void *rec, size_t len, bool *cut);
/*
 * Build the BUILD_ID feature section for the hit DSOs (and the kernel):
 * 0, or negative errno (the first failure of dso_hits__record() included).
 */
int dso_hits__build_id_feature(struct dso_hits *h, uint8_t **out, size_t *len);

/* ---- thread_names.c: a name for every thread sampled ---- */
struct thread_names;
/* COMM records written here carry attr id `id`. */
struct thread_names *thread_names__new(uint64_t id);
void thread_names__free(struct thread_names *n);
/* A thread the start's iterator saw, and its name then: 0 or -ENOMEM. */
int thread_names__seen(struct thread_names *n, uint32_t pid, uint32_t tid, const char *comm);
/*
 * Feed every record about to be written, in file order (the writer's
 * tap): before a sample of a thread no record named, writes its COMM.
 */
void thread_names__record(struct thread_names *n, struct perf_writer *w, const void *rec,
			  size_t len);
/* 0, or -ENOMEM if a thread could not be noted (its name then unchecked). */
int thread_names__error(const struct thread_names *n);
uint64_t thread_names__named_late(const struct thread_names *n); /* COMMs written here */
uint64_t thread_names__unnamed(const struct thread_names *n);    /* threads left ':TID' */

/* ---- synth.c ---- */
/* The sample_id_all trailer every non-sample record carries. */
struct sample_id {
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu, res;
	uint64_t id;
};
struct kernel_range {
	uint64_t lo, hi;
};
struct kernel_facts {
	uint64_t text;               /* _text: kallsyms' relocation anchor */
	uint64_t sched_lo, sched_hi; /* __schedule's range */
	uint64_t ttwu_lo, ttwu_hi;   /* try_to_wake_up's: wakers' stacks start there */
	uint64_t sys_lo, sys_hi;     /* do_syscall_64's: the syscall entry frame (kernel stack cache) */
	/* where interrupts (hard and soft) start: a waker below one is an interrupt */
	struct kernel_range irq[64];
	unsigned int nr_irq;
	/*
	 * process_backlog's (with the interrupt entries): loopback's receive, run
	 * as softirq work by the task that sent, its wakeups the sender's own
	 */
	uint64_t backlog_lo, backlog_hi;
	uint64_t wnt_lo, wnt_hi;     /* wake_up_new_task's (with them): a new thread's maker's stack starts there */
};
void kernel_facts__read(struct kernel_facts *k, bool irq_entries);

/* ---- procfs.c: parsers of /proc text (pure, fuzzed) ---- */
struct proc_map {
	uint64_t start, end, pgoff, ino;
	uint32_t maj, min;
	uint32_t prot, flags;	/* PROT_*, MAP_SHARED or MAP_PRIVATE */
	const char *file;	/* in the line (newline cut), or "//anon" */
};
int proc_maps__parse_line(char *line, struct proc_map *m);
int proc_status__field(const char *text, size_t len, const char *key, int base, uint64_t *out);
bool kernel_facts__line(struct kernel_facts *k, const char *line, bool irq_entries);
char proc_stat__state(const char *text);
ssize_t proc_read(const char *path, char *buf, size_t size);
int synth__kernel_mmap(struct perf_writer *w, uint64_t text, uint64_t id);
int synth__process(struct perf_writer *w, int pid, uint64_t id, bool threads);
/* A COMM record, at time, for a thread known otherwise than from /proc. */
int synth__comm(struct perf_writer *w, uint32_t pid, uint32_t tid, const char *comm, uint64_t id,
		uint64_t time);
int synth__all_processes(struct perf_writer *w, uint64_t id);
int synth__features(struct perf_writer *w, const struct record_opts *o);

/* ---- offcpu_bpf.c ---- */
struct offcpu_bpf;
struct ustack_fix;
struct pyframes;
/*
 * kf: where kernel stacks start (__schedule), to strip tracing frames; ms:
 * where a filter that cannot be set is said (the caller says the rest).
 */
int offcpu_bpf__new(const struct record_opts *o, const struct kernel_facts *kf,
		    const struct msg_sink *ms, struct offcpu_bpf **out);
void offcpu_bpf__free(struct offcpu_bpf *b);
/* Trace the process tgid (the command) from its next exec on, with its children. */
void offcpu_bpf__trace_from_exec(struct offcpu_bpf *b, uint32_t tgid);
int offcpu_bpf__attach(struct offcpu_bpf *b);
int offcpu_bpf__filter_prog_fd(const struct offcpu_bpf *b); /* -1: no filter needed */
int offcpu_bpf__ringbuf_fd(const struct offcpu_bpf *b);
/*
 * Waits in progress: __start (after attach) finds the targets already
 * waiting, whose waits then count from now on, and names every target to
 * on_task (pid, tid, comm: for those gone before /proc is read); __stop
 * queues every wait still open, ended now (the iterator's; those of tasks
 * that exit meanwhile come through the ring buffer: poll after it), and
 * detaches the programs.
 * __window: the two times on the samples' clock (0 when not run).
 */
int offcpu_bpf__start(struct offcpu_bpf *b,
		     int (*on_task)(void *ctx, uint32_t pid, uint32_t tid, const char *comm),
		     void *ctx);
int offcpu_bpf__stop(struct offcpu_bpf *b, struct merge *m);
void offcpu_bpf__window(const struct offcpu_bpf *b, uint64_t *start, uint64_t *stop);
void offcpu_bpf__written_upto(struct offcpu_bpf *b, uint64_t upto);
enum {
	OFFCPU_IN_PROGRESS_OFFCPU_START, /* offcpu-time samples in progress at the start */
	OFFCPU_IN_PROGRESS_OFFCPU_STOP,
	OFFCPU_IN_PROGRESS_DELAY_START,  /* sched-delay samples */
	OFFCPU_IN_PROGRESS_DELAY_STOP,
	OFFCPU_IN_PROGRESS__NR,
};
uint64_t offcpu_bpf__in_progress(const struct offcpu_bpf *b, int which);
/* Read direct samples into the merge queue. */
int offcpu_bpf__poll(struct offcpu_bpf *b, struct merge *m);
/*
 * Drain the in-kernel sums into the merge queue, timed when the drain has
 * them all, or just before their task's exit or exec.
 */
int offcpu_bpf__drain(struct offcpu_bpf *b, struct merge *m);
/* Should the sums be drained before the interval is up (map filling)? */
bool offcpu_bpf__needs_drain(const struct offcpu_bpf *b);
int offcpu_bpf__drops(const struct offcpu_bpf *b, uint64_t drops[OFFCPU_DROP__NR]);
/* How kernel stacks were taken: walked, from the cache, checked, stale. */
int offcpu_bpf__stats(const struct offcpu_bpf *b, uint64_t stats[OFFCPU_STAT__NR]);
/* Samples written: offcpu-time, offcpu-wakeup, sched-delay. */
uint64_t offcpu_bpf__samples(const struct offcpu_bpf *b);
uint64_t offcpu_bpf__wakeup_samples(const struct offcpu_bpf *b);
uint64_t offcpu_bpf__delay_samples(const struct offcpu_bpf *b);

/* --call-graph dwarf: the unwinder's maps (src/bpf/unwind.h) and its facts. */
#define OFFCPU_UNWIND_ROWS (1u << 20) /* rows of all tables: 8 MiB */
#define OFFCPU_UNWIND_PROCS 65536     /* processes with tables (memory follows use) */
#define OFFCPU_UNWIND_FILES 16384     /* files with tables, by identity (memory follows use) */
struct offcpu_unwind_maps {
	int rows, rules, procs, execs, files, pgen, notify;
	uint32_t row_cap;
};
int offcpu_bpf__unwind_maps(const struct offcpu_bpf *b, struct offcpu_unwind_maps *m);
int offcpu_bpf__unwind_stats(const struct offcpu_bpf *b, uint64_t stats[OFFCPU_UNW_STAT__NR]);
/* --python: the maps of the Python processes (bpf/python.h) and the BPF side's counters. */
int offcpu_bpf__python_maps(const struct offcpu_bpf *b, int *procs_fd, int *hint_fd);
int offcpu_bpf__python_stats(const struct offcpu_bpf *b, uint64_t stats[OFFCPU_PY_STAT__NR]);
/* The user stacks finished in user space before they are encoded (deferred, Python). */
void offcpu_bpf__set_ustack_fix(struct offcpu_bpf *b, struct ustack_fix *f, struct pyframes *py);
/* CPU samples come from BPF (dwarf): each CPU's sample id of the cpu-clock event. */
int offcpu_bpf__set_cpu_ids(struct offcpu_bpf *b, const int *cpus, const uint64_t *ids, size_t n);
uint64_t offcpu_bpf__cpu_samples(const struct offcpu_bpf *b);
/* --chains: switch and stack records written, and their bytes in the file. */
void offcpu_bpf__chain_counts(const struct offcpu_bpf *b, uint64_t *switches, uint64_t *stacks,
			      uint64_t *bytes);

/* ---- offcpu_encode.c ---- */
/* Where kernel stacks start (__schedule, try_to_wake_up, interrupts): set before encoding. */
void offcpu_encode__set_kernel(const struct kernel_facts *kf);
/* A stack's frames, innermost first, as the BPF side sent them (bpf/offcpu.h). */
struct offcpu_frames {
	const uint64_t *ip;
	uint32_t n;
};
/*
 * Encode one off-CPU sample (offcpu-time, or sched-delay when its state has
 * OFFCPU_SCHED_DELAY; a sum when its flags say OFFCPU_SAMPLE_SUM) with its
 * user and kernel stacks as a perf SAMPLE record into buf, of
 * OFFCPU_PAYLOAD_MAX_SIZE bytes (perfdata/offcpu_payload.h has the layout).
 */
size_t offcpu_sample__encode(const struct offcpu_sample *s, const struct offcpu_frames *ustack,
			     const struct offcpu_frames *kstack, uint64_t time, void *buf);
/*
 * Encode the offcpu-wakeup sample of s (its waker: s->k.waker, with these
 * stacks) into buf (OFFCPU_PAYLOAD_MAX_SIZE).
 */
size_t offcpu_waker__encode(const struct offcpu_sample *s, const struct offcpu_frames *ustack,
			    const struct offcpu_frames *kstack, uint64_t time, void *buf);
uint64_t offcpu_sample_type(void);
void offcpu_event_attr(struct perf_event_attr *attr);
/*
 * --chains: a switch record as an offcpu-switch sample (OFFCPU_SWITCH_RECORD_SIZE
 * bytes), its stacks named by the file's ids (those of its offcpu-stack records).
 */
size_t chain_switch__encode(const struct offcpu_chain_switch *r, uint32_t stack, uint32_t waker_stack,
			    void *buf);
/* --chains: a stack record as an offcpu-stack sample into buf (OFFCPU_PAYLOAD_MAX_SIZE). */
size_t chain_stack__encode(const struct offcpu_chain_stack *r, void *buf);
/* The attr of offcpu-switch. */
void chain_switch_attr(struct perf_event_attr *attr);
/* The drop counters and stats of bpf/offcpu.h: the summary's name of a drop
 * (WHAT), its key in the file's offcpu section, what it loses; a stat's key. */
const char *offcpu_drop_name(int i);
const char *offcpu_drop_key(int i);
enum offcpu_loss offcpu_drop_loss(int i);
const char *offcpu_stat_key(int i);

/* ---- cpu_samples.c ---- */
/* A CPU sample unwound in BPF as the perf SAMPLE of event id (buf: 4096+ bytes, aligned). */
size_t cpu_sample__encode(const struct offcpu_cpu_sample *s, uint64_t id, void *buf);

/* ---- unwind_loader.c ---- */
struct unwind_loader;
/* Side-band events and the tables' backend; nothing runs yet. ms: where a failure is said. */
int unwind_loader__new(const struct record_opts *o, const struct offcpu_bpf *b,
		       const struct msg_sink *ms, struct unwind_loader **out);
/*
 * Start following: tables for the command (before it runs), for the
 * processes already there (-p, -t, -a; child: the forked command), then a
 * thread keeps them up to date. Call after the BPF programs are attached.
 */
int unwind_loader__start(struct unwind_loader *l, const struct record_opts *o, int child);
/* The Python processes follow the same side-band (--python): before __start. */
void unwind_loader__set_python(struct unwind_loader *l, struct pyframes *py);
/* The deferred stacks' mappings of processes gone (ustack_fix__mmap...): before start. */
void unwind_loader__set_fix(struct unwind_loader *l, struct ustack_fix *fix);
/*
 * The thread's failure (a negative errno), 0 while it keeps the tables:
 * once it failed it has stopped, and stacks taken since may miss frames.
 */
int unwind_loader__error(const struct unwind_loader *l);
/* Stop the thread (the tables stay in the maps). */
void unwind_loader__stop(struct unwind_loader *l);
void unwind_loader__free(struct unwind_loader *l);
/* Every unwind counter, by name, user space's and the BPF side's. */
int unwind_loader__counters(const struct unwind_loader *l, const struct offcpu_bpf *b,
			    int (*fn)(void *ctx, const char *name, uint64_t v), void *ctx);
/*
 * The end-of-recording summary lines: the unwinder's figures and its
 * counters with -v (verbose), as the kernel stacks' (offcpu report
 * --header shows them too); side-band records lost and files whose tables
 * could not be made or kept always.
 */
void unwind_loader__summary(const struct unwind_loader *l, const struct offcpu_bpf *b,
			    bool verbose, const struct msg_sink *ms);

/* ---- pyframes.c: Python frames (bpf/python.h) ---- */
struct pyframes;
struct unw_mapping;
/*
 * The Python frames of a recording to output (its Python symbol file:
 * pyframes__path()). bpf: where the Python processes go (their
 * offcpu_py_proc and hint maps).
 */
int pyframes__new(const struct record_opts *o, struct offcpu_bpf *bpf, struct pyframes **out);
void pyframes__free(struct pyframes *p);
/* The symbol file's path (OUTPUT.python). */
const char *pyframes__path(const struct pyframes *p);
/*
 * The processes: an executable mapping of pid (from the unwinder's
 * side-band thread, or /proc at the start), an exec, an exit, a fork.
 * Thread-safe.
 */
void pyframes__mmap(struct pyframes *p, uint32_t pid, const struct unw_mapping *m);
void pyframes__scan(struct pyframes *p, uint32_t pid);
void pyframes__exec(struct pyframes *p, uint32_t pid);
void pyframes__exit(struct pyframes *p, uint32_t pid);
void pyframes__fork(struct pyframes *p, uint32_t ppid, uint32_t pid);
/*
 * Thread tid's Python frames (a thread blocked at the start), read from
 * user space as the BPF side writes them (words of bpf/python.h, without
 * the separator): their number, 0 when it has none, or a negative errno.
 */
int pyframes__walk(struct pyframes *p, uint32_t pid, uint32_t tid, uint64_t *w, uint32_t max);
/* A stack the BPF side saw for the first time: its code objects' names read now. */
void pyframes__seen(struct pyframes *p, uint32_t pid, const uint64_t *w, uint32_t n);
/*
 * native frames (innermost first) and pid's Python frames py as one stack
 * into out (at most max): each group of Python frames in place of its
 * interpreter frame, as frames of the symbol file. taken: when the stack
 * was taken (mono_ns; UINT64_MAX: unknown), its code objects' names read
 * before then are checked again. Its length, or -ENOMEM.
 */
int pyframes__interleave(struct pyframes *p, uint32_t pid, const uint64_t *native, uint32_t nn,
			 const uint64_t *py, uint32_t npy, uint64_t taken, uint64_t *out,
			 uint32_t max);
/*
 * A record on its way to the file: with the executable mapping of a
 * Python interpreter (MMAP2), the mapping of the symbol file for the same
 * process, into rec2 (PYFRAMES_REC_MAX bytes; *len2: its length, 0: none).
 */
#define PYFRAMES_REC_MAX 8192
void pyframes__after(struct pyframes *p, const void *rec, size_t len, void *rec2, size_t *len2);
/* Write the symbol file now and then while recording (readable if the recorder dies). */
int pyframes__flush(struct pyframes *p);
/* Write the symbol file (when a process had Python frames). */
int pyframes__finish(struct pyframes *p);
/* The summary's lines: the figures with -v, unknown Pythons always. */
void pyframes__summary(const struct pyframes *p, bool verbose, const struct msg_sink *ms);
/* Counters, by name (python.*, user space's and the BPF side's). */
int pyframes__counters(const struct pyframes *p, int (*fn)(void *ctx, const char *name, uint64_t v),
		       void *ctx);

/* ---- symfile.c: an ELF file of made-up functions (Python frames) ---- */
#define SYMFILE_TEXT 0x1000   /* the first function's address in the file */
#define SYMFILE_SYM 16        /* bytes a function */
#define SYMFILE_BUILD_ID 20
/* The build id of a file of these names. */
void symfile__build_id(const char *const *names, size_t n, uint8_t id[SYMFILE_BUILD_ID]);
/*
 * Write path (whole or not at all): function i named names[i] at
 * SYMFILE_TEXT + i * SYMFILE_SYM; its build id into id. Given to uid, gid
 * unless uid is -1. 0 or a negative errno.
 */
int symfile__write(const char *path, const char *const *names, size_t n, uid_t uid, gid_t gid,
		   uint8_t id[SYMFILE_BUILD_ID]);

/* ---- ustack_fix.c: user stacks finished in user space ---- */
struct ustack_fix;
enum {
	USTACK_FIX_UNWOUND, /* deferred stacks unwound in user space */
	USTACK_FIX_FAILED,  /* ... that could not be (the process gone, its mappings unknown):
			       the BPF side's frames */
	USTACK_FIX_GONE,    /* ... unwound, of them, after their process was gone (its last mappings) */
	USTACK_FIX_DROPPED, /* ... not kept (too many) */
	USTACK_FIX_UNKNOWN, /* samples with a deferred stack that never came */
	USTACK_FIX__NR,
};
/* py: the Python frames, NULL without them. */
int ustack_fix__new(struct pyframes *py, struct ustack_fix **out);
void ustack_fix__free(struct ustack_fix *f);
/* A deferred stack (struct offcpu_unw_deferred of len bytes): unwound now, kept by id. */
int ustack_fix__deferred(struct ustack_fix *f, const void *rec, size_t len);
/* Does a user stack hold tagged words (bpf/unwind.h) to replace? */
bool ustack_fix__wanted(const __u64 *stack, uint32_t n);
/*
 * Replace them in pid's user stack[] (*n frames, at most
 * OFFCPU_MAX_STACK), taken at `taken` (mono_ns; UINT64_MAX: unknown, see
 * pyframes__interleave). -ENOENT: its deferred stack has not come (yet);
 * with must, it is left out instead (counted).
 */
int ustack_fix__apply(struct ustack_fix *f, uint32_t pid, __u64 *stack, uint32_t *n, bool must,
		      uint64_t taken);
/* The process has exited or exec'd. */
void ustack_fix__forget(struct ustack_fix *f, uint32_t pid);
/*
 * The side-band of the processes the unwinder follows (its thread calls
 * these, in time order): their executable file mappings, for the stacks
 * unwound after their process is gone. f may be NULL.
 */
struct unw_mapping;
void ustack_fix__mmap(struct ustack_fix *f, uint32_t pid, const struct unw_mapping *m);
void ustack_fix__exec(struct ustack_fix *f, uint32_t pid);
void ustack_fix__fork(struct ustack_fix *f, uint32_t ppid, uint32_t pid);
/* A process there before the recording: its mappings from /proc/PID/maps. */
void ustack_fix__scan(struct ustack_fix *f, uint32_t pid);
void ustack_fix__exit(struct ustack_fix *f, uint32_t pid);
uint64_t ustack_fix__stat(const struct ustack_fix *f, int which);

/* ---- cpu_events.c ---- */
struct cpu_events;
/* ms: where an event or ring that cannot be opened is said. */
int cpu_events__new(const struct record_opts *o, const struct msg_sink *ms, int filter_prog_fd,
		    struct cpu_events **out);
void cpu_events__free(struct cpu_events *c);
int cpu_events__enable(struct cpu_events *c);
int cpu_events__disable(struct cpu_events *c);
/* Events to register in the file: attr, name and kernel-assigned ids. */
size_t cpu_events__nr_attrs(const struct cpu_events *c);
const struct perf_event_attr *cpu_events__attr(const struct cpu_events *c, size_t i,
					       const char **name, const uint64_t **ids,
					       size_t *nr_ids);
int cpu_events__poll(struct cpu_events *c, struct merge *m);
int cpu_events__epoll_add(struct cpu_events *c, int epfd);
uint64_t cpu_events__samples(const struct cpu_events *c);
/* Each CPU's event and its sample id (arrays to free). */
int cpu_events__cpu_ids(const struct cpu_events *c, int **cpus, uint64_t **ids, size_t *n);
uint64_t cpu_events__lost(const struct cpu_events *c);
uint64_t cpu_sample_type(void);

/*
 * ---- recorder.c, loop.c, finish.c, summary.c: a recording in steps ----
 *
 *   recorder__new(o, ms, &r)   o and the sink ms stay the caller's, unchanged,
 *                              until __free
 *   recorder__open(r)          checks (privileges, BTF, targets), the output
 *                              file, the command forked and held, the BPF
 *                              programs loaded, the perf events opened, the
 *                              file's header: nothing is recorded yet
 *   recorder__start(r)         the recording starts: programs attached,
 *                              events enabled, waits in progress found,
 *                              /proc read, the unwinder following, the
 *                              command released
 *   recorder__loop(r)          records to the file until Ctrl-C, SIGTERM,
 *                              -d, the command's exit or the targets'
 *   recorder__finish(r, err)   the stop; err: recorder__loop's result
 *   recorder__free(r)          a recorder that never started (an error before
 *                              the command runs) leaves no file and no
 *                              command behind
 *
 * Each step returns 0 or a negative errno, its message said to ms
 * (MSG_ERROR); warnings go there too, the status line (MSG_STATUS, with
 * o->status_line) and the summary (MSG_SUMMARY, without -q). libbpf's log
 * (OFFCPU_DEBUG: MSG_DEBUG) goes there as well, from the unwinder's thread
 * too.
 */
struct recorder;
int recorder__new(const struct record_opts *o, const struct msg_sink *ms, struct recorder **out);
int recorder__open(struct recorder *r);
int recorder__start(struct recorder *r);
int recorder__loop(struct recorder *r);
/*
 * The command and the events stopped, the waits in progress ended, the
 * rest written, the file's feature sections and header, the summary
 * (unless -q). After a failed loop (loop_err), only the stop: nothing more
 * is written, loop_err is returned. What was written stays readable. A
 * recording whose unwinder failed on the way is finished whole, and that
 * failure returned (said): its user stacks are incomplete.
 */
int recorder__finish(struct recorder *r, int loop_err);
void recorder__free(struct recorder *r);
/* recorder__start failed because the command could not be run (exec, --user). */
bool recorder__command_failed(const struct recorder *r);
/* The command's exit status as a shell gives it (128 + N: killed by signal N); 0 without one. */
int recorder__command_status(const struct recorder *r);


#endif
