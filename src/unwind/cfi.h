/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Call-frame tables for the BPF unwinder (src/bpf/unwind.h), built from a
 * file's DWARF call-frame information: one row per address range with its
 * rule for the CFA and for rbp, the rules deduplicated in a dictionary
 * shared by all files. No BPF here: see tables.h for who loads them.
 */
#ifndef OFFCPU_UNWIND_CFI_H
#define OFFCPU_UNWIND_CFI_H

#include <stddef.h>
#include <stdint.h>
#include <libelf.h>
#include <linux/types.h>

#include "bpf/unwind.h"

/* The distinct rules of every table built, by id (src/bpf/unwind.h). */
struct unw_rules;
/* Ids 0 and 1 are the rules "no CFI here" and "unsupported". */
#define UNW_RULE_NONE 0
#define UNW_RULE_UNSUPPORTED 1

struct unw_rules *unw_rules__new(void);
void unw_rules__free(struct unw_rules *r);
/* The id of rule r, added if new; UNW_RULE_UNSUPPORTED when the dictionary is full. */
uint32_t unw_rules__id(struct unw_rules *r, const struct offcpu_unw_rule *rule);
uint32_t unw_rules__nr(const struct unw_rules *r);
const struct offcpu_unw_rule *unw_rules__get(const struct unw_rules *r, uint32_t id);
/* Rules that did not fit (mapped to "unsupported"). */
uint64_t unw_rules__overflow(const struct unw_rules *r);

/* One file's table: rows sorted by file address. */
struct cfi_table {
	struct offcpu_unw_row *rows;
	uint32_t nr;
	size_t cap;
	uint32_t nr_fdes;
	/* rows by kind, for the record's statistics */
	uint32_t nr_plt, nr_signal, nr_end, nr_unsupported;
	const char *section; /* ".eh_frame", ".debug_frame" or NULL: none */
};

/*
 * Build the table of an ELF file (or an in-memory image such as the vDSO)
 * from its .eh_frame, or its .debug_frame when it has only that. 0 with
 * t->nr == 0 when it has no call-frame information; -EINVAL when the ELF
 * is not one this unwinder reads (not x86-64, addresses beyond 4 GiB).
 */
int cfi_table__build(Elf *elf, struct unw_rules *rules, struct cfi_table *t);
void cfi_table__exit(struct cfi_table *t);

#endif
