// SPDX-License-Identifier: GPL-2.0-only
/*
 * User stacks finished in user space before their samples are written.
 * The BPF side leaves tagged words in a user stack (src/bpf/unwind.h,
 * src/bpf/python.h), never a user address:
 *
 *   OFFCPU_USTACK_DEFERRED | id   after the frames the BPF unwinder found:
 *                                 the stack kept raw (a table was missing,
 *                                 or a wait in progress at the start), which
 *                                 came here first and was unwound with
 *                                 libdw (unwind/dwfl_stack.h); its frames
 *                                 replace the stack's native part
 *   OFFCPU_PY_SEP, then Python    the Python frames of the thread, innermost
 *   frames                        first (record/pyframes.c turns them into
 *                                 frames of the recording's Python symbol
 *                                 file, interleaved with the native ones)
 *
 * A deferred stack is unwound when it arrives, milliseconds after it was
 * taken, from its process's /proc/PID/maps; when the process is gone by
 * then (a short-lived one: its stack is read up to a poll, 100 ms, later),
 * from the executable file mappings of its last image as the unwinder's
 * side-band thread saw them (MMAP2, FORK, exec, EXIT: kept here under a
 * mutex, an exited process's for UF_GONE_NS). The frames are kept by id for the
 * samples that carry it (an off-CPU sample, and its sched-delay sample),
 * which may come seconds later. At most UF_MAX_DEFERRED are kept: the
 * BPF side defers only stacks whose table is missing, which it is for
 * milliseconds after a library is mapped.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "record/record.h"
#include "unwind/dwfl_stack.h"
#include "unwind/tables.h"
#include "util/clock.h"
#include "util/hash.h"
#include "util/htab.h"
#include "util/vec.h"

#define UF_MAX_DEFERRED 65536
#define UF_GONE_NS 30000000000ULL /* an exited process's mappings kept this long */
#define UF_MAX_MAPS 256

/* A process's executable file mappings (its current or last image). */
struct ufproc {
	uint32_t pid;
	bool gone;
	uint64_t gone_at;
	struct dwfl_file_map *v; /* paths owned */
	size_t n, cap;
};

struct deferred {
	uint64_t id;
	uint32_t pid, tid;
	uint32_t n;   /* native frames unwound (0: none, the BPF side's stay) */
	uint32_t npy; /* Python words read from user space (a wait in progress at the start) */
	size_t off;   /* of its frames in uf->pool: n native, then npy Python words */
};

struct ustack_fix {
	struct dwfl_stack *dwfl;
	struct pyframes *py;    /* NULL: --python=no */
	struct htab deferred;   /* struct deferred, by id */
	pthread_mutex_t lock;   /* procs, fed by the side-band thread */
	struct htab procs;      /* struct ufproc, by pid */
	uint64_t last_expire;
	uint64_t *pool;
	size_t npool, cappool;
	uint64_t stats[USTACK_FIX__NR];
};

int ustack_fix__new(struct pyframes *py, struct ustack_fix **out)
{
	struct ustack_fix *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	f->dwfl = dwfl_stack__new();
	if (!f->dwfl) {
		free(f);
		return -ENOMEM;
	}
	f->py = py;
	htab__init(&f->deferred, sizeof(struct deferred));
	htab__init(&f->procs, sizeof(struct ufproc));
	pthread_mutex_init(&f->lock, NULL);
	*out = f;
	return 0;
}

void ustack_fix__free(struct ustack_fix *f)
{
	if (!f)
		return;
	dwfl_stack__free(f->dwfl);
	htab__free(&f->deferred);
	for (size_t i = 0; i < htab__n(&f->procs); i++) {
		struct ufproc *p = htab__at(&f->procs, i);

		for (size_t j = 0; j < p->n; j++)
			free((char *)p->v[j].path);
		free(p->v);
	}
	htab__free(&f->procs);
	pthread_mutex_destroy(&f->lock);
	free(f->pool);
	free(f);
}

static bool deferred_eq(const void *entry, const void *key)
{
	return ((const struct deferred *)entry)->id == *(const uint64_t *)key;
}

