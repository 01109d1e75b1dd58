// SPDX-License-Identifier: GPL-2.0-only
/*
 * /proc/kallsyms: "ADDR TYPE NAME [MODULE]" lines. Only text symbols are
 * kept; a symbol's size is the distance to the next one.
 *
 * The file (5 MB and more) is read whole into one hugemem block and
 * parsed in place: each kept name moves down to a pool at the block's
 * start as its line is parsed, the arrays (room for every line) follow
 * the text, and once the table is final they move down after the pool
 * and the block's 2 MiB pages past them are given back. On a
 * paravirtualized VM the load was 1 400 first touches of 4 KiB pages
 * (about 14 ms of 50: a names pool and arrays grown by doubling, copied
 * as they grew); now it is four of 2 MiB, and three stay.
 */
#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbols/sym_internal.h"
#include "util/bsearch.h"
#include "util/hex.h"
#include "util/hugemem.h"
#include "util/pairsort.h"
#include "util/vec.h"

#define KSYMS_FILE_MAX (512u << 20)
#define KSYMS_LAST_SIZE 4096
#define KSYMS_FIRST_READ (8u << 20)

/*
 * The symbols are kept in arrays of their fields, 21 bytes a symbol
 * instead of a struct sym_entry's 40 (kallsyms has 100 000 and more), and
 * parsed straight into them: start, size (filled at the end; a size past
 * 32 bits, which only a gap in the address space can give, is kept in
 * big[]), name (offset in the text), module (index in mods + 1, 0 for the
 * kernel image), binding.
 */
struct ksym_big {
	size_t i;
	uint64_t size;
};

struct ksyms {
	struct hugemem mem;	/* the text as read, then the arrays */
	char *names;		/* the text (mem.p): the names moved to its first pool bytes */
	size_t pool;
	size_t nr, cap;		/* symbols, room in the arrays */
	bool unsorted;		/* a start below the one before it */
	uint64_t *start;
	uint32_t *size, *name;
	uint32_t *mod;
	uint8_t *bind;
	struct ksym_big *big;
	size_t nr_big;
	uint64_t text;
	uint64_t image_end;
	char **mods;		/* distinct "[mod]" strings, in the pool */
	size_t nr_mods;
};

