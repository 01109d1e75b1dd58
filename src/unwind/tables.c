// SPDX-License-Identifier: GPL-2.0-only
/*
 * Files, processes and the row array of the BPF unwinder (see tables.h).
 *
 * A file is known by its device and inode (as MMAP2 records and
 * /proc/PID/maps name it), so that libc is built once however many
 * processes map it; its rows sit in one contiguous range of the global row
 * array, handed out first-fit from a list of free ranges. A process is a
 * sorted list of its executable mappings; whenever it changes it is
 * written whole to the backend (a new generation: cached stacks of the old
 * one are never used again).
 *
 * Files mapped once recording runs (lazy) are built when a stack first
 * needs them (unw_tables__need): building all of a new program's
 * libraries at once took 30-100 ms of CPU that the recorded programs
 * paid for (perf's 20 libraries: a pinned context-switch benchmark 15 %
 * slower), while its stacks usually cross three or four of them. Until
 * then the mapping is "pending" and the BPF side steps it by frame
 * pointers and asks for it.
 *
 * Its size (about 970 lines): files, processes and the free ranges of the
 * row array share one private struct and its invariants (a file's refs
 * count the followed processes' mappings of it; its rows are freed with the
 * last); split, each part would reach into the others' fields.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <gelf.h>

#include "unwind/cfi.h"
#include "unwind/tables.h"
#include "util/bsearch.h"
#include "util/clock.h"
#include "util/vec.h"

#define MAX_SEGS 16
#define VDSO_MAJ 0xffffffffu /* the key of the vDSO: it has no device */

struct unw_file {
	uint32_t maj, min;
	uint64_t ino;
	char *path;
	bool pending;                  /* not built yet (lazy) */
	uint32_t pid;                  /* a process that maps it, and where: */
	uint64_t start, end;           /* for /proc/PID/map_files */
	uint32_t row_start, row_count; /* row_count 0: no table (frame pointers) */
	uint32_t refs;                 /* mappings of followed processes */
	uint64_t unref_since;          /* when refs fell to 0 */
	struct {
		uint64_t off, vaddr, filesz;
	} seg[MAX_SEGS];
	unsigned int nseg;
	uint64_t delta;  /* p_vaddr - p_offset of the executable segment */
	uint64_t x_lo, x_hi; /* its addresses */
	bool published;  /* in the backend's files (put_file) */
};

struct unw_pmap {
	uint64_t start, end, bias;
	uint64_t pgoff;     /* of start: the bias, once the file's segments are known */
	struct unw_file *f; /* NULL: anonymous code */
};

struct unw_proc {
	uint32_t pid;
	uint32_t execs;
	bool dirty;
	struct unw_pmap *v;
	size_t n, cap;
};

struct range {
	uint32_t start, len;
};

struct unw_tables {
	struct unw_backend b;
	bool all;
	bool lazy; /* build new files when a stack needs them */
	struct unw_rules *rules;
	uint32_t rules_pushed;
	struct unw_file **files; /* sorted by key */
	size_t nfiles, capfiles;
	struct unw_proc **procs; /* sorted by pid */
	size_t nprocs, capprocs;
	struct range *free; /* free row ranges, sorted by start */
	size_t nfree, capfree;
	struct unw_tables_stats st;
};

/* ---- the row array: free ranges ---- */

static int range_free(struct unw_tables *t, uint32_t start, uint32_t len)
{
	size_t i;
	int err;

	if (!len)
		return 0;
	for (i = 0; i < t->nfree && t->free[i].start < start; i++)
		;
	/* coalesce with the neighbours */
	if (i > 0 && t->free[i - 1].start + t->free[i - 1].len == start) {
		t->free[i - 1].len += len;
		if (i < t->nfree && start + len == t->free[i].start) {
			t->free[i - 1].len += t->free[i].len;
			memmove(&t->free[i], &t->free[i + 1], (t->nfree - i - 1) * sizeof(*t->free));
			t->nfree--;
		}
		return 0;
	}
	if (i < t->nfree && start + len == t->free[i].start) {
		t->free[i].start = start;
		t->free[i].len += len;
		return 0;
	}
	err = vec__reserve((void **)&t->free, &t->capfree, t->nfree + 1, sizeof(*t->free), 64);
	if (err)
		return err;
	memmove(&t->free[i + 1], &t->free[i], (t->nfree - i) * sizeof(*t->free));
	t->free[i] = (struct range){ start, len };
	t->nfree++;
	return 0;
}