static struct deferred *deferred_find(struct ustack_fix *f, uint64_t id)
{
	return htab__find(&f->deferred, hash__mix(id), deferred_eq, &id);
}

/* ---- the processes' mappings (under f->lock) ---- */

static bool ufproc_eq(const void *entry, const void *key)
{
	return ((const struct ufproc *)entry)->pid == *(const uint32_t *)key;
}

static void ufproc_clear(struct ufproc *p)
{
	for (size_t j = 0; j < p->n; j++)
		free((char *)p->v[j].path);
	p->n = 0;
	p->gone = false;
}

/* pid's entry, made when new; a gone one's pid is a new process's: cleared. */
static struct ufproc *ufproc_get(struct ustack_fix *f, uint32_t pid)
{
	struct ufproc *p;
	bool added;

	p = htab__get(&f->procs, hash__mix(pid), ufproc_eq, &pid, &added);
	if (!p)
		return NULL;
	if (added) {
		memset(p, 0, sizeof(*p));
		p->pid = pid;
	} else if (p->gone) {
		ufproc_clear(p);
	}
	return p;
}

static int ufproc_add(struct ufproc *p, const struct dwfl_file_map *m)
{
	char *path;

	if (p->n >= UF_MAX_MAPS)
		return 0;
	path = strdup(m->path);
	if (!path || vec__reserve((void **)&p->v, &p->cap, p->n + 1, sizeof(*p->v), 8)) {
		free(path);
		return -ENOMEM;
	}
	p->v[p->n] = *m;
	p->v[p->n++].path = path;
	return 0;
}

void ustack_fix__mmap(struct ustack_fix *f, uint32_t pid, const struct unw_mapping *m)
{
	struct dwfl_file_map fm = { m->start, m->end, m->pgoff, m->path };
	struct ufproc *p;

	if (!f || m->path[0] != '/')
		return; /* no file: nothing libdw could open */
	pthread_mutex_lock(&f->lock);
	p = ufproc_get(f, pid);
	if (p)
		ufproc_add(p, &fm); /* out of memory: the stack stays as the BPF side left it */
	pthread_mutex_unlock(&f->lock);
}

void ustack_fix__exec(struct ustack_fix *f, uint32_t pid)
{
	struct ufproc *p;

	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	p = ufproc_get(f, pid);
	if (p)
		ufproc_clear(p);
	pthread_mutex_unlock(&f->lock);
}

void ustack_fix__fork(struct ustack_fix *f, uint32_t ppid, uint32_t pid)
{
	struct ufproc *parent, *child;

	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	child = ufproc_get(f, pid);
	if (child) {
		ufproc_clear(child);
		/* after ufproc_get: the table may have moved */
		parent = htab__find(&f->procs, hash__mix(ppid), ufproc_eq, &ppid);
		for (size_t i = 0; parent && i < parent->n; i++) {
			struct dwfl_file_map m = parent->v[i];

			if (ufproc_add(child, &m))
				break;
			parent = htab__find(&f->procs, hash__mix(ppid), ufproc_eq, &ppid);
		}
	}
	pthread_mutex_unlock(&f->lock);
}

/*
 * A process followed from the start (-p, -a) mapped its files before it:
 * no MMAP2 record tells them. Read now, they are what a child it forks
 * inherits (ustack_fix__fork), and unwind that child's deferred stacks
 * once it is gone: a child sleeping at once after its fork, before the
 * unwinder has its tables, then exiting before its deferred stack came
 * through, kept only its libc frames.
 */
