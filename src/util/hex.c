// SPDX-License-Identifier: GPL-2.0-only
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

const char *hex_parse(const char *p, const char *end, uint64_t *out)
{
	uint64_t v = 0;
	int n = 0, d;

	while ((!end || p < end) && (d = hex_digit((unsigned char)*p)) >= 0) {
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