/* First fit; false when no free range is long enough. */
static bool range_alloc(struct unw_tables *t, uint32_t len, uint32_t *start)
{
	for (size_t i = 0; i < t->nfree; i++) {
		if (t->free[i].len < len)
			continue;
		*start = t->free[i].start;
		t->free[i].start += len;
		t->free[i].len -= len;
		if (!t->free[i].len) {
			memmove(&t->free[i], &t->free[i + 1], (t->nfree - i - 1) * sizeof(*t->free));
			t->nfree--;
		}
		return true;
	}
	return false;
}

/* ---- files ---- */

static int file_cmp_key(uint32_t maj, uint32_t min, uint64_t ino, const struct unw_file *f)
{
	if (maj != f->maj)
		return maj < f->maj ? -1 : 1;
	if (min != f->min)
		return min < f->min ? -1 : 1;
	return ino < f->ino ? -1 : ino > f->ino;
}

struct file_find_key {
	const struct unw_tables *t;
	uint32_t maj, min;
	uint64_t ino;
};

static bool file_at_or_after(const void *ctx, size_t i)
{
	const struct file_find_key *k = ctx;

	return file_cmp_key(k->maj, k->min, k->ino, k->t->files[i]) <= 0;
}

/* Index of the file with this key, or where it would go (*found false). */
static size_t file_find(const struct unw_tables *t, uint32_t maj, uint32_t min, uint64_t ino,
			bool *found)
{
	struct file_find_key k = { t, maj, min, ino };
	size_t at = bsearch_first(t->nfiles, file_at_or_after, &k);

	*found = at < t->nfiles && !file_cmp_key(maj, min, ino, t->files[at]);
	return at;
}

static struct offcpu_unw_file_key file_key(const struct unw_file *f)
{
	return (struct offcpu_unw_file_key){ .maj = f->maj, .min = f->min, .ino = f->ino };
}

/* f's table (or its lack of CFI) to the backend's files. */
static void file_publish(struct unw_tables *t, struct unw_file *f)
{
	struct offcpu_unw_file_key k = file_key(f);
	struct offcpu_unw_file v = { .row_start = f->row_start, .row_count = f->row_count,
				     .delta = f->delta, .x_lo = f->x_lo, .x_hi = f->x_hi };

	if (t->b.put_file && !t->b.put_file(t->b.ctx, &k, &v))
		f->published = true;
}

static void file_drop_rows(struct unw_tables *t, struct unw_file *f)
{
	if (f->published && t->b.del_file) {
		struct offcpu_unw_file_key k = file_key(f);

		/* before the rows may be reused */
		t->b.del_file(t->b.ctx, &k);
		f->published = false;
	}
	if (f->row_count) {
		range_free(t, f->row_start, f->row_count);
		t->st.rows -= f->row_count;
		f->row_count = 0;
	}
}

/* Make room for n rows by dropping tables no process maps, oldest first. */
static bool make_room(struct unw_tables *t, uint32_t n, uint32_t *start)
{
	while (!range_alloc(t, n, start)) {
		struct unw_file *old = NULL;
		size_t at = 0;

		for (size_t i = 0; i < t->nfiles; i++) {
			struct unw_file *f = t->files[i];

			if (!f->refs && f->row_count && (!old || f->unref_since < old->unref_since)) {
				old = f;
				at = i;
			}
		}
		if (!old)
			return false;
		file_drop_rows(t, old);
		free(old->path);
		free(old);
		memmove(&t->files[at], &t->files[at + 1], (t->nfiles - at - 1) * sizeof(*t->files));
		t->nfiles--;
		t->st.files_dropped++;
	}
	return true;
}

/* New rules of the dictionary to the backend. */
static int push_rules(struct unw_tables *t)
{
	uint32_t nr = unw_rules__nr(t->rules);
	int err = 0;

	if (nr > t->rules_pushed) {
		err = t->b.put_rules(t->b.ctx, t->rules_pushed, nr - t->rules_pushed,
				     unw_rules__get(t->rules, t->rules_pushed));
		if (!err)
			t->rules_pushed = nr;
	}
	t->st.rules = nr;
	t->st.rules_overflow = unw_rules__overflow(t->rules);
	return err;
}

