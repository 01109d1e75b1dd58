// SPDX-License-Identifier: GPL-2.0-only
/*
 * Process model and symbol resolution for a perf.data file. Records arrive
 * in time order from the reader; COMM/FORK/EXIT/MMAP/MMAP2 keep threads and
 * per-process maps current, so each sample resolves against the maps that
 * existed when it was taken. Memory grows with threads, maps, distinct
 * addresses and frames — never with the number of samples.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "util/htab.h"
#include "session/session.h"
#include "symbols/symbolizer.h"
#include "symbols/vdso.h"

#define DSO_KERNEL (UINT32_MAX - 1)
#define DSO_UNKNOWN (UINT32_MAX - 2)
#define MAX_FRAMES 512
#define MAX_INLINE 16

struct strpool {
	char **strs;
	size_t n, cap;
	struct htab ht;
};

struct dso_ent {
	const char *name;
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

struct res {
	uint32_t frame;
	uint64_t off;
};

/*
 * A direct-mapped cache in front of the map lookup and the (dso, address)
 * table: most frames of a file are addresses seen moments before in the
 * same process, and a hit costs one hash and one compare instead of a
 * binary search among the process's maps and a probe of the table. A
 * process's entries die when its maps change (gen).
 */
#define IPC_BITS_MAX 16
struct ipc_ent {
	uint64_t ip;
	uint64_t shown;   /* the address shown (map-relative for files) */
	uint32_t proc;    /* index in session.procs, IPC_KERNEL, or IPC_NOPROC */
	uint32_t gen;     /* its proc's gen */
	uint32_t ent;     /* index in session.addrs + 1; 0 = empty */
};
#define IPC_KERNEL UINT32_MAX
#define IPC_NOPROC (UINT32_MAX - 1)

#define LAST_N 64 /* recently found threads and processes remembered (thread_find) */

struct session {
	struct perf_reader *reader;
	struct symbolizer *sym;
	struct session_opts opts;
	struct strpool strs;
	struct dso_ent *dsos;
	size_t nr_dsos, cap_dsos;
	struct htab dso_ht;
	struct proc *procs;
	size_t nr_procs, cap_procs;
	struct htab proc_ht;
	struct thread *threads;
	size_t nr_threads, cap_threads;
	struct htab thread_ht;
	const char **comms;
	size_t nr_comms, cap_comms;
	struct htab comm_ht;
	struct frame *frames;
	size_t nr_frames, cap_frames;
	struct htab frame_ht;
	struct addr_ent *addrs;
	size_t nr_addrs, cap_addrs;
	struct htab addr_ht;
	struct res *res;
	size_t nr_res, cap_res;
	uint64_t kernel_text;
	uint64_t kernel_start, kernel_end; /* the kernel's map, as its MMAP record says */
	bool kernel_text_set;
	bool kernel_warned;
	bool kernel_deferred;            /* kernel addresses get placeholder frames for now */
	uint32_t *remap;                 /* placeholder frame -> its named frame */
	uint32_t nr_remap;
	uint64_t first_time, last_time; /* of records that have a time */
	struct ipc_ent *ipc;             /* 1 << ipc_bits entries */
	unsigned int ipc_bits;
	/* threads and processes found lately, by tid / pid modulo LAST_N (see thread_find) */
	uint32_t last_thread[LAST_N], last_proc[LAST_N];
	/* per-sample scratch */
	uint32_t sframes[MAX_FRAMES];
	uint64_t saddrs[MAX_FRAMES], soffs[MAX_FRAMES];
	session_sample_cb cb;
	void *cb_ctx;
	struct session_stats stats;
	char err[256];
};

/* ---- string interning ---- */

struct str_key {
	const struct strpool *p;
	const char *s;
};

static bool str_eq(const void *ctx, uint32_t idx)
{
	const struct str_key *k = ctx;
	return !strcmp(k->p->strs[idx], k->s);
}

/* A stable copy of s, shared by every equal string; NULL on ENOMEM. */
static const char *strpool__intern(struct strpool *p, const char *s)
{
	struct str_key k = { p, s };
	uint64_t h = htab__hash_bytes(s, strlen(s), 1);
	size_t slot;
	uint32_t idx = htab__find(&p->ht, h, str_eq, &k, &slot);
	char **e;

	if (idx != HTAB_EMPTY)
		return p->strs[idx];
	if (htab__reserve(&p->ht))
		return NULL;
	htab__find(&p->ht, h, str_eq, &k, &slot);
	e = vec__push((void **)&p->strs, &p->n, &p->cap, sizeof(char *));
	if (!e)
		return NULL;
	*e = strdup(s);
	if (!*e) {
		p->n--;
		return NULL;
	}
	htab__put(&p->ht, slot, h, p->n - 1);
	return *e;
}

