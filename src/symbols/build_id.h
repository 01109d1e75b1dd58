/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Build ids (NT_GNU_BUILD_ID notes) of ELF files. Shared by the recorder
 * (BUILD_ID feature) and the symbolizer (mismatch checks, debug files).
 */
#ifndef OFFCPU_BUILD_ID_H
#define OFFCPU_BUILD_ID_H

#include <stddef.h>
#include <stdint.h>
#include <libelf.h>

#define SYM_BUILD_ID_MAX 64

/* Build id of the file at path: its size (copied into out, at most max bytes), or negative errno
 * (-ENOENT no file, -ENOEXEC not ELF, -ENODATA no build id note). */
int sym_read_build_id(const char *path, uint8_t *out, size_t max);

/* Same on an already opened ELF (notes in PT_NOTE segments, else SHT_NOTE sections). */
int elf__build_id(Elf *elf, uint8_t *out, size_t max);

/* The running kernel's, from its notes file (/sys/kernel/notes): size or negative errno. */
int sym_kernel_build_id(const char *notes_path, uint8_t *out, size_t max);

/* Build ids as recorded are often zero-padded to 20 bytes: equal when the common prefix matches
 * and the longer one only has zeros beyond it. */
int build_id__equal(const uint8_t *a, size_t asz, const uint8_t *b, size_t bsz);

/* Lower-case hex of id into buf (2*size+1 bytes); returns buf. */
char *build_id__hex(const uint8_t *id, size_t size, char *buf);

#endif
