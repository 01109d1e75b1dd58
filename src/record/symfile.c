// SPDX-License-Identifier: GPL-2.0-only
/*
 * A symbol file for frames that have no file of their own (Python
 * functions): an ELF shared object whose text is SYMFILE_SYM bytes per
 * name, each a function symbol, with a build id. A process's samples
 * point into it through an MMAP2 record of the file at a made-up address
 * (record/pyframes.c); Linux perf and offcpu's reader then name the
 * frames as any other, from the file's .symtab, as perf names the JIT
 * code `perf inject --jit` writes out as ELF files.
 *
 *   0                 ELF header, program headers (PT_LOAD of the whole
 *                     file at address 0, PT_NOTE), the build-id note
 *   SYMFILE_TEXT      .text: name i at SYMFILE_TEXT + i * SYMFILE_SYM
 *   then              .symtab, .strtab, .shstrtab, the section headers
 *
 * Written by hand rather than with libelf's writer: the layout is fixed
 * and small, and the build id is a hash of the names, known before the
 * file is laid out.
 */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record/record.h"
#include "util/hash.h"
#include "util/outfile.h"
#include "util/vec.h"

/* A growing byte buffer; the first failure sticks. */
struct buf {
	uint8_t *b;
	size_t len, cap;
	int err;
};

static size_t put(struct buf *b, const void *p, size_t n)
{
	size_t at = b->len;

	if (b->err || vec__reserve((void **)&b->b, &b->cap, b->len + n, 1, 4096)) {
		b->err = -ENOMEM;
		return at;
	}
	if (p)
		memcpy(b->b + b->len, p, n);
	else
		memset(b->b + b->len, 0, n);
	b->len += n;
	return at;
}

static void pad_to(struct buf *b, size_t to, uint8_t fill)
{
	size_t at = b->len;

	if (to > at) {
		put(b, NULL, to - at);
		if (!b->err)
			memset(b->b + at, fill, to - at);
	}
}

void symfile__build_id(const char *const *names, size_t n, uint8_t id[SYMFILE_BUILD_ID])
{
	uint64_t h[3] = { 0x6f666663707573ULL, 0x707974686f6eULL, n };

	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < 3; k++)
			h[k] = hash__bytes(names[i], strlen(names[i]) + 1, h[k] + k + 1);
	memcpy(id, h, SYMFILE_BUILD_ID);
}

