/* SPDX-License-Identifier: GPL-2.0-only */
/* The symbolizer's view of one mapped file (internal). */
#ifndef OFFCPU_SYM_DSO_H
#define OFFCPU_SYM_DSO_H

#include <stdarg.h>
#include <stdbool.h>
#include <libelf.h>
#include <elfutils/libdw.h>

#include "symbols/build_id.h"
#include "symbols/sym_internal.h"

struct sym_seg {
	uint64_t offset, filesz, memsz, vaddr;
	uint32_t flags;
};

struct sym_dso {
	char *path;
	char *file;		/* opened instead of path (a build-id cache copy), or NULL */
	void *image;		/* the ELF in memory (a vDSO image), or NULL; owned */
	char *plt_names;	/* names of the synthesized PLT symbols ("sym@plt"), one block */
	bool demangle;		/* PLT names demangled before "@plt" (set before loading) */
	uint8_t build_id[SYM_BUILD_ID_MAX];
	size_t build_id_size;
	uint32_t idx;		/* in the symbolizer's table, part of cache keys */
	char *warning;
	Elf *elf;		/* the mapped file (or its debug file when missing); NULL = resolves nothing */
	Elf *dbg;		/* separate debug file, or NULL */
	bool own_dbg;		/* dbg is not elf */
	bool no_offsets;	/* elf is a debug file: its segments lost their file offsets */
	uint64_t page_size;
	Dwarf *dwarf;
	bool dwarf_tried;
	struct sym_seg *segs;
	size_t nr_segs;
	struct sym_entry *syms;
	size_t nr_syms;
};

int sym_dso__load(struct sym_dso *d, const char *debug_dir, bool want_dwarf);
/* The same from an ELF image in memory (malloc'd; the DSO owns it from here). */
int sym_dso__load_image(struct sym_dso *d, void *image, size_t len);
Dwarf *sym_dso__dwarf(struct sym_dso *d);
int sym_dso__vaddr(const struct sym_dso *d, uint64_t off, uint64_t pgoff, uint64_t *vaddr);
void sym_dso__exit(struct sym_dso *d);

#endif
