// SPDX-License-Identifier: GPL-2.0-only
/*
 * CPython's structures read from outside the process (see python.h).
 * The offsets were taken from each version's own headers (offsetof of
 * Include/internal/pycore_*.h with Py_BUILD_CORE), as py-spy's per-version
 * bindings and the OpenTelemetry profiler's tables are; 3.13's come from
 * the interpreter itself (_Py_DebugOffsets).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "unwind/python.h"

/* ---- layouts ---- */

static const struct py_layout layout_311 = {
	.version = 0x030b,
	.rt_interp_head = 40,
	.interp_next = 0, .interp_threads = 16,
	.ts_next = 8, .ts_tid = 160, .ts_frame = 56, .cf_frame = 8,
	.f_code = 32, .f_previous = 48, .f_instr = 56, .f_owner = 68, /* is_entry */
	.entry = OFFCPU_PY_ENTRY_FLAG,
	.co_filename = 112, .co_name = 120, .co_qualname = 128, .co_linetable = 136,
	.co_firstlineno = 72, .co_code = 184,
	.str_ascii = 48, .str_compact = 72, .str_state = 32, .str_length = 16,
	.bytes_size = 16, .bytes_data = 32,
};

static const struct py_layout layout_312 = {
	.version = 0x030c,
	.rt_interp_head = 40,
	.interp_next = 0, .interp_threads = 72,
	.ts_next = 8, .ts_tid = 144, .ts_frame = 56, .cf_frame = 0,
	.f_code = 0, .f_previous = 8, .f_instr = 56, .f_owner = 70,
	.entry = OFFCPU_PY_ENTRY_SHIM,
	.co_filename = 112, .co_name = 120, .co_qualname = 128, .co_linetable = 136,
	.co_firstlineno = 68, .co_code = 192,
	.str_ascii = 40, .str_compact = 56, .str_state = 32, .str_length = 16,
	.bytes_size = 16, .bytes_data = 32,
};

int py_layout__table(uint32_t version, struct py_layout *l)
{
	if (version == layout_311.version)
		*l = layout_311;
	else if (version == layout_312.version)
		*l = layout_312;
	else
		return -ENOENT;
	return 0;
}

/* 3.13's struct _Py_DebugOffsets: the byte offset of each field we use. */
enum {
	DO_VERSION = 8, DO_FREE_THREADED = 16,
	DO_RT_INTERP_HEAD = 40,
	DO_INTERP_NEXT = 64, DO_INTERP_THREADS = 72,
	DO_TS_NEXT = 168, DO_TS_FRAME = 184, DO_TS_TID = 200,
	DO_F_PREVIOUS = 232, DO_F_CODE = 240, DO_F_INSTR = 248, DO_F_OWNER = 264,
	DO_CO_FILENAME = 280, DO_CO_NAME = 288, DO_CO_QUALNAME = 296, DO_CO_LINETABLE = 304,
	DO_CO_FIRSTLINENO = 312, DO_CO_CODE = 344,
	DO_BYTES_SIZE = 520, DO_BYTES_DATA = 528,
	DO_STR_STATE = 544, DO_STR_LENGTH = 552, DO_STR_ASCII = 560,
	DO_SIZE_313 = 584,
};

static uint64_t u64_at(const void *buf, size_t off)
{
	uint64_t v;

	memcpy(&v, (const uint8_t *)buf + off, 8);
	return v;
}

