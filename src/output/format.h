/* SPDX-License-Identifier: GPL-2.0-only */
/* How the outputs write times and frames. */
#ifndef OFFCPU_OUTPUT_FORMAT_H
#define OFFCPU_OUTPUT_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "session/session.h"

/* "1.23 s", "45.6 ms", "789 us", "12 ns" */
void report__fmt_ns(char *buf, size_t len, uint64_t ns);

/*
 * snprintf(buf, len, "%*.2f", width, v), the same text to the last digit
 * (the double's exact value rounded, ties to even, as glibc does), without
 * printf's cost for the values a report prints by the ten thousand:
 * finite, 0 to 2^45. Others go to snprintf. Returns the length.
 */
size_t report__fmt_fixed2(char *buf, size_t len, double v, int width);

/* v in decimal at buf, as "%" PRIu64 without its NUL (at most 20 digits): their count. */
size_t report__put_u64(char *buf, uint64_t v);

/*
 * The recording's window, after session__run(): its start and stop as
 * offcpu's recorder wrote them (waits in progress at either end are cut
 * to it), else the first and last sample as perf's SAMPLE_TIME feature
 * says, else the first and last record with a time. false when none is
 * known.
 */
bool report__window(const struct session *s, uint64_t *first, uint64_t *last);

/*
 * A frame's name in every output: its symbol, else [its DSO] ([vdso],
 * [kernel.kallsyms] as they are), else [unknown]. Returns the symbol or buf.
 */
const char *frame__name(const struct frame *fr, char *buf, size_t len);

/* frame__name() into f, then inl or kern when it is an inlined or a kernel frame. */
void frame__fput(FILE *f, const struct frame *fr, const char *inl, const char *kern);

#endif
