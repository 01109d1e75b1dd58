/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The off-CPU samples: the one module that lays out, encodes and decodes
 * the SAMPLE records of offcpu-time, offcpu-wakeup and sched-delay (no BPF,
 * no symbols: the recorder hands in plain stacks, the reader plain bytes).
 *
 * Every such sample carries, in this order, IDENTIFIER, IP, TID, TIME, CPU,
 * PERIOD, CALLCHAIN and RAW (OFFCPU_PAYLOAD_SAMPLE_TYPE). Their RAW data:
 *
 *   offcpu-time    perf's embedded off-CPU sample, then struct offcpu_raw:
 *                    u32 pid, u32 tid       the sleeper (process, thread)
 *                    u64 period             ns off CPU
 *                    u64 nr, u64 ips[nr]    the callchain, context markers included
 *                    u64 cgroup             cgroup v2 id
 *                    struct offcpu_raw      offcpu's own fields
 *                  This is what `perf record --off-cpu` writes. perf 6.14 and
 *                  newer parse an offcpu-time event with RAW this way and
 *                  take pid, tid, period, callchain and cgroup from it,
 *                  ignoring the sample's own fields and stopping at the
 *                  cgroup: offcpu's fields after it are not seen there. Older
 *                  perf reads the sample's own TID, PERIOD and CALLCHAIN,
 *                  which hold the same values. So both show the same sample.
 *   offcpu-wakeup  struct offcpu_wakeup_raw (perf script dumps it: the waker
 *                  is legible there as text at offset 0x30).
 *   sched-delay    struct offcpu_raw.
 *
 * Read back: our own files, those of earlier offcpu versions (a bare
 * offcpu_raw in offcpu-time) and perf's own --off-cpu files (the embedded
 * layout without offcpu_raw; no state, one interval per sample).
 */
#ifndef OFFCPU_PERFDATA_OFFCPU_PAYLOAD_H
#define OFFCPU_PERFDATA_OFFCPU_PAYLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

/* Names of the events offcpu writes (EVENT_DESC). */
#define OFFCPU_EVENT_NAME "offcpu-time"
#define OFFCPU_WAKEUP_EVENT_NAME "offcpu-wakeup"   /* record --wakeups */
#define OFFCPU_SCHED_DELAY_EVENT_NAME "sched-delay" /* record --sched-delay */
#define OFFCPU_SWITCH_EVENT_NAME "offcpu-switch"   /* record --chains: every wait of every thread */
#define OFFCPU_STACK_EVENT_NAME "offcpu-stack"     /* record --chains: the stacks offcpu-switch names */
#define OFFCPU_CHAIN_CPU_EVENT_NAME "chain-cpu-clock" /* record --chains: CPU samples outside the targets */
/* Its sample id ("OFFCPU" and 1), far above the kernel's sequential ids: it
 * names the event in a file whose EVENT_DESC was never written (recorder killed). */
#define OFFCPU_EVENT_ID 0x4f46464350550001ULL

#define OFFCPU_PAYLOAD_SAMPLE_TYPE                                                     \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
	 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW)

/*
 * offcpu's own fields of an off-CPU sample. Versioned by size: readers must
 * accept a larger one and ignore what they do not know.
 */
struct offcpu_raw {
	/*
	 * offcpu-time: 'S', 'D' (as a character). sched-delay: what preceded
	 * the wait for a CPU: 'R' preemption, 'S'/'D' a sleep in that state,
	 * 'T' another sleep (stopped, traced...), 'N' the task's creation.
	 */
	uint32_t state;
	uint32_t flags;    /* OFFCPU_RAW_* */
	uint64_t count;    /* number of off-CPU intervals in this sample */
	uint64_t cgroup;   /* cgroup v2 id of the task when it slept */
};

#define OFFCPU_RAW_DIRECT 0x1     /* one interval at or above the threshold */
#define OFFCPU_RAW_AGGREGATED 0x2 /* a sum of short intervals */
#define OFFCPU_RAW_WAKER_IRQ 0x4  /* offcpu-wakeup: woken from an interrupt, not a task */
/* Taken by waits that were in progress when the recording started, and by
 * waits still open when it stopped. */
