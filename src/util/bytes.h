/* SPDX-License-Identifier: GPL-2.0-only */
/* Little-endian loads and stores in byte buffers that may not be aligned (file formats). */
#ifndef OFFCPU_UTIL_BYTES_H
#define OFFCPU_UTIL_BYTES_H

#include <stdint.h>
#include <string.h>

static inline uint64_t rd64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static inline uint32_t rd32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static inline void wr64(void *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static inline void wr32(void *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

#endif
