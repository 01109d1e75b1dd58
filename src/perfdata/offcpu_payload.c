// SPDX-License-Identifier: GPL-2.0-only
/*
 * Encoding and decoding of the off-CPU samples (layouts in offcpu_payload.h).
 * Every multi-byte field is copied with memcpy: the RAW data starts 4 bytes
 * past an 8-byte boundary, so its u64s are never aligned in a record.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "perfdata/offcpu_payload.h"
#include "perfdata/perf_format.h"
#include "util/bytes.h"

/* Appends to an output buffer of fixed size; ok turns false on overflow. */
struct wbuf {
	uint8_t *p, *end;
	bool ok;
};

static void put(struct wbuf *w, const void *v, size_t n)
{
	if (!w->ok || (size_t)(w->end - w->p) < n) {
		w->ok = false;
		return;
	}
	memcpy(w->p, v, n);
	w->p += n;
}

static void put64(struct wbuf *w, uint64_t v)
{
	put(w, &v, 8);
}

static void put32(struct wbuf *w, uint32_t v)
{
	put(w, &v, 4);
}

/* The callchain, perf's way: context marker, then that context's frames. */
static void put_callchain(struct wbuf *w, const struct offcpu_payload *p, uint32_t klen,
			  uint32_t ulen)
{
	if (!klen && !ulen) {
		/* no frame: one at address 0, so that perf >= 6.14's ip (ips[1]) is 0 too */
		put64(w, 2);
		put64(w, PERF_CTX_USER);
		put64(w, 0);
		return;
	}
	put64(w, (klen ? 1 + klen : 0) + (ulen ? 1 + ulen : 0));
	if (klen) {
		put64(w, PERF_CTX_KERNEL);
		put(w, p->kstack, klen * 8ULL);
	}
	if (ulen) {
		put64(w, PERF_CTX_USER);
		put(w, p->ustack, ulen * 8ULL);
	}
}

static void own_fields(const struct offcpu_payload *p, struct offcpu_raw *r)
{
	memset(r, 0, sizeof(*r));
	r->state = (uint8_t)p->state;
	r->flags = p->flags;
	r->count = p->count;
	r->cgroup = p->cgroup;
}

size_t offcpu_payload__encode(const struct offcpu_payload *p, void *buf, size_t size)
{
	struct wbuf w = { (uint8_t *)buf, (uint8_t *)buf + size, true };
	struct perf_event_header h = { .type = PERF_RECORD_SAMPLE };
	uint32_t klen = p->klen > OFFCPU_PAYLOAD_MAX_STACK ? OFFCPU_PAYLOAD_MAX_STACK : p->klen;
	uint32_t ulen = p->ulen > OFFCPU_PAYLOAD_MAX_STACK ? OFFCPU_PAYLOAD_MAX_STACK : p->ulen;
	uint64_t ids = (uint64_t)p->tid << 32 | p->pid;
	struct offcpu_raw r;
	uint8_t *raw_size, *raw;
	uint32_t rawsz;
	size_t len;

	put(&w, &h, sizeof(h));
	put64(&w, p->id);
	put64(&w, klen ? p->kstack[0] : ulen ? p->ustack[0] : 0);
	put64(&w, ids);
	put64(&w, p->time);
	put64(&w, p->cpu);
	put64(&w, p->period);
	put_callchain(&w, p, klen, ulen);
	raw_size = w.p;
	put32(&w, 0);
	raw = w.p;
	own_fields(p, &r);
	switch (p->event) {
	case OFFCPU_PAYLOAD_TIME:
		put64(&w, ids);
		put64(&w, p->period);
		put_callchain(&w, p, klen, ulen);
		put64(&w, p->cgroup);
		put(&w, &r, sizeof(r));
		break;
	case OFFCPU_PAYLOAD_WAKEUP: {
		struct offcpu_wakeup_raw wr;

		memset(&wr, 0, sizeof(wr));
		wr.r = r;
		wr.waker_pid = p->waker_pid;
		wr.waker_tid = p->waker_tid;
		memcpy(wr.waker_comm, p->waker_comm, sizeof(wr.waker_comm) - 1);
		if (p->flags & OFFCPU_RAW_WAKER_IRQ)
			strcpy(wr.waker_text, "[irq]");
		else
			snprintf(wr.waker_text, sizeof(wr.waker_text), "%s %u/%u", wr.waker_comm,
				 p->waker_pid, p->waker_tid);
		put(&w, &wr, sizeof(wr));
		break;
	}
	case OFFCPU_PAYLOAD_DELAY:
		put(&w, &r, sizeof(r));
		break;
	case OFFCPU_PAYLOAD_STACK:
		put32(&w, p->stack_id);
		break;
	}
	/* u32 size and data end on an 8-byte boundary, as the kernel pads BPF output */
	len = w.p - raw;
	rawsz = (len + 4 + 7) / 8 * 8 - 4;
	while (w.ok && (size_t)(w.p - raw) < rawsz) {
		uint8_t zero = 0;

		put(&w, &zero, 1);
	}
	if (!w.ok || w.p - (uint8_t *)buf > UINT16_MAX)
		return 0;
	memcpy(raw_size, &rawsz, 4);
	h.misc = klen ? PERF_RECORD_MISC_KERNEL : PERF_RECORD_MISC_USER;
	h.size = w.p - (uint8_t *)buf;
	memcpy(buf, &h, sizeof(h));
	return h.size;
}



