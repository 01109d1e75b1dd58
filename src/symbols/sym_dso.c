// SPDX-License-Identifier: GPL-2.0-only
/*
 * One mapped file: its ELF (opened once), its PT_LOAD segments to turn file
 * offsets into link-time addresses, its function symbols sorted once, and
 * on request its DWARF (from a separate debug file when it is stripped).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>
#include <elfutils/libdw.h>

#include "symbols/build_id.h"
#include "symbols/sym_dso.h"

/* Open path as a memory-mapped ELF and give the descriptor back at once:
 * the mapping keeps the data, so hundreds of DSOs cost no descriptors.
 * Only a regular file is opened (a FIFO named in a recording would block). */
static Elf *elf__open(const char *path, int *err)
{
	Elf *elf;
	int fd;

	fd = sym_open_regular(path);
	if (fd < 0) {
		*err = fd == -EINVAL ? -ENOEXEC : fd;
		return NULL;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		elf = NULL;
	}
	if (!elf) {
		*err = -ENOEXEC;
		close(fd);
		return NULL;
	}
	elf_cntl(elf, ELF_C_FDDONE);
	close(fd);
	*err = 0;
	return elf;
}

/*
 * Give back the pages of a file mapped by elf__open that loading its
 * symbols made resident: the whole symbol and string tables, 2 MB for
 * cc1's. The mapping stays (the symbols' names point into it); the names
 * the samples hit are read again from the page cache when they are asked
 * for. Without this every file a recording touched would stay resident,
 * a quarter of what script holds on a 100 MB system-wide recording.
 */
static void elf__drop_pages(Elf *elf, uint64_t page_size)
{
	const int native = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
	const char *ident = elf ? elf_getident(elf, NULL) : NULL;
	size_t n;
	char *p;

	/* libelf converts a file of the other byte order in its private
	 * mapping: dropped, those pages would come back unconverted */
	if (!ident || ident[EI_DATA] != native)
		return;
	p = elf_rawfile(elf, &n);
	if (p && n && !((uintptr_t)p & (page_size - 1)))
		madvise(p, n, MADV_DONTNEED);
}

static Elf_Scn *elf__section(Elf *elf, const char *name, Elf64_Word type)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		const char *n;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (type != SHT_NULL && sh.sh_type != type)
			continue;
		if (!name)
			return scn;
		n = elf_strptr(elf, shstrndx, sh.sh_name);
		if (n && strcmp(n, name) == 0)
			return scn;
	}
	return NULL;
}

static bool elf__has_symtab(Elf *elf)
{
	return elf__section(elf, NULL, SHT_SYMTAB) != NULL;
}

static bool elf__has_dwarf(Elf *elf)
{
	Elf_Scn *scn = elf__section(elf, ".debug_info", SHT_PROGBITS);

	if (!scn)
		scn = elf__section(elf, ".zdebug_info", SHT_PROGBITS);
	return scn != NULL;
}