void ustack_fix__scan(struct ustack_fix *f, uint32_t pid)
{
	char path[64], line[PATH_MAX + 256];
	struct ufproc *p;
	FILE *maps;

	if (!f)
		return;
	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	maps = fopen(path, "re");
	if (!maps)
		return; /* gone already: nothing of it to unwind */
	pthread_mutex_lock(&f->lock);
	p = ufproc_get(f, pid);
	if (p)
		ufproc_clear(p);
	while (p && fgets(line, sizeof(line), maps)) {
		struct proc_map pm;
		struct dwfl_file_map m;

		if (!proc_maps__parse_line(line, &pm) || !(pm.prot & PROT_EXEC) || pm.file[0] != '/')
			continue;
		m = (struct dwfl_file_map){ pm.start, pm.end, pm.pgoff, pm.file };
		if (ufproc_add(p, &m))
			break; /* out of memory: its stacks stay as the BPF side left them */
	}
	pthread_mutex_unlock(&f->lock);
	fclose(maps);
}

void ustack_fix__exit(struct ustack_fix *f, uint32_t pid)
{
	uint64_t now = mono_ns();
	struct ufproc *p;

	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	p = htab__find(&f->procs, hash__mix(pid), ufproc_eq, &pid);
	if (p) {
		p->gone = true;
		p->gone_at = now;
	}
	/* now and then, the mappings of processes gone long ago go */
	if (now - f->last_expire > 1000000000ULL) {
		f->last_expire = now;
		for (size_t i = 0; i < htab__n(&f->procs); i++) {
			p = htab__at(&f->procs, i);
			if (p->gone && now - p->gone_at > UF_GONE_NS)
				ufproc_clear(p); /* emptied, not removed: entries stay where they are */
		}
	}
	pthread_mutex_unlock(&f->lock);
}

/* Unwind a deferred stack of a process gone, from its last image's mappings. */
static int unwind_gone(struct ustack_fix *f, const struct offcpu_unw_deferred *d, uint64_t *frames,
		       int max)
{
	struct dwfl_file_map *m = NULL;
	struct ufproc *p;
	size_t n = 0;
	int err = 0;

	pthread_mutex_lock(&f->lock);
	p = htab__find(&f->procs, hash__mix(d->pid), ufproc_eq, &d->pid);
	if (p && p->n && (m = calloc(p->n, sizeof(*m)))) {
		for (n = 0; n < p->n; n++) {
			m[n] = p->v[n];
			m[n].path = strdup(p->v[n].path);
			if (!m[n].path)
				break;
		}
	}
	pthread_mutex_unlock(&f->lock);
	if (!n)
		err = -ESRCH;
	else
		err = dwfl_stack__unwind_files(f->dwfl, d->pid, d->tid, m, n, d->regs, d->stack, d->len,
					       frames, max);
	for (size_t i = 0; i < n; i++)
		free((char *)m[i].path);
	free(m);
	return err;
}

int ustack_fix__deferred(struct ustack_fix *f, const void *rec, size_t len)
{
	const struct offcpu_unw_deferred *d = rec;
	uint64_t frames[OFFCPU_MAX_STACK], py[OFFCPU_MAX_STACK];
	uint64_t id = d->id & 0xffffffffffffULL;
	int n = 0, npy = 0;
	struct deferred *e;
	bool added;

	if (len < OFFCPU_UNW_DEFERRED_HDR || d->len > len - OFFCPU_UNW_DEFERRED_HDR)
		return 0; /* not one of ours: nothing to keep */
	if (htab__n(&f->deferred) >= UF_MAX_DEFERRED) {
		f->stats[USTACK_FIX_DROPPED]++;
		return 0;
	}
	n = dwfl_stack__unwind(f->dwfl, d->pid, d->tid, d->regs, d->stack, d->len, frames,
			       OFFCPU_MAX_STACK);
	if (n < 0) {
		/* gone (-ESRCH), or a zombie whose /proc/PID/maps is empty already */
		n = unwind_gone(f, d, frames, OFFCPU_MAX_STACK);
		if (n > 0)
			f->stats[USTACK_FIX_GONE]++;
	}
	if (n < 0) {
		f->stats[USTACK_FIX_FAILED]++;
		n = 0;
	} else {
		f->stats[USTACK_FIX_UNWOUND]++;
	}
	if ((d->flags & OFFCPU_UNW_DEFER_START) && f->py)
		npy = pyframes__walk(f->py, d->pid, d->tid, py, OFFCPU_MAX_STACK);
	if (npy < 0)
		npy = 0;
	if (vec__reserve((void **)&f->pool, &f->cappool, f->npool + n + npy, sizeof(*f->pool), 4096))
		return -ENOMEM;
	e = htab__get(&f->deferred, hash__mix(id), deferred_eq, &id, &added);
	if (!e)
		return -ENOMEM;
	e->id = id;
	e->pid = d->pid;
	e->tid = d->tid;
	e->n = n;
	e->npy = npy;
	e->off = f->npool;
	/* nothing to copy (unwound nothing, no Python words): the pool may not exist yet */
	if (n)
		memcpy(f->pool + f->npool, frames, n * sizeof(*frames));
	if (npy)
		memcpy(f->pool + f->npool + n, py, npy * sizeof(*py));
	f->npool += n + npy;
	return 0;
}

