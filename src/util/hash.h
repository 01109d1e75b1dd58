/* SPDX-License-Identifier: GPL-2.0-only */
/* Hash functions for util/htab.h: a 64-bit mix and a hash of bytes. */
#ifndef OFFCPU_UTIL_HASH_H
#define OFFCPU_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A bijective mix of 64 bits (every input bit reaches every output bit). */
static inline uint64_t hash__mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x7fb5d329728ea185ULL;
	x ^= x >> 27;
	x *= 0x81dadef4bc2dd44dULL;
	x ^= x >> 33;
	return x;
}

/* n bytes at p, eight at a time. */
static inline uint64_t hash__bytes(const void *p, size_t n, uint64_t seed)
{
	const uint8_t *b = p;
	uint64_t h = seed ^ (n * 0x9e3779b97f4a7c15ULL);

	while (n >= 8) {
		uint64_t v;

		memcpy(&v, b, 8);
		h = hash__mix(h ^ v) + 0x9e3779b97f4a7c15ULL;
		b += 8;
		n -= 8;
	}
	if (n) {
		uint64_t v = 0;

		memcpy(&v, b, n);
		h = hash__mix(h ^ v ^ ((uint64_t)n << 56));
	}
	return hash__mix(h);
}

static inline uint64_t hash__str(const char *s)
{
	return hash__bytes(s, strlen(s), 1);
}

#endif
