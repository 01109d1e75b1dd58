// SPDX-License-Identifier: GPL-2.0-only
/*
 * Two gzip members compressed side by side. zlib compresses on one core;
 * a profile's last step (its 10 MB compressed, 80 ms at level 1) ran while
 * the other core had nothing to do. Two members cost 20 bytes of header
 * and trailer and the second half's first matches, about nothing.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include "util/gzip.h"

#define SPLIT_MIN (1u << 20) /* below, one member, this thread */

struct member {
	const uint8_t *in;
	size_t len;
	int level;
	uint8_t *out; /* malloc'd */
	size_t nout;
	int err;
};

/* Compress m->in into m->out as one gzip member; m->err 0 or a negative errno. */
static void *member_deflate(void *arg)
{
	struct member *m = arg;
	z_stream zs = { 0 };
	size_t bound, in_left = m->len;
	int ret;

	m->err = -ENOMEM;
	if (deflateInit2(&zs, m->level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return NULL;
	bound = deflateBound(&zs, m->len);
	m->out = malloc(bound);
	if (!m->out)
		goto cleanup;
	zs.next_in = (Bytef *)m->in;
	zs.next_out = m->out;
	do {
		/* avail_in and avail_out are unsigned int: feed a gigabyte at a time */
		size_t out_left = bound - (size_t)(zs.next_out - m->out);

		zs.avail_in = in_left > (1u << 30) ? 1u << 30 : (unsigned int)in_left;
		zs.avail_out = out_left > (1u << 30) ? 1u << 30 : (unsigned int)out_left;
		in_left -= zs.avail_in;
		ret = deflate(&zs, in_left ? Z_NO_FLUSH : Z_FINISH);
		in_left += zs.avail_in; /* what this call left */
	} while (ret == Z_OK);
	if (ret == Z_STREAM_END) {
		m->nout = (size_t)(zs.next_out - m->out);
		m->err = 0;
	} else {
		m->err = -EIO;
	}
cleanup:
	deflateEnd(&zs);
	return NULL;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n > SSIZE_MAX ? SSIZE_MAX : n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int gzip__write(int fd, const void *data, size_t len, int level)
{
	struct member m[2] = {
		{ .in = data, .len = len >= SPLIT_MIN ? len / 2 : len, .level = level },
		{ .level = level },
	};
	bool threaded = false;
	pthread_t th;
	int err;

	m[1].in = m[0].in + m[0].len;
	m[1].len = len - m[0].len;
	if (m[1].len)
		threaded = !pthread_create(&th, NULL, member_deflate, &m[1]);
	member_deflate(&m[0]);
	if (threaded)
		pthread_join(th, NULL);
	else if (m[1].len) /* no thread: the second half here too */
		member_deflate(&m[1]);
	err = m[0].err ? m[0].err : m[1].err;
	if (!err)
		err = write_all(fd, m[0].out, m[0].nout);
	if (!err && m[1].len)
		err = write_all(fd, m[1].out, m[1].nout);
	free(m[0].out);
	free(m[1].out);
	return err;
}
