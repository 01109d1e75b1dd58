// SPDX-License-Identifier: GPL-2.0-only
#include <stdint.h>

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

size_t hex_put(char *buf, uint64_t v, int min)
{
	size_t n = 1;

	while (n < 16 && (v >> (4 * n) || (int)n < min))
		n++;
	for (size_t i = n; i-- > 0; v >>= 4)
		buf[i] = "0123456789abcdef"[v & 15];
	return n;
}
