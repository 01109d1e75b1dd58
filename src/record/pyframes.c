// SPDX-License-Identifier: GPL-2.0-only
/*
 * Python frames of a recording (bpf/python.h says what the BPF side
 * writes):
 *
 *   the processes    a process that maps a Python interpreter (a file
 *                    named *python* that defines _PyRuntime and Py_Version,
 *                    unwind/python.h) of a known layout is put in the BPF
 *                    side's py_procs as soon as the unwinder's side-band
 *                    thread sees the mapping; one of an unknown version is
 *                    counted and keeps its native stacks
 *   the names        each code object's name, file and line table read once
 *                    (process_vm_readv) when the BPF side first sends a
 *                    stack with it, while the process lives; each (code
 *                    object, instruction) named "function (file.py:line)"
 *                    once
 *   the file         every name is a function of the recording's Python
 *                    symbol file, OUTPUT.python (record/symfile.c), mapped
 *                    into each Python process at PY_BASE by an MMAP2 record
 *                    written with the interpreter's own mapping: Linux perf
 *                    and offcpu's reader name the frames from it
 *   the stacks       each group of Python frames takes the place of its
 *                    _PyEval_EvalFrameDefault frame among the native ones
 *
 * The process registry is shared with the side-band thread (a mutex); the
 * names and the stacks are the recorder's thread's.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "record/record.h"
#include "unwind/python.h"
#include "unwind/tables.h"
#include "util/hash.h"
#include "util/htab.h"
#include "util/intern.h"
#include "util/clock.h"

/*
 * Where the symbol file is mapped in every Python process: just above
 * 47-bit user space, where no process maps anything without asking.
 */
#define PY_BASE 0x800000000000ULL
#define PY_MAX_NAMES (1u << 24)
#define PY_MAP_LEN (SYMFILE_TEXT + (uint64_t)PY_MAX_NAMES * SYMFILE_SYM)
#define PY_UNKNOWN_NAME "[unknown Python function]"
#define PY_UNKNOWN_ID 0 /* its function in the file: the first */
#define PY_MAX_VERSIONS 8

/* A file, as a Python or not (memo of py_build__probe by path). */
struct pyfile {
	char *path;
	bool python;
	struct py_build b;
};

/* A process of the recording that maps a Python. */
struct pyproc {
	uint32_t pid;
	uint32_t gen;    /* its image: bumped at exec (the names' memo keys) */
	bool live;       /* in the BPF side's py_procs */
	bool seen;       /* its image's Python was seen (and counted) */
	bool known;      /* a layout of its version is known */
	uint32_t version;
	struct py_layout layout;
	uint64_t interp_head, eval_lo, eval_hi;
	uint32_t ppid, pgen; /* forked from this image (0: none): the same code objects */
};

/* A code object of an image of a process, read once. */
struct pycode {
	uint32_t pid, gen;
	uint64_t addr;
	bool ok;
	uint32_t version;      /* read again since: another code object at addr */
	uint64_t checked;      /* when (mono_ns) it was last read, or found still there */
	struct py_code_id id;
	char *qualname, *file; /* file: as shown (basename) */
	int firstlineno;
	uint32_t code_units;   /* where the instructions start, in 2-byte units */
	uint8_t *lt;
	uint32_t ltlen;
};

/* A frame (code object and instruction) and its function in the symbol file. */
struct pyname {
	uint32_t pid, gen;
	uint64_t word; /* OFFCPU_PY_WORD without the group bit */
	uint32_t version; /* of its code object's entry */
	uint32_t sym;
};

struct pyframes {
	char *path;            /* the symbol file (absolute) */
	uid_t uid;
	gid_t gid;
	struct offcpu_bpf *bpf;
	int procs_fd, hint_fd;

	pthread_mutex_t lock;  /* the two below */
	struct htab files;     /* struct pyfile, by path */
	struct htab procs;     /* struct pyproc, by pid */

