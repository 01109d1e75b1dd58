/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The session's parts, shared by its files only:
 *   session.c  life of a session, records to their handlers, what callers ask
 *   procs.c    the process model: threads, processes, their maps, DSOs
 *   sample.c   a sample's stack: each address through a cache to its frames
 *   resolve.c  an address seen for the first time, by kind of DSO: kernel,
 *              file (ELF), JIT code (perf-PID.map), none; interned frames
 *   chain_cache.c  a raw callchain resolved once per address space
 * Memory grows with threads, maps, distinct addresses and frames, never
 * with the number of samples.
 */
#ifndef OFFCPU_SESSION_SESSION_INT_H
#define OFFCPU_SESSION_SESSION_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "session/session.h"
#include "symbols/symbolizer.h"
#include "util/htab.h"
#include "util/intern.h"

#define DSO_KERNEL (UINT32_MAX - 1)
#define DSO_UNKNOWN (UINT32_MAX - 2)
#define MAX_FRAMES 512
#define MAX_INLINE 16

struct dso_ent {
	const char *name;  /* interned */
	const char *short_name;
	struct sym_dso *sd;
	bool looked_up;
	bool anon;         /* no file behind it: try perf-PID.map */
};

struct map {
	uint64_t start, end, pgoff;
	uint32_t dso;
};

struct proc {
	uint32_t pid;
	uint32_t gen;     /* bumped at each change of its maps (see ipc_ent) */
	uint32_t space;   /* its address space in the chain cache, when ... */
	uint32_t space_gen, space_epoch; /* ... these are its gen and the cache's epoch */
	struct map *maps; /* sorted by start, non-overlapping */
	size_t n, cap;
};

struct thread {
	uint32_t tid, pid;
	uint32_t comm;
	uint64_t fork_time, exit_time; /* 0: not seen */
};

struct addr_ent {
	uint32_t dso;
	uint64_t addr;     /* map-relative for files, absolute for kernel/unknown */
	uint32_t first, n; /* into session.res */
	bool pending;      /* a kernel address not named yet (session_opts.defer_kernel) */
};

/* One frame of an address (a location, rsample.locs): the frame, its address, the offset in its symbol. */
struct res {
	uint32_t frame;
	uint32_t ent;      /* the address: index in session.addrs */
	uint64_t off;
};

/*
 * A direct-mapped cache in front of the map lookup and the (dso, address)
 * table: most frames of a file are addresses seen moments before in the
 * same process, and a hit costs one hash and one compare instead of a
 * binary search among the process's maps and a probe of the table. A
 * process's entries die when its maps change (gen). It serves the
 * callchains the chain cache has not seen yet (chain_cache.c) and the
 * samples without one: 4096 entries. An address of one frame (all but
 * inlined calls) has its frame and location in the entry itself: a hit
 * then reads nothing else (the table and the locations are megabytes,
 * two waits for memory a frame). The entries live as long as the walk:
 * the frames of kernel addresses named after it change then.
 */
#define IPC_BITS 12
struct ipc_ent {
	uint64_t ip;
	uint32_t proc;    /* index in session.procs, IPC_KERNEL, or IPC_NOPROC */
	uint32_t gen;     /* its proc's gen */
	uint32_t ent;     /* index in session.addrs + 1; 0 = empty */
	uint32_t n;       /* its addr_ent's n (frames) */
	uint32_t first;   /* its addr_ent's first: the location of its first frame */
	uint32_t frame;   /* that location's frame */
};
#define IPC_KERNEL UINT32_MAX
#define IPC_NOPROC (UINT32_MAX - 1)

#define LAST_N 1024 /* recently found threads and processes remembered (procs__thread) */

/* Wakers' comms seen lately (each offcpu-wakeup sample names one), by their 16 bytes. */
#define WAKER_COMMS 256
struct waker_comm {
	uint64_t name[2];
	uint32_t id;       /* its comm id + 1; 0 = empty */
};

