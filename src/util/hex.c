// SPDX-License-Identifier: GPL-2.0-only
#include <stdint.h>
#include <endian.h>
#include <string.h>

#include "util/hex.h"

int hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* hex_digit() of every byte + 1 (0: not a digit): kallsyms has 16 digits on each of 100 000 lines */
static const uint8_t digit1[256] = {
	['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8,
	['8'] = 9, ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
	['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

const char *hex_parse(const char *p, const char *end, uint64_t *out)
{
	uint64_t v = 0;
	int n = 0, d;

	while ((!end || p < end) && (d = digit1[(unsigned char)*p] - 1) >= 0) {
		if (++n > 16)
			return NULL;
		v = v << 4 | (uint64_t)d;
		p++;
	}
	if (!n)
		return NULL;
	*out = v;
	return p;
}

#define BYTES(b) (0x0101010101010101ULL * (b))

/* 0x80 in each byte of x (all below 0x80) that lies in [lo, hi], 0 in the others. */
static inline uint64_t bytes_in(uint64_t x, uint8_t lo, uint8_t hi)
{
	return (x + BYTES(0x80 - lo)) & ~(x + BYTES(0x7f - hi)) & BYTES(0x80);
}

/* The 8 hex digits of x (the first in its low byte) as a number, or false. */
static inline bool hex8(uint64_t x, uint32_t *out)
{
	uint64_t d;

	if (x & BYTES(0x80))
		return false;
	/* '0'-'9', or 'a'-'f' / 'A'-'F' (only those two ranges map to 0x61-0x66 under | 0x20) */
	if ((bytes_in(x, '0', '9') | bytes_in(x | BYTES(0x20), 'a', 'f')) != BYTES(0x80))
		return false;
	d = (x & BYTES(0x0f)) + ((x >> 6) & BYTES(0x01)) * 9; /* each byte its digit's value */
	d = ((d << 4) | (d >> 8)) & 0x00ff00ff00ff00ffULL;      /* two digits a byte, in even bytes */
	d = ((d << 8) | (d >> 16)) & 0x0000ffff0000ffffULL;     /* four a 16-bit lane */
	*out = (uint32_t)((d << 16) | (d >> 32));
	return true;
}

bool hex_parse16(const char *p, uint64_t *out)
{
	uint64_t a, b;
	uint32_t hi, lo;

	memcpy(&a, p, 8);
	memcpy(&b, p + 8, 8);
	if (!hex8(le64toh(a), &hi) || !hex8(le64toh(b), &lo))
		return false;
	*out = (uint64_t)hi << 32 | lo;
	return true;
}

size_t hex_put(char *buf, uint64_t v, int min)
{
	size_t n = 1;

	while (n < 16 && (v >> (4 * n) || (int)n < min))
		n++;
	for (size_t i = n; i-- > 0; v >>= 4)
		buf[i] = "0123456789abcdef"[v & 15];
	return n;
}
