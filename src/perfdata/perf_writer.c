// SPDX-License-Identifier: GPL-2.0-only
/*
 * perf.data writer. File layout:
 *
 *   [header 104][ids of every event][attr entries][data ... records]
 *   [feature table: {offset,size} per set bit][feature bodies]
 *
 * Header, ids and attrs are written by begin(), so a recording that dies
 * midway leaves a file whose data section is whole up to the last round: the
 * data size in the header is patched at every FINISHED_ROUND.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perfdata/perf_format.h"
#include "perfdata/perf_writer.h"

#define WBUF_SIZE (256 * 1024)
#define NAME_ALIGN 64

struct pw_event {
	struct perf_event_attr attr; /* first 128 bytes are what we write */
	char *name;
	uint64_t *ids;
	size_t nr_ids;
};

struct pw_feature {
	uint8_t *data;
	size_t len;
};

struct perf_writer {
	int fd;
	char *path;
	char *old_path; /* set when an existing file was renamed */
	int err;        /* sticky write error */
	struct pw_event *events;
	size_t nr_events;
	uint64_t data_offset;
	uint64_t data_size;
	uint64_t attrs_offset;
	uint8_t *buf;
	size_t buf_len;
	struct pw_feature feats[PERF_FEAT_BITS];
	void (*tap)(void *ctx, const void *rec, size_t len); /* perf_writer__set_tap */
	void *tap_ctx;
};

