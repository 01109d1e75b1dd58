// SPDX-License-Identifier: GPL-2.0-only
/*
 * The symbolizer: tables of DSOs, kallsyms and perf maps, and the caches
 * that make each distinct (dso, address) cost one lookup in a run.
 *
 * About 1000 lines on purpose: the DSO table and the thread that loads
 * its files ahead, the resolve and demangle caches and the kernel and
 * perf-map paths all work on struct symbolizer, which no other file sees;
 * what they call (ELF, kallsyms and perf-map parsers, build ids, the
 * vDSO) is in files of its own.
 */
#include <dwarf.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <elfutils/libdw.h>

#include "symbols/build_id.h"
#include "symbols/sym_dso.h"
#include "symbols/sym_internal.h"
#include "symbols/symbolizer.h"
#include "symbols/vdso.h"
#include "util/hash.h"
#include "util/htab.h"
#include "util/vec.h"

#define SYM_MAX_INLINE 32

struct rcache_entry {
	uint64_t off;     /* file offset, the same in every process mapping the file */
	uint32_t dso;
	uint32_t first;   /* in frames[] */
	uint32_t nr;
};

struct demangled {
	const char *mangled; /* owned by a DSO's ELF or DWARF, lives as long */
	char *name;          /* NULL: not demangled, show mangled */
};

struct pid_map {
	int pid;
	struct perfmap *map; /* NULL: no such file */
};

struct image {
	char *name;
	uint8_t build_id[SYM_BUILD_ID_MAX];
	size_t build_id_size;
	void *data;
	size_t len;
};

struct symbolizer {
	struct symbolizer_opts opts;
	char *kallsyms_path, *debug_dir, *perfmap_dir, *buildid_dir, *notes_path;
	bool kallsyms_given;
	uint8_t kbid[SYM_BUILD_ID_MAX];
	size_t kbid_size;
	char *kwarning;
	struct image *images;
	size_t nr_images;

	struct htab dsos;       /* struct sym_dso * (owned), by path and build id; sym_dso.idx */

	struct htab rc;         /* struct rcache_entry, by (dso, offset) */
	struct sym_frame *frames;
	size_t nr_frames, cap_frames;

	struct htab dm;         /* struct demangled, by mangled name */

	struct ksyms *ksyms;
	bool ksyms_tried;
	pthread_t kthread;      /* loading kallsyms in the background */
	bool kthread_running;
	/* it runs at SCHED_IDLE until waited for (idle_lock: kthread_idle, kthread_waited) */
	pthread_mutex_t idle_lock;
	bool kthread_idle, kthread_waited;
	uint64_t text_addr;

	/* files loaded ahead in a thread of their own (symbolizer__preload()) */
	struct preload *pre;
	size_t nr_pre, next_pre; /* next_pre: the first the thread has not looked at */
	pthread_t pthread;
	bool pthread_running, pre_stop;
	pthread_mutex_t pre_lock; /* the entries' states, next_pre, pre_stop */
	pthread_cond_t pre_done;  /* an entry became PRE_DONE */

	struct htab pm;         /* struct pid_map, by pid */
	bool nomem;             /* a name could not be kept: the resolve that asked fails */
	bool knomem;            /* kallsyms could not be read for want of memory (set by kthread) */
};

/*
 * Wait for the kallsyms thread. Until now it ran at SCHED_IDLE (when
 * allowed): it is put back to normal first, so that a busy machine does
 * not keep the report waiting on an idle-priority thread.
 */
static void kthread_join(struct symbolizer *s)
{
	struct sched_param sp = { 0 };

	pthread_mutex_lock(&s->idle_lock);
	s->kthread_waited = true;
	if (s->kthread_idle)
		pthread_setschedparam(s->kthread, SCHED_OTHER, &sp);
	pthread_mutex_unlock(&s->idle_lock);
	pthread_join(s->kthread, NULL);
	s->kthread_running = false;
}

/*
 * A file to load ahead: queued, being loaded by the preload thread, loaded
 * there, or taken by symbolizer__dso() (which loads it itself when the
 * thread has not begun it).
 */
enum preload_state { PRE_QUEUED, PRE_LOADING, PRE_DONE, PRE_TAKEN };

struct preload {
	struct sym_dso *d;
	enum preload_state state;
};

static void preload__stop(struct symbolizer *s);

static char *dup_or(const char *s, const char *def)
{
	return strdup(s ? s : def);
}