/* Read an ELF (file or memory) into f: its load segments and its table. */
static int file_load_elf(struct unw_tables *t, struct unw_file *f, Elf *elf)
{
	struct cfi_table ct;
	uint64_t t0 = mono_ns(), dt;
	bool have_x = false;
	size_t nph;
	uint32_t start;
	int err;

	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &nph))
		return -EINVAL;
	for (size_t i = 0; i < nph && f->nseg < MAX_SEGS; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD) {
			if ((ph.p_flags & PF_X) && !have_x) {
				f->delta = ph.p_vaddr - ph.p_offset;
				f->x_lo = ph.p_vaddr;
				f->x_hi = ph.p_vaddr + ph.p_filesz;
				have_x = true;
			}
			f->seg[f->nseg].off = ph.p_offset;
			f->seg[f->nseg].vaddr = ph.p_vaddr;
			f->seg[f->nseg].filesz = ph.p_filesz;
			f->nseg++;
		}
	}
	err = cfi_table__build(elf, t->rules, &ct);
	if (err)
		return err;
	dt = mono_ns() - t0;
	t->st.build_ns += dt;
	if (dt > t->st.build_max_ns) {
		t->st.build_max_ns = dt;
		snprintf(t->st.build_max_file, sizeof(t->st.build_max_file), "%s", f->path);
	}
	t->st.unsupported_rows += ct.nr_unsupported;
	if (!ct.nr) {
		t->st.files_no_cfi++;
		file_publish(t, f);
		goto out;
	}
	if (!make_room(t, ct.nr, &start)) {
		t->st.files_no_room++;
		goto out;
	}
	memcpy(&t->b.rows[start], ct.rows, (size_t)ct.nr * sizeof(*ct.rows));
	f->row_start = start;
	f->row_count = ct.nr;
	t->st.files++;
	t->st.rows += ct.nr;
	if (t->st.rows > t->st.rows_peak)
		t->st.rows_peak = t->st.rows;
	err = push_rules(t);
	if (!err)
		file_publish(t, f); /* after its rules */
out:
	cfi_table__exit(&ct);
	return err;
}

static int file_load_fd(struct unw_tables *t, struct unw_file *f, int fd)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	int err = file_load_elf(t, f, elf);

	elf_end(elf);
	return err;
}

/* A new file entry (not loaded), inserted at index at. */
static struct unw_file *file_new(struct unw_tables *t, size_t at, uint32_t maj, uint32_t min,
				 uint64_t ino, const char *path)
{
	struct unw_file *f = calloc(1, sizeof(*f));

	if (!f || vec__reserve((void **)&t->files, &t->capfiles, t->nfiles + 1, sizeof(*t->files), 64)) {
		free(f);
		return NULL;
	}
	f->maj = maj;
	f->min = min;
	f->ino = ino;
	f->path = strdup(path);
	f->unref_since = mono_ns();
	if (!f->path) {
		free(f);
		return NULL;
	}
	memmove(&t->files[at + 1], &t->files[at], (t->nfiles - at) * sizeof(*t->files));
	t->files[at] = f;
	t->nfiles++;
	return f;
}

/*
 * Build f's table: opened by its path when that is still the same inode,
 * else through /proc/PID/map_files (the very file mapped, renamed,
 * deleted or in another mount namespace). map_files comes second: opening
 * it takes the process's mmap lock, on which the process would wait in
 * its own mmap or exec. A file that cannot be read keeps no table (frame
 * pointers).
 */
static void file_build(struct unw_tables *t, struct unw_file *f)
{
	char p[128];
	struct stat st;
	int fd;

	f->pending = false;
	fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_ino != f->ino ||
			major(st.st_dev) != f->maj || minor(st.st_dev) != f->min)) {
		close(fd);
		fd = -1;
	}
	if (fd < 0 && f->pid) {
		snprintf(p, sizeof(p), "/proc/%u/map_files/%llx-%llx", f->pid,
			 (unsigned long long)f->start, (unsigned long long)f->end);
		fd = open(p, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0 || file_load_fd(t, f, fd))
		t->st.files_failed++;
	if (fd >= 0)
		close(fd);
}