#define OFFCPU_RAW_IN_PROGRESS_START 0x8
#define OFFCPU_RAW_IN_PROGRESS_STOP 0x10
/* offcpu-wakeup: the waker woke it from softirq work of its own (loopback's receive) */
#define OFFCPU_RAW_WAKER_SOFTIRQ 0x20
/*
 * One switch-in ends a sleep and the wait for a CPU after it: its direct
 * sched-delay sample comes first, then its offcpu-time sample (and that
 * one's offcpu-wakeup, at the same time). Each reads the clock as it is
 * written, so the two may be this far apart (ns); readers pair them.
 */
#define OFFCPU_SWITCH_IN_SPREAD_NS 50000

/*
 * RAW payload of offcpu-wakeup samples: the sleeper's offcpu_raw, then who
 * woke it. waker_text ("comm pid/tid", or "[irq]") makes the waker legible
 * in perf script's hex and ASCII dump; the binary fields are for programs.
 * pid and tid are 0 for an interrupt.
 */
struct offcpu_wakeup_raw {
	struct offcpu_raw r;  /* of the off-CPU interval (state S/D, count...) */
	uint32_t waker_pid;   /* @0x18 */
	uint32_t waker_tid;   /* @0x1c */
	char waker_comm[16];  /* @0x20, NUL-terminated */
	char waker_text[32];  /* @0x30, NUL-terminated */
};

enum offcpu_payload_event {
	OFFCPU_PAYLOAD_TIME,   /* offcpu-time */
	OFFCPU_PAYLOAD_WAKEUP, /* offcpu-wakeup */
	OFFCPU_PAYLOAD_DELAY,  /* sched-delay */
	OFFCPU_PAYLOAD_STACK,  /* offcpu-stack: RAW is the stack's u32 id */
};

/* The largest stack of each kind a sample carries (perf's default maximum). */
#define OFFCPU_PAYLOAD_MAX_STACK 127
/* Room for any encoded sample: two callchains of both stacks, and the rest. */
#define OFFCPU_PAYLOAD_MAX_SIZE 8192

/* One off-CPU sample, as the recorder hands it to the encoder. */
struct offcpu_payload {
	enum offcpu_payload_event event;
	uint64_t id;                 /* sample id of the event */
	uint64_t time;
	uint32_t pid, tid, cpu;
	uint64_t period;             /* ns */
	uint64_t count;              /* intervals */
	uint64_t cgroup;
	char state;                  /* see struct offcpu_raw */
	uint32_t flags;              /* OFFCPU_RAW_* */
	const uint64_t *kstack;      /* innermost first, klen frames */
	const uint64_t *ustack;      /* innermost first, ulen frames */
	uint32_t klen, ulen;         /* each cut to OFFCPU_PAYLOAD_MAX_STACK */
	/* offcpu-wakeup: the waker (pid and tid 0 for an interrupt: OFFCPU_RAW_WAKER_IRQ) */
	uint32_t waker_pid, waker_tid;
	char waker_comm[16];
	uint32_t stack_id;           /* offcpu-stack */
};

/*
 * Encode p as a whole SAMPLE record (header included) into buf, 8-byte
 * aligned, of size bytes. Returns the record's size, or 0 when it does not
 * fit. A sample without frames gets the callchain { PERF_CONTEXT_USER, 0 }
 * (one unknown frame at address 0) in both places, so that every perf shows
 * the same single frame.
 */
size_t offcpu_payload__encode(const struct offcpu_payload *p, void *buf, size_t size);

/* What a reader learns from an off-CPU sample's RAW data. */
struct offcpu_fields {
	bool embedded;          /* perf's embedded layout: pid..callchain below are from it */
	bool own;               /* offcpu's fields (struct offcpu_raw) were found */
	uint32_t pid, tid;      /* embedded only */
	uint64_t period;        /* embedded only */
	uint64_t nr_callchain;  /* embedded only */
	const void *callchain;  /* embedded only: nr_callchain u64s, maybe unaligned */
	char state;             /* 0 when unknown (perf's own recordings) */
	uint32_t flags;         /* OFFCPU_RAW_* */
	uint64_t count;         /* intervals; 1 when unknown */
	uint64_t cgroup;
	bool waker;             /* offcpu-wakeup with its waker */
	uint32_t waker_pid, waker_tid;
	char waker_comm[17];    /* NUL-terminated */
};

/*
 * The user frames of a SAMPLE record laid out as ours (cpu-clock's, or an
 * off-CPU sample's: IDENTIFIER IP TID TIME CPU PERIOD CALLCHAIN [RAW]):
 * *first, their index in the callchain, and their number; 0 when it has
 * none, or is not such a record.
 */