/* Where the callchain of a record laid out as ours starts: after the header and 6 u64s. */
#define CHAIN_NR_OFF (sizeof(struct perf_event_header) + 6 * 8)

/*
 * The user section of the callchain of nr entries at chain: its first
 * frame's index, and its number of frames (0: none).
 */
static uint64_t user_section(const uint8_t *chain, uint64_t nr, uint64_t *first)
{
	uint64_t n = 0;
	bool user = false;

	for (uint64_t i = 0; i < nr; i++) {
		uint64_t v = rd64(chain + i * 8);

		if (v >= PERF_CTX_MAX) {
			if (user)
				break;
			user = v == PERF_CTX_USER;
			*first = i + 1;
			continue;
		}
		n += user;
	}
	return user ? n : 0;
}

uint64_t offcpu_payload__user_frames(const void *rec, size_t len, uint64_t *first)
{
	const uint8_t *b = rec;
	struct perf_event_header h;
	uint64_t nr;

	if (len < CHAIN_NR_OFF + 8)
		return 0;
	memcpy(&h, b, sizeof(h));
	nr = rd64(b + CHAIN_NR_OFF);
	if (h.type != PERF_RECORD_SAMPLE || h.size != len || nr > (len - CHAIN_NR_OFF - 8) / 8)
		return 0;
	return user_section(b + CHAIN_NR_OFF + 8, nr, first);
}

/* Remove n u64 entries at at from a callchain whose count is at nrp; end moves down. */
static void drop_entries(uint8_t *nrp, uint8_t *at, uint64_t n, uint8_t **end)
{
	memmove(at, at + n * 8, *end - (at + n * 8));
	*end -= n * 8;
	wr64(nrp, rd64(nrp) - n);
}

size_t offcpu_payload__cut_user(void *rec, size_t len, uint64_t keep)
{
	uint8_t *b = rec, *end = b + len, *nrp = b + CHAIN_NR_OFF, *raw;
	uint64_t first = 0, n = offcpu_payload__user_frames(rec, len, &first), nr, drop, at, id;
	struct perf_event_header h;
	uint32_t rawsz;

	if (keep >= n)
		return len;
	nr = rd64(nrp);
	/* no frame left: leave it (every sample has one) */
	if (!keep && nr == 1 + n)
		return len;
	/* the frames from the keep-th on, and the marker when none is left */
	drop = n - keep + !keep;
	at = first + keep - !keep;
	id = rd64(b + sizeof(h));
	raw = nrp + 8 + nr * 8;
	if (id == OFFCPU_EVENT_ID && raw + 4 + 24 <= end) {
		/* offcpu-time: the embedded callchain is the same one, after pid, tid, period */
		uint8_t *enrp = raw + 4 + 16;

		rawsz = rd32(raw);
		if (rd64(enrp) == nr && enrp + 8 + nr * 8 <= end) {
			drop_entries(enrp, enrp + 8 + at * 8, drop, &end);
			wr32(raw, rawsz - drop * 8);
		}
	}
	drop_entries(nrp, nrp + 8 + at * 8, drop, &end);
	memcpy(&h, b, sizeof(h));
	h.size = end - b;
	memcpy(b, &h, sizeof(h));
	return h.size;
}

/* struct offcpu_raw, or as much of it as there is (older, shorter versions). */
static void decode_own(const uint8_t *p, uint32_t size, struct offcpu_fields *out)
{
	if (size < 4)
		return;
	out->own = true;
	out->state = (char)rd32(p);
	if (size >= 8)
		out->flags = rd32(p + 4);
	if (size >= 16)
		out->count = rd64(p + 8);
	if (size >= 24 && !out->embedded)
		out->cgroup = rd64(p + 16);
}

