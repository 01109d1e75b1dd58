// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <string.h>
#include <unistd.h>

#include "symbols/build_id.h"
#include "symbols/sym_internal.h"

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

/* Scan one note blob for a GNU build id; gelf_getnote bounds every step, so a
 * corrupt blob ends the scan instead of reading past it. */
static int notes__build_id(Elf_Data *data, uint8_t *out, size_t max)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	if (!data || !data->d_buf)
		return -ENODATA;
	while (off < data->d_size &&
	       (next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp((const char *)data->d_buf + name_off, "GNU", 4) == 0 &&
		    nh.n_descsz > 0) {
			size_t n = nh.n_descsz < max ? nh.n_descsz : max;

			memcpy(out, (const char *)data->d_buf + desc_off, n);
			return (int)n;
		}
		off = next;
	}
	return -ENODATA;
}

int elf__build_id(Elf *elf, uint8_t *out, size_t max)
{
	size_t phnum = 0, i;
	Elf_Scn *scn = NULL;
	int ret;

	if (!elf || elf_kind(elf) != ELF_K_ELF)
		return -ENOEXEC;
	if (elf_getphdrnum(elf, &phnum) == 0) {
		for (i = 0; i < phnum; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
				continue;
			ret = notes__build_id(elf_getdata_rawchunk(elf, (int64_t)ph.p_offset,
								   ph.p_filesz, ELF_T_NHDR),
					      out, max);
			if (ret > 0)
				return ret;
		}
	}
	/* Separate debug files keep the note sections but may lose PT_NOTE contents. */
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		ret = notes__build_id(elf_getdata(scn, NULL), out, max);
		if (ret > 0)
			return ret;
	}
	return -ENODATA;
}

int sym_read_build_id(const char *path, uint8_t *out, size_t max)
{
	Elf *elf = NULL;
	int fd, ret;

	elf_version(EV_CURRENT);
	fd = sym_open_regular(path);
	if (fd < 0)
		return fd == -EINVAL ? -ENOEXEC : fd;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf) {
		ret = -ENOEXEC;
		goto cleanup;
	}
	ret = elf__build_id(elf, out, max);
cleanup:
	elf_end(elf);
	close(fd);
	return ret;
}

int build_id__equal(const uint8_t *a, size_t asz, const uint8_t *b, size_t bsz)
{
	size_t common = asz < bsz ? asz : bsz, i;

	if (memcmp(a, b, common) != 0)
		return 0;
	for (i = common; i < asz; i++)
		if (a[i])
			return 0;
	for (i = common; i < bsz; i++)
		if (b[i])
			return 0;
	return 1;
}

char *build_id__hex(const uint8_t *id, size_t size, char *buf)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < size; i++) {
		buf[2 * i] = hex[id[i] >> 4];
		buf[2 * i + 1] = hex[id[i] & 15];
	}
	buf[2 * size] = '\0';
	return buf;
}

/*
 * The running kernel's build id, from the ELF notes the kernel exposes in
 * notes_path (/sys/kernel/notes): its size, or negative errno.
 */
int sym_kernel_build_id(const char *notes_path, uint8_t *out, size_t max)
{
	uint8_t buf[4096];
	ssize_t n;
	int fd = open(notes_path, O_RDONLY | O_CLOEXEC);
	size_t off = 0;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	while (n > 0 && off + 12 <= (size_t)n) {
		uint32_t namesz, descsz, type;
		size_t desc;

		memcpy(&namesz, buf + off, 4);
		memcpy(&descsz, buf + off + 4, 4);
		memcpy(&type, buf + off + 8, 4);
		desc = off + 12 + ((namesz + 3) & ~3u);
		if (desc + descsz > (size_t)n || namesz > 256 || descsz > 256)
			break;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(buf + off + 12, "GNU", 4)) {
			size_t l = descsz < max ? descsz : max;

			memcpy(out, buf + desc, l);
			return l;
		}
		off = desc + ((descsz + 3) & ~3u);
	}
	return -ENOENT;
}