	struct htab codes;     /* struct pycode */
	struct htab names;     /* struct pyname */
	struct intern syms;    /* the functions of the symbol file, by id */
	bool used;             /* a sample has a frame in the symbol file */
	size_t written;        /* functions in the symbol file on disk */
	uint64_t written_at;

	uint64_t nprocs, nunknown, ncodes, ncodes_failed, nunresolved;
	uint32_t unknown_versions[PY_MAX_VERSIONS];
	uint32_t nversions;
};

static bool file_eq(const void *e, const void *k)
{
	return !strcmp(((const struct pyfile *)e)->path, k);
}

static bool proc_eq(const void *e, const void *k)
{
	return ((const struct pyproc *)e)->pid == *(const uint32_t *)k;
}

static bool code_eq(const void *e, const void *k)
{
	const struct pycode *a = e, *b = k;

	return a->pid == b->pid && a->gen == b->gen && a->addr == b->addr;
}

static bool name_eq(const void *e, const void *k)
{
	const struct pyname *a = e, *b = k;

	return a->pid == b->pid && a->gen == b->gen && a->word == b->word && a->version == b->version;
}

int pyframes__new(const struct record_opts *o, struct offcpu_bpf *bpf, struct pyframes **out)
{
	struct pyframes *p = calloc(1, sizeof(*p));
	char abs[PATH_MAX];
	int err;

	if (!p)
		return -ENOMEM;
	/* the output exists by now: its absolute path, + ".python" */
	if (!realpath(o->output, abs))
		err = -errno;
	else
		err = asprintf(&p->path, "%s.python", abs) < 0 ? -ENOMEM : 0;
	if (err)
		goto fail;
	p->uid = o->give_output ? o->owner_uid : (uid_t)-1;
	p->gid = o->give_output ? o->owner_gid : (gid_t)-1;
	p->bpf = bpf;
	err = offcpu_bpf__python_maps(bpf, &p->procs_fd, &p->hint_fd);
	if (err)
		goto fail;
	pthread_mutex_init(&p->lock, NULL);
	htab__init(&p->files, sizeof(struct pyfile));
	htab__init(&p->procs, sizeof(struct pyproc));
	htab__init(&p->codes, sizeof(struct pycode));
	htab__init(&p->names, sizeof(struct pyname));
	intern__init(&p->syms);
	if (intern__id(&p->syms, PY_UNKNOWN_NAME, &(uint32_t){ 0 })) {
		pyframes__free(p);
		return -ENOMEM;
	}
	*out = p;
	return 0;
fail:
	free(p->path);
	free(p);
	return err;
}

void pyframes__free(struct pyframes *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < htab__n(&p->files); i++)
		free(((struct pyfile *)htab__at(&p->files, i))->path);
	for (size_t i = 0; i < htab__n(&p->codes); i++) {
		struct pycode *c = htab__at(&p->codes, i);

		free(c->qualname);
		free(c->file);
		free(c->lt);
	}
	htab__free(&p->files);
	htab__free(&p->procs);
	htab__free(&p->codes);
	htab__free(&p->names);
	intern__free(&p->syms);
	pthread_mutex_destroy(&p->lock);
	free(p->path);
	free(p);
}

const char *pyframes__path(const struct pyframes *p)
{
	return p->path;
}

/* ---- the processes (under p->lock) ---- */

/* Could the file be a Python? Only files named so are opened. */
static bool python_named(const char *path)
{
	const char *base = strrchr(path, '/');

	return path[0] == '/' && base && strstr(base, "python");
}

/* The file at path as a Python, probed once; NULL when it is none. */
static const struct pyfile *file_probe(struct pyframes *p, const char *path)
{
	struct pyfile *f;
	bool added;

	if (!python_named(path))
		return NULL;
	f = htab__get(&p->files, hash__str(path), file_eq, path, &added);
	if (!f)
		return NULL;
	if (added) {
		f->path = strdup(path);
		if (!f->path) {
			htab__unget(&p->files);
			return NULL;
		}
		f->python = !py_build__probe(path, &f->b);
	}
	return f->python ? f : NULL;
}

