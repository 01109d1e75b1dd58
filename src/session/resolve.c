// SPDX-License-Identifier: GPL-2.0-only
/*
 * An address seen for the first time, to its frames: each (DSO, address)
 * is symbolized once and kept as a run of interned frames in s->res. One
 * resolver per kind of DSO:
 *   kernel   kallsyms of the recorded kernel (named at the end of the run
 *            with session_opts.defer_kernel, a placeholder frame until then)
 *   file     an ELF file through the symbolizer, inlined frames included
 *   JIT      a mapping without a file: the process's perf-PID.map
 *   unknown  an address in no mapping
 * Problems with a file or the kernel (no symbols, another build) are
 * warnings to the caller's sink, once each; running out of memory is an
 * error.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "session/session_int.h"
#include "util/hash.h"
#include "util/vec.h"

void resolve__init(struct session *s)
{
	htab__init(&s->frames, sizeof(struct frame));
	htab__init(&s->addrs, sizeof(struct addr_ent));
}

void resolve__free(struct session *s)
{
	htab__free(&s->frames);
	htab__free(&s->addrs);
	free(s->res);
	free(s->remap);
}

static bool frame_eq(const void *entry, const void *key)
{
	const struct frame *a = entry, *b = key;

	return a->sym == b->sym && a->dso == b->dso && a->addr == b->addr &&
	       a->srcfile == b->srcfile && a->line == b->line && a->kernel == b->kernel &&
	       a->inlined == b->inlined;
}

/* Intern a frame whose strings are already interned. */
int resolve__frame(struct session *s, const struct frame *f, uint32_t *id)
{
	uint64_t h = hash__mix((uintptr_t)f->sym ^ hash__mix((uintptr_t)f->dso) ^
			       hash__mix(f->addr + f->line * 31 + f->kernel * 7 + f->inlined) ^
			       (uintptr_t)f->srcfile);
	struct frame *e;
	bool added;

	e = htab__get(&s->frames, h, frame_eq, f, &added);
	if (!e)
		return -ENOMEM;
	if (added)
		*e = *f;
	*id = e - (struct frame *)s->frames.v;
	return 0;
}

/* The interned frame of one resolved address: sym, else the address (map-relative). */
static int frame_of(struct session *s, const char *sym, const char *dso, const char *dso_short,
		    uint64_t addr, const struct sym_frame *sf, bool kernel, uint32_t *id)
{
	struct frame f = { 0 };

	f.dso = dso;
	f.dso_short = dso_short;
	f.kernel = kernel;
	if (sym) {
		f.sym = intern__str(&s->strs, sym);
		if (!f.sym)
			return -ENOMEM;
	} else {
		f.addr = addr;
	}
	if (sf && sf->srcfile) {
		f.srcfile = intern__str(&s->strs, sf->srcfile);
		if (!f.srcfile)
			return -ENOMEM;
		f.line = sf->line;
	}
	if (sf)
		f.inlined = sf->inlined;
	return resolve__frame(s, &f, id);
}