static int write_all(int fd, const void *p, size_t len, off_t off)
{
	const uint8_t *b = p;

	while (len) {
		ssize_t n = off >= 0 ? pwrite(fd, b, len, off) : write(fd, b, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		b += n;
		len -= n;
		if (off >= 0)
			off += n;
	}
	return 0;
}

/* Is the file at path (not followed) there and someone else's than owner's and ours? */
static bool foreign_file(const char *path, uid_t owner)
{
	struct stat st;

	return !lstat(path, &st) && st.st_uid != owner && st.st_uid != geteuid();
}

int perf_writer__new(const char *path, struct perf_writer **out)
{
	return perf_writer__new_for(path, geteuid(), out);
}

int perf_writer__new_for(const char *path, uid_t owner, struct perf_writer **out)
{
	struct perf_writer *w;
	struct stat st;
	int err;

	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fd = -1;
	w->path = strdup(path);
	w->buf = malloc(WBUF_SIZE);
	if (!w->path || !w->buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (lstat(path, &st) == 0 && !S_ISDIR(st.st_mode)) {
		if (asprintf(&w->old_path, "%s.old", path) < 0) {
			w->old_path = NULL;
			err = -ENOMEM;
			goto cleanup;
		}
		/* root may move anything: never another user's file, nor over one */
		if (foreign_file(path, owner) || foreign_file(w->old_path, owner)) {
			free(w->old_path);
			w->old_path = NULL;
			err = -EPERM;
			goto cleanup;
		}
		if (rename(path, w->old_path)) {
			err = -errno;
			free(w->old_path);
			w->old_path = NULL;
			goto cleanup;
		}
	}
	/* O_EXCL: never write through a link planted at the path. */
	w->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (w->fd < 0) {
		err = -errno;
		if (w->old_path) {
			if (rename(w->old_path, path)) {
				/* keep going: the error that matters is the open */
			}
			free(w->old_path);
			w->old_path = NULL;
		}
		goto cleanup;
	}
	*out = w;
	return 0;
cleanup:
	perf_writer__free(w);
	return err;
}

int perf_writer__chown(struct perf_writer *w, unsigned int uid, unsigned int gid)
{
	return fchown(w->fd, uid, gid) ? -errno : 0;
}

int perf_writer__add_event(struct perf_writer *w, const struct perf_event_attr *attr,
			   const char *name, const uint64_t *ids, size_t nr_ids)
{
	struct pw_event *ev, *events;

	events = realloc(w->events, (w->nr_events + 1) * sizeof(*events));
	if (!events)
		return -ENOMEM;
	w->events = events;
	ev = &events[w->nr_events];
	memset(ev, 0, sizeof(*ev));
	memcpy(&ev->attr, attr, attr->size && attr->size < sizeof(*attr) ? attr->size : sizeof(*attr));
	ev->attr.size = PERF_ATTR_SIZE_WRITE;
	ev->name = strdup(name);
	ev->ids = malloc((nr_ids ? nr_ids : 1) * sizeof(uint64_t));
	if (!ev->name || !ev->ids) {
		free(ev->name);
		free(ev->ids);
		return -ENOMEM;
	}
	memcpy(ev->ids, ids, nr_ids * sizeof(uint64_t));
	ev->nr_ids = nr_ids;
	w->nr_events++;
	return 0;
}

/* The header as it stands: data size so far, features only when finishing. */
static void fill_header(struct perf_writer *w, struct perf_file_header *h, int with_features)
{
	memset(h, 0, sizeof(*h));
	h->magic = PERF_MAGIC2;
	h->size = sizeof(*h);
	h->attr_size = PERF_ATTR_SIZE_WRITE + sizeof(struct perf_file_section);
	h->attrs.offset = w->attrs_offset;
	h->attrs.size = w->nr_events * h->attr_size;
	h->data.offset = w->data_offset;
	h->data.size = w->data_size;
	if (with_features) {
		for (unsigned int f = 0; f < PERF_FEAT_BITS; f++)
			if (w->feats[f].data || f == PERF_FEAT_EVENT_DESC)
				h->adds_features[f / 64] |= 1ULL << (f % 64);
	}
}

int perf_writer__begin(struct perf_writer *w)
{
	struct perf_file_header h;
	uint64_t off = sizeof(h);
	uint8_t *attrs = NULL;
	size_t entry = PERF_ATTR_SIZE_WRITE + sizeof(struct perf_file_section);
	int err;

	/* ids arrays first, then the attr entries pointing at them */
	for (size_t i = 0; i < w->nr_events; i++) {
		size_t len = w->events[i].nr_ids * sizeof(uint64_t);

		err = write_all(w->fd, w->events[i].ids, len, off);
		if (err)
			return err;
		off += len;
	}
	attrs = calloc(w->nr_events ? w->nr_events : 1, entry);
	if (!attrs)
		return -ENOMEM;
	w->attrs_offset = off;
	off = sizeof(h);
	for (size_t i = 0; i < w->nr_events; i++) {
		struct perf_file_section ids = {
			.offset = off,
			.size = w->events[i].nr_ids * sizeof(uint64_t),
		};

		memcpy(attrs + i * entry, &w->events[i].attr, PERF_ATTR_SIZE_WRITE);
		memcpy(attrs + i * entry + PERF_ATTR_SIZE_WRITE, &ids, sizeof(ids));
		off += ids.size;
	}
	err = write_all(w->fd, attrs, w->nr_events * entry, w->attrs_offset);
	free(attrs);
	if (err)
		return err;
	w->data_offset = w->attrs_offset + w->nr_events * entry;
	w->data_size = 0;
	fill_header(w, &h, 0);
	err = write_all(w->fd, &h, sizeof(h), 0);
	if (err)
		return err;
	if (lseek(w->fd, w->data_offset, SEEK_SET) < 0)
		return -errno;
	return 0;
}

static int flush_buf(struct perf_writer *w)
{
	int err;

	if (w->err)
		return w->err;
	if (!w->buf_len)
		return 0;
	err = write_all(w->fd, w->buf, w->buf_len, -1);
	if (err) {
		w->err = err;
		return err;
	}
	w->data_size += w->buf_len;
	w->buf_len = 0;
	return 0;
}

void perf_writer__set_tap(struct perf_writer *w, void (*tap)(void *ctx, const void *rec, size_t len),
			  void *ctx)
{
	w->tap = tap;
	w->tap_ctx = ctx;
}

int perf_writer__write(struct perf_writer *w, const void *rec, size_t len)
{
	int err;

	if (w->err)
		return w->err;
	if (w->tap)
		w->tap(w->tap_ctx, rec, len);
	if (len > WBUF_SIZE - w->buf_len) {
		err = flush_buf(w);
		if (err)
			return err;
	}
	if (len > WBUF_SIZE) {
		err = write_all(w->fd, rec, len, -1);
		if (err) {
			w->err = err;
			return err;
		}
		w->data_size += len;
		return 0;
	}
	memcpy(w->buf + w->buf_len, rec, len);
	w->buf_len += len;
	return 0;
}

int perf_writer__finished_round(struct perf_writer *w)
{
	struct perf_event_header rh = {
		.type = PERF_RECORD_FINISHED_ROUND_,
		.size = sizeof(rh),
	};
	int err;

	err = perf_writer__write(w, &rh, sizeof(rh));
	if (!err)
		err = flush_buf(w);
	if (!err) {
		/* keep the header true so that a killed recording stays readable */
		err = write_all(w->fd, &w->data_size, sizeof(w->data_size),
				offsetof(struct perf_file_header, data.size));
		if (err)
			w->err = err;
	}
	return err;
}

uint64_t perf_writer__data_size(const struct perf_writer *w)
{
	return w->data_size + w->buf_len;
}

int perf_writer__set_feature(struct perf_writer *w, unsigned int feat, const void *data,
			     size_t len)
{
	uint8_t *copy;

	if (feat >= PERF_FEAT_BITS)
		return -EINVAL;
	copy = malloc(len ? len : 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, data, len);
	free(w->feats[feat].data);
	w->feats[feat].data = copy;
	w->feats[feat].len = len;
	return 0;
}

static int buf_put(uint8_t **buf, size_t *len, size_t *cap, const void *p, size_t n)
{
	if (*len + n > *cap) {
		size_t ncap = *cap ? *cap * 2 : 256;
		uint8_t *nb;

		while (ncap < *len + n)
			ncap *= 2;
		nb = realloc(*buf, ncap);
		if (!nb)
			return -ENOMEM;
		*buf = nb;
		*cap = ncap;
	}
	if (p)
		memcpy(*buf + *len, p, n);
	else
		memset(*buf + *len, 0, n);
	*len += n;
	return 0;
}

int perf_feat_put_string(uint8_t **buf, size_t *len, size_t *cap, const char *s)
{
	size_t olen = strlen(s) + 1;
	uint32_t plen = (olen + NAME_ALIGN - 1) / NAME_ALIGN * NAME_ALIGN;
	int err;

	err = buf_put(buf, len, cap, &plen, sizeof(plen));
	if (!err)
		err = buf_put(buf, len, cap, s, olen);
	if (!err)
		err = buf_put(buf, len, cap, NULL, plen - olen);
	return err;
}

int perf_writer__set_feature_string(struct perf_writer *w, unsigned int feat, const char *s)
{
	uint8_t *b = NULL;
	size_t len = 0, cap = 0;
	int err;

	err = perf_feat_put_string(&b, &len, &cap, s);
	if (!err)
		err = perf_writer__set_feature(w, feat, b, len);
	free(b);
	return err;
}

int perf_writer__set_feature_strings(struct perf_writer *w, unsigned int feat,
				     const char *const *s, size_t n)
{
	uint8_t *b = NULL;
	size_t len = 0, cap = 0;
	uint32_t nr = n;
	int err;

	err = buf_put(&b, &len, &cap, &nr, sizeof(nr));
	for (size_t i = 0; !err && i < n; i++)
		err = perf_feat_put_string(&b, &len, &cap, s[i]);
	if (!err)
		err = perf_writer__set_feature(w, feat, b, len);
	free(b);
	return err;
}

/* EVENT_DESC: u32 nr, u32 attr size, then per event attr, u32 nr_ids, name, ids. */
static int build_event_desc(struct perf_writer *w)
{
	uint8_t *b = NULL;
	size_t len = 0, cap = 0;
	uint32_t nr = w->nr_events, asz = PERF_ATTR_SIZE_WRITE;
	int err;

	err = buf_put(&b, &len, &cap, &nr, 4);
	if (!err)
		err = buf_put(&b, &len, &cap, &asz, 4);
	for (size_t i = 0; !err && i < w->nr_events; i++) {
		uint32_t nids = w->events[i].nr_ids;

		err = buf_put(&b, &len, &cap, &w->events[i].attr, PERF_ATTR_SIZE_WRITE);
		if (!err)
			err = buf_put(&b, &len, &cap, &nids, 4);
		if (!err)
			err = perf_feat_put_string(&b, &len, &cap, w->events[i].name);
		if (!err)
			err = buf_put(&b, &len, &cap, w->events[i].ids, nids * sizeof(uint64_t));
	}
	if (!err)
		err = perf_writer__set_feature(w, PERF_FEAT_EVENT_DESC, b, len);
	free(b);
	return err;
}

int perf_writer__finish(struct perf_writer *w)
{
	struct perf_file_header h;
	struct perf_file_section *table = NULL;
	uint64_t off;
	size_t nr = 0, k = 0;
	int err;

	err = flush_buf(w);
	if (err)
		goto cleanup;
	err = build_event_desc(w);
	if (err)
		goto cleanup;
	for (unsigned int f = 0; f < PERF_FEAT_BITS; f++)
		nr += w->feats[f].data != NULL;
	table = calloc(nr ? nr : 1, sizeof(*table));
	if (!table) {
		err = -ENOMEM;
		goto cleanup;
	}
	off = w->data_offset + w->data_size + nr * sizeof(*table);
	for (unsigned int f = 0; f < PERF_FEAT_BITS; f++) {
		if (!w->feats[f].data)
			continue;
		table[k].offset = off;
		table[k].size = w->feats[f].len;
		err = write_all(w->fd, w->feats[f].data, w->feats[f].len, off);
		if (err)
			goto cleanup;
		off += w->feats[f].len;
		k++;
	}
	err = write_all(w->fd, table, nr * sizeof(*table), w->data_offset + w->data_size);
	if (err)
		goto cleanup;
	fill_header(w, &h, 1);
	err = write_all(w->fd, &h, sizeof(h), 0);
	if (err)
		goto cleanup;
	if (fsync(w->fd) && errno != EINVAL)
		err = -errno;
cleanup:
	free(table);
	if (err)
		w->err = err;
	return err;
}

void perf_writer__abort(struct perf_writer *w)
{
	if (!w || w->fd < 0)
		return;
	close(w->fd);
	w->fd = -1;
	unlink(w->path);
	if (w->old_path && rename(w->old_path, w->path)) {
		/* the old file stays as path.old */
	}
}

void perf_writer__free(struct perf_writer *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	for (size_t i = 0; i < w->nr_events; i++) {
		free(w->events[i].name);
		free(w->events[i].ids);
	}
	for (unsigned int f = 0; f < PERF_FEAT_BITS; f++)
		free(w->feats[f].data);
	free(w->events);
	free(w->buf);
	free(w->path);
	free(w->old_path);
	free(w);
}