static struct pyproc *proc_find(struct pyframes *p, uint32_t pid)
{
	return htab__find(&p->procs, hash__mix(pid), proc_eq, &pid);
}

/* The BPF side's entry of pid in or out (with its hint). */
static void proc_publish(struct pyframes *p, struct pyproc *pp, bool live)
{
	uint32_t slot = pp->pid % 65536, hint = 0;
	struct offcpu_py_proc bp;

	if (pp->live == live)
		return;
	if (live) {
		py_layout__bpf(&pp->layout, pp->interp_head, &bp);
		/* BPF reads the words at multiples of 8 of one read of OFFCPU_PY_READ bytes */
		if (bp.ts_read > OFFCPU_PY_READ || bp.f_read > OFFCPU_PY_READ ||
		    ((bp.ts_next | bp.ts_tid | bp.ts_frame | bp.f_code | bp.f_previous | bp.f_instr) & 7) ||
		    bpf_map_update_elem(p->procs_fd, &pp->pid, &bp, BPF_ANY))
			return;
	} else {
		bpf_map_delete_elem(p->procs_fd, &pp->pid);
	}
	bpf_map_lookup_elem(p->hint_fd, &slot, &hint);
	hint = live ? hint + 1 : hint ? hint - 1 : 0;
	bpf_map_update_elem(p->hint_fd, &slot, &hint, BPF_ANY);
	pp->live = live;
}

static void note_unknown(struct pyframes *p, uint32_t version)
{
	p->nunknown++;
	for (uint32_t i = 0; i < p->nversions; i++)
		if (p->unknown_versions[i] == version)
			return;
	if (p->nversions < PY_MAX_VERSIONS)
		p->unknown_versions[p->nversions++] = version;
}

void pyframes__mmap(struct pyframes *p, uint32_t pid, const struct unw_mapping *m)
{
	const struct pyfile *f;
	struct pyproc *pp;
	uint64_t bias;
	bool added;

	if (!python_named(m->path))
		return;
	pthread_mutex_lock(&p->lock);
	f = file_probe(p, m->path);
	if (!f)
		goto out;
	pp = htab__get(&p->procs, hash__mix(pid), proc_eq, &pid, &added);
	if (!pp)
		goto out;
	if (!added && pp->seen)
		goto out; /* a second mapping of its Python */
	if (!added)
		pp->gen++; /* a new image (its exec, or a new process of the pid) */
	pp->seen = true;
	pp->ppid = 0;
	pp->pid = pid;
	pp->version = f->b.version;
	pp->known = f->b.known;
	if (!pp->known) {
		note_unknown(p, f->b.version);
		goto out;
	}
	bias = m->start - m->pgoff - f->b.x_delta;
	pp->layout = f->b.layout;
	pp->interp_head = bias + f->b.runtime + f->b.layout.rt_interp_head;
	pp->eval_lo = bias + f->b.eval_lo;
	pp->eval_hi = bias + f->b.eval_hi;
	p->nprocs++;
	proc_publish(p, pp, true);
out:
	pthread_mutex_unlock(&p->lock);
}

void pyframes__scan(struct pyframes *p, uint32_t pid)
{
	char path[64], line[PATH_MAX + 256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f)) {
		struct proc_map pm;
		struct unw_mapping m;

		if (!proc_maps__parse_line(line, &pm))
			continue;
		m = (struct unw_mapping){ .start = pm.start, .end = pm.end, .pgoff = pm.pgoff,
					  .maj = pm.maj, .min = pm.min, .ino = pm.ino,
					  .path = pm.file };
		pyframes__mmap(p, pid, &m);
	}
	if (f)
		fclose(f);
}