bool ustack_fix__wanted(const __u64 *stack, uint32_t n)
{
	/* 0xa-0xd: the tags; a kernel stack's addresses have 0xf (stacks travel by id, untold) */
	for (uint32_t i = 0; i < n && i < OFFCPU_MAX_STACK; i++)
		if (OFFCPU_USTACK_TAG(stack[i]) >= 0xa && OFFCPU_USTACK_TAG(stack[i]) <= 0xd)
			return true;
	return false;
}

int ustack_fix__apply(struct ustack_fix *f, uint32_t pid, __u64 *stack, uint32_t *n, bool must,
		      uint64_t taken)
{
	uint64_t out[OFFCPU_MAX_STACK], pyw[OFFCPU_MAX_STACK];
	uint32_t len = *n > OFFCPU_MAX_STACK ? OFFCPU_MAX_STACK : *n;
	uint32_t native = len, nout = 0, npy = 0, mark = len;
	const uint64_t *nat = (const uint64_t *)stack; /* same width */
	struct deferred *e = NULL;

	/* the native part ends at the deferred mark or at the Python frames */
	for (uint32_t i = 0; i < len; i++) {
		unsigned int tag = OFFCPU_USTACK_TAG(stack[i]);

		if (tag == OFFCPU_USTACK_DEFERRED >> 60 && mark == len) {
			mark = i;
			native = i;
		} else if (tag == OFFCPU_PY_SEP >> 60) {
			native = native < i ? native : i;
			if (!pid)
				pid = OFFCPU_PY_SEP_PID(stack[i]);
			for (uint32_t j = i + 1; j < len && npy < OFFCPU_MAX_STACK; j++)
				if (OFFCPU_PY_IS_FRAME(stack[j]))
					pyw[npy++] = stack[j];
			break;
		}
	}
	if (mark < len) {
		e = deferred_find(f, stack[mark] & 0xffffffffffffULL);
		if (!e && !must)
			return -ENOENT;
		if (!e)
			f->stats[USTACK_FIX_UNKNOWN]++;
		else if (e->n) {
			nat = f->pool + e->off;
			native = e->n;
		}
		if (e && !pid)
			pid = e->pid;
		if (e && !npy && e->npy) {
			memcpy(pyw, f->pool + e->off + e->n, e->npy * sizeof(*pyw));
			npy = e->npy;
		}
	}
	if (npy && f->py) {
		int r = pyframes__interleave(f->py, pid, nat, native, pyw, npy, taken, out,
					 OFFCPU_MAX_STACK);

		if (r < 0)
			return r;
		nout = r;
	} else {
		for (uint32_t i = 0; i < native && nout < OFFCPU_MAX_STACK; i++)
			if (OFFCPU_USTACK_TAG(nat[i]) < 0xa)
				out[nout++] = nat[i];
	}
	memcpy(stack, out, nout * sizeof(*out));
	*n = nout;
	return 0;
}

void ustack_fix__forget(struct ustack_fix *f, uint32_t pid)
{
	dwfl_stack__forget(f->dwfl, pid);
}

uint64_t ustack_fix__stat(const struct ustack_fix *f, int which)
{
	return which >= 0 && which < USTACK_FIX__NR ? f->stats[which] : 0;
}
