/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * perf.data writer. Knows the file format, nothing of BPF or symbols.
 *
 * Life of a file:
 *   perf_writer__new()         create the file safely (no symlink followed,
 *                              mode 0600, an existing one kept as FILE.old)
 *   perf_writer__add_event()   once per event (attr, name, ids)
 *   perf_writer__begin()       header, ids and attrs go out: from here on
 *                              the file is readable even if we die
 *   perf_writer__write()       records, in time order; FINISHED_ROUND between
 *                              rounds; data size is patched at each round
 *   perf_writer__set_feature() feature sections, at any time before finish
 *   perf_writer__finish()      patch header, append the feature sections
 *   perf_writer__free()
 *
 * Every function returns 0 or a negative errno; a write error (a full disk)
 * is sticky: later writes fail with the same error and finish() says so.
 */
#ifndef OFFCPU_PERF_WRITER_H
#define OFFCPU_PERF_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/perf_event.h>

struct perf_writer;

/*
 * Create `path` for writing. An existing regular file or link at `path` is
 * renamed to `path.old` first (as perf does); perf_writer__abort() puts it
 * back. The new file is created with O_EXCL|O_NOFOLLOW and mode 0600.
 * Only the user's files are moved or replaced: one at `path` or `path.old`
 * that belongs to neither `owner` nor the effective uid is left alone, and
 * -EPERM returned (perf_writer__new: owner is the effective uid).
 */
int perf_writer__new_for(const char *path, uid_t owner, struct perf_writer **out);
int perf_writer__new(const char *path, struct perf_writer **out);
/* Give the file to uid:gid (its mode stays 0600): for root writing on a user's behalf. */
int perf_writer__chown(struct perf_writer *w, unsigned int uid, unsigned int gid);

/* Register an event; attr is written with size 128 whatever attr->size is. */
int perf_writer__add_event(struct perf_writer *w, const struct perf_event_attr *attr,
			   const char *name, const uint64_t *ids, size_t nr_ids);

int perf_writer__begin(struct perf_writer *w);

/* Append one record (header included, size from its header). Buffered. */
int perf_writer__write(struct perf_writer *w, const void *rec, size_t len);

/* Show every record written from now on to tap (NULL: none), as it is written. */
void perf_writer__set_tap(struct perf_writer *w, void (*tap)(void *ctx, const void *rec, size_t len),
			  void *ctx);

/* Write a FINISHED_ROUND record, flush, and patch the header's data size. */
int perf_writer__finished_round(struct perf_writer *w);

/* Set a feature section's raw bytes (replaces an earlier value). */
int perf_writer__set_feature(struct perf_writer *w, unsigned int feat, const void *data,
			     size_t len);
/* Feature helpers in perf's string encoding (u32 len, NUL-padded to 64). */
int perf_writer__set_feature_string(struct perf_writer *w, unsigned int feat, const char *s);
int perf_writer__set_feature_strings(struct perf_writer *w, unsigned int feat,
				     const char *const *s, size_t n);

/* Bytes of data written so far (records only). */
uint64_t perf_writer__data_size(const struct perf_writer *w);

/* Complete the file: flush, EVENT_DESC and every feature set, header. */
int perf_writer__finish(struct perf_writer *w);

/* Remove the file created and restore path.old if we renamed one. */
void perf_writer__abort(struct perf_writer *w);

void perf_writer__free(struct perf_writer *w);

/* Append a perf feature string (u32 len + NUL-padded bytes) to a buffer. */
int perf_feat_put_string(uint8_t **buf, size_t *len, size_t *cap, const char *s);

#endif
