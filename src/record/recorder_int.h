/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The recorder's parts, shared by its files only:
 *   recorder.c  life of a recorder: open (checks, file, programs, events,
 *               the command held), start (attach, /proc, the command runs)
 *   loop.c      signals, records from the kernel to the file in time order
 *   finish.c    the stop and the file's last parts: LOST records, the
 *               offcpu, time and build-id feature sections
 *   summary.c   the status line and the end-of-recording summary
 */
#ifndef OFFCPU_RECORD_RECORDER_INT_H
#define OFFCPU_RECORD_RECORDER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record/record.h"

/* Processes whose side-band records are kept (-p, -t, the command's tree). */
struct tgid_set {
	uint32_t *v; /* sorted */
	size_t n, cap;
};

struct recorder {
	const struct record_opts *o;
	const struct msg_sink *ms; /* where every message goes: the recorder prints nothing */

	/* what is recorded */
	struct tgid_set targets;
	bool filter_sideband;       /* side-band of the targets only */
	struct target_watch *watch; /* -p/-t without -a: the recording ends when they all exit */
	struct kernel_facts kernel;

	/* the parts */
	struct perf_writer *w;
	struct offcpu_bpf *bpf;
	struct unwind_loader *unwind; /* --call-graph dwarf */
	struct ustack_fix *fix;       /* --call-graph dwarf: stacks finished in user space */
	struct pyframes *py;          /* --python */
	struct cpu_events *cpu;
	struct merge *m;
	struct dso_hits *hits;
	struct thread_names *names;

	/* the command */
	struct workload wl;
	struct run_as run_as;  /* --user */
	bool have_child;       /* forked (held, then running) and not reaped before its start */
	bool child_done;       /* reaped: child_wait is its wait status */
	int child_wait;        /* waitpid's status */
	bool command_failed;   /* it could not be run (exec, --user) */

	/* the recording */
	bool signals;          /* recorder__setup_signals() done: restored at the free */
	bool started;          /* the command released: the file stays, whatever happens */
	bool status_line;      /* the live status line on stderr */
	uint64_t first_time, last_time; /* of the samples written */
	uint64_t nr_written_samples;
	uint64_t nr_ustack_cut; /* samples whose user stack was cut at a junk frame */
	uint64_t start;           /* record.start_ns, once offcpu_bpf__start() has run; else 0 */
	uint64_t nr_before_start; /* CPU samples before it, left out (loop.c) */
	uint64_t nr_sideband_nomem; /* children whose side-band was left out: no memory to follow them */
	uint64_t prev_round;    /* time of the previous drain: written up to it */
	uint64_t drops[OFFCPU_DROP__NR]; /* the BPF side's, read at the finish */
	int drops_err;          /* they could not be read: the losses are unknown */
	uint64_t loop_start;    /* recorder__loop's start (mono_ns) */
	int unwind_err;         /* the unwinder's loader failed while recording: incomplete */
	uint64_t unwind_err_at; /* when it was seen (ns since the loop's start) */
};

/* recorder.c */
bool tgid_set__has(const struct tgid_set *t, uint32_t pid);
int tgid_set__add(struct tgid_set *t, uint32_t pid);
/* Wait for the command (block) or look whether it has ended. */
void recorder__reap_child(struct recorder *r, bool block);

/* loop.c */
/*
 * Ctrl-C, SIGTERM, SIGHUP stop the recording, SIGCHLD wakes it (through a
 * self-pipe): one recorder at a time (-EBUSY). Restored: the actions before
 * and no pipe (recorder__free).
 */
int recorder__setup_signals(void);
void recorder__restore_signals(void);
/*
 * Move everything the kernel has into the queue; with drain, drain the
 * sums and write (up to the previous round's time; final: everything).
 */
int recorder__round_trip(struct recorder *r, bool drain, bool final);
/*
 * Has the unwinder's loader failed (the recording goes on, its user stacks
 * incomplete)? Said once, when first seen; r->unwind_err then holds it.
 */
void recorder__check_unwinder(struct recorder *r);

/* summary.c */
void recorder__show_status(struct recorder *r, uint64_t start);
/*
 * The status line cleared (when there is one: even before the first), for
 * a line that takes its place: the summary, a failure at the stop.
 */
void recorder__clear_status(struct recorder *r);
/* The end of a recording: its summary lines (MSG_SUMMARY). */
void recorder__print_summary(struct recorder *r);

#endif
