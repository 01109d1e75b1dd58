// SPDX-License-Identifier: GPL-2.0-only
/*
 * The process model: COMM/FORK/EXIT/MMAP/MMAP2 records, in time order,
 * keep threads (with their comm) and per-process executable maps current,
 * so that each sample resolves against the maps that existed when it was
 * taken.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "session/session_int.h"
#include "symbols/vdso.h"
#include "util/bsearch.h"
#include "util/hash.h"
#include "util/vec.h"

void procs__init(struct session *s)
{
	intern__init(&s->strs);
	htab__init(&s->dsos, sizeof(struct dso_ent));
	htab__init(&s->procs, sizeof(struct proc));
	htab__init(&s->threads, sizeof(struct thread));
	htab__init(&s->comms, sizeof(const char *));
}

void procs__free(struct session *s)
{
	for (size_t i = 0; i < htab__n(&s->procs); i++)
		free(proc_at(s, i)->maps);
	free(s->lives);
	htab__free(&s->procs);
	htab__free(&s->threads);
	htab__free(&s->dsos);
	htab__free(&s->comms);
	intern__free(&s->strs);
}

static bool ptr_eq(const void *entry, const void *key)
{
	return *(const void *const *)entry == key;
}

/* The id of a comm (rsample.comm): its interned string's place in s->comms. */
int procs__comm(struct session *s, const char *name, uint32_t *id)
{
	const char *in = intern__str(&s->strs, name);
	const char **e;
	bool added;

	if (!in)
		return -ENOMEM;
	e = htab__get(&s->comms, hash__mix((uintptr_t)in), ptr_eq, in, &added);
	if (!e)
		return -ENOMEM;
	*e = in;
	*id = e - (const char **)s->comms.v;
	return 0;
}

static bool thread_eq(const void *entry, const void *key)
{
	return ((const struct thread *)entry)->tid == *(const uint32_t *)key;
}

static bool proc_eq(const void *entry, const void *key)
{
	return ((const struct proc *)entry)->pid == *(const uint32_t *)key;
}

/* The thread tid, found without the cache below (for what callers ask after a run). */
const struct thread *procs__thread_peek(const struct session *s, uint32_t tid)
{
	return htab__find(&s->threads, hash__mix(tid), thread_eq, &tid);
}

/*
 * The thread tid. The last ones found are remembered by tid modulo LAST_N:
 * samples come in runs of a few threads, one per CPU, which hit there
 * before the hash table.
 */
struct thread *procs__thread(struct session *s, uint32_t tid)
{
	uint32_t *last = &s->last_thread[tid & (LAST_N - 1)];
	struct thread *t;

	if (*last < htab__n(&s->threads)) {
		t = htab__at(&s->threads, *last);
		if (t->tid == tid)
			return t;
	}
	t = htab__find(&s->threads, hash__mix(tid), thread_eq, &tid);
	if (t)
		*last = t - (struct thread *)s->threads.v;
	return t;
}

/* The thread tid, created with perf's default comm (":tid", "swapper"). */
struct thread *procs__thread_get(struct session *s, uint32_t tid, uint32_t pid)
{
	struct thread *t = procs__thread(s, tid);
	char name[32];
	bool added;

	if (t)
		return t;
	t = htab__get(&s->threads, hash__mix(tid), thread_eq, &tid, &added);
	if (!t)
		return NULL;
	t->tid = tid;
	t->pid = pid;
	if (tid == 0)
		snprintf(name, sizeof(name), "swapper");
	else
		snprintf(name, sizeof(name), ":%d", (int32_t)tid); /* perf's ":-1" */
	if (procs__comm(s, name, &t->comm)) {
		htab__unget(&s->threads);
		return NULL;
	}
	return t;
}

/* The process pid; with create, made on first sight (NULL then means ENOMEM). */
struct proc *procs__proc(struct session *s, uint32_t pid, bool create)
{
	uint32_t *last = &s->last_proc[pid & (LAST_N - 1)];
	uint64_t h = hash__mix(pid ^ 0x5555);
	struct proc *p;
	bool added;

