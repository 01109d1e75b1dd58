// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzz target: ELF files through the symbolizer (src/symbols: sym_dso.c,
 * build_id.c, symbolizer.c, demangle.c) with source lines, inlines and
 * demangling on. The input is written to a file in a private directory
 * (the symbolizer takes paths; debug links are looked for beside it) and
 * resolved at each of its first symbols' start and middle, and at offsets
 * read from the input.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbols/build_id.h"
#include "symbols/sym_dso.h"
#include "symbols/symbolizer.h"

#define MAP_START 0x400000ULL

static char dir[] = "/tmp/offcpu-fuzz-elf.XXXXXX";
static char path[64];

static void cleanup(void)
{
	unlink(path);
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (!mkdtemp(dir))
		abort();
	snprintf(path, sizeof(path), "%s/f.so", dir);
	atexit(cleanup);
	return 0;
}

static volatile uint64_t sink;

static void resolve(struct symbolizer *s, struct sym_dso *d, uint64_t off)
{
	struct sym_frame f[8];
	int n = symbolizer__resolve(s, d, MAP_START, 0, MAP_START + off, f, 8);

	for (int i = 0; i < n; i++) {
		if (f[i].sym)
			sink += strlen(f[i].sym);
		if (f[i].srcfile)
			sink += strlen(f[i].srcfile) + f[i].line;
		sink += f[i].offset;
	}
}

/* The file offset of a link-time address, through the segment that holds it. */
static bool file_offset(const struct sym_dso *d, uint64_t vaddr, uint64_t *off)
{
	if (!d->nr_segs) {
		*off = vaddr;
		return true;
	}
	for (size_t i = 0; i < d->nr_segs; i++)
		if (vaddr >= d->segs[i].vaddr && vaddr - d->segs[i].vaddr < d->segs[i].filesz) {
			*off = vaddr - d->segs[i].vaddr + d->segs[i].offset;
			return true;
		}
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct symbolizer_opts o = {
		.srcline = true, .inlines = true, .demangle = true,
		.kallsyms = "", .debug_dir = "/nonexistent-offcpu-debug", .perfmap_dir = dir,
		.buildid_dir = "",
	};
	uint8_t bid[SYM_BUILD_ID_MAX];
	struct symbolizer *s;
	struct sym_dso *d;
	uint64_t off;
	int fd;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
	sink += sym_read_build_id(path, bid, sizeof(bid));

	s = symbolizer__new(&o);
	if (!s)
		return 0;
	d = symbolizer__dso(s, path, NULL, 0);
	if (d) {
		const char *w = sym_dso__warning(d);

		sink += w ? strlen(w) : 0;
		for (size_t i = 0; i < d->nr_syms && i < 16; i++) {
			const struct sym_entry *e = &d->syms[i];

			if (file_offset(d, e->start, &off))
				resolve(s, d, off);
			if (file_offset(d, e->start + e->size / 2, &off))
				resolve(s, d, off);
		}
		for (size_t i = 0; i + 8 <= size && i < 64; i += 8) {
			memcpy(&off, data + size - 8 - i, 8);
			resolve(s, d, off % (size + 1));
		}
	}
	symbolizer__free(s);
	return 0;
}
