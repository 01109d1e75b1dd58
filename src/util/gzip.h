/* SPDX-License-Identifier: GPL-2.0-only */
/* A gzip file written with both cores. */
#ifndef OFFCPU_UTIL_GZIP_H
#define OFFCPU_UTIL_GZIP_H

#include <stddef.h>

/*
 * Write data[0..len) to fd, gzip-compressed at zlib level (1-9). From a
 * megabyte on, the halves are compressed at once, by this thread and one
 * more, as two gzip members one after the other: a gzip file (RFC 1952
 * section 2.2) that gunzip, zlib's gzread and Go's compress/gzip (and so
 * `go tool pprof`) read as the whole. 0 or a negative errno.
 */
int gzip__write(int fd, const void *data, size_t len, int level);

#endif
