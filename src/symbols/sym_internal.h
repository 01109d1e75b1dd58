/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Pieces of the symbolizer, each testable (and fuzzable) alone: the
 * kallsyms and perf-PID.map parsers (on memory buffers),
 * and the demangler.
 */
#ifndef OFFCPU_SYM_INTERNAL_H
#define OFFCPU_SYM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One symbol of a sorted table (kallsyms, perf map, ELF). */
struct sym_entry {
	uint64_t start;
	uint64_t size;
	const char *name;
	const char *module; /* kallsyms: "[mod]" or NULL for the kernel image */
	uint32_t seq;       /* input order, breaks ties between equal starts */
	uint8_t bind;       /* STB_* of the symbol (kallsyms: from the type letter, as perf) */
	bool ifunc;         /* STT_GNU_IFUNC: its value is the resolver a PLT stub's IRELATIVE names */
};

/*
 * Sort by start (input order within one start), give zero-sized entries the
 * distance to the next entry (last_size for the last one), then drop
 * duplicates of one start: walking a run in input order, the newcomer a
 * replaces the kept b when prefer(a, b) > 0 (no prefer: the last one wins).
 * Sizes are filled before the duplicates go, as perf does, so prefer() sees
 * size 0 on every zero-sized alias but the last of its run. Returns the new
 * count.
 */
size_t sym_entries__finish(struct sym_entry *e, size_t nr, uint64_t last_size,
			   int (*prefer)(const struct sym_entry *a, const struct sym_entry *b));

/*
 * prefer() for sym_entries__finish() that names an address the way perf
 * report does (choose_best_symbol() of tools/perf/util/symbol.c), so that
 * offcpu's reports sorted by symbol match perf's: of two symbols of one
 * start keep the one with a non-zero size, then a non-weak one, then a
 * STB_GLOBAL one, then the one with fewer leading underscores, then the
 * longer name; on a full tie keep the one seen first unless its name starts
 * with "SyS" or "compat_SyS" (perf's generic arch rule). a is the newcomer.
 */
int sym_entry__perf_prefer(const struct sym_entry *a, const struct sym_entry *b);
/* Entry containing addr, or NULL. */
const struct sym_entry *sym_entries__find(const struct sym_entry *e, size_t nr, uint64_t addr);
/* The number of entries (sorted by start) that start at or below addr. */
size_t sym_entries__upto(const struct sym_entry *e, size_t nr, uint64_t addr);

/* kallsyms: text symbols of the kernel and modules. */
struct ksyms;
struct ksyms *ksyms__parse(const char *buf, size_t len);
struct ksyms *ksyms__load(const char *path, int *err);
void ksyms__free(struct ksyms *k);
size_t ksyms__nr(const struct ksyms *k);
/* Address of `_text` in this kallsyms, 0 when absent. */
uint64_t ksyms__text(const struct ksyms *k);
/* End of the kernel image text (first address past its last symbol). */
uint64_t ksyms__image_end(const struct ksyms *k);
/* The symbol holding addr, or NULL; what it points to lasts until this thread's next call. */
const struct sym_entry *ksyms__find(const struct ksyms *k, uint64_t addr);

/* perf-PID.map: "START SIZE name" lines, hex. */
struct perfmap;
struct perfmap *perfmap__parse(const char *buf, size_t len);
struct perfmap *perfmap__load(const char *path, int *err);
void perfmap__free(struct perfmap *m);
size_t perfmap__nr(const struct perfmap *m);
const struct sym_entry *perfmap__find(const struct perfmap *m, uint64_t addr);

/* Open a regular file read-only (never blocks on a FIFO): fd or -errno, -EINVAL when not regular. */
int sym_open_regular(const char *path);
/* Whole file into a NUL-terminated malloc'd buffer, at most max bytes (works on /proc). */
int sym_read_file(const char *path, size_t max, char **buf, size_t *len);

/* perf's build-id cache directory: $PERF_BUILDID_DIR, else $HOME/.debug; malloc'd, NULL if none. */
char *buildid_cache__default_dir(void);
/*
 * The cached copy of a file (name as recorded, file "elf", "vdso" or
 * "kallsyms"): 0 with its malloc'd path in *path, -ENOENT when the cache
 * has none (*path NULL), -ENOMEM.
 */
int buildid_cache__find(const char *dir, const char *name, const uint8_t *bid, size_t bsz,
			const char *file, char **path);

/*
 * The demangled C++ or Rust (legacy) name: 0 with it malloc'd in *out,
 * -ENOENT when name is not mangled or not understood (Rust v0 "_R" names
 * are left as they are; *out NULL), -ENOMEM.
 */
int sym_demangle(const char *name, char **out);

#endif
