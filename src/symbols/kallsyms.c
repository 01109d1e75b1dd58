// SPDX-License-Identifier: GPL-2.0-only
/*
 * /proc/kallsyms: "ADDR TYPE NAME [MODULE]" lines. Only text symbols are
 * kept; a symbol's size is the distance to the next one. The file (5 MB
 * and more) is read a block at a time and only the text symbols' names
 * are kept, in one pool.
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
#include "util/pairsort.h"
#include "util/vec.h"

#define KSYMS_FILE_MAX (512u << 20)
#define KSYMS_LAST_SIZE 4096
#define KSYMS_BLOCK (256u << 10)

/*
 * The symbols are kept in arrays of their fields, 21 bytes a symbol
 * instead of a struct sym_entry's 40 (kallsyms has 100 000 and more), and
 * parsed straight into them: start, size (filled at the end; a size past
 * 32 bits, which only a gap in the address space can give, is kept in
 * big[]), name (offset in names), module (index in mods + 1, 0 for the
 * kernel image), binding.
 */
struct ksym_big {
	size_t i;
	uint64_t size;
};

struct ksyms {
	char *names;		/* the text symbols' names */
	size_t nr_names, cap_names;
	size_t nr, cap;		/* symbols, room in start, name, mod and bind */
	bool unsorted;		/* a start below the one before it */
	uint64_t *start;
	uint32_t *size, *name;
	uint32_t *mod;
	uint8_t *bind;
	struct ksym_big *big;
	size_t nr_big;
	uint64_t text;
	uint64_t image_end;
	char **mods;		/* distinct "[mod]" strings */
	size_t nr_mods;
};

/* Parses hex digits at *p (at most 16, an optional 0x); NULL when none or overlong. */
static char *parse_hex(char *p, char *end, uint64_t *out)
{
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

static char *skip_word(char *p, char *end)
{
	while (p < end && *p != ' ' && *p != '\t')
		p++;
	return p;
}

/* The index + 1 of module name in mods, added if new; 0 on ENOMEM. */
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
	nm[k->nr_mods] = strdup(name);
	if (!nm[k->nr_mods])
		return 0;
	return (uint32_t)++k->nr_mods;
}

/* Room for one more symbol in the arrays parsing fills: 0 or -ENOMEM. */
static int ksyms__reserve(struct ksyms *k)
{
	size_t cap = k->cap ? 2 * k->cap : 4096;
	void *p;

	if ((p = realloc(k->start, cap * sizeof(*k->start))))
		k->start = p;
	if (p && (p = realloc(k->name, cap * sizeof(*k->name))))
		k->name = p;
	if (p && (p = realloc(k->mod, cap * sizeof(*k->mod))))
		k->mod = p;
	if (p && (p = realloc(k->bind, cap)))
		k->bind = p;
	if (!p)
		return -ENOMEM; /* the arrays grown so far stay valid, at the old room */
	k->cap = cap;
	return 0;
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
 * One line, NUL-terminated at end (which it may write to). A text symbol's
 * name goes to the pool, its entry keeps the name's offset there until
 * ksyms__finish() makes it a pointer (the pool moves as it grows).
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
	p = skip_word(p, end);
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
	if (k->nr_names + len > UINT32_MAX)
		return -ENOMEM;
	if ((k->nr == k->cap && ksyms__reserve(k)) ||
	    vec__reserve((void **)&k->names, &k->cap_names, k->nr_names + len, 1, 1 << 16))
		return -ENOMEM;
	memcpy(k->names + k->nr_names, name, len);
	k->mod[k->nr] = mod ? ksyms__module(k, mod) : 0;
	if (mod && !k->mod[k->nr])
		return -ENOMEM;
	k->unsorted |= k->nr && addr < k->start[k->nr - 1];
	k->start[k->nr] = addr;
	k->name[k->nr] = (uint32_t)k->nr_names;
	k->nr_names += len;
	k->bind[k->nr] = ksym__bind(type);
	k->nr++;
	return 0;
}

/*
 * The complete lines of buf[0, len) (len < size: buf[len] is writable),
 * the last one too when last: the bytes used. -ENOMEM, -E2BIG past 2^32
 * lines.
 */
static long ksyms__parse_lines(struct ksyms *k, char *buf, size_t len, bool last)
{
	char *p = buf, *end = buf + len, *nl;

	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl) {
			if (!last)
				break;
			nl = end;
		}
		*nl = '\0';
		if (k->nr >= UINT32_MAX - 1)
			return -E2BIG;
		if (ksyms__parse_line(k, p, nl) < 0)
			return -ENOMEM;
		p = nl + 1;
	}
	return p > end ? (long)len : p - buf;
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
	k->size = malloc((k->nr ? k->nr : 1) * sizeof(*k->size));
	if (!k->size || (k->unsorted && ksyms__sort(k)))
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
	return k;
fail:
	free(run);
	ksyms__free(k);
	return NULL;
}

/*
 * Parse a kallsyms image. Garbage lines are skipped, never trusted: each
 * field is bounded by its line. Returns NULL only on allocation failure or
 * an input with more lines than 2^32.
 */
struct ksyms *ksyms__parse(const char *buf, size_t len)
{
	struct ksyms *k = calloc(1, sizeof(*k));
	char *copy = malloc(len + 1);
	long used;

	if (!k || !copy) {
		free(copy);
		ksyms__free(k);
		return NULL;
	}
	memcpy(copy, buf, len);
	copy[len] = '\0';
	used = ksyms__parse_lines(k, copy, len, true);
	free(copy);
	if (used < 0) {
		ksyms__free(k);
		return NULL;
	}
	return ksyms__finish(k);
}

struct ksyms *ksyms__load(const char *path, int *err)
{
	struct ksyms *k = NULL;
	size_t have = 0, total = 0;
	char *buf = NULL;
	long used;
	int fd, ret = 0;

	fd = sym_open_regular(path);
	if (fd < 0) {
		*err = fd;
		return NULL;
	}
	k = calloc(1, sizeof(*k));
	buf = malloc(KSYMS_BLOCK + 1);
	if (!k || !buf) {
		ret = -ENOMEM;
		goto cleanup;
	}
	for (;;) {
		ssize_t n = read(fd, buf + have, KSYMS_BLOCK - have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			goto cleanup;
		}
		total += (size_t)n;
		if (total > KSYMS_FILE_MAX) {
			ret = -EFBIG;
			goto cleanup;
		}
		have += (size_t)n;
		used = ksyms__parse_lines(k, buf, have, n == 0 || have == KSYMS_BLOCK);
		if (used < 0) {
			ret = used == -E2BIG ? -ENOMEM : (int)used;
			goto cleanup;
		}
		have -= (size_t)used;
		memmove(buf, buf + used, have);
		if (n == 0)
			break;
	}
cleanup:
	free(buf);
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
	size_t i;

	if (!k)
		return;
	for (i = 0; i < k->nr_mods; i++)
		free(k->mods[i]);
	free(k->mods);
	free(k->names);
	free(k->start);
	free(k->size);
	free(k->name);
	free(k->mod);
	free(k->bind);
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