/* Parses hex digits at *p (at most 16, an optional 0x); NULL when none or overlong. */
static char *parse_hex(char *p, char *end, uint64_t *out)
{
	if (end - p > 16 && (p[16] == ' ' || p[16] == '\t') && hex_parse16(p, out))
		return p + 16; /* a 64-bit kernel's every line */
	if (end - p >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		p += 2;
	return (char *)hex_parse(p, end, out);
}

static char *skip_blanks(char *p, char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

/*
 * name (kept with the names, before it in the text) moved to the pool's
 * end: the pool is the text's first bytes, and a name lies after the
 * names before it, so moving it down overwrites only what was parsed.
 */
static char *ksyms__pool(struct ksyms *k, const char *name, size_t len)
{
	char *to = k->names + k->pool;

	memmove(to, name, len);
	k->pool += len;
	return to;
}

/* The index + 1 of module name (in the text) in mods, added to the pool if new; 0 on ENOMEM. */
static uint32_t ksyms__module(struct ksyms *k, const char *name)
{
	size_t i;
	char **nm;

	/* Modules come in runs in kallsyms: the last one is almost always the match. */
	for (i = k->nr_mods; i-- > 0;)
		if (strcmp(k->mods[i], name) == 0)
			return (uint32_t)i + 1;
	if (k->nr_mods >= UINT32_MAX - 1)
		return 0;
	nm = realloc(k->mods, (k->nr_mods + 1) * sizeof(*nm));
	if (!nm)
		return 0;
	k->mods = nm;
	nm[k->nr_mods] = ksyms__pool(k, name, strlen(name) + 1);
	return (uint32_t)++k->nr_mods;
}

/*
 * Kernel image symbols win over module ones of equal address; aliases are
 * named as perf names them. kallsyms has no sizes, so after
 * sym_entries__finish() fills them only the last alias of a run is sized,
 * and perf's rule keeps that one (memcpy, __memcpy, __pi_memcpy: the last).
 */
static int ksym__prefer(const struct sym_entry *a, const struct sym_entry *b)
{
	if (!a->module != !b->module)
		return !a->module;
	return sym_entry__perf_prefer(a, b);
}

/* perf's binding of a kallsyms type letter (kallsyms2elf_binding): only 'W' is weak. */
static uint8_t ksym__bind(char type)
{
	if (type == 'W')
		return STB_WEAK;
	return type >= 'A' && type <= 'Z' ? STB_GLOBAL : STB_LOCAL;
}

/*
 * One line of the text, NUL-terminated at end (which it may write to). A
 * text symbol's entry keeps its name's offset in the pool, where it moves
 * its name; the arrays have room for every line.
 */
static int ksyms__parse_line(struct ksyms *k, char *p, char *end)
{
	char *name, *mod = NULL, type;
	uint64_t addr;
	size_t len;

	p = skip_blanks(p, end);
	p = parse_hex(p, end, &addr);
	if (!p || p == end || (*p != ' ' && *p != '\t'))
		return 0;
	p = skip_blanks(p, end);
	if (p == end)
		return 0;
	type = *p++;
	if (p == end || (*p != ' ' && *p != '\t'))
		return 0;
	p = skip_blanks(p, end);
	name = p;
	p += strcspn(p, " \t"); /* the line is NUL-terminated at end */
	if (p == name)
		return 0;
	len = (size_t)(p - name) + 1;
	if (p < end) {
		*p++ = '\0';
		p = skip_blanks(p, end);
		if (p < end && *p == '[') {
			char *close = memchr(p, ']', (size_t)(end - p));

			if (close) {
				close[1] = '\0';
				mod = p;
			}
		}
	} else {
		*p = '\0'; /* end is the line's terminator slot */
	}
	/* `_text` is the relocation anchor; `_stext` stands in on kernels without it. */
	if (name[0] == '_' && !mod &&
	    (strcmp(name, "_text") == 0 || (!k->text && strcmp(name, "_stext") == 0)))
		k->text = addr;
	if (type != 't' && type != 'T' && type != 'w' && type != 'W')
		return 0;
	if (k->nr == k->cap)
		return -ENOMEM; /* not reached: a line is one symbol at most */
	k->name[k->nr] = (uint32_t)(ksyms__pool(k, name, len) - k->names); /* before mod: it lies after */
	k->mod[k->nr] = mod ? ksyms__module(k, mod) : 0;
	if (mod && !k->mod[k->nr])
		return -ENOMEM;
	k->unsorted |= k->nr && addr < k->start[k->nr - 1];
	k->start[k->nr] = addr;
	k->bind[k->nr] = ksym__bind(type);
	k->nr++;
	return 0;
}

/*
 * The text's len bytes (k->mem has room for len + 1) parsed into arrays
 * placed after it in k->mem, room for one symbol a line: 0 or -ENOMEM.
 */
static int ksyms__index(struct ksyms *k, size_t len)
{
	size_t lines = 1, off = (len + 8) & ~(size_t)7;
	char *p, *end, *nl;

	for (p = (char *)k->mem.p; (p = memchr(p, '\n', len - (size_t)(p - (char *)k->mem.p))); p++)
		lines++;
	if (hugemem__grow(&k->mem, off + lines * (sizeof(*k->start) + 3 * sizeof(uint32_t) + 1)))
		return -ENOMEM;
	k->names = (char *)k->mem.p; /* the block may have moved */
	k->start = (uint64_t *)(k->mem.p + off);
	k->size = (uint32_t *)(k->start + lines);
	k->name = k->size + lines;
	k->mod = k->name + lines;
	k->bind = (uint8_t *)(k->mod + lines);
	k->cap = lines;
	for (p = k->names, end = p + len; p < end; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end; /* the last line; k->names[len] is room for its NUL */
		*nl = '\0';
		if (ksyms__parse_line(k, p, nl) < 0)
			return -ENOMEM;
	}
	return 0;
}

/*
 * Sort the parsed symbols by start, input order within one start (a
 * natural merge: kallsyms is sorted but for modules' and BPF programs'
 * symbols). 0 or -ENOMEM.
 */
/* The n elements (elem bytes each) of arr in the order p[i].b gives, through tmp. */
static void ksyms__permute(void *arr, size_t elem, const struct u64pair *p, size_t n, void *tmp)
{
	for (size_t i = 0; i < n; i++)
		memcpy((char *)tmp + i * elem, (const char *)arr + p[i].b * elem, elem);
	memcpy(arr, tmp, n * elem);
}

static int ksyms__sort(struct ksyms *k)
{
	struct u64pair *p = malloc(2 * k->nr * sizeof(*p));
	void *tmp = p + k->nr; /* the sort's scratch, then each array's new order */

	if (!p)
		return -ENOMEM;
	for (size_t i = 0; i < k->nr; i++)
		p[i] = (struct u64pair){ k->start[i], i };
	pairsort(p, k->nr, tmp);
	for (size_t i = 0; i < k->nr; i++)
		k->start[i] = p[i].a;
	ksyms__permute(k->name, sizeof(*k->name), p, k->nr, tmp);
	ksyms__permute(k->mod, sizeof(*k->mod), p, k->nr, tmp);
	ksyms__permute(k->bind, sizeof(*k->bind), p, k->nr, tmp);
	free(p);
	return 0;
}

/*
 * Of the symbols [i, j) of one start, the one perf names the address by:
 * sym_entries__finish() with ksym__prefer() on the run (what it does to a
 * whole table, a run at a time; all of them sizeless but the last).
 * run has room for j - i entries.
 */
static size_t ksyms__pick(const struct ksyms *k, size_t i, size_t j, uint64_t next,
			  struct sym_entry *run)
{
	for (size_t r = 0; r < j - i; r++)
		run[r] = (struct sym_entry){ .start = k->start[i + r], .name = k->names + k->name[i + r],
					     .module = k->mod[i + r] ? k->mods[k->mod[i + r] - 1] : NULL,
					     .seq = (uint32_t)r, .bind = k->bind[i + r] };
	sym_entries__finish(run, j - i, next, ksym__prefer);
	return i + run[0].seq;
}

/* bytes from from moved to *to, which moves past them: where they are now. */
static void *ksyms__move(uint8_t **to, const void *from, size_t bytes)
{
	void *at = memmove(*to, from, bytes);

	*to += bytes;
	return at;
}

/*
 * The arrays moved down to just after the pool (each to a place below its
 * own and below the arrays after it, in that order) and the block's whole
 * 2 MiB pages past them given back: the text's addresses, types and
 * skipped lines are two of the load's eight megabytes.
 */
static void ksyms__compact(struct ksyms *k)
{
	uint8_t *to = k->mem.p + ((k->pool + 7) & ~(size_t)7);

	k->start = ksyms__move(&to, k->start, k->nr * sizeof(*k->start));
	k->size = ksyms__move(&to, k->size, k->nr * sizeof(*k->size));
	k->name = ksyms__move(&to, k->name, k->nr * sizeof(*k->name));
	k->mod = ksyms__move(&to, k->mod, k->nr * sizeof(*k->mod));
	k->bind = ksyms__move(&to, k->bind, k->nr);
	k->cap = k->nr;
	hugemem__shrink(&k->mem, (size_t)(to - k->mem.p));
}

/*
 * Sorted, one symbol an address, sized; k is freed on ENOMEM (NULL then).
 * A symbol's size is the distance to the next start (KSYMS_LAST_SIZE for
 * the last), as sym_entries__finish() gives it.
 */
static struct ksyms *ksyms__finish(struct ksyms *k)
{
	struct sym_entry *run = NULL;
	size_t i, j, out = 0, zero = 0, cap_run = 0;

	/* kptr_restrict shows every address as 0: such a table resolves nothing. */
	for (i = 0; i < k->nr; i++)
		zero += k->start[i] == 0;
	if (zero == k->nr)
		k->nr = 0;
	if (k->unsorted && ksyms__sort(k))
		goto fail;
	for (i = 0; i < k->nr; i = j) {
		size_t keep = i;

		for (j = i + 1; j < k->nr && k->start[j] == k->start[i]; j++)
			;
		if (j - i > 1) {
			if (vec__reserve((void **)&run, &cap_run, j - i, sizeof(*run), 16))
				goto fail;
			keep = ksyms__pick(k, i, j, j < k->nr ? k->start[j] - k->start[i] : KSYMS_LAST_SIZE,
					   run);
		}
		k->start[out] = k->start[keep];
		k->name[out] = k->name[keep];
		k->mod[out] = k->mod[keep];
		k->bind[out] = k->bind[keep];
		out++;
	}
	free(run);
	run = NULL;
	k->nr = out;
	for (i = 0; i < k->nr; i++) {
		uint64_t size = i + 1 < k->nr ? k->start[i + 1] - k->start[i] : KSYMS_LAST_SIZE;

		/* A kernel symbol's size must not run into the module area. */
		if (!k->mod[i] && i + 1 < k->nr && k->mod[i + 1] && size > KSYMS_LAST_SIZE)
			size = KSYMS_LAST_SIZE;
		if (!k->mod[i] && k->start[i] + size > k->image_end)
			k->image_end = k->start[i] + size;
		k->size[i] = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
		if (size >= UINT32_MAX) {
			struct ksym_big *b = realloc(k->big, (k->nr_big + 1) * sizeof(*b));

			if (!b)
				goto fail;
			k->big = b;
			b[k->nr_big++] = (struct ksym_big){ i, size };
		}
	}
	ksyms__compact(k);
	return k;
fail:
	free(run);
	ksyms__free(k);
	return NULL;
}

/*
 * Parse a kallsyms image. Garbage lines are skipped, never trusted: each
 * field is bounded by its line. Returns NULL only on allocation failure or
 * an input over KSYMS_FILE_MAX bytes.
 */
struct ksyms *ksyms__parse(const char *buf, size_t len)
{
	struct ksyms *k = calloc(1, sizeof(*k));

	if (!k || len > KSYMS_FILE_MAX || hugemem__grow(&k->mem, len + 1)) {
		ksyms__free(k);
		return NULL;
	}
	memcpy(k->mem.p, buf, len);
	if (ksyms__index(k, len)) {
		ksyms__free(k);
		return NULL;
	}
	return ksyms__finish(k);
}

struct ksyms *ksyms__load(const char *path, int *err)
{
	struct ksyms *k = NULL;
	size_t have = 0;
	int fd, ret = 0;

	fd = sym_open_regular(path);
	if (fd < 0) {
		*err = fd;
		return NULL;
	}
	k = calloc(1, sizeof(*k));
	if (!k || hugemem__grow(&k->mem, KSYMS_FIRST_READ)) {
		ret = -ENOMEM;
		goto cleanup;
	}
	for (;;) {
		ssize_t n;

		if (have + 1 >= k->mem.len && hugemem__grow(&k->mem, have + 2)) {
			ret = -ENOMEM;
			goto cleanup;
		}
		n = read(fd, k->mem.p + have, k->mem.len - have - 1); /* a byte kept for a NUL */
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			goto cleanup;
		}
		if (n == 0)
			break;
		have += (size_t)n;
		if (have > KSYMS_FILE_MAX) {
			ret = -EFBIG;
			goto cleanup;
		}
	}
	ret = ksyms__index(k, have);
cleanup:
	close(fd);
	if (ret) {
		ksyms__free(k);
		*err = ret;
		return NULL;
	}
	k = ksyms__finish(k);
	*err = k ? 0 : -ENOMEM;
	return k;
}

void ksyms__free(struct ksyms *k)
{
	if (!k)
		return;
	free(k->mods);
	hugemem__free(&k->mem);
	free(k->big);
	free(k);
}

size_t ksyms__nr(const struct ksyms *k)
{
	return k->nr;
}

uint64_t ksyms__text(const struct ksyms *k)
{
	return k->text;
}

uint64_t ksyms__image_end(const struct ksyms *k)
{
	return k->image_end;
}

struct ksym_key {
	const struct ksyms *k;
	uint64_t addr;
};

static bool ksym_starts_after(const void *ctx, size_t i)
{
	const struct ksym_key *key = ctx;

	return key->k->start[i] > key->addr;
}

const struct sym_entry *ksyms__find(const struct ksyms *k, uint64_t addr)
{
	static __thread struct sym_entry found;
	struct ksym_key key = { .k = k, .addr = addr };
	/* the last symbol with start <= addr */
	size_t lo = bsearch_first(k->nr, ksym_starts_after, &key), i;
	uint64_t size;

	if (!lo)
		return NULL;
	i = lo - 1;
	size = k->size[i];
	for (size_t b = 0; size == UINT32_MAX && b < k->nr_big; b++)
		if (k->big[b].i == i)
			size = k->big[b].size;
	if (addr - k->start[i] >= size)
		return NULL;
	found = (struct sym_entry){ .start = k->start[i], .size = size, .name = k->names + k->name[i],
				    .module = k->mod[i] ? k->mods[k->mod[i] - 1] : NULL, .seq = (uint32_t)i,
				    .bind = k->bind[i] };
	return &found;
}
