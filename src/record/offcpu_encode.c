// SPDX-License-Identifier: GPL-2.0-only
/*
 * The off-CPU BPF program's data as the file holds it: its samples (and
 * their wakers) encoded as perf SAMPLE records in offcpu's payload
 * (perfdata/offcpu_payload.h), the attr of its events, the names of its
 * counters (bpf/offcpu.h). Pure, but for the kernel's address ranges that
 * tell where kernel stacks start (offcpu_encode__set_kernel).
 */
#include <string.h>
#include <time.h>

#include "perfdata/offcpu_payload.h"
#include "perfdata/perf_format.h"
#include "record/record.h"

/* Address ranges of __schedule and try_to_wake_up: kernel stacks start there. */
static uint64_t sched_lo, sched_hi, ttwu_lo, ttwu_hi;
/* Where interrupts start (kernel_facts.irq); loopback's receive (process_backlog). */
static struct kernel_range irq_entry[64];
static unsigned int nr_irq_entry;
static uint64_t backlog_lo, backlog_hi, wnt_lo, wnt_hi;

void offcpu_encode__set_kernel(const struct kernel_facts *kf)
{
	sched_lo = kf->sched_lo;
	sched_hi = kf->sched_hi;
	ttwu_lo = kf->ttwu_lo;
	ttwu_hi = kf->ttwu_hi;
	backlog_lo = kf->backlog_lo;
	backlog_hi = kf->backlog_hi;
	wnt_lo = kf->wnt_lo;
	wnt_hi = kf->wnt_hi;
	nr_irq_entry = kf->nr_irq < 64 ? kf->nr_irq : 64;
	memcpy(irq_entry, kf->irq, nr_irq_entry * sizeof(irq_entry[0]));
}

/* The drop counters (bpf/offcpu.h) as user space names them. */
static const struct {
	const char *key, *what;
	enum offcpu_loss loss;
} drop_info[OFFCPU_DROP__NR] = {
#define DROP_ROW(id, key, what, loss) [OFFCPU_DROP_##id] = { key, what, loss },
	OFFCPU_DROPS(DROP_ROW)
#undef DROP_ROW
};

static const char *const stat_keys[OFFCPU_STAT__NR] = {
#define STAT_ROW(id, key) [OFFCPU_STAT_##id] = key,
	OFFCPU_STATS(STAT_ROW)
#undef STAT_ROW
};

const char *offcpu_drop_name(int i)
{
	return i >= 0 && i < OFFCPU_DROP__NR ? drop_info[i].what : "?";
}

const char *offcpu_drop_key(int i)
{
	return i >= 0 && i < OFFCPU_DROP__NR ? drop_info[i].key : "drop.?";
}

enum offcpu_loss offcpu_drop_loss(int i)
{
	return i >= 0 && i < OFFCPU_DROP__NR ? drop_info[i].loss : OFFCPU_LOSS_DATA;
}

const char *offcpu_stat_key(int i)
{
	return i >= 0 && i < OFFCPU_STAT__NR ? stat_keys[i] : "offcpu.?";
}

uint64_t offcpu_sample_type(void)
{
	return OFFCPU_PAYLOAD_SAMPLE_TYPE;
}

/* The attr perf sees for offcpu-time, as perf's own --off-cpu writes it. */
void offcpu_event_attr(struct perf_event_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->type = PERF_TYPE_SOFTWARE;
	attr->config = PERF_COUNT_SW_BPF_OUTPUT;
	attr->size = sizeof(*attr);
	attr->sample_period = 1;
	attr->sample_type = offcpu_sample_type();
	attr->sample_id_all = 1;
	attr->use_clockid = 1;
	attr->clockid = CLOCK_MONOTONIC;
}

/* Frames before the function [lo, hi) are BPF and tracing glue: how many. */
static int glue_frames(const uint64_t *k, uint32_t n, uint64_t lo, uint64_t hi)
{
	if (!lo)
		return 0;
	for (uint32_t i = 0; i < n && i < 16; i++)
		if (k[i] >= lo && k[i] < hi)
			return i;
	return 0;
}

static int sched_frame_index(const uint64_t *k, uint32_t n)
{
	return glue_frames(k, n, sched_lo, sched_hi);
}

/* The raw payload's flags of sample s (waits in progress: see offcpu.h). */
static uint32_t raw_flags(const struct offcpu_sample *s)
{
	uint32_t f = s->flags & OFFCPU_SAMPLE_SUM ? OFFCPU_RAW_AGGREGATED : OFFCPU_RAW_DIRECT;

	if (s->k.state & OFFCPU_IN_PROGRESS_START)
		f |= OFFCPU_RAW_IN_PROGRESS_START;
	if (s->k.state & OFFCPU_IN_PROGRESS_STOP)
		f |= OFFCPU_RAW_IN_PROGRESS_STOP;
	return f;
}