	if (*last < htab__n(&s->procs) && proc_at(s, *last)->pid == pid)
		return proc_at(s, *last);
	p = htab__find(&s->procs, h, proc_eq, &pid);
	if (p) {
		*last = p - (struct proc *)s->procs.v;
		return p;
	}
	if (!create)
		return NULL;
	p = htab__get(&s->procs, h, proc_eq, &pid, &added);
	if (p)
		p->pid = pid;
	return p;
}

struct addr_key {
	const struct proc *p;
	uint64_t addr;
};

static bool ends_above(const void *ctx, size_t i)
{
	const struct addr_key *k = ctx;

	return k->p->maps[i].end > k->addr;
}

/* First map whose end is above addr. */
static size_t maps_lower(const struct proc *p, uint64_t addr)
{
	struct addr_key k = { p, addr };

	return bsearch_first(p->n, ends_above, &k);
}

const struct map *procs__find_map(const struct proc *p, uint64_t addr)
{
	size_t i;

	if (!p || !p->n)
		return NULL;
	i = maps_lower(p, addr);
	if (i < p->n && p->maps[i].start <= addr)
		return &p->maps[i];
	return NULL;
}

/*
 * Insert a mapping; whatever it overlaps is cut away (a new mmap over an
 * old range replaces it, as in the kernel).
 */
static int proc_add_map(struct proc *p, const struct map *m)
{
	struct map *out;
	size_t n = 0, cap = p->n + 3;

	out = malloc(cap * sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < p->n; i++) {
		struct map o = p->maps[i];

		if (o.end <= m->start || o.start >= m->end) {
			if (o.start >= m->end && (n == 0 || out[n - 1].start < m->start))
				out[n++] = *m;
			out[n++] = o;
			continue;
		}
		if (o.start < m->start) {
			struct map left = o;
			left.end = m->start;
			out[n++] = left;
		}
		if (n == 0 || out[n - 1].start < m->start)
			out[n++] = *m;
		if (o.end > m->end) {
			struct map right = o;
			right.pgoff += m->end - o.start;
			right.start = m->end;
			out[n++] = right;
		}
	}
	if (n == 0 || out[n - 1].start < m->start)
		out[n++] = *m;
	free(p->maps);
	p->maps = out;
	p->n = n;
	p->cap = cap;
	return 0;
}

static int proc_clone_maps(struct proc *dst, const struct proc *src)
{
	struct map *m = NULL;

	if (src && src->n) {
		m = malloc(src->n * sizeof(*m));
		if (!m)
			return -ENOMEM;
		memcpy(m, src->maps, src->n * sizeof(*m));
	}
	free(dst->maps);
	dst->maps = m;
	dst->n = dst->cap = src ? src->n : 0;
	return 0;
}

static bool dso_eq(const void *entry, const void *key)
{
	return ((const struct dso_ent *)entry)->name == key;
}

/* The DSO of a mapped file name, created on first sight. */
int procs__dso(struct session *s, const char *name, uint32_t *id)
{
	const char *in = intern__str(&s->strs, name);
	struct dso_ent *d;
	const char *slash;
	bool added;

	if (!in)
		return -ENOMEM;
	d = htab__get(&s->dsos, hash__mix((uintptr_t)in), dso_eq, in, &added);
	if (!d)
		return -ENOMEM;
	*id = d - (struct dso_ent *)s->dsos.v;
	if (!added)
		return 0;
	d->name = in;
	slash = strrchr(in, '/');
	d->short_name = slash && slash[1] ? slash + 1 : in;
	/* no file behind it (JIT code, memfd): perf-PID.map; the vDSO has its image */
	d->anon = (in[0] != '/' && strcmp(in, VDSO_NAME)) || !strncmp(in, "/memfd:", 7) ||
		  !strncmp(in, "//anon", 6);
	return 0;
}

int procs__on_exit(struct session *s, const struct perf_rec *rec)
{
	struct thread *t = procs__thread_get(s, rec->fork.tid, rec->fork.pid);

	if (!t)
		return -ENOMEM;
	t->exit_time = rec->time;
	return 0;
}