struct session {
	struct perf_reader *reader;
	struct symbolizer *sym;
	struct session_opts opts;
	struct intern strs;    /* every string of frames, DSOs and comms */
	struct htab dsos;      /* struct dso_ent, by interned name */
	struct htab procs;     /* struct proc, by pid */
	struct htab threads;   /* struct thread, by tid */
	struct htab comms;     /* const char * (interned), by address: rsample.comm ids */
	struct htab frames;    /* struct frame */
	struct htab addrs;     /* struct addr_ent, by (dso, address) */
	struct res *res;       /* the frames of each address, addr_ent.first on */
	size_t nr_res, cap_res;
	uint64_t kernel_start, kernel_end; /* the kernel's map, as its MMAP record says */
	bool kernel_text_set;
	bool kernel_warned;
	bool kernel_deferred;            /* kernel addresses get placeholder frames for now */
	uint32_t *remap;                 /* placeholder frame -> its named frame */
	uint32_t nr_remap;
	uint64_t first_time, last_time; /* of records that have a time */
	struct session_thread *lives;   /* threads whose tid was given again after they exited */
	size_t nr_lives, cap_lives;
	struct ipc_ent *ipc;             /* 1 << IPC_BITS entries */
	/* threads and processes found lately, by tid / pid modulo LAST_N (see thread_find) */
	uint32_t last_thread[LAST_N], last_proc[LAST_N];
	struct waker_comm waker_comms[WAKER_COMMS];
	/* per-sample scratch */
	uint32_t sframes[MAX_FRAMES], slocs[MAX_FRAMES];
	session_sample_cb cb;
	void *cb_ctx;
	struct session_stats stats;
	struct chain_cache *chains;
	const char *str_unknown, *str_kernel; /* "[unknown]", "[kernel.kallsyms]" interned (resolve.c) */
	struct htab stacks;    /* struct stack_ent: the samples' frame sequences, interned */
	uint32_t *stack_frames;
	size_t nr_stack_frames, cap_stack_frames;
	char err[256];
};

static inline struct proc *proc_at(const struct session *s, uint32_t i)
{
	return htab__at(&s->procs, i);
}

static inline struct addr_ent *addr_at(const struct session *s, uint32_t i)
{
	return htab__at(&s->addrs, i);
}

/* procs.c */
void procs__init(struct session *s);
void procs__free(struct session *s);
int procs__comm(struct session *s, const char *name, uint32_t *id);
struct thread *procs__thread(struct session *s, uint32_t tid);
const struct thread *procs__thread_peek(const struct session *s, uint32_t tid);
struct thread *procs__thread_get(struct session *s, uint32_t tid, uint32_t pid);
struct proc *procs__proc(struct session *s, uint32_t pid, bool create);
const struct map *procs__find_map(const struct proc *p, uint64_t addr);
int procs__dso(struct session *s, const char *name, uint32_t *id);
int procs__on_comm(struct session *s, const struct perf_rec *rec);
int procs__on_fork(struct session *s, const struct perf_rec *rec);
int procs__on_exit(struct session *s, const struct perf_rec *rec);
int procs__on_mmap(struct session *s, const struct perf_rec *rec);

/* sample.c */
/* The walk's caches (address cache, chain cache, stack ids): made at its start, freed at its end. */
int sample__init(struct session *s);
void sample__done(struct session *s);
int sample__on_sample(struct session *s, const struct perf_rec *rec);

/* One interned frame sequence, for the walk (rsample.stack is its index + 1). */
struct stack_ent {
	uint32_t off, nr; /* frames at off in session.stack_frames */
};

/* chain_cache.c */
int chain_cache__new(struct session *s);
void chain_cache__free(struct session *s);
/*
 * The frames of rs's callchain (rs->s has one) in process p (NULL when
 * unknown): rs's nr, no_chain, frames and locs set, from the cache or
 * else by resolve(), which sets them as the cache keeps them.
 */
int chain_cache__resolve(struct session *s, struct rsample *rs, struct proc *p,
			 int (*resolve)(struct session *s, struct rsample *rs, const struct proc *p));

/* resolve.c */
void resolve__init(struct session *s);
void resolve__free(struct session *s);
int resolve__addr(struct session *s, uint32_t dso, const struct map *m, uint64_t key_addr,
		  uint64_t ip, uint32_t pid, uint32_t *ent);
int resolve__kernel_finish(struct session *s);
int resolve__frame(struct session *s, const struct frame *f, uint32_t *id);

#endif
