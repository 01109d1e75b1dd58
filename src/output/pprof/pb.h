/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A protobuf wire-format encoder, just what profile.proto and Perfetto's
 * trace need: varint fields (uint64, int64, bool, enums), fixed64 fields,
 * length-delimited fields (strings, bytes, nested messages, packed
 * repeated varints). No schema, no reflection: the caller writes field
 * numbers. Errors are sticky: after a failed allocation
 * every call is a no-op and pb__error() says -ENOMEM, so a long encoding
 * checks once at the end.
 *
 * Why not protobuf-c: profile.proto is fixed and small, and encoding is all
 * pprof needs (no parsing); a generated encoder would add a build step, a
 * library and a copy of the schema for ~150 lines of straightforward code.
 * Perfetto's schema is 680 KB, of which the timeline writes some forty
 * fields: generating code from it would be larger still.
 */
#ifndef OFFCPU_PPROF_PB_H
#define OFFCPU_PPROF_PB_H

#include <stddef.h>
#include <stdint.h>

struct pb;

struct pb *pb__new(void);
void pb__free(struct pb *b);

/* Empty the buffer for the next message, keeping its memory (and clearing an error). */
void pb__reset(struct pb *b);
/*
 * What the buffer holds, handed over (malloc'd, the caller's to free; NULL
 * when empty or after an error), the buffer left empty: only between two
 * top-level fields, where no pb__begin() mark is open.
 */
void *pb__take(struct pb *b, size_t *len);
/* Write on in buf (malloc'd, cap bytes) when the buffer has none (after pb__take()), else free it. */
void pb__give(struct pb *b, void *buf, size_t cap);
const uint8_t *pb__data(const struct pb *b);
size_t pb__len(const struct pb *b);
int pb__error(const struct pb *b);

/* A bare varint (inside a packed field). */
void pb__varint(struct pb *b, uint64_t v);
/*
 * Field `field` as a varint (wire type 0). Zero is not written: it is the
 * proto3 default, which readers assume for a missing field. Negative int64
 * values take ten bytes, as the wire format says (cast to uint64_t).
 */
void pb__uint(struct pb *b, uint32_t field, uint64_t v);
/* The same written even when zero: a proto2 field whose presence says something (cpu 0). */
void pb__uint_present(struct pb *b, uint32_t field, uint64_t v);
/* Field as a fixed64 (wire type 1): eight bytes, little-endian. */
void pb__fixed64(struct pb *b, uint32_t field, uint64_t v);
/* Length-delimited field (wire type 2), written even when empty (repeated strings). */
void pb__bytes(struct pb *b, uint32_t field, const void *p, size_t n);
void pb__string(struct pb *b, uint32_t field, const char *s);

/*
 * A nested message of n varint fields (fields[i] = vals[i], zeros left
 * out as pb__uint() leaves them), in one go: what pb__begin(), the
 * pb__uint() calls and pb__end() write.
 */
void pb__uint_msg(struct pb *b, uint32_t field, size_t n, const uint32_t *fields,
		  const uint64_t *vals);

/* A packed repeated field of n varints (written even when empty), in one go. */
void pb__packed_u32(struct pb *b, uint32_t field, const uint32_t *v, size_t n);
void pb__packed_u64(struct pb *b, uint32_t field, const uint64_t *v, size_t n);

/*
 * A nested message or packed repeated field: pb__begin() opens it and
 * returns a mark for pb__end(), which writes its length in front of what
 * was written in between. Pairs nest.
 */
size_t pb__begin(struct pb *b, uint32_t field);
void pb__end(struct pb *b, size_t mark);

#endif