/* The file of an executable mapping of pid: built now, or pending when lazy. */
static struct unw_file *file_get(struct unw_tables *t, uint32_t pid, const struct unw_mapping *m)
{
	struct unw_file *f;
	bool found;
	size_t at = file_find(t, m->maj, m->min, m->ino, &found);

	if (found)
		return t->files[at];
	f = file_new(t, at, m->maj, m->min, m->ino, m->path);
	if (!f)
		return NULL;
	f->pid = pid;
	f->start = m->start;
	f->end = m->end;
	if (t->lazy)
		f->pending = true;
	else
		file_build(t, f);
	return f;
}

int unw_tables__preload(struct unw_tables *t, const char *path)
{
	struct unw_mapping m = { .path = path };
	struct stat st;
	struct unw_file *f;
	bool found;
	size_t at;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	m.maj = major(st.st_dev);
	m.min = minor(st.st_dev);
	m.ino = st.st_ino;
	at = file_find(t, m.maj, m.min, m.ino, &found);
	if (found) {
		close(fd);
		return 0;
	}
	f = file_new(t, at, m.maj, m.min, m.ino, path);
	err = f ? file_load_fd(t, f, fd) : -ENOMEM;
	if (f && err)
		t->st.files_failed++;
	close(fd);
	return err;
}

/* The vDSO's ELF image in this process: its size from its headers. */
int unw_tables__preload_vdso(struct unw_tables *t)
{
	const char *base = (const char *)getauxval(AT_SYSINFO_EHDR);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
	struct unw_file *f;
	size_t size = 0, at;
	bool found;
	Elf *elf;
	int err;

	if (!base || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64)
		return -ENOENT;
	/* the image ends with its section headers */
	size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	if (size < sizeof(*eh) || size > (1 << 20))
		return -EINVAL;
	at = file_find(t, VDSO_MAJ, 0, 0, &found);
	if (found)
		return 0;
	f = file_new(t, at, VDSO_MAJ, 0, 0, "[vdso]");
	if (!f)
		return -ENOMEM;
	elf = elf_memory((char *)base, size);
	err = file_load_elf(t, f, elf);
	elf_end(elf);
	if (err)
		t->st.files_failed++;
	return err;
}

/* Load bias of a mapping of f at start from file offset pgoff. */
static uint64_t file_bias(const struct unw_file *f, uint64_t start, uint64_t pgoff)
{
	int best = -1;

	for (unsigned int i = 0; i < f->nseg; i++) {
		uint64_t off = f->seg[i].off & ~4095ULL;

		if (off == pgoff) {
			best = i;
			break;
		}
		if (best < 0 && pgoff >= off && pgoff < f->seg[i].off + f->seg[i].filesz)
			best = i;
	}
	if (best < 0)
		return start - pgoff; /* no segment: assume file offset = address */
	return start - (f->seg[best].vaddr - (f->seg[best].off - pgoff));
}

static void file_unref(struct unw_file *f)
{
	if (f && f->refs && !--f->refs)
		f->unref_since = mono_ns();
}

/* ---- processes ---- */

struct proc_find_key {
	const struct unw_tables *t;
	uint32_t pid;
};

static bool proc_at_or_after(const void *ctx, size_t i)
{
	const struct proc_find_key *k = ctx;

	return k->t->procs[i]->pid >= k->pid;
}

/* Index of the process pid, or where it would go (*found false). */
static size_t proc_find(const struct unw_tables *t, uint32_t pid, bool *found)
{
	struct proc_find_key k = { t, pid };
	size_t at = bsearch_first(t->nprocs, proc_at_or_after, &k);

	*found = at < t->nprocs && t->procs[at]->pid == pid;
	return at;
}

static struct unw_proc *proc_get(const struct unw_tables *t, uint32_t pid)
{
	bool found;
	size_t i = proc_find(t, pid, &found);

	return found ? t->procs[i] : NULL;
}

static void proc_clear(struct unw_proc *p)
{
	for (size_t i = 0; i < p->n; i++)
		file_unref(p->v[i].f);
	p->n = 0;
	p->dirty = true;
}