struct symbolizer *symbolizer__new(const struct symbolizer_opts *opts)
{
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	elf_version(EV_CURRENT);
	htab__init(&s->dsos, sizeof(struct sym_dso *));
	htab__init(&s->rc, sizeof(struct rcache_entry));
	htab__init(&s->dm, sizeof(struct demangled));
	htab__init(&s->pm, sizeof(struct pid_map));
	pthread_mutex_init(&s->idle_lock, NULL);
	pthread_mutex_init(&s->pre_lock, NULL);
	pthread_cond_init(&s->pre_done, NULL);
	if (opts)
		s->opts = *opts;
	s->kallsyms_given = s->opts.kallsyms != NULL;
	s->kallsyms_path = dup_or(s->opts.kallsyms, "/proc/kallsyms");
	s->debug_dir = dup_or(s->opts.debug_dir, "/usr/lib/debug");
	s->perfmap_dir = dup_or(s->opts.perfmap_dir, "/tmp");
	s->notes_path = dup_or(s->opts.kernel_notes, "/sys/kernel/notes");
	s->buildid_dir = s->opts.buildid_dir ? strdup(s->opts.buildid_dir) : buildid_cache__default_dir();
	if (!s->buildid_dir)
		s->buildid_dir = strdup("");
	if (!s->kallsyms_path || !s->debug_dir || !s->perfmap_dir || !s->notes_path ||
	    !s->buildid_dir) {
		symbolizer__free(s);
		return NULL;
	}
	s->opts.kallsyms = s->kallsyms_path;
	s->opts.debug_dir = s->debug_dir;
	s->opts.perfmap_dir = s->perfmap_dir;
	return s;
}

void symbolizer__free(struct symbolizer *s)
{
	size_t i;

	if (!s)
		return;
	if (s->kthread_running)
		kthread_join(s);
	pthread_mutex_destroy(&s->idle_lock);
	preload__stop(s);
	for (i = 0; i < htab__n(&s->dsos); i++) {
		struct sym_dso *d = *(struct sym_dso **)htab__at(&s->dsos, i);

		sym_dso__exit(d);
		free(d);
	}
	htab__free(&s->dsos);
	htab__free(&s->rc);
	free(s->frames);
	for (i = 0; i < htab__n(&s->dm); i++)
		free(((struct demangled *)htab__at(&s->dm, i))->name);
	htab__free(&s->dm);
	ksyms__free(s->ksyms);
	for (i = 0; i < htab__n(&s->pm); i++)
		perfmap__free(((struct pid_map *)htab__at(&s->pm, i))->map);
	htab__free(&s->pm);
	for (i = 0; i < s->nr_images; i++) {
		free(s->images[i].name);
		free(s->images[i].data);
	}
	free(s->images);
	free(s->kwarning);
	free(s->kallsyms_path);
	free(s->debug_dir);
	free(s->perfmap_dir);
	free(s->notes_path);
	free(s->buildid_dir);
	free(s);
}

/* ---- names ---- */

static bool dm__eq(const void *entry, const void *key)
{
	return strcmp(((const struct demangled *)entry)->mangled, key) == 0;
}

/*
 * The name to show for a symbol: demangled once per distinct string, when
 * asked. Out of memory it returns the mangled name and sets s->nomem, so
 * that the resolve that asked returns -ENOMEM.
 */