/*
 * perf's embedded sample: u32 pid, u32 tid, u64 period, u64 nr, nr ips,
 * u64 cgroup. Returns the bytes it takes, 0 when it does not fit in size.
 * offcpu's older offcpu-time payload (a bare offcpu_raw, 28 bytes with its
 * padding) is too short to be taken for one.
 */
static uint32_t decode_embedded(const uint8_t *p, uint32_t size, struct offcpu_fields *out)
{
	uint64_t nr;

	if (size < 32)
		return 0;
	nr = rd64(p + 16);
	if (nr > (size - 32) / 8)
		return 0;
	out->embedded = true;
	out->pid = rd32(p);
	out->tid = rd32(p + 4);
	out->period = rd64(p + 8);
	out->nr_callchain = nr;
	out->callchain = p + 24;
	out->cgroup = rd64(p + 24 + 8 * nr);
	return 32 + 8 * nr;
}

void offcpu_payload__decode(enum offcpu_payload_event ev, const void *raw, uint32_t size,
			    struct offcpu_fields *out)
{
	const uint8_t *p = raw;
	uint32_t used;

	memset(out, 0, sizeof(*out));
	out->count = 1;
	if (!p)
		return;
	switch (ev) {
	case OFFCPU_PAYLOAD_TIME:
		used = decode_embedded(p, size, out);
		/* perf's own files end here, padding aside: no offcpu_raw */
		if (!used || size - used >= sizeof(struct offcpu_raw))
			decode_own(p + used, size - used, out);
		break;
	case OFFCPU_PAYLOAD_WAKEUP:
		decode_own(p, size, out);
		if (size >= offsetof(struct offcpu_wakeup_raw, waker_text)) {
			out->waker = true;
			out->waker_pid = rd32(p + offsetof(struct offcpu_wakeup_raw, waker_pid));
			out->waker_tid = rd32(p + offsetof(struct offcpu_wakeup_raw, waker_tid));
			memcpy(out->waker_comm, p + offsetof(struct offcpu_wakeup_raw, waker_comm), 16);
			out->waker_comm[16] = 0;
		}
		break;
	case OFFCPU_PAYLOAD_DELAY:
		decode_own(p, size, out);
		break;
	case OFFCPU_PAYLOAD_STACK:
		break;
	}
}

size_t offcpu_payload__encode_switch(const struct offcpu_switch *sw, void *buf, size_t size)
{
	struct wbuf w = { (uint8_t *)buf, (uint8_t *)buf + size, true };
	struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .misc = PERF_RECORD_MISC_KERNEL,
				       .size = OFFCPU_SWITCH_RECORD_SIZE };
	uint8_t state = (uint8_t)sw->state, zero = 0;

	put(&w, &h, sizeof(h));
	put64(&w, sw->id);
	put64(&w, (uint64_t)sw->tid << 32 | sw->pid);
	put64(&w, sw->time);
	put64(&w, sw->cpu);
	put32(&w, OFFCPU_SWITCH_RAW_SIZE);
	put64(&w, sw->out);
	put64(&w, sw->wake);
	put32(&w, sw->stack);
	put32(&w, sw->waker_tid);
	put32(&w, sw->waker_stack);
	put32(&w, sw->seq);
	put(&w, &state, 1);
	put(&w, &zero, 1);
	put(&w, &sw->flags, 2);
	return w.ok ? OFFCPU_SWITCH_RECORD_SIZE : 0;
}

bool offcpu_payload__decode_switch(const void *raw, uint32_t size, struct offcpu_switch *out)
{
	const uint8_t *p = raw;

	memset(out, 0, sizeof(*out));
	if (!p || size < OFFCPU_SWITCH_RAW_SIZE)
		return false;
	out->out = rd64(p);
	out->wake = rd64(p + 8);
	out->stack = rd32(p + 16);
	out->waker_tid = rd32(p + 20);
	out->waker_stack = rd32(p + 24);
	out->seq = rd32(p + 28);
	out->state = (char)p[32];
	memcpy(&out->flags, p + 34, 2);
	return true;
}

bool offcpu_payload__decode_stack(const void *raw, uint32_t size, uint32_t *id)
{
	if (!raw || size < 4)
		return false;
	*id = rd32(raw);
	return true;
}
