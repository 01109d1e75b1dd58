/* SPDX-License-Identifier: GPL-2.0-only */
/* Helpers shared by the fuzz targets. */
#ifndef OFFCPU_FUZZ_COMMON_H
#define OFFCPU_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

/*
 * Call probe(ctx, v) for v-1, v and v+1 of each of the first 64 hex
 * numbers (1-16 digits) of the text: the addresses a symbol table parsed
 * from it has edges at.
 */
static inline void fuzz_hex_probes(const uint8_t *d, size_t n, void (*probe)(void *, uint64_t),
				   void *ctx)
{
	size_t i = 0;
	int found = 0;

	while (i < n && found < 64) {
		uint64_t v = 0;
		int digits = 0;

		while (i < n) {
			int c = d[i] | 0x20, x;

			if (d[i] >= '0' && d[i] <= '9')
				x = d[i] - '0';
			else if (c >= 'a' && c <= 'f')
				x = c - 'a' + 10;
			else
				break;
			v = v << 4 | (uint64_t)x;
			digits++;
			i++;
		}
		if (digits && digits <= 16) {
			probe(ctx, v - 1);
			probe(ctx, v);
			probe(ctx, v + 1);
			found++;
		}
		if (!digits)
			i++;
	}
}

#endif