static const char *symbolizer__name(struct symbolizer *s, const char *name)
{
	struct demangled *e;
	bool added;

	if (!name || !s->opts.demangle || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return name;
	e = htab__get(&s->dm, hash__str(name), dm__eq, name, &added);
	if (!e) {
		s->nomem = true;
		return name;
	}
	if (added) {
		e->mangled = name;
		if (sym_demangle(name, &e->name) == -ENOMEM)
			s->nomem = true;
	}
	return e->name ? e->name : name;
}

/* ---- DSOs ---- */

struct dso_key {
	const char *path;
	const uint8_t *bid;
	size_t bsz;
};

static bool dso__eq(const void *entry, const void *key)
{
	const struct dso_key *k = key;
	const struct sym_dso *d = *(struct sym_dso *const *)entry;

	return d->build_id_size == k->bsz && (!k->bsz || memcmp(d->build_id, k->bid, k->bsz) == 0) &&
	       strcmp(d->path, k->path) == 0;
}

static int dso__load(struct symbolizer *s, struct sym_dso *d);

/* The key of a file: no id when none, or all zeros; at most SYM_BUILD_ID_MAX bytes. */
static struct dso_key dso__key(const char *path, const uint8_t *build_id, size_t build_id_size)
{
	size_t k;

	if (!build_id || !build_id_size) {
		build_id = (const uint8_t *)"";
		build_id_size = 0;
	}
	if (build_id_size > SYM_BUILD_ID_MAX)
		build_id_size = SYM_BUILD_ID_MAX;
	/* An all-zero id is no id. */
	for (k = 0; k < build_id_size && !build_id[k]; k++)
		;
	if (k == build_id_size)
		build_id_size = 0;
	return (struct dso_key){ path, build_id, build_id_size };
}

/* A DSO of key k, not loaded yet; NULL when out of memory. */
static struct sym_dso *dso__new(const struct symbolizer *s, const struct dso_key *k)
{
	struct sym_dso *d = calloc(1, sizeof(*d));

	if (d)
		d->path = strdup(k->path);
	if (!d || !d->path) {
		free(d);
		return NULL;
	}
	if (k->bsz)
		memcpy(d->build_id, k->bid, k->bsz);
	d->build_id_size = k->bsz;
	d->demangle = s->opts.demangle;
	return d;
}

/* Load d; out of memory, it resolves nothing and says why. */
static void dso__load_or_warn(struct symbolizer *s, struct sym_dso *d)
{
	if (dso__load(s, d) < 0 && !d->warning)
		d->warning = strdup("out of memory loading symbols");
}

/*
 * The preloaded DSO of key k, loaded (here when the preload thread has not
 * begun it, else waited for), or NULL when k was not preloaded.
 */
static struct sym_dso *preload__take(struct symbolizer *s, const struct dso_key *k)
{
	struct preload *p = NULL;
	bool load_here;

	for (size_t i = 0; i < s->nr_pre && !p; i++) /* each key once: its state is not read here */
		if (dso__eq(&s->pre[i].d, k))
			p = &s->pre[i];
	if (!p)
		return NULL;
	pthread_mutex_lock(&s->pre_lock);
	while (p->state == PRE_LOADING)
		pthread_cond_wait(&s->pre_done, &s->pre_lock);
	load_here = p->state == PRE_QUEUED;
	p->state = PRE_TAKEN;
	pthread_mutex_unlock(&s->pre_lock);
	if (load_here)
		dso__load_or_warn(s, p->d);
	return p->d;
}

struct sym_dso *symbolizer__dso(struct symbolizer *s, const char *path,
				const uint8_t *build_id, size_t build_id_size)
{
	struct dso_key key;
	struct sym_dso **e, *d;
	bool added;
	uint64_t h;

	if (!s || !path)
		return NULL;
	key = dso__key(path, build_id, build_id_size);
	h = hash__bytes(path, strlen(path), 0) ^ hash__bytes(key.bid, key.bsz, 1);
	e = htab__get(&s->dsos, h, dso__eq, &key, &added);
	if (!e)
		return NULL;
	if (!added)
		return *e;
	d = preload__take(s, &key);
	if (!d) {
		d = dso__new(s, &key);
		if (!d) {
			htab__unget(&s->dsos);
			return NULL;
		}
		dso__load_or_warn(s, d);
	}
	d->idx = (uint32_t)(e - (struct sym_dso **)s->dsos.v);
	*e = d;
	return d;
}

/*
 * The preload thread: the queued files in order, each loaded unless
 * symbolizer__dso() took it first, until none is left or it is stopped.
 * dso__load() reads only what the symbolizer was given before the thread
 * started (options, directories, images) and writes only the DSO.
 */
static void *preload__thread(void *arg)
{
	struct symbolizer *s = arg;

	pthread_setname_np(pthread_self(), "offcpu-symbols"); /* in top and in profiles */
	pthread_mutex_lock(&s->pre_lock);
	while (!s->pre_stop && s->next_pre < s->nr_pre) {
		struct preload *p = &s->pre[s->next_pre++];

		if (p->state != PRE_QUEUED)
			continue;
		p->state = PRE_LOADING;
		pthread_mutex_unlock(&s->pre_lock);
		dso__load_or_warn(s, p->d);
		pthread_mutex_lock(&s->pre_lock);
		p->state = PRE_DONE;
		pthread_cond_broadcast(&s->pre_done);
	}
	pthread_mutex_unlock(&s->pre_lock);
	return NULL;
}

int symbolizer__preload(struct symbolizer *s, const char *path, const uint8_t *build_id,
			size_t build_id_size)
{
	struct dso_key key;
	struct preload *p;

	if (!s || !path || s->pthread_running)
		return -EINVAL;
	key = dso__key(path, build_id, build_id_size);
	for (size_t i = 0; i < s->nr_pre; i++)
		if (dso__eq(&s->pre[i].d, &key))
			return 0;
	p = realloc(s->pre, (s->nr_pre + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	s->pre = p;
	p[s->nr_pre].d = dso__new(s, &key);
	if (!p[s->nr_pre].d)
		return -ENOMEM;
	p[s->nr_pre++].state = PRE_QUEUED;
	return 0;
}

void symbolizer__preload_start(struct symbolizer *s)
{
	if (s && s->nr_pre && !s->pthread_running)
		s->pthread_running = !pthread_create(&s->pthread, NULL, preload__thread, s);
}

/* The preload thread stopped, and the files no one took freed. */
static void preload__stop(struct symbolizer *s)
{
	if (s->pthread_running) {
		pthread_mutex_lock(&s->pre_lock);
		s->pre_stop = true;
		pthread_mutex_unlock(&s->pre_lock);
		pthread_join(s->pthread, NULL);
		s->pthread_running = false;
	}
	for (size_t i = 0; i < s->nr_pre; i++)
		if (s->pre[i].state != PRE_TAKEN) {
			sym_dso__exit(s->pre[i].d);
			free(s->pre[i].d);
		}
	free(s->pre);
	s->pre = NULL;
	s->nr_pre = 0;
	pthread_mutex_destroy(&s->pre_lock);
	pthread_cond_destroy(&s->pre_done);
}

int symbolizer__add_image(struct symbolizer *s, const char *name, const uint8_t *build_id,
			  size_t build_id_size, const void *data, size_t len)
{
	struct image *im;

	if (!s || !name || !data || !len)
		return -EINVAL;
	im = realloc(s->images, (s->nr_images + 1) * sizeof(*im));
	if (!im)
		return -ENOMEM;
	s->images = im;
	im = &s->images[s->nr_images];
	memset(im, 0, sizeof(*im));
	im->name = strdup(name);
	im->data = malloc(len);
	if (!im->name || !im->data) {
		free(im->name);
		free(im->data);
		return -ENOMEM;
	}
	memcpy(im->data, data, len);
	im->len = len;
	im->build_id_size = build_id_size > SYM_BUILD_ID_MAX ? SYM_BUILD_ID_MAX : build_id_size;
	if (im->build_id_size)
		memcpy(im->build_id, build_id, im->build_id_size);
	s->nr_images++;
	return 0;
}

/* A copy of the image for d: the recording's, the cache's, or this process's vDSO. */
static int vdso__load(struct symbolizer *s, struct sym_dso *d)
{
	char hex[2 * SYM_BUILD_ID_MAX + 1];
	void *image = NULL;
	size_t len = 0;
	char *cached;
	int ret;

	for (size_t i = 0; i < s->nr_images; i++) {
		const struct image *im = &s->images[i];

		if (strcmp(im->name, d->path) ||
		    (d->build_id_size &&
		     !build_id__equal(im->build_id, im->build_id_size, d->build_id, d->build_id_size)))
			continue;
		image = malloc(im->len);
		if (!image)
			return -ENOMEM;
		memcpy(image, im->data, im->len);
		return sym_dso__load_image(d, image, im->len);
	}
	ret = buildid_cache__find(s->buildid_dir, d->path, d->build_id, d->build_id_size, "vdso",
				  &cached);
	if (ret == -ENOMEM)
		return ret;
	if (cached) {
		d->file = cached;
		return sym_dso__load(d, s->debug_dir, false);
	}
	if (vdso__self(&image, &len) == 0)
		return sym_dso__load_image(d, image, len); /* warns on another build id */
	if (asprintf(&d->warning, "%s: no image of build id %s (not in the recording, nor in %s, nor this process's)",
		     d->path, d->build_id_size ? build_id__hex(d->build_id, d->build_id_size, hex) : "(none recorded)",
		     s->buildid_dir[0] ? s->buildid_dir : "a build-id cache") < 0) {
		d->warning = NULL;
		return -ENOMEM;
	}
	return 0;
}

/*
 * Load d: a vDSO from its image; a file whose build id is not the recorded
 * one (rebuilt or gone since) from perf's build-id cache when it has a copy.
 */
static int dso__load(struct symbolizer *s, struct sym_dso *d)
{
	uint8_t fbid[SYM_BUILD_ID_MAX];
	int n;

	if (!strcmp(d->path, VDSO_NAME))
		return vdso__load(s, d);
	if (d->build_id_size && s->buildid_dir[0]) {
		n = sym_read_build_id(d->path, fbid, sizeof(fbid));
		if ((n <= 0 || !build_id__equal(d->build_id, d->build_id_size, fbid, (size_t)n)) &&
		    buildid_cache__find(s->buildid_dir, d->path, d->build_id, d->build_id_size, "elf",
					&d->file) == -ENOMEM)
			return -ENOMEM;
		/* said once: the file there is not the one recorded */
		if (d->file && asprintf(&d->warning, "%s: %s; symbols from the build-id cache's copy %s",
					d->path, n == -ENOENT ? "gone since the recording" :
						 n == -ENODATA ? "without a build id" :
						 n < 0 ? "not a readable ELF file" :
							 "another build than the one recorded",
					d->file) < 0) {
			d->warning = NULL;
			return -ENOMEM;
		}
	}
	return sym_dso__load(d, s->debug_dir, s->opts.srcline || s->opts.inlines);
}

const char *sym_dso__name(const struct sym_dso *d)
{
	return d ? d->path : "[unknown]";
}

const char *sym_dso__warning(const struct sym_dso *d)
{
	return d ? d->warning : NULL;
}

/* ---- DWARF: source lines and inlined frames ---- */

static const char *die__name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *n;

	n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
	if (!n)
		n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	if (!n)
		n = dwarf_diename(die);
	return n;
}

static Dwarf_Die *cu__find(Dwarf *dw, uint64_t addr, Dwarf_Die *cudie)
{
	Dwarf_Off off = 0, next;
	size_t hsize;

	if (dwarf_addrdie(dw, addr, cudie))
		return cudie;
	/* No .debug_aranges entry: ask each CU (rare, and the answer is cached). */
	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		if (dwarf_offdie(dw, off + hsize, cudie) && dwarf_haspc(cudie, addr) > 0)
			return cudie;
		off = next;
	}
	return NULL;
}

static void line__at(Dwarf_Die *cudie, uint64_t addr, struct sym_frame *f)
{
	Dwarf_Line *l = dwarf_getsrc_die(cudie, addr);
	int line = 0;

	if (!l)
		return;
	f->srcfile = dwarf_linesrc(l, NULL, NULL);
	if (f->srcfile && dwarf_lineno(l, &line) == 0 && line > 0)
		f->line = (unsigned int)line;
}

static void line__call_site(Dwarf_Die *cudie, Dwarf_Die *inl, struct sym_frame *f)
{
	Dwarf_Attribute a;
	Dwarf_Word file, line;
	Dwarf_Files *files;
	size_t nfiles;

	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_file, &a), &file) != 0 ||
	    dwarf_getsrcfiles(cudie, &files, &nfiles) != 0 || file >= nfiles)
		return;
	f->srcfile = dwarf_filesrc(files, file, NULL, NULL);
	if (f->srcfile && dwarf_formudata(dwarf_attr(inl, DW_AT_call_line, &a), &line) == 0)
		f->line = (unsigned int)line;
}

