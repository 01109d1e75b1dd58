// SPDX-License-Identifier: GPL-2.0-only
/*
 * --call-graph dwarf: the CPU samples that the BPF program on the perf
 * event unwinds itself (the kernel writes none then), encoded as the
 * samples the kernel would have written for the cpu-clock event: the same
 * sample_type (cpu_sample_type()), the event's sample id on that CPU, the
 * callchain with its kernel and user context markers.
 */
#include <string.h>

#include "perfdata/perf_format.h"
#include "record/record.h"

size_t cpu_sample__encode(const struct offcpu_cpu_sample *s, uint64_t id, void *buf)
{
	struct perf_event_header *h = buf;
	uint64_t *p = (uint64_t *)(h + 1), *nr;
	uint32_t ulen = s->ulen > OFFCPU_MAX_STACK ? OFFCPU_MAX_STACK : s->ulen;
	uint32_t klen = s->klen > OFFCPU_MAX_STACK ? OFFCPU_MAX_STACK : s->klen;

	*p++ = id;                                 /* IDENTIFIER */
	*p++ = s->ip;                              /* IP */
	*p++ = (uint64_t)s->tid << 32 | s->pid;    /* TID */
	*p++ = s->time;                            /* TIME */
	*p++ = s->cpu;                             /* CPU {cpu, res} */
	*p++ = s->period;                          /* PERIOD */
	nr = p++;                                  /* CALLCHAIN */
	*nr = 0;
	if (klen) {
		*p++ = PERF_CTX_KERNEL;
		memcpy(p, &s->stack[OFFCPU_MAX_STACK], klen * 8);
		p += klen;
		*nr += 1 + klen;
	}
	if (ulen) {
		*p++ = PERF_CTX_USER;
		memcpy(p, s->stack, ulen * 8);
		p += ulen;
		*nr += 1 + ulen;
	}
	h->type = PERF_RECORD_SAMPLE;
	h->misc = s->user & 1 ? PERF_RECORD_MISC_USER : PERF_RECORD_MISC_KERNEL;
	h->size = (uint8_t *)p - (uint8_t *)buf;
	return h->size;
}