/*
 * The payload of a sample of s with user stack u and kernel stack k, the
 * first `skip` kernel frames glue.
 */
static void payload_of(struct offcpu_payload *p, enum offcpu_payload_event ev, uint64_t id,
		       const struct offcpu_sample *s, uint64_t time, const struct offcpu_frames *u,
		       const struct offcpu_frames *k, int skip)
{
	uint32_t klen = k->n > OFFCPU_MAX_STACK ? OFFCPU_MAX_STACK : k->n;
	uint32_t ulen = u->n > OFFCPU_MAX_STACK ? OFFCPU_MAX_STACK : u->n;

	if (skip > (int)klen)
		skip = klen;
	/* A frame-pointer walk through code built without them ends in junk. */
	for (uint32_t i = 0; i < ulen; i++)
		if (u->ip[i] < 4096) {
			ulen = i;
			break;
		}
	memset(p, 0, sizeof(*p));
	p->event = ev;
	p->id = id;
	p->time = time;
	p->pid = s->k.who.pid;
	p->tid = s->k.who.tid;
	p->cpu = s->v.cpu;
	p->period = s->v.period;
	p->count = s->v.count;
	p->cgroup = s->k.who.cgroup;
	p->flags = raw_flags(s);
	p->kstack = k->ip + skip; /* never NULL: an empty stack's points at its no frames */
	p->klen = klen - skip;
	p->ustack = u->ip;
	p->ulen = ulen;
}

/* The state letter of offcpu_raw (see offcpu_payload.h). */
static uint32_t raw_state(uint32_t state)
{
	/* flags: raw_flags, and the waker's own sample */
	state &= ~(OFFCPU_IN_PROGRESS_START | OFFCPU_IN_PROGRESS_STOP | OFFCPU_WAKER);
	if (!(state & OFFCPU_SCHED_DELAY))
		return state == OFFCPU_STATE_D ? 'D' : 'S';
	if (state & OFFCPU_STATE_NEW)
		return 'N';
	if (state & OFFCPU_STATE_OTHER)
		return 'T';
	if (state & OFFCPU_STATE_D)
		return 'D';
	return state & OFFCPU_STATE_S ? 'S' : 'R';
}

size_t offcpu_sample__encode(const struct offcpu_sample *s, const struct offcpu_frames *ustack,
			     const struct offcpu_frames *kstack, uint64_t time, void *buf)
{
	bool delay = s->k.state & OFFCPU_SCHED_DELAY;
	struct offcpu_payload p;

	payload_of(&p, delay ? OFFCPU_PAYLOAD_DELAY : OFFCPU_PAYLOAD_TIME,
		   delay ? OFFCPU_ID_SCHED_DELAY : OFFCPU_ID_OFFCPU, s, time, ustack, kstack,
		   sched_frame_index(kstack->ip, kstack->n));
	p.state = raw_state(s->k.state);
	return offcpu_payload__encode(&p, buf, OFFCPU_PAYLOAD_MAX_SIZE);
}

/*
 * Index of the first kernel frame (innermost first) in an interrupt entry
 * function, or -1: the wakeup then came from that interrupt, and the
 * frames beyond it, user ones included, are the interrupted task's.
 */
static int irq_frame_index(const uint64_t *k, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		for (unsigned int j = 0; j < nr_irq_entry; j++)
			if (k[i] >= irq_entry[j].lo && k[i] < irq_entry[j].hi)
				return i;
	return -1;
}

/*
 * Whether the first n frames (innermost first) of a waker's stack, those
 * up to its interrupt entry, are loopback's receive (process_backlog): the
 * packet a task sent on 127.0.0.1 is received as softirq work in that
 * task's own context, at its local_bh_enable (or an irq_exit soon after),
 * and the wakeup of the receiver is the sender's doing.
 */
static bool own_softirq(const uint64_t *k, int n)
{
	for (int i = 0; i < n && backlog_lo; i++)
		if (k[i] >= backlog_lo && k[i] < backlog_hi)
			return true;
	return false;
}

/*
 * An interrupt's wakeup is booked to "[irq]" (pid and tid 0, the interrupt's
 * kernel frames only): the task it interrupted had no part in it. Softirq
 * work a task did for itself (own_softirq) is the task's, with its whole
 * stack, flagged OFFCPU_RAW_WAKER_SOFTIRQ.
 */