static void proc_free(struct unw_proc *p)
{
	if (!p)
		return;
	proc_clear(p);
	free(p->v);
	free(p);
}

/* A new process model for pid (replacing any), at index at. */
static struct unw_proc *proc_new(struct unw_tables *t, uint32_t pid)
{
	struct unw_proc *p;
	bool found;
	size_t at = proc_find(t, pid, &found);

	if (found) {
		proc_clear(t->procs[at]);
		t->procs[at]->execs = 0;
		return t->procs[at];
	}
	p = calloc(1, sizeof(*p));
	if (!p || vec__reserve((void **)&t->procs, &t->capprocs, t->nprocs + 1, sizeof(*t->procs), 64)) {
		free(p);
		return NULL;
	}
	p->pid = pid;
	p->dirty = true;
	memmove(&t->procs[at + 1], &t->procs[at], (t->nprocs - at) * sizeof(*t->procs));
	t->procs[at] = p;
	t->nprocs++;
	t->st.procs = t->nprocs;
	if (t->nprocs > t->st.procs_peak)
		t->st.procs_peak = t->nprocs;
	return p;
}

static int pmap_cmp(const void *a, const void *b)
{
	const struct unw_pmap *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Insert [start, end) -> f (its ref taken by the caller), cutting what it overlaps. */
static int proc_map(struct unw_proc *p, uint64_t start, uint64_t end, uint64_t pgoff,
		    uint64_t bias, struct unw_file *f)
{
	size_t n = p->n, i;
	int err = vec__reserve((void **)&p->v, &p->cap, 2 * p->n + 1, sizeof(*p->v), 64);

	if (err) {
		file_unref(f);
		return err;
	}
	/* what an overlapped mapping keeps on either side goes to the end */
	for (i = 0; i < n; i++) {
		struct unw_pmap m = p->v[i];
		bool left = m.start < start, right = m.end > end;

		if (m.end <= start || m.start >= end)
			continue;
		if (left) {
			p->v[i].end = start;
			if (right) {
				m.pgoff += end - m.start;
				m.start = end;
				p->v[p->n++] = m;
				if (m.f)
					m.f->refs++;
			}
		} else if (right) {
			p->v[i].pgoff += end - p->v[i].start;
			p->v[i].start = end;
		} else {
			file_unref(m.f);
			p->v[i].end = p->v[i].start; /* empty: removed below */
		}
	}
	p->v[p->n++] = (struct unw_pmap){ start, end, bias, pgoff, f };
	for (i = 0, n = 0; i < p->n; i++)
		if (p->v[i].end > p->v[i].start)
			p->v[n++] = p->v[i];
	p->n = n;
	qsort(p->v, p->n, sizeof(*p->v), pmap_cmp);
	p->dirty = true;
	return 0;
}

static bool anonymous(const char *path)
{
	return !path[0] || !strncmp(path, "//anon", 6) || !strncmp(path, "[anon", 5) ||
	       !strcmp(path, "[heap]") || !strncmp(path, "[stack", 6) || !strncmp(path, "/memfd:", 7);
}

static int add_mapping(struct unw_tables *t, struct unw_proc *p, const struct unw_mapping *m)
{
	struct unw_file *f = NULL;
	uint64_t bias = 0;

	if (m->end <= m->start || m->start >= 0x00fffffffffff000ULL)
		return 0; /* [vsyscall] and nonsense */
	if (!strcmp(m->path, "[vdso]")) {
		bool found;
		size_t at = file_find(t, VDSO_MAJ, 0, 0, &found);

		if (!found && !unw_tables__preload_vdso(t))
			at = file_find(t, VDSO_MAJ, 0, 0, &found);
		f = found ? t->files[at] : NULL;
	} else if (m->ino && !anonymous(m->path)) {
		f = file_get(t, p->pid, m);
		if (!f)
			return -ENOMEM;
	}
	if (f) {
		bias = file_bias(f, m->start, m->pgoff);
		f->refs++;
	}
	return proc_map(p, m->start, m->end, m->pgoff, bias, f);
}

int unw_tables__mmap(struct unw_tables *t, uint32_t pid, const struct unw_mapping *m)
{
	struct unw_proc *p = proc_get(t, pid);

	if (!p && t->all)
		return unw_tables__add_process(t, pid); /* it has this mapping too */
	if (!p)
		return 0;
	return add_mapping(t, p, m);
}

int unw_tables__fork(struct unw_tables *t, uint32_t ppid, uint32_t pid)
{
	struct unw_proc *pp = proc_get(t, ppid), *c;

	if (pid == ppid || (!pp && !t->all))
		return 0;
	if (!pp) /* -a: a parent started before us and never seen since */
		return unw_tables__add_process(t, pid);
	c = proc_new(t, pid);
	if (!c)
		return -ENOMEM;
	pp = proc_get(t, ppid); /* proc_new may have moved it */
	if (!pp)
		return 0;
	if (vec__reserve((void **)&c->v, &c->cap, pp->n + 2, sizeof(*c->v), 64))
		return -ENOMEM;
	if (pp->n) /* a parent without mappings (a kernel thread) has no array */
		memcpy(c->v, pp->v, pp->n * sizeof(*c->v));
	c->n = pp->n;
	for (size_t i = 0; i < c->n; i++)
		if (c->v[i].f)
			c->v[i].f->refs++;
	return 0;
}

/* The kernel side's exec count of pid: it decides which image a table is for. */
static uint32_t backend_execs(struct unw_tables *t, uint32_t pid)
{
	uint32_t execs = 0;

	if (t->b.get_execs)
		t->b.get_execs(t->b.ctx, pid, &execs);
	return execs;
}

/*
 * An exec (its COMM record): the old image's mappings go; the new image's
 * come in the MMAP2 records that follow. The exec count is the kernel
 * side's, counted at the end of the exec: read again when the process asks
 * for its tables after it (unw_tables__requested), so a record read early
 * does no harm, nor one of an exec already seen in /proc.
 */
int unw_tables__exec(struct unw_tables *t, uint32_t pid)
{
	struct unw_proc *p = proc_get(t, pid);

	if (!p)
		return 0;
	proc_clear(p);
	p->execs = backend_execs(t, pid);
	return 0;
}

void unw_tables__requested(struct unw_tables *t, uint32_t pid)
{
	struct unw_proc *p = proc_get(t, pid);
	uint32_t execs;

	if (!p)
		return;
	execs = backend_execs(t, pid);
	if (execs != p->execs) {
		p->execs = execs;
		p->dirty = true;
	}
}

int unw_tables__exit(struct unw_tables *t, uint32_t pid)
{
	bool found;
	size_t at = proc_find(t, pid, &found);

	if (!found)
		return 0;
	proc_free(t->procs[at]);
	memmove(&t->procs[at], &t->procs[at + 1], (t->nprocs - at - 1) * sizeof(*t->procs));
	t->nprocs--;
	t->st.procs = t->nprocs;
	return 0;
}

bool unw_tables__follows(const struct unw_tables *t, uint32_t pid)
{
	return t->all || proc_get(t, pid);
}

/* Parse "start-end perms offset maj:min inode path" of /proc/PID/maps. */
static bool maps_line(char *line, struct unw_mapping *m, bool *exec)
{
	unsigned long long start, end, pgoff, ino;
	unsigned int maj, min;
	char perms[8];
	int pos = 0;

	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &pgoff, &maj, &min,
		   &ino, &pos) < 7)
		return false;
	line[strcspn(line, "\n")] = 0;
	m->start = start;
	m->end = end;
	m->pgoff = pgoff;
	m->maj = maj;
	m->min = min;
	m->ino = ino;
	m->path = pos ? line + pos : "";
	*exec = strlen(perms) >= 3 && perms[2] == 'x';
	return true;
}

