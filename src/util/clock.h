/* SPDX-License-Identifier: GPL-2.0-only */
/* The monotonic clock in ns (CLOCK_MONOTONIC: the samples' and the BPF side's time line). */
#ifndef OFFCPU_UTIL_CLOCK_H
#define OFFCPU_UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

#endif
