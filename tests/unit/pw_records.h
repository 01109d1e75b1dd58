/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Test helper: the records the unit tests' fixture files share, written
 * through the project's own perf_writer (pd_builder.h writes files byte by
 * byte instead, for the reader's format tests). Every record belongs to
 * process PID and carries the sample_id trailer of the cpu-clock event
 * CPU_ID: both are defined by the test before it includes this file.
 */
#ifndef PW_RECORDS_H
#define PW_RECORDS_H

#include <stdint.h>
#include <stdio.h>

#include "perfdata/perf_format.h"
#include "perfdata/perf_writer.h"

#if !defined(PID) || !defined(CPU_ID)
#error "define PID and CPU_ID before including pw_records.h"
#endif

/* One record, its size read from its header. */
static inline void put(struct perf_writer *w, const void *rec)
{
	assert_int_equal(perf_writer__write(w, rec, ((const struct perf_event_header *)rec)->size), 0);
}

/* FORK or EXIT of tid at t. */
static inline void task_event(struct perf_writer *w, uint32_t type, uint32_t tid, uint64_t t)
{
	struct {
		struct perf_event_header h;
		uint32_t pid, ppid, tid, ptid;
		uint64_t time;
		struct sample_id sid;
	} r = {
		.h = { .type = type, .size = sizeof(r) },
		.pid = PID, .ppid = PID, .tid = tid, .ptid = PID, .time = t,
		.sid = { .pid = PID, .tid = tid, .time = t, .id = CPU_ID },
	};

	put(w, &r);
}

/* tid is named name from t on. */
static inline void comm(struct perf_writer *w, uint32_t tid, const char *name, uint64_t t)
{
	struct {
		struct perf_event_header h;
		uint32_t pid, tid;
		char comm[16];
		struct sample_id sid;
	} r = {
		.h = { .type = PERF_RECORD_COMM, .size = sizeof(r) },
		.pid = PID, .tid = tid,
		.sid = { .pid = PID, .tid = tid, .time = t, .id = CPU_ID },
	};

	snprintf(r.comm, sizeof(r.comm), "%s", name);
	put(w, &r);
}

/* A cpu-clock sample of tid at t on CPU 1, one user frame. */
static inline void cpu_sample(struct perf_writer *w, uint32_t tid, uint64_t t, uint64_t period)
{
	struct {
		struct perf_event_header h;
		uint64_t id, ip;
		uint32_t pid, tid;
		uint64_t time;
		uint32_t cpu, res;
		uint64_t period, nr, chain[1];
	} r = {
		.h = { .type = PERF_RECORD_SAMPLE, .misc = PERF_RECORD_MISC_USER, .size = sizeof(r) },
		.id = CPU_ID, .ip = 0x401000, .pid = PID, .tid = tid, .time = t, .cpu = 1,
		.period = period, .nr = 1, .chain = { 0x401000 },
	};

	put(w, &r);
}

#endif