static void dso__set_warning(struct sym_dso *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void dso__set_warning(struct sym_dso *d, const char *fmt, ...)
{
	va_list ap;
	char *w = NULL;

	if (d->warning)
		return; /* the first problem is the one worth telling */
	va_start(ap, fmt);
	if (vasprintf(&w, fmt, ap) < 0)
		w = NULL;
	va_end(ap);
	d->warning = w ? w : strdup("symbolizer warning");
}

/* A candidate debug file is accepted only when it is provably the same build:
 * equal build ids, or (no build id on either side) the debuglink CRC. */
static Elf *debug__try(const char *path, const uint8_t *bid, size_t bsz, bool check_crc,
		       uint32_t crc)
{
	uint8_t fbid[SYM_BUILD_ID_MAX];
	Elf *elf;
	int err, n;

	elf = elf__open(path, &err);
	if (!elf)
		return NULL;
	n = elf__build_id(elf, fbid, sizeof(fbid));
	if (bsz && n > 0) {
		if (build_id__equal(bid, bsz, fbid, (size_t)n))
			return elf;
	} else if (check_crc) {
		size_t size = 0;
		char *raw = elf_rawfile(elf, &size);

		if (raw && (uint32_t)crc32(0, (const Bytef *)raw, (uInt)size) == crc && size < (1ull << 32))
			return elf;
	} else if (!bsz && n <= 0) {
		return elf;
	}
	elf_end(elf);
	return NULL;
}

static Elf *debug__by_build_id(const char *debug_dir, const uint8_t *bid, size_t bsz)
{
	char hex[2 * SYM_BUILD_ID_MAX + 1], *path = NULL;
	Elf *elf;

	if (!bsz || bsz > SYM_BUILD_ID_MAX)
		return NULL;
	build_id__hex(bid, bsz, hex);
	/* Trailing zero padding of a recorded id is not part of the name. */
	while (bsz > 1 && !bid[bsz - 1])
		hex[2 * --bsz] = '\0';
	if (asprintf(&path, "%s/.build-id/%.2s/%s.debug", debug_dir, hex, hex + 2) < 0)
		return NULL;
	elf = debug__try(path, bid, bsz, false, 0);
	free(path);
	return elf;
}

/* .gnu_debuglink: a NUL-terminated name, padded to 4, then a CRC32 of the debug file.
 * Looked for beside the file, in its .debug/ directory and under debug_dir. */
static Elf *debug__by_link(const char *debug_dir, const char *path, Elf *elf,
			   const uint8_t *bid, size_t bsz)
{
	Elf_Scn *scn = elf__section(elf, ".gnu_debuglink", SHT_NULL);
	char *dir_copy = NULL, *cand = NULL;
	const char *name, *dir;
	Elf_Data *data;
	Elf *dbg = NULL;
	size_t nlen, off;
	uint32_t crc;
	int i;

	if (!scn || !(data = elf_getdata(scn, NULL)) || !data->d_buf || !data->d_size)
		return NULL;
	name = data->d_buf;
	nlen = strnlen(name, data->d_size);
	off = (nlen + 4) & ~(size_t)3;
	if (nlen == 0 || nlen == data->d_size || off + 4 > data->d_size || memchr(name, '/', nlen))
		return NULL;
	memcpy(&crc, (const char *)data->d_buf + off, 4);
	dir_copy = strdup(path);
	if (!dir_copy)
		return NULL;
	dir = dirname(dir_copy);
	for (i = 0; i < 3 && !dbg; i++) {
		int r;

		if (i == 0)
			r = asprintf(&cand, "%s/%.*s", dir, (int)nlen, name);
		else if (i == 1)
			r = asprintf(&cand, "%s/.debug/%.*s", dir, (int)nlen, name);
		else
			r = asprintf(&cand, "%s/%s/%.*s", debug_dir, dir, (int)nlen, name);
		if (r < 0) {
			cand = NULL;
			break;
		}
		/* The file may link to a name equal to its own: never take it for its debug file. */
		if (strcmp(cand, path) != 0)
			dbg = debug__try(cand, bid, bsz, true, crc);
		free(cand);
		cand = NULL;
	}
	free(dir_copy);
	return dbg;
}

static int segs__load(struct sym_dso *d, Elf *elf)
{
	size_t phnum = 0, i;

	if (elf_getphdrnum(elf, &phnum) != 0 || !phnum)
		return 0;
	d->segs = calloc(phnum, sizeof(*d->segs));
	if (!d->segs)
		return -ENOMEM;
	for (i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		d->segs[d->nr_segs].offset = ph.p_offset;
		d->segs[d->nr_segs].filesz = ph.p_filesz;
		d->segs[d->nr_segs].memsz = ph.p_memsz;
		d->segs[d->nr_segs].vaddr = ph.p_vaddr;
		d->segs[d->nr_segs].flags = ph.p_flags;
		d->nr_segs++;
	}
	return 0;
}

/* Function symbols of one symbol table; names stay inside the mapped ELF. */
static int syms__load(struct sym_dso *d, Elf *elf, Elf64_Word type)
{
	Elf_Scn *scn = elf__section(elf, NULL, type);
	GElf_Shdr sh;
	Elf_Data *data;
	size_t n, i;

	if (!scn || !gelf_getshdr(scn, &sh) || !sh.sh_entsize)
		return 0;
	data = elf_getdata(scn, NULL);
	if (!data)
		return 0;
	n = data->d_size / sh.sh_entsize;
	if (n > UINT32_MAX)
		return -E2BIG;
	d->syms = calloc(n ? n : 1, sizeof(*d->syms));
	if (!d->syms)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		GElf_Sym sym;
		const char *name;
		int t;

		if (!gelf_getsym(data, (int)i, &sym))
			continue;
		t = GELF_ST_TYPE(sym.st_info);
		if ((t != STT_FUNC && t != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF ||
		    !sym.st_value || !sym.st_name)
			continue;
		/* not read here: a name is touched when a sample needs it (perf's test too is st_name) */
		name = elf_strptr(elf, sh.sh_link, sym.st_name);
		if (!name)
			continue;
		d->syms[d->nr_syms++] = (struct sym_entry){
			.start = sym.st_value,
			.size = sym.st_size,
			.name = name,
			.seq = (uint32_t)i,
			.bind = (uint8_t)GELF_ST_BIND(sym.st_info),
			.ifunc = t == STT_GNU_IFUNC,
		};
	}
	return 0;
}

struct plt_rel {
	uint64_t offset; /* of its GOT slot */
	int64_t addend;
	uint32_t sym;
};

static int plt_rel__cmp(const void *a, const void *b)
{
	const struct plt_rel *x = a, *y = b;

	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/*
 * The name of an IRELATIVE stub (no symbol: the linker resolved an IFUNC
 * of the file itself, as libc's memcpy): the IFUNC whose resolver the
 * addend is, named among its aliases as an address is; NULL when there is
 * none.
 */
static const char *plt__ifunc_name(const struct sym_entry *syms, size_t nr, uint64_t resolver)
{
	const struct sym_entry *best = NULL;
	bool ifunc = false;

	for (size_t i = 0; i < nr; i++) {
		if (syms[i].start != resolver)
			continue;
		ifunc |= syms[i].ifunc;
		if (!best || sym_entry__perf_prefer(&syms[i], best) > 0)
			best = &syms[i];
	}
	return ifunc ? best->name : NULL;
}

/* A stub's name into buf, as snprintf: "name@plt", else "offset_0x...@plt" at its file offset. */
static int plt__name(char *buf, size_t size, const char *name, uint64_t offset)
{
	if (name && *name)
		return snprintf(buf, size, "%s@plt", name);
	return snprintf(buf, size, "offset_%#" PRIx64 "@plt", offset);
}

/*
 * Symbols for the PLT stubs, named "sym@plt" as perf and objdump name them,
 * in .plt.sec when there is one (IBT), else in .plt after its header entry
 * (PLT0). On x86 the stubs follow their GOT slots, not the relocations: a
 * file with IFUNCs of its own (libc) lists its IRELATIVE relocations last
 * while their stubs sit among the others, so the relocations are sorted by
 * slot first (as objdump and perf since 6.2 do; perf 6.1 does not, and
 * misnames most of libc's). An IRELATIVE stub is named after its IFUNC, else
 * "offset_0x...@plt" at its file offset, as perf names it. Names are
 * demangled (when asked) before the suffix, as perf does.
 */
static int plt__load(struct sym_dso *d, Elf *elf)
{
	Elf_Scn *rel = elf__section(elf, ".rela.plt", SHT_RELA), *plt, *dsym;
	size_t n, i, names = 0, used = 0, nr_loaded = d->nr_syms;
	struct plt_rel *rels = NULL;
	uint64_t entsize, header;
	GElf_Shdr rsh, psh, dsh;
	Elf_Data *rdata, *sdata;
	struct sym_entry *e;
	int err = 0;
	GElf_Ehdr eh;

	plt = elf__section(elf, ".plt.sec", SHT_PROGBITS);
	header = plt ? 0 : 1;
	if (!plt)
		plt = elf__section(elf, ".plt", SHT_PROGBITS);
	if (!rel || !plt || !gelf_getshdr(rel, &rsh) || !gelf_getshdr(plt, &psh) || !rsh.sh_entsize ||
	    !gelf_getehdr(elf, &eh))
		return 0;
	dsym = elf_getscn(elf, rsh.sh_link);
	if (!dsym || !gelf_getshdr(dsym, &dsh) || dsh.sh_type != SHT_DYNSYM)
		return 0;
	rdata = elf_getdata(rel, NULL);
	sdata = elf_getdata(dsym, NULL);
	if (!rdata || !sdata)
		return 0;
	entsize = psh.sh_entsize ? psh.sh_entsize : 16;
	if (eh.e_machine == EM_AARCH64) { /* its PLT0 is two entries long */
		entsize = 16;
		header *= 2;
	}
	header *= entsize;
	n = rsh.sh_size / rsh.sh_entsize;
	if (n > (psh.sh_size > header ? (psh.sh_size - header) / entsize : 0))
		n = psh.sh_size > header ? (psh.sh_size - header) / entsize : 0;
	if (!n)
		return 0;
	rels = calloc(n, sizeof(*rels));
	if (!rels)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		GElf_Rela r;

		if (gelf_getrela(rdata, (int)i, &r))
			rels[i] = (struct plt_rel){ r.r_offset, r.r_addend, (uint32_t)GELF_R_SYM(r.r_info) };
	}
	if (eh.e_machine == EM_X86_64 || eh.e_machine == EM_386)
		qsort(rels, n, sizeof(*rels), plt_rel__cmp);

	/* one pass for the size of the names, one to fill them */
	for (int pass = 0; pass < 2; pass++) {
		for (i = 0; i < n; i++) {
			uint64_t start = psh.sh_addr + header + i * entsize;
			const char *name = NULL;
			char *dm = NULL;
			GElf_Sym sym;
			int len;

			if (rels[i].sym && gelf_getsym(sdata, (int)rels[i].sym, &sym))
				name = elf_strptr(elf, dsh.sh_link, sym.st_name);
			else if (!rels[i].sym)
				name = plt__ifunc_name(d->syms, nr_loaded, (uint64_t)rels[i].addend);
			if (name && *name && d->demangle && sym_demangle(name, &dm) == -ENOMEM) {
				err = -ENOMEM;
				goto cleanup;
			}
			if (dm)
				name = dm;
			len = plt__name(pass ? d->plt_names + used : NULL, pass ? names - used : 0, name,
					psh.sh_offset + header + i * entsize);
			if (pass == 0) {
				names += (size_t)len + 1;
			} else {
				d->syms[d->nr_syms++] = (struct sym_entry){
					.start = start,
					.size = entsize,
					.name = d->plt_names + used,
					.seq = UINT32_MAX - (uint32_t)(n - i),
					.bind = STB_GLOBAL,
				};
				used += (size_t)len + 1;
			}
			free(dm);
		}
		if (pass == 0) {
			d->plt_names = malloc(names);
			e = realloc(d->syms, (d->nr_syms + n) * sizeof(*e));
			if (e)
				d->syms = e;
			if (!d->plt_names || !e) {
				err = -ENOMEM;
				goto cleanup;
			}
		}
	}
cleanup:
	free(rels);
	return err;
}

/*
 * The function symbols of the loaded ELF (from its debug file when that has
 * the full table), its PLT stubs, sorted; aliases (one start, several
 * names) named as perf names them.
 */
static int syms__finish(struct sym_dso *d)
{
	int err;

	if (d->dbg && elf__has_symtab(d->dbg))
		err = syms__load(d, d->dbg, SHT_SYMTAB);
	else if (elf__has_symtab(d->elf))
		err = syms__load(d, d->elf, SHT_SYMTAB);
	else
		err = syms__load(d, d->elf, SHT_DYNSYM);
	if (!err && !d->no_offsets)
		err = plt__load(d, d->elf);
	if (err)
		return err;
	if (d->nr_syms)
		d->nr_syms = sym_entries__finish(d->syms, d->nr_syms, 0, sym_entry__perf_prefer);
	return 0;
}

/*
 * Is d's ELF the build recorded (or is no build id there to tell)? When it
 * is another, the DSO resolves nothing and says why: never misresolved.
 */
static bool dso__same_build(struct sym_dso *d, const char *what)
{
	char hex1[2 * SYM_BUILD_ID_MAX + 1], hex2[2 * SYM_BUILD_ID_MAX + 1];
	uint8_t fbid[SYM_BUILD_ID_MAX];
	int n;

	if (!d->build_id_size)
		return true;
	n = elf__build_id(d->elf, fbid, sizeof(fbid));
	if (n <= 0 || build_id__equal(d->build_id, d->build_id_size, fbid, (size_t)n))
		return true;
	dso__set_warning(d, "%s: build id mismatch: recorded %s, %s has %s", d->path,
			 build_id__hex(d->build_id, d->build_id_size, hex1), what,
			 build_id__hex(fbid, (size_t)n, hex2));
	elf_end(d->elf);
	d->elf = NULL;
	return false;
}

int sym_dso__load_image(struct sym_dso *d, void *image, size_t len)
{
	int err;

	d->image = image;
	d->page_size = 4096;
	d->elf = elf_memory(image, len);
	if (d->elf && elf_kind(d->elf) != ELF_K_ELF) {
		elf_end(d->elf);
		d->elf = NULL;
	}
	if (!d->elf) {
		dso__set_warning(d, "%s: the image is not an ELF file", d->path);
		return 0;
	}
	if (!dso__same_build(d, "image"))
		return 0;
	err = segs__load(d, d->elf);
	return err ? err : syms__finish(d);
}

/*
 * Open everything the DSO needs at once, so the warning is known when the
 * caller first asks: a missing file falls back to the debug file of the
 * recorded build id; a build id other than the recorded one disables the DSO.
 */
int sym_dso__load(struct sym_dso *d, const char *debug_dir, bool want_dwarf)
{
	uint8_t fbid[SYM_BUILD_ID_MAX];
	char hex1[2 * SYM_BUILD_ID_MAX + 1];
	long ps = sysconf(_SC_PAGESIZE);
	int err, n;

	d->page_size = ps > 0 ? (uint64_t)ps : 4096;
	d->elf = elf__open(d->file ? d->file : d->path, &err);
	if (!d->elf) {
		d->elf = debug__by_build_id(debug_dir, d->build_id, d->build_id_size);
		if (!d->elf) {
			if (d->build_id_size)
				dso__set_warning(d, "%s: %s, and no debug file for build id %s in %s",
						 d->path, strerror(-err),
						 build_id__hex(d->build_id, d->build_id_size, hex1),
						 debug_dir);
			else
				dso__set_warning(d, "%s: %s", d->path, strerror(-err));
			return 0;
		}
		d->dbg = d->elf; /* the debug file stands in for the file */
		d->no_offsets = true;
	} else if (!dso__same_build(d, "file")) {
		return 0;
	}
	err = segs__load(d, d->elf);
	if (err < 0)
		return err;

	if (!d->dbg && (!elf__has_symtab(d->elf) || (want_dwarf && !elf__has_dwarf(d->elf)))) {
		const uint8_t *bid = d->build_id;
		size_t bsz = d->build_id_size;

		n = elf__build_id(d->elf, fbid, sizeof(fbid));
		if (n > 0) {
			bid = fbid;
			bsz = (size_t)n;
		}
		d->dbg = debug__by_build_id(debug_dir, bid, bsz);
		if (!d->dbg)
			d->dbg = debug__by_link(debug_dir, d->path, d->elf, bid, bsz);
		if (d->dbg)
			d->own_dbg = true;
	}
	err = syms__finish(d);
	elf__drop_pages(d->elf, d->page_size);
	if (d->own_dbg)
		elf__drop_pages(d->dbg, d->page_size);
	return err;
}

Dwarf *sym_dso__dwarf(struct sym_dso *d)
{
	if (d->dwarf_tried)
		return d->dwarf;
	d->dwarf_tried = true;
	if (d->dbg && elf__has_dwarf(d->dbg))
		d->dwarf = dwarf_begin_elf(d->dbg, DWARF_C_READ, NULL);
	if (!d->dwarf && d->elf && elf__has_dwarf(d->elf))
		d->dwarf = dwarf_begin_elf(d->elf, DWARF_C_READ, NULL);
	return d->dwarf;
}

/*
 * File offset -> link-time address through the PT_LOAD that holds it. Files
 * without program headers are taken as linked at 0. A debug file standing in
 * for a missing file has its segment offsets zeroed: there the mapping is
 * taken to be the (first) executable segment, as sampled ips are code, and
 * the address is found from the distance into the mapping.
 */
int sym_dso__vaddr(const struct sym_dso *d, uint64_t off, uint64_t pgoff, uint64_t *vaddr)
{
	size_t i;

	if (d->no_offsets) {
		for (i = 0; i < d->nr_segs; i++) {
			const struct sym_seg *s = &d->segs[i];

			if (s->flags & PF_X) {
				*vaddr = off - pgoff + (s->vaddr & ~(d->page_size - 1));
				return 0;
			}
		}
		return -ENOENT;
	}
	if (!d->nr_segs) {
		*vaddr = off;
		return 0;
	}
	for (i = 0; i < d->nr_segs; i++) {
		const struct sym_seg *s = &d->segs[i];

		if (off >= s->offset && off - s->offset < (s->filesz > s->memsz ? s->filesz : s->memsz)) {
			*vaddr = off - s->offset + s->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

void sym_dso__exit(struct sym_dso *d)
{
	if (d->dwarf)
		dwarf_end(d->dwarf);
	if (d->own_dbg)
		elf_end(d->dbg);
	elf_end(d->elf);
	free(d->image);
	free(d->plt_names);
	free(d->segs);
	free(d->syms);
	free(d->warning);
	free(d->path);
	free(d->file);
}