int unw_tables__add_process(struct unw_tables *t, uint32_t pid)
{
	char path[64], line[4096 + 256];
	struct unw_proc *p;
	FILE *f;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	p = proc_new(t, pid);
	if (!p) {
		fclose(f);
		return -ENOMEM;
	}
	p->execs = backend_execs(t, pid);
	while (!err && fgets(line, sizeof(line), f)) {
		struct unw_mapping m;
		bool exec;

		if (maps_line(line, &m, &exec) && exec)
			err = add_mapping(t, p, &m);
	}
	fclose(f);
	return err;
}

/* One process's table for the backend: its mappings, at most OFFCPU_UNW_MAX_MAPS. */
static int proc_push(struct unw_tables *t, struct unw_proc *p, struct offcpu_unw_proc *out)
{
	size_t n = p->n;

	memset(out, 0, sizeof(*out));
	if (n > OFFCPU_UNW_MAX_MAPS) {
		t->st.maps_dropped += n - OFFCPU_UNW_MAX_MAPS;
		n = OFFCPU_UNW_MAX_MAPS;
	}
	out->nr = n;
	out->execs = p->execs;
	for (size_t i = 0; i < n; i++) {
		struct offcpu_unw_map *m = &out->maps[i];

		m->start = p->v[i].start;
		m->end = p->v[i].end;
		m->bias = p->v[i].bias;
		if (p->v[i].f && p->v[i].f->pending) {
			m->row_start = OFFCPU_UNW_PENDING;
		} else if (p->v[i].f) {
			m->row_start = p->v[i].f->row_start;
			m->row_count = p->v[i].f->row_count;
		}
	}
	p->dirty = false;
	t->st.pushes++;
	return t->b.put_proc(t->b.ctx, p->pid, out);
}