int py_layout__debug_offsets(const void *buf, size_t len, struct py_layout *l)
{
	uint64_t v[] = { DO_RT_INTERP_HEAD, DO_INTERP_NEXT, DO_INTERP_THREADS, DO_TS_NEXT, DO_TS_FRAME,
			 DO_TS_TID, DO_F_PREVIOUS, DO_F_CODE, DO_F_INSTR, DO_F_OWNER, DO_CO_FILENAME,
			 DO_CO_NAME, DO_CO_QUALNAME, DO_CO_LINETABLE, DO_CO_FIRSTLINENO, DO_CO_CODE,
			 DO_BYTES_SIZE, DO_BYTES_DATA, DO_STR_STATE, DO_STR_LENGTH, DO_STR_ASCII };
	uint64_t version;

	if (len < DO_SIZE_313 || memcmp(buf, "xdebugpy", 8))
		return -ENOENT;
	version = u64_at(buf, DO_VERSION);
	/* 3.13, the GIL's build (a free-threaded one lays its objects out otherwise) */
	if ((version >> 16) != 0x030d || u64_at(buf, DO_FREE_THREADED))
		return -ENOENT;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		v[i] = u64_at(buf, v[i]);
		if (v[i] > 0xfff0)
			return -ENOENT; /* not an offset BPF can take */
	}
	*l = (struct py_layout){
		.version = 0x030d,
		.rt_interp_head = v[0], .interp_next = v[1], .interp_threads = v[2],
		.ts_next = v[3], .ts_frame = v[4], .ts_tid = v[5], .cf_frame = OFFCPU_PY_NO_CFRAME,
		.f_previous = v[6], .f_code = v[7], .f_instr = v[8], .f_owner = v[9],
		.entry = OFFCPU_PY_ENTRY_SHIM,
		.co_filename = v[10], .co_name = v[11], .co_qualname = v[12], .co_linetable = v[13],
		.co_firstlineno = v[14], .co_code = v[15],
		.bytes_size = v[16], .bytes_data = v[17],
		.str_state = v[18], .str_length = v[19], .str_ascii = v[20],
		/* PyCompactUnicodeObject: PyASCIIObject, then utf8_length and utf8 */
		.str_compact = v[20] + 16,
	};
	return 0;
}

static uint32_t max3(uint32_t a, uint32_t b, uint32_t c)
{
	uint32_t m = a > b ? a : b;

	return m > c ? m : c;
}

void py_layout__bpf(const struct py_layout *l, uint64_t interp_head, struct offcpu_py_proc *p)
{
	memset(p, 0, sizeof(*p));
	p->interp_head = interp_head;
	p->interp_next = l->interp_next;
	p->interp_threads = l->interp_threads;
	p->ts_next = l->ts_next;
	p->ts_tid = l->ts_tid;
	p->ts_frame = l->ts_frame;
	p->cf_frame = l->cf_frame;
	p->f_code = l->f_code;
	p->f_previous = l->f_previous;
	p->f_instr = l->f_instr;
	p->f_owner = l->f_owner;
	p->ts_read = max3(l->ts_next, l->ts_tid, l->ts_frame) + 8;
	p->f_read = max3(l->f_code, l->f_previous, max3(l->f_instr, l->f_owner, 0)) + 8;
	p->entry = l->entry;
}

/* ---- the file ---- */

/* The symbol name's value and size from the dynamic symbols; false if none. */
static bool dynsym(Elf *elf, const char *name, uint64_t *value, uint64_t *size)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < d->d_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;

			if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF || !s.st_value)
				continue;
			n = elf_strptr(elf, sh.sh_link, s.st_name);
			if (n && !strcmp(n, name)) {
				*value = s.st_value;
				*size = s.st_size;
				return true;
			}
		}
	}
	return false;
}

/* n bytes of the file's contents at link-time address addr (a section with bits). */
static int file_bytes(Elf *elf, int fd, uint64_t addr, void *buf, size_t n)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !(sh.sh_flags & SHF_ALLOC) ||
		    addr < sh.sh_addr || addr - sh.sh_addr >= sh.sh_size)
			continue;
		if (sh.sh_size - (addr - sh.sh_addr) < n)
			return -EINVAL;
		return pread(fd, buf, n, sh.sh_offset + (addr - sh.sh_addr)) == (ssize_t)n ? 0 : -EIO;
	}
	return -ENOENT;
}

/* "python3.10" or "libpython3.10.so.1.0": 0x030a; 0 when the name says none. */
static uint32_t version_in_name(const char *path)
{
	const char *base = strrchr(path, '/'), *v = strstr(base ? base : path, "python");
	unsigned int major, minor;

	if (v && sscanf(v, "python%u.%u", &major, &minor) == 2 && major < 256 && minor < 256)
		return major << 8 | minor;
	return 0;
}