/* pid's image is gone (exec, exit): out of the BPF side; kept for its late samples. */
static void proc_end(struct pyframes *p, uint32_t pid, bool exec)
{
	struct pyproc *pp;

	pthread_mutex_lock(&p->lock);
	pp = proc_find(p, pid);
	if (pp) {
		proc_publish(p, pp, false);
		pp->seen = false;
		if (exec) {
			pp->gen++;
			pp->known = false;
		}
	}
	pthread_mutex_unlock(&p->lock);
}

void pyframes__exec(struct pyframes *p, uint32_t pid)
{
	proc_end(p, pid, true);
}

void pyframes__exit(struct pyframes *p, uint32_t pid)
{
	proc_end(p, pid, false);
}

void pyframes__fork(struct pyframes *p, uint32_t ppid, uint32_t pid)
{
	struct pyproc *parent, *child, copy;
	bool added;

	pthread_mutex_lock(&p->lock);
	parent = proc_find(p, ppid);
	if (parent && parent->live && parent->known) {
		copy = *parent;
		child = htab__get(&p->procs, hash__mix(pid), proc_eq, &pid, &added);
		if (child) {
			uint32_t gen = added ? 0 : child->gen + 1;

			proc_publish(p, child, false);
			*child = copy;
			child->pid = pid;
			child->gen = gen;
			child->ppid = ppid;
			child->pgen = copy.gen;
			child->live = false;
			child->seen = true;
			p->nprocs++;
			proc_publish(p, child, true);
		}
	}
	pthread_mutex_unlock(&p->lock);
}

/* pid's registry entry, copied (false: no Python known there). */
static bool proc_get(struct pyframes *p, uint32_t pid, struct pyproc *out)
{
	struct pyproc *pp;
	bool ok;

	pthread_mutex_lock(&p->lock);
	pp = proc_find(p, pid);
	ok = pp && pp->known;
	if (ok)
		*out = *pp;
	pthread_mutex_unlock(&p->lock);
	return ok;
}

/* Should pid's /proc be read for a Python now? Once (the threads of a process come one by one). */
static bool scan_once(struct pyframes *p, uint32_t pid)
{
	struct pyproc *pp;
	bool added;

	pthread_mutex_lock(&p->lock);
	pp = htab__get(&p->procs, hash__mix(pid), proc_eq, &pid, &added);
	if (pp && added)
		pp->pid = pid; /* not a Python (yet): pyframes__mmap makes it one */
	pthread_mutex_unlock(&p->lock);
	return pp && added;
}

/* ---- names (the recorder's thread) ---- */

/* The file as shown: its base name, with its directory for a package's __init__.py. */
static char *shown_file(const char *path)
{
	const char *base = strrchr(path, '/'), *dir;
	char *s;

	if (!base)
		return strdup(path);
	dir = base;
	if ((!strcmp(base, "/__init__.py") || !strcmp(base, "/__main__.py")) && base > path) {
		dir = base - 1;
		while (dir > path && dir[-1] != '/')
			dir--;
		return strdup(dir);
	}
	s = strdup(base + 1);
	return s;
}

/* A name as one frame: no ';' (folded stacks), no control characters. */
static void clean(char *s)
{
	for (; *s; s++)
		if (*s == ';' || (unsigned char)*s < 0x20)
			*s = '_';
}

static uint64_t code_hash(uint32_t pid, uint32_t gen, uint64_t addr)
{
	return hash__mix(addr ^ hash__mix((uint64_t)pid << 32 | gen));
}