int procs__on_comm(struct session *s, const struct perf_rec *rec)
{
	struct thread *t = procs__thread_get(s, rec->comm.tid, rec->comm.pid);
	struct proc *p;
	int err;

	if (!t)
		return -ENOMEM;
	t->pid = rec->comm.pid;
	err = procs__comm(s, rec->comm.comm, &t->comm);
	if (err)
		return err;
	if (rec->misc & PERF_RECORD_MISC_COMM_EXEC) {
		p = procs__proc(s, rec->comm.pid, false);
		if (p) {
			p->n = 0; /* exec: the old image is gone */
			p->gen++;
		}
	}
	return 0;
}

/* A new thread takes its parent's comm; a new process a copy of its parent's maps. */
int procs__on_fork(struct session *s, const struct perf_rec *rec)
{
	struct thread *parent = procs__thread(s, rec->fork.ptid);
	uint32_t pcomm = parent ? parent->comm : UINT32_MAX;
	struct thread *t = procs__thread_get(s, rec->fork.tid, rec->fork.pid);
	struct proc *p, *pp;
	size_t ppi;

	if (!t)
		return -ENOMEM;
	if (t->exit_time) { /* a reused tid: the thread that had it is kept as it ended */
		if (vec__reserve((void **)&s->lives, &s->cap_lives, s->nr_lives + 1, sizeof(*s->lives), 16))
			return -ENOMEM;
		s->lives[s->nr_lives++] = (struct session_thread){ t->pid, t->tid, t->comm, t->fork_time,
								   t->exit_time };
	}
	t->pid = rec->fork.pid;
	t->fork_time = rec->time;
	t->exit_time = 0; /* a reused tid starts a new life */
	if (pcomm != UINT32_MAX)
		t->comm = pcomm;
	if (rec->fork.pid == rec->fork.ppid)
		return 0;
	pp = procs__proc(s, rec->fork.ppid, false);
	ppi = pp ? (size_t)(pp - (struct proc *)s->procs.v) : 0;
	p = procs__proc(s, rec->fork.pid, true); /* may move s->procs */
	if (!p)
		return -ENOMEM;
	p->gen++;
	return proc_clone_maps(p, pp ? proc_at(s, ppi) : NULL);
}

/*
 * An executable mapping of a process; the kernel's own MMAP says where its
 * text is (relocation of kernel addresses) and where its map ends.
 */
int procs__on_mmap(struct session *s, const struct perf_rec *rec)
{
	uint16_t mode = rec->misc & PERF_RECORD_MISC_CPUMODE_MASK;
	struct map m;
	struct proc *p;
	uint32_t id;
	int err;

	if (rec->mmap.pid == UINT32_MAX || mode == PERF_RECORD_MISC_KERNEL) {
		if (!strncmp(rec->mmap.filename, "[kernel.kallsyms]", 17) && !s->kernel_text_set) {
			s->kernel_start = rec->mmap.start;
			s->kernel_end = rec->mmap.start + rec->mmap.len;
			s->kernel_text_set = true;
			symbolizer__set_kernel_text(s->sym, rec->mmap.pgoff);
		}
		return 0;
	}
	if (rec->type == PERF_RECORD_MMAP2 && !(rec->mmap.prot & PROT_EXEC))
		return 0;
	if (rec->type == PERF_RECORD_MMAP && (rec->misc & PERF_RECORD_MISC_MMAP_DATA))
		return 0;
	if (!rec->mmap.len || rec->mmap.start + rec->mmap.len < rec->mmap.start)
		return 0;
	err = procs__dso(s, rec->mmap.filename, &id);
	if (err)
		return err;
	p = procs__proc(s, rec->mmap.pid, true);
	if (!p)
		return -ENOMEM;
	m.start = rec->mmap.start;
	m.end = rec->mmap.start + rec->mmap.len;
	m.pgoff = rec->mmap.pgoff;
	m.dso = id;
	p->gen++;
	return proc_add_map(p, &m);
}
