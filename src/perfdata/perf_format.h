/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * perf.data on-disk layout: the constants and structures shared by the
 * writer and the reader. Everything is little-endian, as written by perf on
 * x86_64 and arm64. Nothing here knows of BPF or symbols.
 *
 * Facts checked against include/uapi/linux/perf_event.h and perf's
 * util/header.h (6.1 and 6.12).
 */
#ifndef OFFCPU_PERF_FORMAT_H
#define OFFCPU_PERF_FORMAT_H

#include <stdint.h>
#include <linux/perf_event.h>

#define PERF_MAGIC2 0x32454c4946524550ULL /* "PERFILE2" */

/* perf 6.1 refuses attr.size > 128 ("incompatible file format"). */
#define PERF_ATTR_SIZE_WRITE 128

/* Feature bits (util/header.h, enum HEADER_*). */
enum perf_feature {
	PERF_FEAT_TRACING_DATA = 1,
	PERF_FEAT_BUILD_ID = 2,
	PERF_FEAT_HOSTNAME = 3,
	PERF_FEAT_OSRELEASE = 4,
	PERF_FEAT_VERSION = 5,
	PERF_FEAT_ARCH = 6,
	PERF_FEAT_NRCPUS = 7,
	PERF_FEAT_CPUDESC = 8,
	PERF_FEAT_CPUID = 9,
	PERF_FEAT_TOTAL_MEM = 10,
	PERF_FEAT_CMDLINE = 11,
	PERF_FEAT_EVENT_DESC = 12,
	PERF_FEAT_CPU_TOPOLOGY = 13,
	PERF_FEAT_NUMA_TOPOLOGY = 14,
	PERF_FEAT_BRANCH_STACK = 15,
	PERF_FEAT_PMU_MAPPINGS = 16,
	PERF_FEAT_GROUP_DESC = 17,
	PERF_FEAT_AUXTRACE = 18,
	PERF_FEAT_STAT = 19,
	PERF_FEAT_CACHE = 20,
	PERF_FEAT_SAMPLE_TIME = 21,
	PERF_FEAT_MEM_TOPOLOGY = 22,
	PERF_FEAT_CLOCKID = 23,
	PERF_FEAT_DIR_FORMAT = 24,
	PERF_FEAT_BPF_PROG_INFO = 25,
	PERF_FEAT_BPF_BTF = 26,
	PERF_FEAT_COMPRESSED = 27,
	PERF_FEAT_CPU_PMU_CAPS = 28,
	PERF_FEAT_CLOCK_DATA = 29,
	/*
	 * offcpu's own section (drop counters and recording facts). perf
	 * only walks bits below its HEADER_LAST_FEATURE and our table entry
	 * is the last one, so perf ignores it; a high bit keeps clear of
	 * features perf may add.
	 */
	PERF_FEAT_OFFCPU = 250,
	/* offcpu's copy of the recording machine's vDSO (struct perf_vdso_image) */
	PERF_FEAT_OFFCPU_VDSO = 251,
	PERF_FEAT_BITS = 256,
};

/*
 * The time perf --off-cpu gives the samples of short waits it sums in its
 * BPF map and writes when the recording stops ("at the end", perf's
 * OFF_CPU_TIMESTAMP): not a time. Its SAMPLE_TIME feature then says the
 * last sample was at 18446744069.4 s.
 */
#define PERF_OFFCPU_AT_END (~0ULL << 32)

struct perf_file_section {
	uint64_t offset;
	uint64_t size;
};

struct perf_file_header {
	uint64_t magic;
	uint64_t size;      /* sizeof(struct perf_file_header) == 104 */
	uint64_t attr_size; /* attr.size + sizeof(struct perf_file_section) */
	struct perf_file_section attrs;
	struct perf_file_section data;
	struct perf_file_section event_types; /* unused: {0, 0} */
	uint64_t adds_features[PERF_FEAT_BITS / 64];
};

_Static_assert(sizeof(struct perf_file_header) == 104, "perf header size");

/* Records perf itself adds (user-space types, >= 64). */
#define PERF_RECORD_FINISHED_ROUND_ 68
#define PERF_RECORD_HEADER_BUILD_ID_ 67

/* Context markers in callchains. */
#define PERF_CTX_KERNEL ((uint64_t)-128)
#define PERF_CTX_USER ((uint64_t)-512)
#define PERF_CTX_MAX ((uint64_t)-4095)

/* The largest callchain perf accepts by default (kernel.perf_event_max_stack). */
#define PERF_MAX_STACK 127

/* The off-CPU events' names, ids and payloads. */
#include "perfdata/offcpu_payload.h"

/*
 * Payload of the PERF_FEAT_OFFCPU_VDSO section: this header, then the vDSO
 * image as mapped (size bytes, zero-padded to 8). With it, [vdso] frames
 * are named from the recording machine's own vDSO wherever the file is read.
 */
struct perf_vdso_image {
	uint64_t size;          /* of the image */
	uint32_t build_id_size;
	uint32_t reserved;
	uint8_t build_id[24];   /* zero-padded */
};

/*
 * Payload of the PERF_FEAT_OFFCPU section: a u32 count, then that many
 * { u32 name length incl. NUL padded to 8, name, u64 value } entries, names
 * like "drop.ringbuf_full" or "offcpu.thresh_ns". Unknown names are
 * skipped by readers.
 */

#endif