int unw_tables__flush(struct unw_tables *t)
{
	struct offcpu_unw_proc *buf = NULL;
	int err = 0;

	for (size_t i = 0; i < t->nprocs && !err; i++) {
		if (!t->procs[i]->dirty)
			continue;
		if (!buf && !(buf = malloc(sizeof(*buf))))
			return -ENOMEM;
		err = proc_push(t, t->procs[i], buf);
	}
	free(buf);
	return err;
}

void unw_tables__set_lazy(struct unw_tables *t, bool lazy)
{
	t->lazy = lazy;
}

int unw_tables__need(struct unw_tables *t, uint32_t pid, uint64_t pc)
{
	struct unw_proc *p = proc_get(t, pid);
	struct unw_file *f = NULL;

	for (size_t i = 0; p && i < p->n; i++)
		if (p->v[i].start <= pc && pc < p->v[i].end)
			f = p->v[i].f;
	if (!f || !f->pending)
		return 0;
	file_build(t, f);
	/* every process mapping it: its load bias and its rows */
	for (size_t i = 0; i < t->nprocs; i++)
		for (size_t j = 0; j < t->procs[i]->n; j++) {
			struct unw_pmap *m = &t->procs[i]->v[j];

			if (m->f != f)
				continue;
			m->bias = file_bias(f, m->start, m->pgoff);
			t->procs[i]->dirty = true;
		}
	return 0;
}

void unw_tables__expire(struct unw_tables *t, uint64_t now)
{
	size_t j = 0;

	for (size_t i = 0; i < t->nfiles; i++) {
		struct unw_file *f = t->files[i];

		if (f->refs || f->unref_since + UNW_GRACE_NS > now) {
			t->files[j++] = f;
			continue;
		}
		if (f->row_count)
			t->st.files_dropped++;
		file_drop_rows(t, f);
		free(f->path);
		free(f);
	}
	t->nfiles = j;
}

void unw_tables__stats(const struct unw_tables *t, struct unw_tables_stats *s)
{
	*s = t->st;
	s->row_cap = t->b.row_cap;
}

int unw_tables__new(const struct unw_backend *b, bool all, struct unw_tables **out)
{
	struct unw_tables *t = calloc(1, sizeof(*t));
	int err = -ENOMEM;

	if (!t)
		return -ENOMEM;
	t->b = *b;
	t->all = all;
	t->rules = unw_rules__new();
	if (!t->rules)
		goto cleanup;
	err = range_free(t, 0, b->row_cap);
	if (!err)
		err = push_rules(t);
	if (err)
		goto cleanup;
	elf_version(EV_CURRENT);
	*out = t;
	return 0;
cleanup:
	unw_tables__free(t);
	return err;
}

void unw_tables__free(struct unw_tables *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nprocs; i++)
		proc_free(t->procs[i]);
	for (size_t i = 0; i < t->nfiles; i++) {
		free(t->files[i]->path);
		free(t->files[i]);
	}
	free(t->procs);
	free(t->files);
	free(t->free);
	unw_rules__free(t->rules);
	free(t);
}