int py_build__probe(const char *path, struct py_build *b)
{
	uint64_t version_at, size, runtime_size, hex = 0;
	uint8_t dbg[DO_SIZE_313];
	int fd, err = -ENOENT;
	Elf *elf;

	memset(b, 0, sizeof(*b));
	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF)
		goto out;
	if (!dynsym(elf, "_PyRuntime", &b->runtime, &runtime_size))
		goto out;
	/* Py_Version since 3.11; before, the version the file's name says */
	if (dynsym(elf, "Py_Version", &version_at, &size) && size >= 4 &&
	    !file_bytes(elf, fd, version_at, &hex, 4))
		b->version = (uint32_t)hex >> 16;
	else
		b->version = version_in_name(path);
	{
		size_t phnum = 0;
		GElf_Phdr ph;

		elf_getphdrnum(elf, &phnum);
		for (size_t i = 0; i < phnum; i++)
			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
				b->x_delta = ph.p_vaddr - ph.p_offset;
	}
	if (dynsym(elf, "_PyEval_EvalFrameDefault", &b->eval_lo, &size))
		b->eval_hi = b->eval_lo + size;
	if (!py_layout__table(b->version, &b->layout))
		b->known = true;
	else if (runtime_size >= sizeof(dbg) && !file_bytes(elf, fd, b->runtime, dbg, sizeof(dbg)) &&
		 !py_layout__debug_offsets(dbg, sizeof(dbg), &b->layout))
		b->known = b->layout.version == b->version;
	b->known = b->known && b->eval_hi > b->eval_lo;
	err = 0;
out:
	elf_end(elf);
	close(fd);
	return err;
}

/* ---- the process's memory ---- */

int py_mem__read(uint32_t pid, uint64_t addr, void *buf, size_t n)
{
	struct iovec local = { buf, n }, remote = { (void *)(uintptr_t)addr, n };
	ssize_t got;

	if (!addr)
		return -EFAULT;
	got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (got < 0)
		return -errno;
	return (size_t)got == n ? 0 : -EFAULT;
}

static void put_utf8(char *out, size_t *o, uint32_t c)
{
	if (c < 0x80) {
		out[(*o)++] = c;
	} else if (c < 0x800) {
		out[(*o)++] = 0xc0 | c >> 6;
		out[(*o)++] = 0x80 | (c & 0x3f);
	} else if (c < 0x10000) {
		out[(*o)++] = 0xe0 | c >> 12;
		out[(*o)++] = 0x80 | ((c >> 6) & 0x3f);
		out[(*o)++] = 0x80 | (c & 0x3f);
	} else {
		out[(*o)++] = 0xf0 | c >> 18;
		out[(*o)++] = 0x80 | ((c >> 12) & 0x3f);
		out[(*o)++] = 0x80 | ((c >> 6) & 0x3f);
		out[(*o)++] = 0x80 | (c & 0x3f);
	}
}

#define PY_STR_MAX 1024 /* characters of a name kept */

/* The str object at addr as UTF-8 (a compact one: every name a code object has). */
static int read_str(uint32_t pid, const struct py_layout *l, uint64_t addr, char **out)
{
	uint8_t hdr[128], *data;
	uint32_t state, kind;
	uint64_t len, at;
	size_t o = 0;
	char *s;
	int err;

	if (l->str_compact + 8 > sizeof(hdr))
		return -EINVAL;
	err = py_mem__read(pid, addr, hdr, l->str_compact);
	if (err)
		return err;
	memcpy(&state, hdr + l->str_state, 4);
	len = u64_at(hdr, l->str_length);
	kind = (state >> 2) & 7;
	if (!(state >> 5 & 1) || (kind != 1 && kind != 2 && kind != 4) || len > (1u << 20))
		return -EINVAL; /* not a compact str */
	if (len > PY_STR_MAX)
		len = PY_STR_MAX;
	at = addr + ((state >> 6 & 1) ? l->str_ascii : l->str_compact);
	data = malloc(len * kind + 1);
	s = malloc(len * 4 + 1);
	if (!data || !s) {
		free(data);
		free(s);
		return -ENOMEM;
	}
	err = len ? py_mem__read(pid, at, data, len * kind) : 0;
	for (uint64_t i = 0; !err && i < len; i++) {
		uint32_t c = kind == 1 ? data[i] : kind == 2 ? ((uint16_t *)data)[i] : ((uint32_t *)data)[i];

		put_utf8(s, &o, c > 0x10ffff ? '?' : c);
	}
	s[o] = 0;
	free(data);
	if (err) {
		free(s);
		return err;
	}
	*out = s;
	return 0;
}

