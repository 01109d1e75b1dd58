/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The unwind tables of a recording: one table per file (by device and
 * inode), built once and shared by every process that maps the file, and
 * per process its executable mappings, each pointing at its file's table
 * with the mapping's load bias. Fed with the processes' mappings (from
 * /proc at start, then from MMAP2, FORK, COMM-exec and EXIT records) and
 * written through a backend: the BPF maps of src/bpf/unwind.h in a
 * recording, plain memory in the unit tests.
 *
 * A file's table is dropped when no process has mapped it for a while
 * (UNW_GRACE_NS: short-lived processes of the same program reuse it), or
 * at once when its room is needed.
 */
#ifndef OFFCPU_UNWIND_TABLES_H
#define OFFCPU_UNWIND_TABLES_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/types.h>

#include "bpf/unwind.h"

#define UNW_GRACE_NS 5000000000ULL

/* Where tables go. The row array is written in place (memory-mapped). */
struct unw_backend {
	void *ctx;
	struct offcpu_unw_row *rows;
	uint32_t row_cap;
	/* rules [first, first + n) of the dictionary */
	int (*put_rules)(void *ctx, uint32_t first, uint32_t n, const struct offcpu_unw_rule *r);
	/* a process's table, then a new generation of it (the BPF side's cached stacks of it go) */
	int (*put_proc)(void *ctx, uint32_t tgid, const struct offcpu_unw_proc *p);
	int (*del_proc)(void *ctx, uint32_t tgid);
	/*
	 * A file's table by its identity (for stacks taken before their
	 * process's table is written), and its removal before its rows go.
	 * Optional.
	 */
	int (*put_file)(void *ctx, const struct offcpu_unw_file_key *k, const struct offcpu_unw_file *f);
	int (*del_file)(void *ctx, const struct offcpu_unw_file_key *k);
	/* the execs the kernel side has counted for tgid (0 if none) */
	int (*get_execs)(void *ctx, uint32_t tgid, uint32_t *execs);
};

/* An executable mapping, from an MMAP2 record or a /proc/PID/maps line. */
struct unw_mapping {
	uint64_t start, end, pgoff;
	uint32_t maj, min;
	uint64_t ino;
	const char *path; /* a file, "[vdso]", "//anon", "[anon:...]"... */
};

struct unw_tables_stats {
	uint64_t files;          /* tables built */
	uint64_t files_no_cfi;   /* files without call-frame information (frame pointers) */
	uint64_t files_failed;   /* files that could not be opened or read */
	uint64_t files_no_room;  /* tables that did not fit in the row array */
	uint64_t files_dropped;  /* tables dropped (no process mapped them any more) */
	uint64_t rows, rows_peak, row_cap;
	uint64_t rules, rules_overflow;
	uint64_t unsupported_rows;
	uint64_t build_ns, build_max_ns; /* time spent building tables; the longest one */
	char build_max_file[128];
	uint64_t procs, procs_peak;      /* processes followed */
	uint64_t maps_dropped;           /* mappings beyond OFFCPU_UNW_MAX_MAPS in a process */
	uint64_t pushes;                 /* process tables written */
};

struct unw_tables;

/* all: follow every process (-a); else only those added and their children. */
int unw_tables__new(const struct unw_backend *b, bool all, struct unw_tables **out);
void unw_tables__free(struct unw_tables *t);

/* Build the table of a file before any process maps it (a command about to run). */
int unw_tables__preload(struct unw_tables *t, const char *path);
/*
 * Build the tables of a command before it runs: its executable (on PATH),
 * its interpreter and the libraries it needs (preload.c).
 */
int unw_tables__preload_command(struct unw_tables *t, const char *argv0);
/* The vDSO's table, from this process's own image (the kernel's is the same for all). */
int unw_tables__preload_vdso(struct unw_tables *t);
/*
 * Follow process pid from now on, its mappings read from /proc/PID/maps;
 * its exec count from the backend.
 */
int unw_tables__add_process(struct unw_tables *t, uint32_t pid);

/*
 * Side-band, in time order. A record older than a /proc read above is
 * harmless: mappings are added again, an exec clears the mappings that
 * the records after it add again.
 */
int unw_tables__mmap(struct unw_tables *t, uint32_t pid, const struct unw_mapping *m);
int unw_tables__fork(struct unw_tables *t, uint32_t ppid, uint32_t pid);
int unw_tables__exec(struct unw_tables *t, uint32_t pid);
int unw_tables__exit(struct unw_tables *t, uint32_t pid);
/* The kernel side asked for pid's tables (it exec'd): take its exec count again. */
void unw_tables__requested(struct unw_tables *t, uint32_t pid);
/*
 * From now on, files newly mapped are built when a stack needs them (see
 * tables.c), not when mapped.
 */
void unw_tables__set_lazy(struct unw_tables *t, bool lazy);
/* A stack of pid needs the table of the file mapped at pc: build it now. */
int unw_tables__need(struct unw_tables *t, uint32_t pid, uint64_t pc);
/* Write the processes changed since the last call to the backend. */
int unw_tables__flush(struct unw_tables *t);
/* Drop tables no process has mapped since before now - UNW_GRACE_NS. */
void unw_tables__expire(struct unw_tables *t, uint64_t now);

bool unw_tables__follows(const struct unw_tables *t, uint32_t pid);
void unw_tables__stats(const struct unw_tables *t, struct unw_tables_stats *s);

#endif