/* c's names from what was read (pc's strings taken), or from another entry's (copied). */
static void code_fill(struct pycode *c, struct py_code *pc, const struct pycode *from,
		      uint32_t code_units)
{
	free(c->qualname);
	free(c->file);
	free(c->lt);
	c->qualname = c->file = NULL;
	c->lt = NULL;
	c->ltlen = 0;
	if (from) {
		c->id = from->id;
		c->qualname = strdup(from->qualname);
		c->file = strdup(from->file);
		c->lt = from->ltlen ? malloc(from->ltlen) : NULL;
		if (c->lt) {
			memcpy(c->lt, from->lt, from->ltlen);
			c->ltlen = from->ltlen;
		}
		c->firstlineno = from->firstlineno;
	} else {
		c->id = pc->id;
		c->qualname = pc->qualname;
		c->file = shown_file(pc->filename);
		free(pc->filename);
		c->lt = pc->linetable;
		c->ltlen = pc->linetable_len;
		c->firstlineno = pc->firstlineno;
	}
	c->code_units = code_units;
	c->ok = c->qualname && c->file && (c->lt || !c->ltlen);
	if (c->ok) {
		clean(c->qualname);
		clean(c->file);
	}
}

/*
 * Fill c from the code object at addr in pp's memory, or in its parent's
 * (a forked child's copy, the child's own perhaps gone with an exec):
 * 0, or -ESRCH when neither could be read (c left as it was).
 */
static int code_read(struct pyframes *p, const struct pyproc *pp, uint64_t addr, struct pycode *c)
{
	struct py_code pc;

	if (py_code__read(pp->pid, &pp->layout, addr, &pc) &&
	    (!pp->ppid || py_code__read(pp->ppid, &pp->layout, addr, &pc)))
		return -ESRCH;
	code_fill(c, &pc, NULL, pp->layout.co_code / 2);
	p->ncodes++;
	return 0;
}

/*
 * The code object at addr of pp's image, read on first sight; when the
 * entry was last read or checked before `taken` (the time a stack with
 * it was taken; UINT64_MAX: always, 0: never), read again if the object
 * there is not the one read before (its memory freed and reused: a
 * module's code object goes after its import, and another takes its
 * place). Checked when a stack is named, not only when the BPF side
 * first sends a stack (pyframes__seen): that record may be read after
 * the stack that needs it (its ring stops at a record another CPU has
 * not committed yet), or not at all (a stack of the same Python frames
 * was seen before the address had its new object), and the stack would
 * keep the old object's name; 3.13 frees the code of a site .pth line's
 * exec at startup, and pywait.py's py_child_wait takes its address.
 * A process forked from a Python one has its parent's code objects at
 * the same addresses (a copy of its memory): those the parent's image has
 * read already, or can read, serve it too, which matters for a child that
 * execs a moment later (subprocess), its own memory gone before its
 * stacks' names are read.
 */
static struct pycode *code_of(struct pyframes *p, const struct pyproc *pp, uint64_t addr,
			      uint64_t taken)
{
	struct pycode k = { .pid = pp->pid, .gen = pp->gen, .addr = addr }, *c, *parent = NULL;
	struct pycode pk = { .pid = pp->ppid, .gen = pp->pgen, .addr = addr };
	struct py_code_id id;
	bool added;

	c = htab__get(&p->codes, code_hash(pp->pid, pp->gen, addr), code_eq, &k, &added);
	if (!c)
		return NULL;
	if (!added) {
		if (!taken || c->checked >= taken)
			return c;
		if (!c->ok) {
			/*
			 * Unreadable when first seen (an object being freed there):
			 * read again, as another may be there now (3.13: the .pth
			 * line's code, then py_child_wait's, at one address).
			 */
			c->checked = mono_ns();
			if (!code_read(p, pp, addr, c))
				c->version++;
			return c;
		}
		if (py_code__id(pp->pid, &pp->layout, addr, &id))
			return c;
		if (id.qualname == c->id.qualname && id.filename == c->id.filename &&
		    id.linetable == c->id.linetable && id.firstlineno == c->id.firstlineno) {
			c->checked = mono_ns();
			return c;
		}
		c->version++;
	} else {
		*c = k;
	}
	c->checked = mono_ns();
	if (pp->ppid && added)
		parent = htab__find(&p->codes, code_hash(pk.pid, pk.gen, addr), code_eq, &pk);
	if (parent && parent->ok) {
		code_fill(c, NULL, parent, parent->code_units);
		return c;
	}
	if (code_read(p, pp, addr, c)) {
		p->ncodes_failed++;
		c->ok = false;
	}
	return c;
}