size_t offcpu_waker__encode(const struct offcpu_sample *s, const struct offcpu_frames *ustack,
			    const struct offcpu_frames *kstack, uint64_t time, void *buf)
{
	uint32_t klen = kstack->n > OFFCPU_MAX_STACK ? OFFCPU_MAX_STACK : kstack->n;
	int skip = glue_frames(kstack->ip, klen, ttwu_lo, ttwu_hi);
	int irq = irq_frame_index(kstack->ip + skip, klen - skip);
	bool softirq = irq >= 0 && own_softirq(kstack->ip + skip, irq);
	struct offcpu_frames u = *ustack, k = { kstack->ip, klen };
	struct offcpu_payload p;

	if (softirq)
		irq = -1;
	if (irq >= 0) {
		k.n = skip + irq + 1;
		u.n = 0;
	}
	payload_of(&p, OFFCPU_PAYLOAD_WAKEUP, OFFCPU_ID_WAKEUP, s, time, &u, &k, skip);
	p.state = raw_state(s->k.state);
	if (irq >= 0) {
		p.flags |= OFFCPU_RAW_WAKER_IRQ;
		strcpy(p.waker_comm, "[irq]");
	} else {
		p.waker_pid = s->k.waker.pid;
		p.waker_tid = s->k.waker.tid;
		memcpy(p.waker_comm, s->v.wcomm, sizeof(p.waker_comm) - 1);
		if (softirq)
			p.flags |= OFFCPU_RAW_WAKER_SOFTIRQ;
	}
	return offcpu_payload__encode(&p, buf, OFFCPU_PAYLOAD_MAX_SIZE);
}

/* ---- record --chains ---- */

void chain_switch_attr(struct perf_event_attr *attr)
{
	offcpu_event_attr(attr);
	attr->sample_type = OFFCPU_SWITCH_SAMPLE_TYPE;
}

size_t chain_switch__encode(const struct offcpu_chain_switch *r, uint32_t stack, uint32_t waker_stack,
			    void *buf)
{
	struct offcpu_switch sw = {
		.id = OFFCPU_ID_SWITCH, .pid = r->pid, .tid = r->tid, .cpu = r->cpu,
		.time = r->time, .out = r->out, .wake = r->wake, .stack = stack,
		.waker_tid = r->waker_tid, .waker_stack = waker_stack, .seq = r->seq,
		.state = (char)r->state,
	};

	if (r->flags & OFFCPU_CHAIN_TARGET)
		sw.flags |= OFFCPU_SWITCH_TARGET;
	if (r->flags & OFFCPU_CHAIN_FROM_START)
		sw.flags |= OFFCPU_SWITCH_FROM_START;
	if (r->flags & OFFCPU_CHAIN_REPAIRED)
		sw.flags |= OFFCPU_SWITCH_REPAIRED;
	if (r->flags & OFFCPU_CHAIN_GAP)
		sw.flags |= OFFCPU_SWITCH_GAP;
	if (r->flags & OFFCPU_CHAIN_WAKE_UNSEEN)
		sw.flags |= OFFCPU_SWITCH_WAKE_UNSEEN;
	return offcpu_payload__encode_switch(&sw, buf, OFFCPU_SWITCH_RECORD_SIZE);
}

/*
 * A stack of the switch program's starts at __schedule, one taken at a
 * wakeup at try_to_wake_up, as calibrated (kstack_skip); a maker's at
 * wakeup_new is walked whole: whatever BPF glue leads any of them up to
 * those functions (and to wake_up_new_task) is cut, as in offcpu-time and
 * offcpu-wakeup samples. An interrupt's frames stay: the reader tells
 * interrupts and softirq work from them.
 */
size_t chain_stack__encode(const struct offcpu_chain_stack *r, void *buf)
{
	struct offcpu_sample s = { .k.who = { .pid = r->pid, .tid = r->tid },
				   .v = { .cpu = r->cpu, .period = 1, .count = 1 } };
	const uint64_t *k = (const uint64_t *)&r->stack[OFFCPU_MAX_STACK];
	uint32_t klen = r->klen > OFFCPU_MAX_STACK ? OFFCPU_MAX_STACK : r->klen;
	int skip = r->kind == OFFCPU_CHAIN_STACK_SLEEP ? sched_frame_index(k, klen) :
		   r->kind == OFFCPU_CHAIN_STACK_WAKER ? glue_frames(k, klen, ttwu_lo, ttwu_hi) :
		   r->kind == OFFCPU_CHAIN_STACK_NEW ? glue_frames(k, klen, wnt_lo, wnt_hi) : 0;
	struct offcpu_frames u = { (const uint64_t *)r->stack, r->ulen }, kf = { k, klen };
	struct offcpu_payload p;

	payload_of(&p, OFFCPU_PAYLOAD_STACK, OFFCPU_ID_STACK, &s, r->time, &u, &kf, skip);
	p.flags = 0;
	p.stack_id = r->id;
	return offcpu_payload__encode(&p, buf, OFFCPU_PAYLOAD_MAX_SIZE);
}