static void strpool__free(struct strpool *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->strs[i]);
	free(p->strs);
	htab__free(&p->ht);
}

/* ---- comms ---- */

struct ptr_key {
	const void *const *arr;
	const void *ptr;
};

static bool ptr_eq(const void *ctx, uint32_t idx)
{
	const struct ptr_key *k = ctx;
	return k->arr[idx] == k->ptr;
}

static int comm_id(struct session *s, const char *name, uint32_t *id)
{
	const char *in = strpool__intern(&s->strs, name);
	struct ptr_key k = { (const void *const *)s->comms, in };
	uint64_t h;
	size_t slot;
	uint32_t idx;
	const char **e;

	if (!in)
		return -ENOMEM;
	h = htab__mix((uintptr_t)in);
	idx = htab__find(&s->comm_ht, h, ptr_eq, &k, &slot);
	if (idx != HTAB_EMPTY) {
		*id = idx;
		return 0;
	}
	if (htab__reserve(&s->comm_ht))
		return -ENOMEM;
	e = vec__push((void **)&s->comms, &s->nr_comms, &s->cap_comms, sizeof(*e));
	if (!e)
		return -ENOMEM;
	*e = in;
	k.arr = (const void *const *)s->comms;
	htab__find(&s->comm_ht, h, ptr_eq, &k, &slot);
	htab__put(&s->comm_ht, slot, h, s->nr_comms - 1);
	*id = s->nr_comms - 1;
	return 0;
}

/* ---- threads and processes ---- */

struct u32_key {
	const void *arr;
	size_t stride;
	uint32_t v;
};

static bool u32_eq(const void *ctx, uint32_t idx)
{
	const struct u32_key *k = ctx;
	uint32_t v;

	memcpy(&v, (const char *)k->arr + idx * k->stride, 4);
	return v == k->v;
}

/*
 * The thread tid. The last ones found are remembered by tid modulo LAST_N:
 * samples come in runs of a few threads, one per CPU, which hit there
 * before the hash table.
 */
static struct thread *thread_find(struct session *s, uint32_t tid)
{
	struct u32_key k = { s->threads, sizeof(struct thread), tid };
	uint32_t *last = &s->last_thread[tid & (LAST_N - 1)];
	size_t slot;
	uint32_t idx;

	if (*last < s->nr_threads && s->threads[*last].tid == tid)
		return &s->threads[*last];
	idx = htab__find(&s->thread_ht, htab__mix(tid), u32_eq, &k, &slot);
	if (idx == HTAB_EMPTY)
		return NULL;
	*last = idx;
	return &s->threads[idx];
}

/* The thread tid, created with perf's default comm (":tid", "swapper"). */
static struct thread *thread_get(struct session *s, uint32_t tid, uint32_t pid)
{
	struct thread *t = thread_find(s, tid);
	struct u32_key k;
	uint64_t h = htab__mix(tid);
	size_t slot;
	char name[32];

	if (t)
		return t;
	if (htab__reserve(&s->thread_ht))
		return NULL;
	t = vec__push((void **)&s->threads, &s->nr_threads, &s->cap_threads, sizeof(*t));
	if (!t)
		return NULL;
	t->tid = tid;
	t->pid = pid;
	if (tid == 0)
		snprintf(name, sizeof(name), "swapper");
	else
		snprintf(name, sizeof(name), ":%d", (int32_t)tid); /* perf's ":-1" */
	if (comm_id(s, name, &t->comm)) {
		s->nr_threads--;
		return NULL;
	}
	k = (struct u32_key){ s->threads, sizeof(struct thread), tid };
	htab__find(&s->thread_ht, h, u32_eq, &k, &slot);
	htab__put(&s->thread_ht, slot, h, s->nr_threads - 1);
	return t;
}

static struct proc *proc_get(struct session *s, uint32_t pid, bool create)
{
	struct u32_key k = { s->procs, sizeof(struct proc), pid };
	uint64_t h = htab__mix(pid ^ 0x5555);
	uint32_t *last = &s->last_proc[pid & (LAST_N - 1)];
	size_t slot;
	uint32_t idx;
	struct proc *p;