/* The code object's header (hdr, 256 bytes) and identity. */
static int code_header(uint32_t pid, const struct py_layout *l, uint64_t addr, uint8_t *hdr,
		       struct py_code_id *id)
{
	uint32_t need = max3(l->co_filename, l->co_qualname, max3(l->co_linetable, l->co_name, 0)) + 8;
	int32_t first;
	int err;

	if (need < l->co_firstlineno + 4)
		need = l->co_firstlineno + 4;
	if (need > 256)
		return -EINVAL;
	err = py_mem__read(pid, addr, hdr, need);
	if (err)
		return err;
	id->qualname = u64_at(hdr, l->co_qualname);
	id->filename = u64_at(hdr, l->co_filename);
	id->linetable = u64_at(hdr, l->co_linetable);
	memcpy(&first, hdr + l->co_firstlineno, 4);
	id->firstlineno = first;
	return 0;
}

int py_code__id(uint32_t pid, const struct py_layout *l, uint64_t addr, struct py_code_id *id)
{
	uint8_t hdr[256];

	return code_header(pid, l, addr, hdr, id);
}

int py_code__read(uint32_t pid, const struct py_layout *l, uint64_t addr, struct py_code *c)
{
	uint8_t hdr[256];
	uint64_t qn, fn, lt, len;
	int err;

	memset(c, 0, sizeof(*c));
	err = code_header(pid, l, addr, hdr, &c->id);
	if (err)
		return err;
	qn = c->id.qualname;
	fn = c->id.filename;
	lt = c->id.linetable;
	c->firstlineno = c->id.firstlineno;
	err = read_str(pid, l, qn, &c->qualname);
	if (err == -EINVAL) /* an odd qualname: the plain name */
		err = read_str(pid, l, u64_at(hdr, l->co_name), &c->qualname);
	if (!err)
		err = read_str(pid, l, fn, &c->filename);
	if (!err) {
		uint8_t b[64];

		err = l->bytes_size + 8 > sizeof(b) ? -EINVAL : py_mem__read(pid, lt, b, l->bytes_size + 8);
		len = err ? 0 : u64_at(b, l->bytes_size);
		if (!err && len > (1u << 24))
			err = -EINVAL;
		if (!err && len) {
			c->linetable = malloc(len);
			err = c->linetable ? py_mem__read(pid, lt + l->bytes_data, c->linetable, len) : -ENOMEM;
			c->linetable_len = len;
		}
	}
	if (err)
		py_code__exit(c);
	return err;
}

void py_code__exit(struct py_code *c)
{
	free(c->qualname);
	free(c->filename);
	free(c->linetable);
	memset(c, 0, sizeof(*c));
}

/* ---- line tables (3.11+: Objects/locations.md) ---- */

struct lt_reader {
	const uint8_t *p, *end;
};