/* Append one frame of the address being resolved to s->res. */
static int res_add(struct session *s, uint32_t frame, uint64_t off)
{
	struct res *r = vec__push((void **)&s->res, &s->nr_res, &s->cap_res, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->frame = frame;
	r->off = off;
	return 0;
}

static int res_add_frame(struct session *s, const char *sym, const char *dso,
			 const char *dso_short, uint64_t addr, uint64_t off,
			 const struct sym_frame *sf, bool kernel)
{
	uint32_t id;
	int err = frame_of(s, sym, dso, dso_short, addr, sf, kernel, &id);

	return err ? err : res_add(s, id, off);
}

/* "[unknown]", interned once (every new address outside any map needs it). */
static const char *str_unknown(struct session *s)
{
	if (!s->str_unknown)
		s->str_unknown = intern__str(&s->strs, "[unknown]");
	return s->str_unknown;
}

/*
 * The frame of a kernel address: its function from kallsyms (of the
 * recorded kernel), its module; an address named by nothing and outside
 * the kernel's map has no known DSO, as perf shows it.
 */
static int kernel_frame(struct session *s, uint64_t ip, uint32_t *id, uint64_t *off)
{
	struct sym_frame sf = { 0 };
	const char *module = NULL, *mod;
	int ok = 0;

	if (!s->opts.no_symbols) {
		ok = symbolizer__resolve_kernel(s->sym, ip, &sf, &module);
		if (ok < 0)
			return ok;
	}
	if (!s->kernel_warned && symbolizer__kernel_warning(s->sym)) {
		s->kernel_warned = true;
		msg__say(&s->opts.msg, MSG_WARNING, "%s", symbolizer__kernel_warning(s->sym));
	}
	mod = intern__str(&s->strs, module ? module : "[kernel.kallsyms]");
	if (!(ok > 0 && sf.sym) && s->kernel_end > s->kernel_start &&
	    (ip < s->kernel_start || ip >= s->kernel_end))
		mod = str_unknown(s);
	if (!mod)
		return -ENOMEM;
	*off = ok > 0 && sf.sym ? sf.offset : 0;
	return ok > 0 && sf.sym ? frame_of(s, sf.sym, mod, mod, ip, &sf, true, id) :
				  frame_of(s, NULL, mod, mod, ip, NULL, true, id);
}

/* A frame standing for a kernel address until it is named: one per address. */
static int kernel_placeholder(struct session *s, uint64_t ip, uint32_t *id)
{
	const char *k = s->str_kernel;

	if (!k)
		k = s->str_kernel = intern__str(&s->strs, "[kernel.kallsyms]");
	return k ? frame_of(s, NULL, k, k, ip, NULL, true, id) : -ENOMEM;
}

/* A kernel address: named now, or given a placeholder to name at the run's end (or never). */
static int resolve_kernel(struct session *s, uint64_t ip, bool *pending)
{
	uint64_t off = 0;
	uint32_t id;
	int err;

	if (s->opts.no_kernel_names) {
		if (!s->kernel_warned && !s->opts.no_symbols && symbolizer__kernel_check(s->sym)) {
			s->kernel_warned = true;
			msg__say(&s->opts.msg, MSG_WARNING, "%s", symbolizer__kernel_warning(s->sym));
		}
		err = kernel_placeholder(s, ip, &id);
		return err ? err : res_add(s, id, 0);
	}
	*pending = s->kernel_deferred;
	err = s->kernel_deferred ? kernel_placeholder(s, ip, &id) : kernel_frame(s, ip, &id, &off);
	return err ? err : res_add(s, id, off);
}

/* An address in no mapping of its process: [unknown], the address shown. */
static int resolve_unknown(struct session *s, uint64_t ip)
{
	const char *u = str_unknown(s);

	return u ? res_add_frame(s, NULL, u, u, ip, 0, NULL, false) : -ENOMEM;
}

/* JIT code: the function perf-PID.map names there, 1 frame or 0. */
static int resolve_perfmap(struct session *s, const struct dso_ent *d, uint32_t pid,
			   uint64_t ip, uint64_t key_addr)
{
	struct sym_frame sf = { 0 };
	int err, got = symbolizer__resolve_perfmap(s->sym, pid, ip, &sf);

	if (got < 0)
		return got;
	if (!got || !sf.sym)
		return 0;
	err = res_add_frame(s, sf.sym, d->name, d->short_name, key_addr, sf.offset, &sf, false);
	return err ? err : 1;
}

/* The symbolizer's view of a file, looked up once; its warning said once. */
static int file_dso(struct session *s, struct dso_ent *d)
{
	const uint8_t *bid;
	size_t bsz = 0;

	if (d->looked_up)
		return 0;
	bid = perf_reader__build_id(s->reader, d->name, &bsz);
	d->sd = symbolizer__dso(s->sym, d->name, bid, bsz);
	if (!d->sd)
		return -ENOMEM;
	d->looked_up = true;
	if (sym_dso__warning(d->sd))
		msg__say(&s->opts.msg, MSG_WARNING, "%s", sym_dso__warning(d->sd));
	return 0;
}

/* A file's function at ip, and with --inline the functions inlined there: their count. */
static int resolve_file(struct session *s, struct dso_ent *d, const struct map *m, uint64_t ip,
			uint64_t key_addr)
{
	struct sym_frame sf[MAX_INLINE];
	int got, n = 0, err = file_dso(s, d);

	if (err)
		return err;
	/* sf[0, got) filled: nothing past them is read (a 640-byte memset for every new address) */
	got = symbolizer__resolve(s->sym, d->sd, m->start, m->pgoff, ip, sf,
				  s->opts.inlines ? MAX_INLINE : 1);
	if (got < 0)
		return got;
	for (int i = 0; i < got; i++) {
		if (!sf[i].sym)
			continue;
		err = res_add_frame(s, sf[i].sym, d->name, d->short_name, key_addr, sf[i].offset,
				    &sf[i], false);
		if (err)
			return err;
		n++;
	}
	return n;
}

/* The frames of an address in a mapping of d: named ones, else one [dso] frame. */
static int resolve_mapped(struct session *s, uint32_t dso, const struct map *m, uint64_t ip,
			  uint64_t key_addr, uint32_t pid)
{
	struct dso_ent *d = htab__at(&s->dsos, dso);
	int n = 0;

	if (!s->opts.no_symbols)
		n = d->anon ? resolve_perfmap(s, d, pid, ip, key_addr) :
			      resolve_file(s, d, m, ip, key_addr);
	if (n)
		return n;
	n = res_add_frame(s, NULL, d->name, d->short_name, key_addr, 0, NULL, false);
	return n ? n : 1;
}

struct addr_key {
	uint32_t dso;
	uint64_t addr;
};

static bool addr_eq(const void *entry, const void *key)
{
	const struct addr_ent *a = entry;
	const struct addr_key *k = key;

	return a->addr == k->addr && a->dso == k->dso;
}

/*
 * The entry of an address (*ent, its index in s->addrs), symbolized on
 * first sight. dso is DSO_KERNEL, DSO_UNKNOWN or a DSO index with map m;
 * key_addr the address as the entry keeps it (map-relative in a file).
 */
int resolve__addr(struct session *s, uint32_t dso, const struct map *m, uint64_t key_addr,
		  uint64_t ip, uint32_t pid, uint32_t *ent)
{
	struct addr_key k = { dso, key_addr };
	uint64_t h = hash__mix(key_addr ^ hash__mix(dso));
	struct addr_ent *a = htab__find(&s->addrs, h, addr_eq, &k);
	uint32_t first = s->nr_res;
	bool pending = false, added;
	int n = 1, err;

	if (a) {
		*ent = a - addr_at(s, 0);
		return 0;
	}
	if (dso == DSO_KERNEL)
		err = resolve_kernel(s, ip, &pending);
	else if (dso == DSO_UNKNOWN)
		err = resolve_unknown(s, ip);
	else
		err = n = resolve_mapped(s, dso, m, ip, key_addr, pid);
	if (err < 0)
		return err;
	a = htab__get(&s->addrs, h, addr_eq, &k, &added);
	if (!a)
		return -ENOMEM;
	a->dso = dso;
	a->addr = key_addr;
	a->first = first;
	a->n = n;
	a->pending = pending;
	*ent = a - addr_at(s, 0);
	for (int i = 0; i < n; i++)
		s->res[first + i].ent = *ent;
	return 0;
}

/*
 * Name the kernel addresses left for later (session_opts.defer_kernel) and
 * note, per placeholder frame, the frame that replaces it (session__remap).
 */
int resolve__kernel_finish(struct session *s)
{
	uint32_t nf = htab__n(&s->frames);

	s->kernel_deferred = false;
	s->remap = malloc((nf ? nf : 1) * sizeof(*s->remap));
	if (!s->remap)
		return -ENOMEM;
	for (uint32_t i = 0; i < nf; i++)
		s->remap[i] = i;
	s->nr_remap = nf;
	for (size_t i = 0; i < htab__n(&s->addrs); i++) {
		struct addr_ent *a = addr_at(s, i);
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
