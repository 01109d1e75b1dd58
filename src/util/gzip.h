/* SPDX-License-Identifier: GPL-2.0-only */
/* A gzip file written with both cores, while its data is still being made. */
#ifndef OFFCPU_UTIL_GZIP_H
#define OFFCPU_UTIL_GZIP_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The stream writes to fd, at zlib level (1-9), each piece put as one gzip
 * member, in order: a gzip file (RFC 1952 section 2.2) that gunzip,
 * zlib's gzread and Go's compress/gzip (and so `go tool pprof`) read as
 * the whole. Pieces are compressed by a thread of the stream's as they
 * come, and by the caller's thread too in gzip__stream_finish(); about a
 * megabyte each keeps both busy.
 */
struct gzip_stream;

/* NULL when out of memory. */
struct gzip_stream *gzip__stream_new(int fd, int level);
/* Hand data[0..len) over: malloc'd, the stream frees it. 0 or -ENOMEM (data freed). */
int gzip__stream_put(struct gzip_stream *z, void *data, size_t len);
/*
 * A buffer put before and compressed since, the caller's again (malloc'd,
 * *cap bytes usable), or NULL. The next piece made in it costs no first
 * touches of new pages: on a paravirtualized VM about 10 us each, a fifth
 * of the time a profile takes to encode.
 */
void *gzip__stream_spare(struct gzip_stream *z, size_t *cap);
/*
 * Compress what is left, write every member, free the stream (fd stays
 * open). 0, or the first negative errno of a put, a member or a write.
 * Without write (the caller failed before the end), nothing is written
 * and 0 comes back.
 */
int gzip__stream_finish(struct gzip_stream *z, bool write);

#endif
