// SPDX-License-Identifier: GPL-2.0-only
/*
 * gzip with both cores. zlib compresses on one core; a profile's last
 * step (its 10 MB compressed, 80 ms at level 1) ran while the other core
 * had nothing to do. So the data goes out as gzip members of about a
 * megabyte, compressed by a thread of the stream's while the caller still
 * makes the rest, and by the caller too once it is done. A member costs
 * 20 bytes of header and trailer and its first matches, about nothing.
 */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "util/gzip.h"
#include "util/vec.h"

struct member {
	uint8_t *in;  /* malloc'd, the stream's: freed once compressed */
	size_t len;
	uint8_t *out; /* malloc'd */
	size_t nout;
	int err;
};

/* Compress m->in into m->out as one gzip member; 0 or a negative errno. */
static int member_deflate(struct member *m, int level)
{
	z_stream zs = { 0 };
	size_t bound, in_left = m->len;
	int ret, err = -ENOMEM;

	if (deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return err;
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
		err = 0;
	} else {
		err = -EIO;
	}
cleanup:
	deflateEnd(&zs);
	return err;
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

#define GZIP_SPARES 2

/*
 * The members in order; next is the first nobody has taken. Under lock:
 * next, nr (and the array), compressed, done, and each member's out and
 * err once it is compressed (the taker's until then). They are written
 * at the end, in order.
 */
struct gzip_stream {
	int fd, level;
	int err;            /* under lock: the first put's that failed */
	bool threaded, done;
	pthread_t th;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct member **m;
	size_t nr, cap, next, compressed;
	void *spare[GZIP_SPARES]; /* under lock: inputs compressed, for gzip__stream_spare() */
	size_t nr_spare;
};

/* Compress the next member nobody has taken; false when there is none (called under lock). */
static bool take_one(struct gzip_stream *z)
{
	struct member *m;
	int err;

	if (z->next == z->nr)
		return false;
	m = z->m[z->next++];
	pthread_mutex_unlock(&z->lock);
	err = member_deflate(m, z->level);
	pthread_mutex_lock(&z->lock);
	if (m->in && z->nr_spare < GZIP_SPARES && !z->done)
		z->spare[z->nr_spare++] = m->in;
	else
		free(m->in);
	m->in = NULL;
	m->err = err;
	z->compressed++;
	pthread_cond_broadcast(&z->cond);
	return true;
}

/* The stream's thread: every member, in order, until the last is taken. */
static void *compressor(void *arg)
{
	struct gzip_stream *z = arg;

	pthread_setname_np(pthread_self(), "offcpu-gzip"); /* in top and in profiles */
	pthread_mutex_lock(&z->lock);
	for (;;) {
		if (take_one(z))
			continue;
		if (z->done)
			break;
		pthread_cond_wait(&z->cond, &z->lock);
	}
	pthread_mutex_unlock(&z->lock);
	return NULL;
}

struct gzip_stream *gzip__stream_new(int fd, int level)
{
	struct gzip_stream *z = calloc(1, sizeof(*z));

	if (!z)
		return NULL;
	z->fd = fd;
	z->level = level;
	pthread_mutex_init(&z->lock, NULL);
	pthread_cond_init(&z->cond, NULL);
	z->threaded = !pthread_create(&z->th, NULL, compressor, z);
	return z; /* no thread: gzip__stream_finish() compresses it all */
}

int gzip__stream_put(struct gzip_stream *z, void *data, size_t len)
{
	struct member *m = calloc(1, sizeof(*m));
	int err = 0;

	pthread_mutex_lock(&z->lock);
	if (!m || vec__reserve((void **)&z->m, &z->cap, z->nr + 1, sizeof(*z->m), 16)) {
		err = z->err = z->err ? z->err : -ENOMEM; /* said again by gzip__stream_finish() */
		free(data);
		free(m);
	} else {
		m->in = data;
		m->len = len;
		z->m[z->nr++] = m;
		pthread_cond_broadcast(&z->cond);
	}
	pthread_mutex_unlock(&z->lock);
	return err;
}

void *gzip__stream_spare(struct gzip_stream *z, size_t *cap)
{
	void *p = NULL;

	pthread_mutex_lock(&z->lock);
	if (z->nr_spare)
		p = z->spare[--z->nr_spare];
	pthread_mutex_unlock(&z->lock);
	*cap = p ? malloc_usable_size(p) : 0;
	return p;
}

int gzip__stream_finish(struct gzip_stream *z, bool write)
{
	size_t taken;
	int err;

	if (!z->nr && write)
		gzip__stream_put(z, NULL, 0); /* no data: one empty member */
	pthread_mutex_lock(&z->lock);
	z->done = true;
	taken = z->next;
	if (!write)
		z->next = z->nr; /* what nobody took stays as it is */
	pthread_cond_broadcast(&z->cond);
	while (take_one(z)) /* the rest, beside the stream's thread */
		;
	if (write)
		taken = z->nr;
	while (z->compressed < taken)
		pthread_cond_wait(&z->cond, &z->lock);
	pthread_mutex_unlock(&z->lock);
	if (z->threaded)
		pthread_join(z->th, NULL);
	err = write ? z->err : 0;
	for (size_t i = 0; i < z->nr; i++) {
		struct member *m = z->m[i];

		if (!err && write)
			err = m->err ? m->err : write_all(z->fd, m->out, m->nout);
		free(m->in);
		free(m->out);
		free(m);
	}
	for (size_t i = 0; i < z->nr_spare; i++)
		free(z->spare[i]);
	pthread_mutex_destroy(&z->lock);
	pthread_cond_destroy(&z->cond);
	free(z->m);
	free(z);
	return err;
}