#define SCOPE_MAX_DEPTH 64

/*
 * The chain of subprogram and inlined-subroutine DIEs holding pc, outermost
 * first, by descending only into DIEs whose ranges hold pc (and into
 * namespaces and classes, which have none). Cheaper than dwarf_getscopes(),
 * which also searches each abstract origin; depth-bounded for bad input.
 */
static int scopes__walk(Dwarf_Die *parent, uint64_t pc, Dwarf_Die *chain, int n, int max, int level)
{
	Dwarf_Die child;
	int tag, m;

	if (level > SCOPE_MAX_DEPTH || dwarf_child(parent, &child) != 0)
		return n;
	do {
		tag = dwarf_tag(&child);
		switch (tag) {
		case DW_TAG_subprogram:
		case DW_TAG_inlined_subroutine:
		case DW_TAG_lexical_block:
			if (dwarf_haspc(&child, pc) <= 0)
				break;
			if (tag != DW_TAG_lexical_block && n < max)
				chain[n++] = child;
			return scopes__walk(&child, pc, chain, n, max, level + 1);
		case DW_TAG_namespace:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
		case DW_TAG_module:
			m = scopes__walk(&child, pc, chain, n, max, level + 1);
			if (m > n)
				return m;
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return n;
}

/*
 * Frames for addr from DWARF: inlined functions innermost first, then
 * the real function (named by the caller from the symbol table). The
 * innermost frame's line is the line table's; each outer frame's line is
 * the call site of the frame inside it. Returns the number of frames.
 */
static int dwarf__frames(struct symbolizer *s, struct sym_dso *d, uint64_t addr,
			 struct sym_frame *out, int max)
{
	Dwarf *dw = sym_dso__dwarf(d);
	Dwarf_Die cudie, chain[SYM_MAX_INLINE + 1];
	int nchain, first, i, n = 0;

	if (!dw || !cu__find(dw, addr, &cudie))
		return 1;
	if (!s->opts.inlines) {
		line__at(&cudie, addr, &out[0]);
		return 1;
	}
	nchain = scopes__walk(&cudie, addr, chain, 0, SYM_MAX_INLINE + 1, 0);
	/* chain[first..] are the inlined scopes, outermost first. */
	for (first = nchain; first > 0 && dwarf_tag(&chain[first - 1]) == DW_TAG_inlined_subroutine; first--)
		;
	for (i = nchain - 1; i >= first && n < max - 1; i--) {
		Dwarf_Addr low;

		memset(&out[n], 0, sizeof(out[n]));
		out[n].sym = symbolizer__name(s, die__name(&chain[i]));
		out[n].inlined = true;
		if (dwarf_entrypc(&chain[i], &low) == 0 && low <= addr)
			out[n].offset = addr - low;
		if (n == 0)
			line__at(&cudie, addr, &out[n]);
		else
			line__call_site(&cudie, &chain[i + 1], &out[n]);
		n++;
	}
	/* The real function's line: the call site of the outermost inlined scope. */
	if (n)
		line__call_site(&cudie, &chain[first], &out[n]);
	else
		line__at(&cudie, addr, &out[0]);
	return n + 1;
}

/* ---- user addresses ---- */

static bool rc__eq(const void *entry, const void *key)
{
	const struct rcache_entry *e = entry, *k = key;

	return e->dso == k->dso && e->off == k->off;
}

/* Copy a cached result out; when the caller has fewer slots than frames the
 * outer (real) function is kept last. */
static int rc__copy(const struct symbolizer *s, const struct rcache_entry *e,
		    struct sym_frame *frames, int max)
{
	int n = (int)e->nr, i;

	if (!n || max <= 0)
		return 0;
	if (n <= max) {
		memcpy(frames, &s->frames[e->first], (size_t)n * sizeof(*frames));
		return n;
	}
	for (i = 0; i < max - 1; i++)
		frames[i] = s->frames[e->first + i];
	frames[max - 1] = s->frames[e->first + n - 1];
	return max;
}

/* Resolve one file offset of d, uncached: symbol table, then DWARF if asked. */
static int dso__resolve(struct symbolizer *s, struct sym_dso *d, uint64_t off, uint64_t pgoff,
			struct sym_frame *tmp, int max)
{
	const struct sym_entry *sym;
	uint64_t vaddr;
	int n = 1, i;

	if (!d->elf || sym_dso__vaddr(d, off, pgoff, &vaddr) < 0)
		return 0;
	sym = sym_entries__find(d->syms, d->nr_syms, vaddr);
	if (!sym)
		return 0;
	if (s->opts.srcline || s->opts.inlines) {
		memset(tmp, 0, (size_t)max * sizeof(*tmp));
		n = dwarf__frames(s, d, vaddr, tmp, max);
	} else {
		memset(tmp, 0, sizeof(*tmp)); /* the one frame: not the 33 (1.3 KiB) of every new address */
	}
	/* Outer frame: the symbol-table function; inlined frames keep only file:line when
	 * srcline was not asked. */
	tmp[n - 1].sym = symbolizer__name(s, sym->name);
	tmp[n - 1].offset = vaddr - sym->start;
	tmp[n - 1].inlined = false;
	if (!s->opts.srcline)
		for (i = 0; i < n; i++) {
			tmp[i].srcfile = NULL;
			tmp[i].line = 0;
		}
	return n;
}

int symbolizer__resolve(struct symbolizer *s, struct sym_dso *d, uint64_t map_start,
			uint64_t pgoff, uint64_t ip, struct sym_frame *frames, int max)
{
	struct sym_frame tmp[SYM_MAX_INLINE + 1];
	struct rcache_entry key, *e;
	uint64_t off, h;
	bool added;
	int n;

	if (!s || !d || !frames || max < 0)
		return -EINVAL;
	if (!d->elf || ip < map_start)
		return 0;
	off = ip - map_start + pgoff;
	/* Without file offsets only the distance into the mapping matters: cache on that. */
	key = (struct rcache_entry){ .off = d->no_offsets ? ip - map_start : off, .dso = d->idx };
	h = hash__mix(key.off ^ ((uint64_t)d->idx << 48) ^ ((uint64_t)d->idx >> 16));
	e = htab__find(&s->rc, h, rc__eq, &key);
	if (e)
		return rc__copy(s, e, frames, max);

	n = dso__resolve(s, d, off, pgoff, tmp, SYM_MAX_INLINE + 1);
	if (s->nomem)
		return -ENOMEM;
	if (s->nr_frames + (size_t)n > UINT32_MAX ||
	    vec__reserve((void **)&s->frames, &s->cap_frames, s->nr_frames + (size_t)n,
			 sizeof(*s->frames), 64))
		return -ENOMEM;
	e = htab__get(&s->rc, h, rc__eq, &key, &added);
	if (!e)
		return -ENOMEM;
	if (n)
		memcpy(&s->frames[s->nr_frames], tmp, (size_t)n * sizeof(*tmp));
	*e = key;
	e->first = (uint32_t)s->nr_frames;
	e->nr = (uint32_t)n;
	s->nr_frames += (size_t)n;
	return rc__copy(s, e, frames, max);
}

/* ---- kernel ---- */

void symbolizer__set_kernel_text(struct symbolizer *s, uint64_t text_addr)
{
	if (s)
		s->text_addr = text_addr;
}

void symbolizer__set_kernel_build_id(struct symbolizer *s, const uint8_t *build_id, size_t size)
{
	if (!s)
		return;
	s->kbid_size = size > SYM_BUILD_ID_MAX ? SYM_BUILD_ID_MAX : size;
	if (s->kbid_size)
		memcpy(s->kbid, build_id, s->kbid_size);
}

const char *symbolizer__kernel_warning(const struct symbolizer *s)
{
	return s && !s->kthread_running ? s->kwarning : NULL;
}

/*
 * The kallsyms that names the recorded kernel: the running kernel's when it
 * is that kernel (or nothing says otherwise), else perf's build-id cache
 * copy of the recorded kernel's.
 */
static const char *kallsyms__for_recording(struct symbolizer *s, char **cached)
{
	char h1[2 * SYM_BUILD_ID_MAX + 1], h2[2 * SYM_BUILD_ID_MAX + 1];
	uint8_t run[SYM_BUILD_ID_MAX];
	int n;

	*cached = NULL;
	if (s->kallsyms_given || !s->kbid_size)
		return s->kallsyms_path;
	n = sym_kernel_build_id(s->notes_path, run, sizeof(run));
	if (n <= 0 || build_id__equal(run, (size_t)n, s->kbid, s->kbid_size))
		return s->kallsyms_path;
	if (buildid_cache__find(s->buildid_dir, "[kernel.kallsyms]", s->kbid, s->kbid_size,
				"kallsyms", cached) == -ENOMEM) {
		s->knomem = true;
		return NULL;
	}
	if (*cached)
		return *cached;
	if (asprintf(&s->kwarning, "the recording's kernel (build id %s) is not the running one (%s) and %s has no copy of its kallsyms: kernel functions are not named",
		     build_id__hex(s->kbid, s->kbid_size, h1), build_id__hex(run, (size_t)n, h2),
		     s->buildid_dir[0] ? s->buildid_dir : "the build-id cache") < 0) {
		s->kwarning = NULL;
		s->knomem = true;
	}
	return NULL;
}

static void ksyms__load_now(struct symbolizer *s)
{
	const char *path;
	char *cached;
	int err;

	path = kallsyms__for_recording(s, &cached);
	if (path && path[0]) {
		s->ksyms = ksyms__load(path, &err);
		if (!s->ksyms && err == -ENOMEM)
			s->knomem = true;
	}
	free(cached);
}

/*
 * Whether this process may put a SCHED_IDLE thread back to SCHED_OTHER
 * (sched(7): root, CAP_SYS_NICE, or an RLIMIT_NICE that allows nice 0;
 * an unprivileged process is refused, and its idle thread would then wait
 * behind every other task of a busy machine at the end).
 */
static bool may_unidle(void)
{
	struct rlimit rl;

	return geteuid() == 0 || (getrlimit(RLIMIT_NICE, &rl) == 0 && rl.rlim_cur >= 20);
}

/*
 * The kallsyms thread. kallsyms is read (about 50 ms of the kernel's
 * formatting for 120 000 lines) while the walk runs, and only needed
 * after it; the walk's threads need both CPUs of a small machine. At
 * SCHED_IDLE the reading takes only what they leave, until it is waited
 * for (kthread_join()), unless it could not be put back then.
 */
static void *ksyms__thread(void *arg)
{
	struct symbolizer *s = arg;
	struct sched_param sp = { 0 };

	pthread_setname_np(pthread_self(), "offcpu-kallsyms"); /* in top and in profiles */
	pthread_mutex_lock(&s->idle_lock);
	if (!s->kthread_waited && may_unidle())
		s->kthread_idle = !sched_setscheduler(0, SCHED_IDLE, &sp); /* this thread only */
	pthread_mutex_unlock(&s->idle_lock);
	ksyms__load_now(s);
	return NULL;
}

int symbolizer__load_kernel_async(struct symbolizer *s)
{
	if (!s || s->ksyms_tried)
		return 0;
	s->ksyms_tried = true;
	if (pthread_create(&s->kthread, NULL, ksyms__thread, s)) {
		ksyms__load_now(s);
		return 0;
	}
	s->kthread_running = true;
	return 0;
}

const char *symbolizer__kernel_check(struct symbolizer *s)
{
	char *cached;

	if (!s)
		return NULL;
	if (!s->ksyms_tried) {
		s->ksyms_tried = true;
		kallsyms__for_recording(s, &cached);
		free(cached);
	}
	return symbolizer__kernel_warning(s);
}

/* The kernel's symbols, loaded now, or waited for when loading in the background. */
static struct ksyms *symbolizer__ksyms(struct symbolizer *s)
{
	if (s->kthread_running)
		kthread_join(s);
	if (!s->ksyms_tried) {
		s->ksyms_tried = true;
		ksyms__load_now(s);
	}
	return s->ksyms;
}

/*
 * KASLR: the recording's kernel image may sit elsewhere than this
 * kallsyms' one. Addresses inside the recorded image are shifted by the
 * difference of the two `_text`; module addresses are taken as they are.
 */
int symbolizer__resolve_kernel(struct symbolizer *s, uint64_t ip, struct sym_frame *frame,
			       const char **module)
{
	const struct sym_entry *e;
	struct ksyms *k;
	uint64_t ktext, addr = ip;

	if (module)
		*module = "[kernel.kallsyms]";
	if (!s || !frame)
		return -EINVAL;
	memset(frame, 0, sizeof(*frame));
	k = symbolizer__ksyms(s);
	if (!k)
		return s->knomem ? -ENOMEM : 0;
	ktext = ksyms__text(k);
	if (s->text_addr && ktext && s->text_addr != ktext && ip >= s->text_addr &&
	    ip - s->text_addr < ksyms__image_end(k) - ktext)
		addr = ip - s->text_addr + ktext;
	e = ksyms__find(k, addr);
	if (!e)
		return 0;
	frame->sym = e->name;
	frame->offset = addr - e->start;
	if (module && e->module)
		*module = e->module;
	return 1;
}

/* ---- JIT maps ---- */

static bool pm__eq(const void *entry, const void *key)
{
	return ((const struct pid_map *)entry)->pid == *(const int *)key;
}

int symbolizer__resolve_perfmap(struct symbolizer *s, int pid, uint64_t ip,
				struct sym_frame *frame)
{
	const struct sym_entry *e;
	struct perfmap *m = NULL;
	uint64_t h = hash__mix((uint64_t)(uint32_t)pid);
	struct pid_map *pe;
	char *path = NULL;
	bool added;
	int err;

	if (!s || !frame)
		return -EINVAL;
	memset(frame, 0, sizeof(*frame));
	pe = htab__find(&s->pm, h, pm__eq, &pid);
	if (pe) {
		m = pe->map;
	} else {
		/* Read once per pid, a missing file included. */
		if (asprintf(&path, "%s/perf-%d.map", s->perfmap_dir, pid) < 0)
			return -ENOMEM;
		m = perfmap__load(path, &err);
		free(path);
		pe = htab__get(&s->pm, h, pm__eq, &pid, &added);
		if (!pe) {
			perfmap__free(m);
			return -ENOMEM;
		}
		*pe = (struct pid_map){ .pid = pid, .map = m };
	}
	if (!m || !(e = perfmap__find(m, ip)))
		return 0;
	frame->sym = symbolizer__name(s, e->name);
	frame->offset = ip - e->start;
	return s->nomem ? -ENOMEM : 1;
}