/* The symbol file's function of Python word w of pp's image: its id, or -ENOMEM. */
static int name_of(struct pyframes *p, const struct pyproc *pp, uint64_t w, uint64_t taken)
{
	struct pyname k = { .pid = pp->pid, .gen = pp->gen, .word = w & ~OFFCPU_PY_LAST }, *e;
	uint32_t units = OFFCPU_PY_UNITS(w), id = PY_UNKNOWN_ID;
	struct pycode *c = code_of(p, pp, OFFCPU_PY_CODE(w), taken);
	char *name = NULL;
	bool added;
	int line;

	if (!c)
		return -ENOMEM;
	k.version = c->version;
	/* the entry stays where it is: intern__id grows another table */
	e = htab__get(&p->names, code_hash(pp->pid, pp->gen, k.word ^ k.version), name_eq, &k, &added);
	if (!e)
		return -ENOMEM;
	if (!added)
		return e->sym;
	*e = k;
	if (c->ok) {
		line = units >= c->code_units && units != 0xffff
			       ? py_linetable__line(c->lt, c->ltlen, c->firstlineno, units - c->code_units)
			       : -1;
		if ((line >= 0 ? asprintf(&name, "%s (%s:%d)", c->qualname, c->file, line)
			       : asprintf(&name, "%s (%s)", c->qualname, c->file)) < 0 ||
		    intern__id(&p->syms, name, &id)) {
			free(name);
			htab__unget(&p->names);
			return -ENOMEM;
		}
		free(name);
	}
	if (id == PY_UNKNOWN_ID || id >= PY_MAX_NAMES) {
		id = PY_UNKNOWN_ID; /* unreadable, or no room left in the file */
		p->nunresolved++;
	}
	e->sym = id;
	return id;
}

/* The address of function id in the mapped symbol file (mid-function: a return address's -1 too). */
static uint64_t sym_addr(uint32_t id)
{
	return PY_BASE + SYMFILE_TEXT + (uint64_t)id * SYMFILE_SYM + SYMFILE_SYM / 2;
}

void pyframes__seen(struct pyframes *p, uint32_t pid, const uint64_t *w, uint32_t n)
{
	struct pyproc pp;

	if (!proc_get(p, pid, &pp))
		return;
	for (uint32_t i = 0; i < n; i++)
		if (OFFCPU_PY_IS_FRAME(w[i]) && name_of(p, &pp, w[i], UINT64_MAX) < 0)
			return;
}

int pyframes__walk(struct pyframes *p, uint32_t pid, uint32_t tid, uint64_t *w, uint32_t max)
{
	struct pyproc pp;
	int n;

	if (!proc_get(p, pid, &pp)) {
		/* the waits in progress are found before the side-band thread reads /proc */
		if (!scan_once(p, pid))
			return 0;
		pyframes__scan(p, pid);
		if (!proc_get(p, pid, &pp))
			return 0;
	}
	n = py_thread__frames(pid, tid, &pp.layout, pp.interp_head, w, max);
	if (n > 0)
		pyframes__seen(p, pid, w, n);
	return n;
}

