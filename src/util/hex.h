/* SPDX-License-Identifier: GPL-2.0-only */
/* Hex numbers in text: /proc files, kallsyms, perf-PID.map. */
#ifndef OFFCPU_UTIL_HEX_H
#define OFFCPU_UTIL_HEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The value of hex digit c (either case), or -1. */
int hex_digit(int c);

/*
 * The hex digits at p, up to end (NULL: a NUL-terminated string) and
 * without a prefix, as a number in *out. Returns the first character after
 * them; NULL when there are none or more than 16.
 */
const char *hex_parse(const char *p, const char *end, uint64_t *out);

/*
 * Exactly 16 hex digits at p (either case; p has 16 readable bytes) as a
 * number in *out: true, or false when any of them is not a digit. The
 * form of every address in a 64-bit kernel's /proc/kallsyms: read 8 bytes
 * at a time, about a tenth of hex_parse()'s instructions.
 */
bool hex_parse16(const char *p, uint64_t *out);

/*
 * v in lower-case hex digits, at least min of them (zeros in front), at
 * buf, as printf's "%0*" PRIx64 writes it, without its NUL: at most 16.
 * Returns how many were written.
 */
size_t hex_put(char *buf, uint64_t v, int min);

#endif