	if (*last < s->nr_procs && s->procs[*last].pid == pid)
		return &s->procs[*last];
	idx = htab__find(&s->proc_ht, h, u32_eq, &k, &slot);
	if (idx != HTAB_EMPTY) {
		*last = idx;
		return &s->procs[idx];
	}
	if (!create || htab__reserve(&s->proc_ht))
		return NULL;
	p = vec__push((void **)&s->procs, &s->nr_procs, &s->cap_procs, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	k.arr = s->procs;
	htab__find(&s->proc_ht, h, u32_eq, &k, &slot);
	htab__put(&s->proc_ht, slot, h, s->nr_procs - 1);
	return p;
}

/* First map whose end is above addr (binary search). */
static size_t maps_lower(const struct proc *p, uint64_t addr)
{
	size_t lo = 0, hi = p->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (p->maps[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const struct map *proc_find_map(const struct proc *p, uint64_t addr)
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

/* ---- DSOs ---- */

struct dso_key {
	const struct session *s;
	const char *name; /* interned */
};

static bool dso_eq(const void *ctx, uint32_t idx)
{
	const struct dso_key *k = ctx;
	return k->s->dsos[idx].name == k->name;
}

/* The DSO of a mapped file name, created on first sight. */
static int dso_get(struct session *s, const char *name, uint32_t *id)
{
	const char *in = strpool__intern(&s->strs, name);
	struct dso_key k = { s, in };
	struct dso_ent *d;
	uint64_t h;
	size_t slot;
	uint32_t idx;
	const char *slash;

	if (!in)
		return -ENOMEM;
	h = htab__mix((uintptr_t)in);
	idx = htab__find(&s->dso_ht, h, dso_eq, &k, &slot);
	if (idx != HTAB_EMPTY) {
		*id = idx;
		return 0;
	}
	if (htab__reserve(&s->dso_ht))
		return -ENOMEM;
	d = vec__push((void **)&s->dsos, &s->nr_dsos, &s->cap_dsos, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->name = in;
	slash = strrchr(in, '/');
	d->short_name = slash && slash[1] ? slash + 1 : in;
	/* no file behind it (JIT code, memfd): perf-PID.map; the vDSO has its image */
	d->anon = (in[0] != '/' && strcmp(in, VDSO_NAME)) || !strncmp(in, "/memfd:", 7) ||
		  !strncmp(in, "//anon", 6);
	htab__find(&s->dso_ht, h, dso_eq, &k, &slot);
	htab__put(&s->dso_ht, slot, h, s->nr_dsos - 1);
	*id = s->nr_dsos - 1;
	return 0;
}

/* ---- frames ---- */

struct frame_key {
	const struct session *s;
	const struct frame *f;
};

static bool frame_eq(const void *ctx, uint32_t idx)
{
	const struct frame_key *k = ctx;
	const struct frame *a = &k->s->frames[idx], *b = k->f;

	return a->sym == b->sym && a->dso == b->dso && a->addr == b->addr &&
	       a->srcfile == b->srcfile && a->line == b->line && a->kernel == b->kernel &&
	       a->inlined == b->inlined;
}

/* Intern a frame whose strings are already interned. */
static int frame_intern(struct session *s, const struct frame *f, uint32_t *id)
{
	struct frame_key k = { s, f };
	uint64_t h = htab__mix((uintptr_t)f->sym ^ htab__mix((uintptr_t)f->dso) ^
			       htab__mix(f->addr + f->line * 31 + f->kernel * 7 + f->inlined) ^
			       (uintptr_t)f->srcfile);
	size_t slot;
	uint32_t idx = htab__find(&s->frame_ht, h, frame_eq, &k, &slot);
	struct frame *e;

	if (idx != HTAB_EMPTY) {
		*id = idx;
		return 0;
	}
	if (htab__reserve(&s->frame_ht))
		return -ENOMEM;
	e = vec__push((void **)&s->frames, &s->nr_frames, &s->cap_frames, sizeof(*e));
	if (!e)
		return -ENOMEM;
	*e = *f;
	htab__find(&s->frame_ht, h, frame_eq, &k, &slot);
	htab__put(&s->frame_ht, slot, h, s->nr_frames - 1);
	*id = s->nr_frames - 1;
	return 0;
}

/* The interned frame of one resolved address. */
static int frame_of(struct session *s, const char *sym, const char *dso, const char *dso_short,
		    uint64_t addr, const struct sym_frame *sf, bool kernel, uint32_t *id)
{
	struct frame f = { 0 };

	f.dso = dso;
	f.dso_short = dso_short;
	f.kernel = kernel;
	if (sym) {
		f.sym = strpool__intern(&s->strs, sym);
		if (!f.sym)
			return -ENOMEM;
	} else {
		f.addr = addr;
	}
	if (sf && sf->srcfile) {
		f.srcfile = strpool__intern(&s->strs, sf->srcfile);
		f.line = sf->line;
	}
	if (sf)
		f.inlined = sf->inlined;
	return frame_intern(s, &f, id);
}

/* Add one resolved frame to the result pool. */
static int res_add(struct session *s, const char *sym, const char *dso, const char *dso_short,
		   uint64_t addr, uint64_t off, const struct sym_frame *sf, bool kernel)
{
	struct res *r;
	uint32_t id;
	int err;

	err = frame_of(s, sym, dso, dso_short, addr, sf, kernel, &id);
	if (err)
		return err;
	r = vec__push((void **)&s->res, &s->nr_res, &s->cap_res, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->frame = id;
	r->off = off;
	return 0;
}

/*
 * The frame of a kernel address: its function from kallsyms (of the
 * recorded kernel), its module; an address named by nothing and outside
 * the kernel's map has no known DSO, as perf shows it.
 */
static int kernel_frame(struct session *s, uint64_t ip, uint32_t *id, uint64_t *off)
{
	struct sym_frame sf = { 0 };
	const char *module = NULL;
	int ok = s->opts.no_symbols ? 0 : symbolizer__resolve_kernel(s->sym, ip, &sf, &module);
	const char *mod = strpool__intern(&s->strs, module ? module : "[kernel.kallsyms]");

	if (!s->kernel_warned && symbolizer__kernel_warning(s->sym)) {
		s->kernel_warned = true;
		fprintf(stderr, "offcpu: warning: %s\n", symbolizer__kernel_warning(s->sym));
	}
	if (!(ok > 0 && sf.sym) && s->kernel_end > s->kernel_start &&
	    (ip < s->kernel_start || ip >= s->kernel_end))
		mod = strpool__intern(&s->strs, "[unknown]");
	if (!mod)
		return -ENOMEM;
	*off = ok > 0 && sf.sym ? sf.offset : 0;
	return ok > 0 && sf.sym ? frame_of(s, sf.sym, mod, mod, ip, &sf, true, id) :
				  frame_of(s, NULL, mod, mod, ip, NULL, true, id);
}

/* A frame standing for a kernel address until it is named: one per address. */
static int kernel_placeholder(struct session *s, uint64_t ip, uint32_t *id)
{
	const char *k = strpool__intern(&s->strs, "[kernel.kallsyms]");

	return k ? frame_of(s, NULL, k, k, ip, NULL, true, id) : -ENOMEM;
}

/*
 * Name the kernel addresses left for later (session_opts.defer_kernel) and
 * note, per placeholder frame, the frame that replaces it (session__remap).
 */
static int kernel_finish(struct session *s)
{
	uint32_t nf = s->nr_frames;

	s->kernel_deferred = false;
	s->remap = malloc((nf ? nf : 1) * sizeof(*s->remap));
	if (!s->remap)
		return -ENOMEM;
	for (uint32_t i = 0; i < nf; i++)
		s->remap[i] = i;
	s->nr_remap = nf;
	for (size_t i = 0; i < s->nr_addrs; i++) {
		struct addr_ent *a = &s->addrs[i];
		uint32_t id;
		uint64_t off;
		int err;

		if (!a->pending)
			continue;
		err = kernel_frame(s, a->addr, &id, &off);
		if (err)
			return err;
		s->remap[s->res[a->first].frame] = id;
		s->res[a->first].frame = id;
		s->res[a->first].off = off;
		a->pending = false;
	}
	return 0;
}

struct addr_key {
	const struct session *s;
	uint32_t dso;
	uint64_t addr;
};

static bool addr_eq(const void *ctx, uint32_t idx)
{
	const struct addr_key *k = ctx;
	const struct addr_ent *a = &k->s->addrs[idx];

	return a->addr == k->addr && a->dso == k->dso;
}

/*
 * Symbolize one address (first sight only) and return its cache entry.
 * dso is DSO_KERNEL, DSO_UNKNOWN or a dso index with map m.
 */
static const struct addr_ent *resolve(struct session *s, uint32_t dso, const struct map *m,
				      uint64_t key_addr, uint64_t ip, uint32_t pid)
{
	struct addr_key k = { s, dso, key_addr };
	uint64_t h = htab__mix(key_addr ^ htab__mix(dso));
	size_t slot;
	uint32_t idx = htab__find(&s->addr_ht, h, addr_eq, &k, &slot);
	struct addr_ent *a;
	uint32_t first = s->nr_res;
	int n = 0, err = 0;
	bool pending = false;

	if (idx != HTAB_EMPTY)
		return &s->addrs[idx];

	if (dso == DSO_KERNEL) {
		uint32_t id;
		uint64_t off = 0;

		/* named once kallsyms is in (session__run's end), or now */
		err = s->kernel_deferred ? kernel_placeholder(s, ip, &id) : kernel_frame(s, ip, &id, &off);
		if (!err) {
			struct res *r = vec__push((void **)&s->res, &s->nr_res, &s->cap_res, sizeof(*r));

			if (!r)
				return NULL;
			r->frame = id;
			r->off = off;
		}
		pending = s->kernel_deferred;
		n = 1;
	} else if (dso == DSO_UNKNOWN) {
		const char *u = strpool__intern(&s->strs, "[unknown]");

		if (!u)
			return NULL;
		err = res_add(s, NULL, u, u, ip, 0, NULL, false);
		n = 1;
	} else {
		struct dso_ent *d = &s->dsos[dso];
		struct sym_frame sf[MAX_INLINE];
		int got = 0;

		memset(sf, 0, sizeof(sf));
		if (!s->opts.no_symbols) {
			if (d->anon) {
				got = symbolizer__resolve_perfmap(s->sym, pid, ip, &sf[0]) > 0 && sf[0].sym;
			} else {
				if (!d->looked_up) {
					size_t bsz = 0;
					const uint8_t *bid = perf_reader__build_id(s->reader, d->name, &bsz);

					d->sd = symbolizer__dso(s->sym, d->name, bid, bsz);
					d->looked_up = true;
					if (d->sd && sym_dso__warning(d->sd))
						fprintf(stderr, "offcpu: warning: %s\n", sym_dso__warning(d->sd));
				}
				if (d->sd) {
					got = symbolizer__resolve(s->sym, d->sd, m->start, m->pgoff, ip, sf,
								  s->opts.inlines ? MAX_INLINE : 1);
					if (got < 0)
						got = 0;
				}
			}
		}
		for (int i = 0; i < got && !err; i++)
			if (sf[i].sym)
				err = res_add(s, sf[i].sym, d->name, d->short_name, key_addr,
					      sf[i].offset, &sf[i], false), n++;
		if (!n && !err) {
			err = res_add(s, NULL, d->name, d->short_name, key_addr, 0, NULL, false);
			n = 1;
		}
	}
	if (err || htab__reserve(&s->addr_ht))
		return NULL;
	a = vec__push((void **)&s->addrs, &s->nr_addrs, &s->cap_addrs, sizeof(*a));
	if (!a)
		return NULL;
	a->dso = dso;
	a->addr = key_addr;
	a->first = first;
	a->n = n;
	a->pending = pending;
	htab__find(&s->addr_ht, h, addr_eq, &k, &slot);
	htab__put(&s->addr_ht, slot, h, s->nr_addrs - 1);
	return a;
}

static bool is_kernel_addr(uint64_t ip)
{
	return ip >= 0xffff800000000000ULL;
}

/* The address cache's size: an entry per 256 bytes of records, 1 Ki to 64 Ki of them. */
static unsigned int ipc_bits_for(uint64_t data_size)
{
	unsigned int bits = 10;

	while (bits < IPC_BITS_MAX && ((uint64_t)256 << bits) < data_size)
		bits++;
	return bits;
}

/* An address the cache did not have: its map, its symbols; the entry is refilled. */
static __attribute__((noinline)) const struct addr_ent *
ipc_miss(struct session *s, struct ipc_ent *c, uint32_t key, uint32_t gen, const struct proc *p,
	 uint64_t ip, uint32_t pid)
{
	const struct addr_ent *a;
	const struct map *m;
	uint64_t shown = ip;

	if (key == IPC_KERNEL) {
		a = resolve(s, DSO_KERNEL, NULL, ip, ip, pid);
	} else {
		m = proc_find_map(p, ip);
		if (m) {
			shown = ip - m->start + m->pgoff;
			a = resolve(s, m->dso, m, shown, ip, pid);
		} else {
			a = resolve(s, DSO_UNKNOWN, NULL, ip, ip, pid);
		}
	}
	if (a)
		*c = (struct ipc_ent){ ip, shown, key, gen, (uint32_t)(a - s->addrs) + 1 };
	return a;
}

/* Append the frames of one address to the sample scratch; -E2BIG when full. */
static inline int push_addr(struct session *s, struct rsample *rs, const struct proc *p,
			    uint64_t ip, bool kernel)
{
	uint32_t key = kernel || is_kernel_addr(ip) ? IPC_KERNEL :
		       p ? (uint32_t)(p - s->procs) : IPC_NOPROC;
	uint32_t gen = key < IPC_NOPROC ? p->gen : 0;
	struct ipc_ent *c = &s->ipc[(ip * 0x9e3779b97f4a7c15ULL ^ (uint64_t)key * 0xc2b2ae3d27d4eb4fULL) >>
				    (64 - s->ipc_bits)];
	const struct addr_ent *a;
	const struct res *r;
	uint32_t nr = rs->nr;

	if (__builtin_expect(c->ent && c->ip == ip && c->proc == key && c->gen == gen, 1)) {
		a = &s->addrs[c->ent - 1];
	} else {
		a = ipc_miss(s, c, key, gen, p, ip, rs->s->pid);
		if (!a)
			return -ENOMEM;
	}
	r = &s->res[a->first];
	for (uint32_t i = 0; i < a->n; i++, nr++) {
		if (nr >= MAX_FRAMES) {
			rs->nr = nr;
			return -E2BIG;
		}
		s->sframes[nr] = r[i].frame;
		s->saddrs[nr] = c->shown;
		s->soffs[nr] = r[i].off;
	}
	rs->nr = nr;
	return 0;
}

/*
 * perf's own direct off-CPU samples (perf --off-cpu, 6.14 and newer) carry
 * the thread id where the process id belongs and the other way round (its
 * BPF program packs them so); perf shows them so. The side-band knows
 * which thread belongs to which process: when it says the recorded tid is
 * a process and the recorded pid one of its threads, the two are put back.
 * offcpu's own payloads and perf's summed samples are left alone.
 */
static void fix_perf_offcpu_ids(struct session *s, struct perf_sample *ps)
{
	const struct thread *t;

	if (!ps->off.embedded || ps->off.own || ps->pid == ps->tid)
		return;
	t = thread_find(s, ps->tid);
	if (t && t->pid == ps->pid)
		return; /* as it should be */
	t = thread_find(s, ps->pid);
	if (t && t->pid == ps->tid) {
		uint32_t v = ps->pid;

		ps->pid = ps->tid;
		ps->tid = v;
	}
}

static int on_sample(struct session *s, const struct perf_rec *rec)
{
	struct perf_sample fixed;
	const struct perf_sample *ps = &rec->sample;
	struct rsample rs = { 0 };
	struct thread *t;
	const struct proc *p;
	bool kernel;
	int err = 0;

	if (ps->off.embedded && !ps->off.own) {
		fixed = *ps;
		fix_perf_offcpu_ids(s, &fixed);
		ps = &fixed;
	}
	t = thread_get(s, ps->tid, ps->pid);
	p = proc_get(s, ps->pid, false);
	if (!t)
		return -ENOMEM;
	s->stats.nr_samples++;
	rs.s = ps;
	rs.event = ps->evattr->idx;
	rs.comm = t->comm;
	rs.count = 1;
	if (ps->raw && (ps->evattr->is_offcpu || ps->evattr->is_wakeup || ps->evattr->is_sched_delay)) {
		rs.state = ps->off.state;
		rs.flags = ps->off.flags;
		rs.count = ps->off.count;
		rs.cgroup = ps->off.cgroup;
	}
	if (ps->off.waker) {
		rs.waker_pid = ps->off.waker_pid;
		rs.waker_tid = ps->off.waker_tid;
		err = comm_id(s, ps->off.waker_comm, &rs.waker_comm);
		if (err)
			return err;
	}
	kernel = ps->cpumode == PERF_RECORD_MISC_KERNEL || ps->cpumode == PERF_RECORD_MISC_GUEST_KERNEL;
	if (ps->nr_callchain) {
		bool first = true;

		for (uint64_t i = 0; i < ps->nr_callchain && !err; i++) {
			uint64_t ip = perf_sample__ip(ps, i);

			if (ip >= PERF_CTX_MAX) {
				if (ip != PERF_CTX_KERNEL && ip != PERF_CTX_USER && ip != (uint64_t)PERF_CONTEXT_HV) {
					/* a corrupt chain (a walk into junk): perf drops all of it */
					rs.no_chain = true;
					rs.nr = 0;
					break;
				}
				kernel = ip == PERF_CTX_KERNEL;
				continue;
			}
			/* the sample ip leads the chain unless the chain lacks it */
			if (first && (ps->evattr->attr.sample_type & PERF_SAMPLE_IP) && ip != ps->ip) {
				bool k0 = ps->cpumode == PERF_RECORD_MISC_KERNEL;
				err = push_addr(s, &rs, p, ps->ip, k0);
			}
			first = false;
			if (!err)
				err = push_addr(s, &rs, p, ip, kernel);
		}
		/* the sample is still counted where its ip is, as perf reports it */
		if (rs.no_chain && !err && (ps->evattr->attr.sample_type & PERF_SAMPLE_IP))
			err = push_addr(s, &rs, p, ps->ip, ps->cpumode == PERF_RECORD_MISC_KERNEL);
	} else if (ps->evattr->attr.sample_type & PERF_SAMPLE_IP) {
		err = push_addr(s, &rs, p, ps->ip, kernel);
	}
	if (err == -E2BIG)
		err = 0; /* deeper than we keep: the outermost frames are dropped */
	if (err)
		return err;
	rs.frames = s->sframes;
	rs.addrs = s->saddrs;
	rs.offs = s->soffs;
	return s->cb(s->cb_ctx, &rs);
}

static int on_record(void *ctx, const struct perf_rec *rec)
{
	struct session *s = ctx;
	struct thread *t;
	struct proc *p;
	uint32_t id;
	int err;

	if (rec->time) {
		if (!s->first_time || rec->time < s->first_time)
			s->first_time = rec->time;
		if (rec->time > s->last_time)
			s->last_time = rec->time;
	}
	switch (rec->type) {
	case PERF_RECORD_SAMPLE:
		return on_sample(s, rec);
	case PERF_RECORD_EXIT:
		t = thread_get(s, rec->fork.tid, rec->fork.pid);
		if (!t)
			return -ENOMEM;
		t->exit_time = rec->time;
		return 0;
	case PERF_RECORD_COMM:
		t = thread_get(s, rec->comm.tid, rec->comm.pid);
		if (!t)
			return -ENOMEM;
		t->pid = rec->comm.pid;
		err = comm_id(s, rec->comm.comm, &t->comm);
		if (err)
			return err;
		if (rec->misc & PERF_RECORD_MISC_COMM_EXEC) {
			p = proc_get(s, rec->comm.pid, false);
			if (p) {
				p->n = 0; /* exec: the old image is gone */
				p->gen++;
			}
		}
		return 0;
	case PERF_RECORD_FORK: {
		struct thread *parent = thread_find(s, rec->fork.ptid);
		uint32_t pcomm = parent ? parent->comm : UINT32_MAX;

		t = thread_get(s, rec->fork.tid, rec->fork.pid);
		if (!t)
			return -ENOMEM;
		t->pid = rec->fork.pid;
		t->fork_time = rec->time;
		t->exit_time = 0; /* a reused tid starts a new life */
		if (pcomm != UINT32_MAX)
			t->comm = pcomm;
		if (rec->fork.pid != rec->fork.ppid) {
			struct proc *pp = proc_get(s, rec->fork.ppid, false);
			size_t ppi = pp ? (size_t)(pp - s->procs) : 0;

			p = proc_get(s, rec->fork.pid, true); /* may move s->procs */
			if (!p)
				return -ENOMEM;
			p->gen++;
			return proc_clone_maps(p, pp ? &s->procs[ppi] : NULL);
		}
		return 0;
	}
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2: {
		struct map m;
		uint16_t mode = rec->misc & PERF_RECORD_MISC_CPUMODE_MASK;

		if (rec->mmap.pid == UINT32_MAX || mode == PERF_RECORD_MISC_KERNEL) {
			if (!strncmp(rec->mmap.filename, "[kernel.kallsyms]", 17) && !s->kernel_text_set) {
				s->kernel_text = rec->mmap.pgoff;
				s->kernel_start = rec->mmap.start;
				s->kernel_end = rec->mmap.start + rec->mmap.len;
				s->kernel_text_set = true;
				symbolizer__set_kernel_text(s->sym, s->kernel_text);
			}
			return 0;
		}
		if (rec->type == PERF_RECORD_MMAP2 && !(rec->mmap.prot & PROT_EXEC))
			return 0;
		if (rec->type == PERF_RECORD_MMAP && (rec->misc & PERF_RECORD_MISC_MMAP_DATA))
			return 0;
		if (!rec->mmap.len || rec->mmap.start + rec->mmap.len < rec->mmap.start)
			return 0;
		err = dso_get(s, rec->mmap.filename, &id);
		if (err)
			return err;
		p = proc_get(s, rec->mmap.pid, true);
		if (!p)
			return -ENOMEM;
		m.start = rec->mmap.start;
		m.end = rec->mmap.start + rec->mmap.len;
		m.pgoff = rec->mmap.pgoff;
		m.dso = id;
		p->gen++;
		return proc_add_map(p, &m);
	}
	}
	return 0;
}

struct session *session__new(const char *path, const struct session_opts *opts,
			     char *errbuf, size_t errlen)
{
	struct session *s = calloc(1, sizeof(*s));
	struct symbolizer_opts so = { 0 };
	const uint8_t *bid;
	const void *image;
	size_t bsz, len;

	if (!s) {
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	if (opts)
		s->opts = *opts;
	s->reader = perf_reader__open(path, errbuf, errlen);
	if (!s->reader)
		goto cleanup;
	so.srcline = s->opts.srcline;
	so.inlines = s->opts.inlines;
	so.demangle = true;
	so.kallsyms = s->opts.kallsyms;
	s->ipc_bits = ipc_bits_for(perf_reader__data_size(s->reader));
	s->ipc = calloc((size_t)1 << s->ipc_bits, sizeof(*s->ipc));
	if (!s->ipc) {
		snprintf(errbuf, errlen, "out of memory");
		goto cleanup;
	}
	s->sym = symbolizer__new(&so);
	if (!s->sym) {
		snprintf(errbuf, errlen, "cannot create the symbolizer");
		goto cleanup;
	}
	/* which kernel and which vDSO the recording saw */
	bid = perf_reader__build_id(s->reader, "[kernel.kallsyms]", &bsz);
	if (bid)
		symbolizer__set_kernel_build_id(s->sym, bid, bsz);
	if (perf_reader__vdso(s->reader, &bid, &bsz, &image, &len) &&
	    symbolizer__add_image(s->sym, VDSO_NAME, bid, bsz, image, len)) {
		snprintf(errbuf, errlen, "out of memory");
		goto cleanup;
	}
	if (s->opts.defer_kernel && !s->opts.no_symbols) {
		s->kernel_deferred = true;
		symbolizer__load_kernel_async(s->sym);
	}
	return s;
cleanup:
	session__free(s);
	return NULL;
}

void session__free(struct session *s)
{
	if (!s)
		return;
	symbolizer__free(s->sym);
	perf_reader__free(s->reader);
	strpool__free(&s->strs);
	for (size_t i = 0; i < s->nr_procs; i++)
		free(s->procs[i].maps);
	free(s->procs);
	free(s->threads);
	free(s->dsos);
	free(s->comms);
	free(s->frames);
	free(s->addrs);
	free(s->res);
	free(s->ipc);
	free(s->remap);
	htab__free(&s->dso_ht);
	htab__free(&s->proc_ht);
	htab__free(&s->thread_ht);
	htab__free(&s->comm_ht);
	htab__free(&s->frame_ht);
	htab__free(&s->addr_ht);
	free(s);
}

int session__run(struct session *s, session_sample_cb cb, void *ctx)
{
	int err;

	s->cb = cb;
	s->cb_ctx = ctx;
	err = perf_reader__process(s->reader, on_record, s);
	if (!err && s->kernel_deferred)
		err = kernel_finish(s);
	if (err) {
		if (perf_reader__error(s->reader)[0])
			snprintf(s->err, sizeof(s->err), "%s", perf_reader__error(s->reader));
		else
			snprintf(s->err, sizeof(s->err), "%s", strerror(-err));
	}
	s->stats.lost = perf_reader__lost(s->reader);
	return err;
}

const char *session__error(const struct session *s)
{
	return s->err;
}

const uint32_t *session__remap(const struct session *s, uint32_t *n)
{
	*n = s->nr_remap;
	return s->remap;
}

const struct perf_reader *session__reader(const struct session *s)
{
	return s->reader;
}

const struct frame *session__frame(const struct session *s, uint32_t id)
{
	return id < s->nr_frames ? &s->frames[id] : NULL;
}

uint32_t session__nr_frames(const struct session *s)
{
	return s->nr_frames;
}

const char *session__comm(const struct session *s, uint32_t id)
{
	return id < s->nr_comms ? s->comms[id] : "[unknown]";
}

void session__stats(const struct session *s, struct session_stats *st)
{
	*st = s->stats;
}

int session__label_frame(struct session *s, const char *name, uint32_t *id)
{
	struct frame f = { 0 };

	f.sym = strpool__intern(&s->strs, name);
	f.dso = f.dso_short = strpool__intern(&s->strs, "[label]");
	if (!f.sym || !f.dso)
		return -ENOMEM;
	return frame_intern(s, &f, id);
}

bool session__thread(const struct session *s, uint32_t tid, struct session_thread *out)
{
	struct u32_key k = { s->threads, sizeof(struct thread), tid };
	size_t slot;
	uint32_t idx = htab__find(&s->thread_ht, htab__mix(tid), u32_eq, &k, &slot);
	const struct thread *t;

	if (idx == HTAB_EMPTY)
		return false;
	t = &s->threads[idx];
	*out = (struct session_thread){ t->pid, t->tid, t->comm, t->fork_time, t->exit_time };
	return true;
}

bool session__time_span(const struct session *s, uint64_t *first, uint64_t *last)
{
	*first = s->first_time;
	*last = s->last_time;
	return s->first_time != 0;
}