int pyframes__interleave(struct pyframes *p, uint32_t pid, const uint64_t *native, uint32_t nn,
			 const uint64_t *py, uint32_t npy, uint64_t taken, uint64_t *out, uint32_t max)
{
	struct pyproc pp;
	uint32_t n = 0, j = 0;
	bool have = proc_get(p, pid, &pp);

	for (uint32_t i = 0; i <= nn && n < max; i++) {
		bool eval = i < nn && have && native[i] >= pp.eval_lo && native[i] <= pp.eval_hi;

		if (i < nn && !(eval && j < npy)) {
			if (OFFCPU_USTACK_TAG(native[i]) < 0xa)
				out[n++] = native[i];
			continue;
		}
		/* a group in place of its interpreter frame; after the last native frame, the rest */
		while (j < npy && n < max) {
			int id;

			if (!OFFCPU_PY_IS_FRAME(py[j])) {
				j++;
				continue;
			}
			id = have ? name_of(p, &pp, py[j], taken) : PY_UNKNOWN_ID;
			if (id < 0)
				return id;
			out[n++] = sym_addr(id);
			p->used = true;
			if (py[j++] & OFFCPU_PY_LAST && i < nn)
				break;
		}
	}
	return n;
}

/* ---- the file ---- */

/* MMAP2: pid tid addr len pgoff maj min ino ino_gen prot flags filename, then the trailer */
#define MMAP2_FIXED 64

void pyframes__after(struct pyframes *p, const void *rec, size_t len, void *rec2, size_t *len2)
{
	const struct perf_event_header *h = rec;
	const uint8_t *b = (const uint8_t *)(h + 1);
	size_t body = len - sizeof(*h), name_len, pad, trailer, plen = strlen(p->path) + 1;
	uint8_t *o = rec2;
	const struct pyfile *f;
	uint32_t prot;
	uint64_t v;

	*len2 = 0;
	if (h->type != PERF_RECORD_MMAP2 || len < sizeof(*h) + MMAP2_FIXED + 1)
		return;
	memcpy(&prot, b + 56, 4);
	name_len = strnlen((const char *)b + MMAP2_FIXED, body - MMAP2_FIXED);
	if (!(prot & PROT_EXEC) || name_len == body - MMAP2_FIXED ||
	    !python_named((const char *)b + MMAP2_FIXED))
		return;
	pthread_mutex_lock(&p->lock);
	f = file_probe(p, (const char *)b + MMAP2_FIXED);
	pthread_mutex_unlock(&p->lock);
	if (!f || !f->b.known)
		return;
	pad = (name_len + 1 + 7) & ~7UL;
	if (MMAP2_FIXED + pad > body)
		return;
	trailer = body - MMAP2_FIXED - pad;
	if (sizeof(*h) + MMAP2_FIXED + ((plen + 7) & ~7UL) + trailer > PYFRAMES_REC_MAX)
		return;
	memcpy(o + sizeof(*h), b, 8); /* pid, tid */
	v = PY_BASE;
	memcpy(o + sizeof(*h) + 8, &v, 8);
	v = PY_MAP_LEN;
	memcpy(o + sizeof(*h) + 16, &v, 8);
	memset(o + sizeof(*h) + 24, 0, 32); /* pgoff, maj, min, ino, ino_generation */
	prot = PROT_READ | PROT_EXEC;
	memcpy(o + sizeof(*h) + 56, &prot, 4);
	v = MAP_PRIVATE;
	memcpy(o + sizeof(*h) + 60, &v, 4);
	memset(o + sizeof(*h) + MMAP2_FIXED, 0, (plen + 7) & ~7UL);
	memcpy(o + sizeof(*h) + MMAP2_FIXED, p->path, plen);
	memcpy(o + sizeof(*h) + MMAP2_FIXED + ((plen + 7) & ~7UL), b + MMAP2_FIXED + pad, trailer);
	*len2 = sizeof(*h) + MMAP2_FIXED + ((plen + 7) & ~7UL) + trailer;
	((struct perf_event_header *)o)->type = PERF_RECORD_MMAP2;
	((struct perf_event_header *)o)->misc = h->misc & ~PERF_RECORD_MISC_MMAP_BUILD_ID;
	((struct perf_event_header *)o)->size = *len2;
}

