// SPDX-License-Identifier: GPL-2.0-only
/* Protobuf wire-format encoder into one growing buffer. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "output/pprof/pb.h"

/*
 * A buffer of PB_HUGE_FROM bytes and more is made of whole 2 MiB pages:
 * a profile's pieces are a megabyte or more each, and on 4 KiB pages
 * each page's first touch (~10 us on a paravirtualized VM) was a fifth of
 * the encoding's time.
 */
#define PB_HUGE_FROM ((size_t)256 << 10)
#define PB_HUGE ((size_t)2 << 20)

#define WT_VARINT 0
#define WT_I64 1
#define WT_LEN 2

struct pb {
	uint8_t *buf;
	size_t len, cap;
	int err;
};

struct pb *pb__new(void)
{
	return calloc(1, sizeof(struct pb));
}

void pb__free(struct pb *b)
{
	if (!b)
		return;
	free(b->buf);
	free(b);
}

void pb__reset(struct pb *b)
{
	b->len = 0;
	b->err = 0;
}

void *pb__take(struct pb *b, size_t *len)
{
	void *buf = b->err || !b->len ? NULL : b->buf;

	*len = buf ? b->len : 0;
	if (buf) {
		b->buf = NULL;
		b->len = b->cap = 0;
	}
	return buf;
}

void pb__give(struct pb *b, void *buf, size_t cap)
{
	if (b->buf || !cap) {
		free(buf);
		return;
	}
	b->buf = buf;
	b->cap = cap;
}

const uint8_t *pb__data(const struct pb *b)
{
	return b->buf;
}

size_t pb__len(const struct pb *b)
{
	return b->len;
}

int pb__error(const struct pb *b)
{
	return b->err;
}

/* Room for n more bytes: 0, or the sticky -ENOMEM. */
static int reserve(struct pb *b, size_t n)
{
	size_t cap;
	uint8_t *nb;

	if (b->err)
		return b->err;
	if (b->len + n <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 4096;
	while (cap < b->len + n)
		cap *= 2;
	if (cap >= PB_HUGE_FROM) {
		/* whole 2 MiB pages, aligned: the kernel backs them with huge pages */
		cap = (cap + PB_HUGE - 1) & ~(PB_HUGE - 1);
		if (posix_memalign((void **)&nb, PB_HUGE, cap))
			return b->err = -ENOMEM;
		madvise(nb, cap, MADV_HUGEPAGE); /* a hint: no error matters */
		if (b->len)
			memcpy(nb, b->buf, b->len);
		free(b->buf);
	} else if (!(nb = realloc(b->buf, cap))) {
		return b->err = -ENOMEM;
	}
	b->buf = nb;
	b->cap = cap;
	return 0;
}

static size_t varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* v at p as a varint: the byte after it. */
static inline uint8_t *put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/*
 * Room for n more bytes, checked inline: a profile's samples are millions
 * of varints (their location ids), and this is all most of them need.
 */
static inline int room(struct pb *b, size_t n)
{
	return !b->err && b->len + n <= b->cap ? 0 : reserve(b, n);
}

void pb__varint(struct pb *b, uint64_t v)
{
	if (room(b, 10))
		return;
	b->len = (size_t)(put_varint(b->buf + b->len, v) - b->buf);
}

static void tag(struct pb *b, uint32_t field, int wt)
{
	pb__varint(b, (uint64_t)field << 3 | (uint64_t)wt);
}

/* A varint field: its tag and value, one check for room. */
static void varint_field(struct pb *b, uint32_t field, uint64_t v)
{
	uint8_t *p;

	if (room(b, 20))
		return;
	p = put_varint(b->buf + b->len, (uint64_t)field << 3 | WT_VARINT);
	b->len = (size_t)(put_varint(p, v) - b->buf);
}

void pb__uint(struct pb *b, uint32_t field, uint64_t v)
{
	if (v)
		varint_field(b, field, v);
}

void pb__uint_present(struct pb *b, uint32_t field, uint64_t v)
{
	varint_field(b, field, v);
}

void pb__fixed64(struct pb *b, uint32_t field, uint64_t v)
{
	tag(b, field, WT_I64);
	if (reserve(b, 8))
		return;
	for (int i = 0; i < 8; i++)
		b->buf[b->len++] = (uint8_t)(v >> (8 * i));
}

void pb__bytes(struct pb *b, uint32_t field, const void *p, size_t n)
{
	tag(b, field, WT_LEN);
	pb__varint(b, n);
	if (!n || reserve(b, n))
		return;
	memcpy(b->buf + b->len, p, n);
	b->len += n;
}

/*
 * The tag and length of a length-delimited field of body bytes, with room
 * for them: where they go, or NULL after an error. With its body, what
 * pb__begin(), the body's calls and pb__end() write, counted first so
 * that nothing moves.
 */
static uint8_t *packed_head(struct pb *b, uint32_t field, size_t body)
{
	if (room(b, 20 + body))
		return NULL;
	return put_varint(put_varint(b->buf + b->len, (uint64_t)field << 3 | WT_LEN), body);
}

void pb__uint_msg(struct pb *b, uint32_t field, size_t n, const uint32_t *fields,
		  const uint64_t *vals)
{
	size_t body = 0;
	uint8_t *p;

	for (size_t i = 0; i < n; i++)
		if (vals[i])
			body += varint_size((uint64_t)fields[i] << 3 | WT_VARINT) + varint_size(vals[i]);
	p = packed_head(b, field, body);
	if (!p)
		return;
	for (size_t i = 0; i < n; i++)
		if (vals[i])
			p = put_varint(put_varint(p, (uint64_t)fields[i] << 3 | WT_VARINT), vals[i]);
	b->len = (size_t)(p - b->buf);
}

/* Value i of v, an array of uint64_t (wide) or uint32_t. */
static inline uint64_t value_at(const void *v, size_t i, bool wide)
{
	return wide ? ((const uint64_t *)v)[i] : ((const uint32_t *)v)[i];
}

/* A packed field of the n values of v (wide: uint64_t, else uint32_t). */
static inline void packed(struct pb *b, uint32_t field, const void *v, size_t n, bool wide)
{
	size_t body = 0;
	uint8_t *p;

	for (size_t i = 0; i < n; i++)
		body += varint_size(value_at(v, i, wide));
	p = packed_head(b, field, body);
	if (!p)
		return;
	for (size_t i = 0; i < n; i++)
		p = put_varint(p, value_at(v, i, wide));
	b->len = (size_t)(p - b->buf);
}

void pb__packed_u32(struct pb *b, uint32_t field, const uint32_t *v, size_t n)
{
	packed(b, field, v, n, false);
}

void pb__packed_u64(struct pb *b, uint32_t field, const uint64_t *v, size_t n)
{
	packed(b, field, v, n, true);
}

void pb__string(struct pb *b, uint32_t field, const char *s)
{
	pb__bytes(b, field, s, strlen(s));
}

/* The mark is where the one byte reserved for the length sits. */
size_t pb__begin(struct pb *b, uint32_t field)
{
	size_t mark;

	tag(b, field, WT_LEN);
	mark = b->len;
	if (!reserve(b, 1))
		b->buf[b->len++] = 0;
	return mark;
}

void pb__end(struct pb *b, size_t mark)
{
	size_t body, n;

	if (b->err)
		return;
	body = b->len - mark - 1;
	n = varint_size(body);
	if (n > 1) {
		if (reserve(b, n - 1))
			return;
		memmove(b->buf + mark + n, b->buf + mark + 1, body);
		b->len += n - 1;
	}
	(void)put_varint(b->buf + mark, body);
}