static bool lt_varint(struct lt_reader *r, uint32_t *v)
{
	uint32_t shift = 0, val = 0;
	uint8_t b;

	do {
		if (r->p >= r->end || shift > 28)
			return false;
		b = *r->p++;
		val |= (uint32_t)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	*v = val;
	return true;
}

static bool lt_svarint(struct lt_reader *r, int *v)
{
	uint32_t u;

	if (!lt_varint(r, &u))
		return false;
	*v = u & 1 ? -(int)(u >> 1) : (int)(u >> 1);
	return true;
}

int py_linetable__line(const uint8_t *t, size_t n, int firstlineno, uint32_t unit)
{
	struct lt_reader r = { t, t + n };
	uint32_t at = 0, skip;
	int line = firstlineno, delta;

	while (r.p < r.end) {
		uint8_t first = *r.p++;
		uint32_t code = (first >> 3) & 15, len = (first & 7) + 1;
		bool none = false;

		if (!(first & 0x80))
			return -1; /* not the start of an entry: a table we do not read */
		switch (code) {
		case 15: /* no location */
			none = true;
			break;
		case 14: /* long form: line delta, end line delta, column, end column */
			if (!lt_svarint(&r, &delta) || !lt_varint(&r, &skip) || !lt_varint(&r, &skip) ||
			    !lt_varint(&r, &skip))
				return -1;
			line += delta;
			break;
		case 13: /* no column: line delta */
			if (!lt_svarint(&r, &delta))
				return -1;
			line += delta;
			break;
		case 10: case 11: case 12: /* one line: delta code - 10, start and end columns */
			if (r.end - r.p < 2)
				return -1;
			r.p += 2;
			line += code - 10;
			break;
		default: /* short forms: the same line, one byte of columns */
			if (r.p >= r.end)
				return -1;
			r.p++;
			break;
		}
		if (unit < at + len)
			return none ? -1 : line;
		at += len;
	}
	return -1;
}

/* ---- a thread's frames ---- */

#define PY_MAX_INTERPS 16
#define PY_MAX_THREADS 4096

/* Thread tid's PyThreadState, read into ts (l's sizes); 0 when it has none. */
static int find_thread(uint32_t pid, uint32_t tid, const struct py_layout *l, uint64_t interp_head,
		       uint8_t *ts, size_t tslen, uint64_t *out)
{
	uint64_t interp, t;
	uint8_t ib[8];
	int err = py_mem__read(pid, interp_head, &interp, 8);

	for (int i = 0; !err && interp && i < PY_MAX_INTERPS; i++) {
		err = py_mem__read(pid, interp + l->interp_threads, &t, 8);
		for (int j = 0; !err && t && j < PY_MAX_THREADS; j++) {
			uint64_t ntid;

			err = py_mem__read(pid, t, ts, tslen);
			if (err)
				break;
			ntid = u64_at(ts, l->ts_tid);
			if (ntid == tid) {
				*out = t;
				return 0;
			}
			t = u64_at(ts, l->ts_next);
		}
		if (!err)
			err = py_mem__read(pid, interp + l->interp_next, ib, 8);
		if (!err)
			interp = u64_at(ib, 0);
	}
	*out = 0;
	return err;
}

int py_thread__frames(uint32_t pid, uint32_t tid, const struct py_layout *l, uint64_t interp_head,
		      uint64_t *w, uint32_t max)
{
	struct offcpu_py_proc p;
	uint8_t ts[OFFCPU_PY_READ], fr[OFFCPU_PY_READ];
	uint64_t tstate, frame;
	uint32_t n = 0;
	int err;

	py_layout__bpf(l, interp_head, &p);
	if (p.ts_read > sizeof(ts) || p.f_read > sizeof(fr))
		return -EINVAL;
	err = find_thread(pid, tid, l, interp_head, ts, p.ts_read, &tstate);
	if (err || !tstate)
		return err;
	frame = u64_at(ts, l->ts_frame);
	if (l->cf_frame != OFFCPU_PY_NO_CFRAME && frame) {
		err = py_mem__read(pid, frame + l->cf_frame, &frame, 8);
		if (err)
			return err;
	}
	for (uint32_t i = 0; frame && n < max && i < 4096; i++) {
		uint64_t code, instr;
		uint8_t owner;

		if (py_mem__read(pid, frame, fr, p.f_read))
			break;
		code = u64_at(fr, l->f_code);
		instr = u64_at(fr, l->f_instr);
		owner = fr[l->f_owner];
		frame = u64_at(fr, l->f_previous);
		if (l->entry == OFFCPU_PY_ENTRY_SHIM && owner == OFFCPU_PY_OWNED_BY_CSTACK) {
			if (n)
				w[n - 1] |= OFFCPU_PY_LAST;
			continue;
		}
		w[n++] = OFFCPU_PY_WORD(code, instr >= code && instr - code < 0x1fffe ? (instr - code) / 2 : 0xffff,
					l->entry == OFFCPU_PY_ENTRY_FLAG && owner);
	}
	return n;
}