/* The symbol file, when it has functions it does not have on disk. */
static int write_file(struct pyframes *p)
{
	size_t n = intern__n(&p->syms);
	const char **names;
	uint8_t id[SYMFILE_BUILD_ID];
	int err;

	if (!p->used || n == p->written)
		return 0;
	names = malloc(n * sizeof(*names));
	if (!names)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		names[i] = intern__at(&p->syms, i);
	err = symfile__write(p->path, names, n, p->uid, p->gid, id);
	free(names);
	if (!err)
		p->written = n;
	return err;
}

int pyframes__flush(struct pyframes *p)
{
	uint64_t now = mono_ns();

	if (now - p->written_at < 2000000000ULL)
		return 0;
	p->written_at = now;
	return write_file(p);
}

int pyframes__finish(struct pyframes *p)
{
	return write_file(p);
}

int pyframes__counters(const struct pyframes *p, int (*fn)(void *ctx, const char *name, uint64_t v),
		       void *ctx)
{
	static const char *const bpf_keys[OFFCPU_PY_STAT__NR] = {
#define PY_KEY(id, key, what) [OFFCPU_PY_##id] = key,
		OFFCPU_PY_STATS(PY_KEY)
#undef PY_KEY
	};
	uint64_t s[OFFCPU_PY_STAT__NR];
	const struct {
		const char *name;
		uint64_t v;
	} u[] = {
		{ "python.processes", p->nprocs },
		{ "python.unknown_processes", p->nunknown },
		{ "python.code_objects", p->ncodes },
		{ "python.code_objects_failed", p->ncodes_failed },
		{ "python.functions", intern__n(&p->syms) },
		{ "python.unresolved_frames", p->nunresolved },
	};
	int err = offcpu_bpf__python_stats(p->bpf, s);

	for (int i = 0; !err && i < OFFCPU_PY_STAT__NR; i++)
		err = fn(ctx, bpf_keys[i], s[i]);
	for (size_t i = 0; !err && i < sizeof(u) / sizeof(u[0]); i++)
		err = fn(ctx, u[i].name, u[i].v);
	return err;
}

void pyframes__summary(const struct pyframes *p, bool verbose, const struct msg_sink *ms)
{
	uint64_t s[OFFCPU_PY_STAT__NR];
	struct msg_line line = { .len = 0 };

	if (offcpu_bpf__python_stats(p->bpf, s))
		return;
	if (verbose && (p->nprocs || s[OFFCPU_PY_STACKS]))
		msg__say(ms, MSG_SUMMARY, "Python frames: %llu stacks of %llu processes, %.1f frames a stack, "
			 "%zu functions (%s); %llu threads without a thread state, %llu ended at an "
			 "unreadable frame, %llu truncated",
			 (unsigned long long)s[OFFCPU_PY_STACKS], (unsigned long long)p->nprocs,
			 s[OFFCPU_PY_STACKS] ? (double)s[OFFCPU_PY_FRAMES] / s[OFFCPU_PY_STACKS] : 0.0,
			 intern__n(&p->syms), p->path, (unsigned long long)s[OFFCPU_PY_NO_THREAD],
			 (unsigned long long)s[OFFCPU_PY_READ_FAILED], (unsigned long long)s[OFFCPU_PY_TRUNCATED]);
	if (!p->nunknown)
		return;
	for (uint32_t i = 0; i < p->nversions; i++) {
		uint32_t v = p->unknown_versions[i];

		if (v)
			msg_line__add(&line, "%s%u.%u", i ? ", " : "", v >> 8, v & 0xff);
		else
			msg_line__add(&line, "%sof no version it says", i ? ", " : "");
	}
	msg__say(ms, MSG_SUMMARY, "%llu process%s of a Python whose layout offcpu does not know (%s): "
		 "native stacks only (python.unknown_processes)", (unsigned long long)p->nunknown,
		 p->nunknown == 1 ? "" : "es", line.text);
}
