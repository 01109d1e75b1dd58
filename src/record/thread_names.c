// SPDX-License-Identifier: GPL-2.0-only
/*
 * Every thread a sample is of has a name in the file. A reader names a
 * thread from the COMM records (synthesized from /proc, or the kernel's at
 * exec and prctl) and from its FORK (the parent's name); one with neither
 * shows as ':TID'. Both miss a thread that was there before the perf
 * events' enable and is gone from /proc when it is read, sampled in
 * between (a fork storm's child, exiting), and one made
 * between the side-band's disable and the programs' stop. The writer's
 * tap brings every record here first: before the first sample of a
 * thread no record named, a COMM at the sample's time, with the name /proc
 * has now (the thread still runs) or the one offcpu_names saw just after
 * the enable; a thread neither knows is counted, and stays ':TID'.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfdata/perf_format.h"
#include "perfdata/perf_writer.h"
#include "record/record.h"
#include "util/hash.h"
#include "util/htab.h"
#include "util/vec.h"

struct seen_name {
	uint32_t pid, tid;
	char comm[16];
};

struct thread_names {
	struct htab named;       /* uint32_t tids a record named */
	struct seen_name *seen;  /* offcpu_names' pass at the start, in its order */
	size_t nr_seen, cap_seen;
	uint32_t last;           /* the tid of the last sample: samples come in runs */
	uint64_t id;             /* the attr id the COMM records carry */
	uint64_t named_late, unnamed;
	int err;
};

struct thread_names *thread_names__new(uint64_t id)
{
	struct thread_names *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	htab__init(&n->named, sizeof(uint32_t));
	n->id = id;
	n->last = (uint32_t)-1;
	return n;
}

void thread_names__free(struct thread_names *n)
{
	if (!n)
		return;
	htab__free(&n->named);
	free(n->seen);
	free(n);
}

int thread_names__seen(struct thread_names *n, uint32_t pid, uint32_t tid, const char *comm)
{
	struct seen_name *s = vec__push((void **)&n->seen, &n->nr_seen, &n->cap_seen, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->pid = pid;
	s->tid = tid;
	snprintf(s->comm, sizeof(s->comm), "%s", comm);
	return 0;
}

static bool tid_eq(const void *entry, const void *key)
{
	return *(const uint32_t *)entry == *(const uint32_t *)key;
}

/* Note tid named; true when it was not before. */
static bool name(struct thread_names *n, uint32_t tid)
{
	bool added;
	uint32_t *e = htab__get(&n->named, hash__mix(tid), tid_eq, &tid, &added);

	if (!e) {
		n->err = -ENOMEM;
		return false;
	}
	if (added)
		*e = tid;
	return added;
}

/*
 * The name of a thread no record named: /proc's now, or the start's pass's
 * (a linear search: this is for the few threads no record named).
 */
static bool find_name(const struct thread_names *n, uint32_t pid, uint32_t tid, char *comm,
		      size_t size)
{
	char path[64];
	ssize_t len;

	snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", pid, tid);
	len = proc_read(path, comm, size);
	if (len > 0) {
		comm[strcspn(comm, "\n")] = 0;
		return true;
	}
	for (size_t i = n->nr_seen; i-- > 0;)
		if (n->seen[i].tid == tid && n->seen[i].pid == pid) {
			snprintf(comm, size, "%s", n->seen[i].comm);
			return true;
		}
	return false;
}

void thread_names__record(struct thread_names *n, struct perf_writer *w, const void *rec,
			  size_t len)
{
	const struct perf_event_header *eh = rec;
	const uint8_t *b = (const uint8_t *)(eh + 1);
	uint32_t pid, tid;
	uint64_t time;
	size_t off;
	char comm[64];

	switch (eh->type) {
	case PERF_RECORD_COMM: /* pid, tid */
		if (len >= sizeof(*eh) + 8) {
			memcpy(&tid, b + 4, 4);
			name(n, tid);
		}
		return;
	case PERF_RECORD_FORK: /* pid, ppid, tid, ptid */
		if (len >= sizeof(*eh) + 16) {
			memcpy(&tid, b + 8, 4);
			name(n, tid);
		}
		return;
	case PERF_RECORD_SAMPLE:
		break;
	default:
		return;
	}
	if (len < sizeof(*eh) + 32)
		return;
	off = sample_tid_at(rec);
	memcpy(&pid, b + off, 4);
	memcpy(&tid, b + off + 4, 4);
	if (tid == n->last || !tid || tid == (uint32_t)-1)
		return;
	n->last = tid;
	if (!name(n, tid))
		return;
	memcpy(&time, b + off + 8, 8);
	if (!find_name(n, pid, tid, comm, sizeof(comm))) {
		n->unnamed++;
		return;
	}
	n->named_late++;
	/* before the sample (the tap runs before each write), at its time; the writer keeps a failure */
	(void)synth__comm(w, pid, tid, comm, n->id, time);
}

int thread_names__error(const struct thread_names *n)
{
	return n->err;
}

uint64_t thread_names__named_late(const struct thread_names *n)
{
	return n->named_late;
}

uint64_t thread_names__unnamed(const struct thread_names *n)
{
	return n->unnamed;
}