uint64_t offcpu_payload__user_frames(const void *rec, size_t len, uint64_t *first);
/*
 * Keep only the first `keep` of those user frames, in place: in the
 * callchain and, in an offcpu-time sample, in the copy its RAW data holds
 * (perf >= 6.14 reads that one), so that every perf shows the same stack.
 * With no frame left at all the record is left as it is (a sample keeps
 * one frame). Returns the record's new length, its header's size too.
 */
size_t offcpu_payload__cut_user(void *rec, size_t len, uint64_t keep);

/*
 * Decode the RAW data of a sample of event ev (size bytes at raw, maybe
 * unaligned). Never fails: what is not there is left unknown. Nothing is
 * copied but the waker's comm; callchain points into raw.
 */
void offcpu_payload__decode(enum offcpu_payload_event ev, const void *raw, uint32_t size,
			    struct offcpu_fields *out);

/*
 * record --chains: one offcpu-switch sample per wait of every thread of
 * the machine, and one offcpu-stack sample per distinct stack they name.
 *
 * offcpu-switch: IDENTIFIER, TID (the thread), TIME (its switch-in), CPU
 * and RAW (OFFCPU_SWITCH_SAMPLE_TYPE): 80 bytes a wait. RAW, 36 bytes:
 *   @0  u64 out          left the CPU (CLOCK_MONOTONIC, as TIME)
 *   @8  u64 wake         woken: the wait proper ends (= out after a preemption or a fork)
 *   @16 u32 stack        id of the stack it left the CPU with, 0: none
 *   @20 u32 waker_tid    who woke it or, after a preemption, took its CPU;
 *                        0: none seen, or an interrupt (then waker_stack is the interrupt's)
 *   @24 u32 waker_stack  id of the waker's stack at the wakeup, 0: none
 *   @28 u32 seq          the thread's switch-outs up to this wait's (nvcsw + nivcsw):
 *                        a thread's records count up by one, a jump says some were lost
 *   @32 u8  state        'S', 'D' asleep; 'R' preempted; 'N' created (its first run);
 *                        'T' another state (stopped, traced)
 *   @33 u8  reserved
 *   @34 u16 flags        OFFCPU_SWITCH_*
 * offcpu-stack: the layout of OFFCPU_PAYLOAD_SAMPLE_TYPE (the stack as its
 * callchain, TID the process whose stack it is), RAW a u32 id, unique in
 * the recording (a stack written again gets a new one).
 */
#define OFFCPU_SWITCH_SAMPLE_TYPE \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW)
#define OFFCPU_SWITCH_RAW_SIZE 36
#define OFFCPU_SWITCH_RECORD_SIZE 80

#define OFFCPU_SWITCH_TARGET 0x1     /* a thread of the recording's targets */
#define OFFCPU_SWITCH_FROM_START 0x2 /* in progress at the start: out is the start */
#define OFFCPU_SWITCH_TO_STOP 0x4    /* open at the stop: wake and TIME are the stop */
#define OFFCPU_SWITCH_REPAIRED 0x8   /* its switch-in was not traced: TIME and wake from sched_info */
#define OFFCPU_SWITCH_GAP 0x10       /* a record of the thread before this one was lost */
#define OFFCPU_SWITCH_WAKE_UNSEEN 0x20 /* asleep, its wakeup not traced: wake from sched_info, no waker */

struct offcpu_switch {
	uint64_t id;                 /* sample id (encode) */
	uint32_t pid, tid, cpu;      /* encode */
	uint64_t time;               /* switch-in (encode) */
	uint64_t out, wake;
	uint32_t stack, waker_tid, waker_stack, seq;
	char state;
	uint16_t flags;
};

/* An offcpu-switch sample, header included, into buf (OFFCPU_SWITCH_RECORD_SIZE bytes). */
size_t offcpu_payload__encode_switch(const struct offcpu_switch *sw, void *buf, size_t size);
/* The RAW data of an offcpu-switch sample (maybe unaligned): false when too short. */
bool offcpu_payload__decode_switch(const void *raw, uint32_t size, struct offcpu_switch *out);
/* The RAW data of an offcpu-stack sample: its id; false when too short. */
bool offcpu_payload__decode_stack(const void *raw, uint32_t size, uint32_t *id);

#endif
