// SPDX-License-Identifier: GPL-2.0-only
/* Sorted symbol arrays and file reading shared by the symbol sources. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbols/sym_internal.h"
#include "util/bsearch.h"
#include "util/pairsort.h"

static int entry__cmp(const void *a, const void *b)
{
	const struct sym_entry *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	/* Input order for equal starts, so "last one wins" is well defined. */
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Sort by entry__cmp()'s order, through (start, seq:index) pairs:
 * pairsort()'s inline merges instead of qsort()'s calls through a pointer
 * on 40-byte entries (a shared library's .dynsym comes in hash order:
 * libLLVM's 34 000 functions took 4 ms to sort that way, half of its
 * loading). qsort() when the scratch cannot be had.
 */
static void entries__sort(struct sym_entry *e, size_t nr)
{
	struct u64pair *p = nr <= UINT32_MAX ? malloc(2 * nr * sizeof(*p)) : NULL;
	struct sym_entry *c = p ? malloc(nr * sizeof(*c)) : NULL;
	bool in_seq = true;
	size_t i;

	if (!c) {
		free(p);
		qsort(e, nr, sizeof(*e), entry__cmp);
		return;
	}
	for (i = 0; i < nr; i++) {
		p[i] = (struct u64pair){ e[i].start, (uint64_t)e[i].seq << 32 | i };
		in_seq &= !i || e[i - 1].seq < e[i].seq;
	}
	/* entries in seq order (an ELF table's): a stable sort by start is entry__cmp()'s */
	if (in_seq)
		pairsort_by_a(p, nr, p + nr);
	else
		pairsort(p, nr, p + nr);
	for (i = 0; i < nr; i++)
		c[i] = e[(uint32_t)p[i].b];
	memcpy(e, c, nr * sizeof(*e));
	free(c);
	free(p);
}

/* Zero sizes become the distance to the next entry, the last one's last_size. */
static void entries__fill_sizes(struct sym_entry *e, size_t nr, uint64_t last_size)
{
	size_t i;

	for (i = 0; i < nr; i++) {
		if (e[i].size)
			continue;
		e[i].size = i + 1 < nr ? e[i + 1].start - e[i].start : last_size;
	}
}

size_t sym_entries__finish(struct sym_entry *e, size_t nr, uint64_t last_size,
			   int (*prefer)(const struct sym_entry *a, const struct sym_entry *b))
{
	size_t i, out = 0;

	if (!nr)
		return 0;
	/* kallsyms and most symbol tables come sorted: qsort would copy them for nothing */
	for (i = 1; i < nr && entry__cmp(&e[i - 1], &e[i]) < 0; i++)
		;
	if (i < nr)
		entries__sort(e, nr);
	/*
	 * perf sizes symbols (symbols__fixup_end) before it drops aliases
	 * (symbols__fixup_duplicate): a zero-sized alias followed by another of
	 * its start stays zero-sized and loses to any sized one. Filling here
	 * first lets prefer() see the same sizes.
	 */
	entries__fill_sizes(e, nr, last_size);
	for (i = 0; i < nr; i++) {
		if (out && e[out - 1].start == e[i].start) {
			if (prefer ? prefer(&e[i], &e[out - 1]) > 0 : 1)
				e[out - 1] = e[i];
			continue;
		}
		e[out++] = e[i];
	}
	/* A kept entry that was zero-sized within its run spans to the next start. */
	entries__fill_sizes(e, out, last_size);
	return out;
}

static size_t leading_underscores(const char *s)
{
	size_t n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

static bool name_is_sys_alias(const char *s)
{
	return strncmp(s, "SyS", 3) == 0 || strncmp(s, "compat_SyS", 10) == 0;
}

int sym_entry__perf_prefer(const struct sym_entry *a, const struct sym_entry *b)
{
	size_t na, nb;

	/* Each rule: > 0 takes the newcomer a, < 0 keeps b, 0 asks the next. */
	if (!a->size != !b->size)
		return a->size ? 1 : -1;
	if ((a->bind == STB_WEAK) != (b->bind == STB_WEAK))
		return a->bind == STB_WEAK ? -1 : 1;
	if ((a->bind == STB_GLOBAL) != (b->bind == STB_GLOBAL))
		return a->bind == STB_GLOBAL ? 1 : -1;
	na = leading_underscores(a->name);
	nb = leading_underscores(b->name);
	if (na != nb)
		return na < nb ? 1 : -1;
	na = strlen(a->name);
	nb = strlen(b->name);
	if (na != nb)
		return na > nb ? 1 : -1;
	return name_is_sys_alias(b->name) ? 1 : -1;
}

struct upto_key {
	const struct sym_entry *e;
	uint64_t addr;
};

static bool starts_after(const void *ctx, size_t i)
{
	const struct upto_key *k = ctx;

	return k->e[i].start > k->addr;
}

size_t sym_entries__upto(const struct sym_entry *e, size_t nr, uint64_t addr)
{
	struct upto_key k = { e, addr };

	return bsearch_first(nr, starts_after, &k);
}

const struct sym_entry *sym_entries__find(const struct sym_entry *e, size_t nr, uint64_t addr)
{
	size_t lo = sym_entries__upto(e, nr, addr); /* the last entry with start <= addr is lo - 1 */

	if (!lo)
		return NULL;
	e = &e[lo - 1];
	return addr - e->start < e->size ? e : NULL;
}

/*
 * Paths come from recordings, which may be hostile: a FIFO or a device
 * there would block the reader or never end. Opened without blocking and
 * kept only when it is a regular file (-EINVAL otherwise).
 */
int sym_open_regular(const char *path)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

int sym_read_file(const char *path, size_t max, char **bufp, size_t *lenp)
{
	size_t cap = 65536, len = 0;
	char *buf = NULL, *nb;
	int fd, ret = 0;
	ssize_t n;

	*bufp = NULL;
	*lenp = 0;
	fd = sym_open_regular(path);
	if (fd < 0)
		return fd;
	buf = malloc(cap + 1);
	if (!buf) {
		ret = -ENOMEM;
		goto cleanup;
	}
	for (;;) {
		if (len == cap) {
			if (cap >= max) {
				ret = -EFBIG;
				goto cleanup;
			}
			cap = cap * 2 > max ? max : cap * 2;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				ret = -ENOMEM;
				goto cleanup;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			goto cleanup;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	*bufp = buf;
	*lenp = len;
	buf = NULL;
cleanup:
	free(buf);
	close(fd);
	return ret;
}