/* The file's bytes into b. */
static void layout(struct buf *b, const char *const *names, size_t n, const uint8_t *id)
{
	static const char shstr[] = "\0.text\0.symtab\0.strtab\0.shstrtab\0.note.gnu.build-id";
	enum { SH_NULL, SH_NOTE, SH_TEXT, SH_SYMTAB, SH_STRTAB, SH_SHSTRTAB, SH__NR };
	Elf64_Ehdr eh = { 0 };
	Elf64_Phdr ph[2] = { 0 };
	Elf64_Shdr sh[SH__NR] = { { 0 } };
	uint32_t note[3] = { 4, SYMFILE_BUILD_ID, NT_GNU_BUILD_ID };
	uint64_t text_size = (uint64_t)n * SYMFILE_SYM;
	size_t note_at, symtab_at, strtab_at, shstr_at, sh_at, name_off = 1;

	put(b, NULL, sizeof(eh) + sizeof(ph));
	note_at = put(b, note, sizeof(note));
	put(b, "GNU", 4);
	put(b, id, SYMFILE_BUILD_ID);
	pad_to(b, SYMFILE_TEXT, 0);
	pad_to(b, SYMFILE_TEXT + text_size, 0xcc); /* int3: no code */
	pad_to(b, (b->len + 7) & ~7ULL, 0);
	symtab_at = put(b, NULL, sizeof(Elf64_Sym));
	for (size_t i = 0; i < n; i++) {
		Elf64_Sym s = {
			.st_name = name_off,
			.st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
			.st_shndx = SH_TEXT,
			.st_value = SYMFILE_TEXT + (uint64_t)i * SYMFILE_SYM,
			.st_size = SYMFILE_SYM,
		};

		put(b, &s, sizeof(s));
		name_off += strlen(names[i]) + 1;
	}
	strtab_at = put(b, "", 1);
	for (size_t i = 0; i < n; i++)
		put(b, names[i], strlen(names[i]) + 1);
	shstr_at = put(b, shstr, sizeof(shstr));
	pad_to(b, (b->len + 7) & ~7ULL, 0);
	sh_at = b->len;

	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_DYN;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_phoff = sizeof(eh);
	eh.e_shoff = sh_at;
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_phnum = 2;
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = SH__NR;
	eh.e_shstrndx = SH_SHSTRTAB;
	ph[0] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = 0, .p_vaddr = 0,
			      .p_filesz = SYMFILE_TEXT + text_size, .p_memsz = SYMFILE_TEXT + text_size,
			      .p_align = 4096 };
	ph[1] = (Elf64_Phdr){ .p_type = PT_NOTE, .p_flags = PF_R, .p_offset = note_at,
			      .p_vaddr = note_at, .p_filesz = sizeof(note) + 4 + SYMFILE_BUILD_ID,
			      .p_memsz = sizeof(note) + 4 + SYMFILE_BUILD_ID, .p_align = 4 };
	sh[SH_NOTE] = (Elf64_Shdr){ .sh_name = 33, .sh_type = SHT_NOTE, .sh_flags = SHF_ALLOC,
				    .sh_addr = note_at, .sh_offset = note_at,
				    .sh_size = sizeof(note) + 4 + SYMFILE_BUILD_ID, .sh_addralign = 4 };
	sh[SH_TEXT] = (Elf64_Shdr){ .sh_name = 1, .sh_type = SHT_PROGBITS,
				    .sh_flags = SHF_ALLOC | SHF_EXECINSTR, .sh_addr = SYMFILE_TEXT,
				    .sh_offset = SYMFILE_TEXT, .sh_size = text_size, .sh_addralign = 16 };
	sh[SH_SYMTAB] = (Elf64_Shdr){ .sh_name = 7, .sh_type = SHT_SYMTAB, .sh_offset = symtab_at,
				      .sh_size = (n + 1) * sizeof(Elf64_Sym), .sh_link = SH_STRTAB,
				      .sh_info = 1, .sh_addralign = 8,
				      .sh_entsize = sizeof(Elf64_Sym) };
	sh[SH_STRTAB] = (Elf64_Shdr){ .sh_name = 15, .sh_type = SHT_STRTAB, .sh_offset = strtab_at,
				      .sh_size = shstr_at - strtab_at, .sh_addralign = 1 };
	sh[SH_SHSTRTAB] = (Elf64_Shdr){ .sh_name = 23, .sh_type = SHT_STRTAB, .sh_offset = shstr_at,
					.sh_size = sizeof(shstr), .sh_addralign = 1 };
	put(b, sh, sizeof(sh));
	if (!b->err) {
		memcpy(b->b, &eh, sizeof(eh));
		memcpy(b->b + sizeof(eh), ph, sizeof(ph));
	}
}

int symfile__write(const char *path, const char *const *names, size_t n, uid_t uid, gid_t gid,
		   uint8_t id[SYMFILE_BUILD_ID])
{
	struct buf b = { 0 };
	struct outfile of;
	ssize_t w = 0;
	int err;

	symfile__build_id(names, n, id);
	layout(&b, names, n, id);
	err = b.err;
	if (!err)
		err = outfile__open(&of, path, 0644);
	if (err) {
		free(b.b);
		return err;
	}
	for (size_t done = 0; done < b.len && w >= 0; done += w)
		w = write(of.fd, b.b + done, b.len - done);
	if (w < 0)
		err = -errno;
	if (!err && uid != (uid_t)-1 && fchown(of.fd, uid, gid)) {
		/* it stays root's: readable by all the same */
	}
	close(of.fd);
	free(b.b);
	return outfile__commit(&of, err);
}
