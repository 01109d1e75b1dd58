// SPDX-License-Identifier: GPL-2.0-only
/* Per-thread time accounting: one table row per thread, by tid and start time. */
#include <errno.h>
#include <stdlib.h>

#include "profile/threads.h"
#include "util/hash.h"
#include "util/htab.h"

struct threads {
	struct htab rows;  /* struct thread_time, by tid and start */
	bool have_delay;   /* the file has sched-delay samples */
	bool have_cpu;     /* ... and CPU samples */
};

static bool row_eq(const void *entry, const void *key)
{
	const struct thread_time *e = entry, *k = key;

	return e->tid == k->tid && e->start == k->start;
}

struct threads *threads__new(void)
{
	struct threads *t = calloc(1, sizeof(struct threads));

	if (t)
		htab__init(&t->rows, sizeof(struct thread_time));
	return t;
}

void threads__free(struct threads *t)
{
	if (!t)
		return;
	htab__free(&t->rows);
	free(t);
}

int threads__add(struct threads *t, const struct rsample *rs)
{
	const struct perf_evattr *a = rs->s->evattr;
	struct thread_time key = { .tid = rs->s->tid, .start = rs->thread_start }, *acc;
	bool added;

	/* wakeups repeat off-CPU time; idle (0) and exited tasks (-1) are no thread */
	if (a->is_wakeup || a->is_chain || !a->is_time || !key.tid || key.tid == UINT32_MAX)
		return 0;
	acc = htab__get(&t->rows, hash__mix(key.tid ^ key.start * 0x9e3779b97f4a7c15ULL), row_eq,
			&key, &added);
	if (!acc)
		return -ENOMEM;
	if (added) {
		acc->tid = key.tid;
		acc->start = key.start;
		acc->pid = rs->s->pid;
	}
	if (a->is_sched_delay) {
		acc->rq += rs->s->period;
		t->have_delay = true;
	} else if (a->is_offcpu) {
		if (rs->state == 'D')
			acc->sleep_d += rs->s->period;
		else
			acc->sleep_s += rs->s->period;
		acc->waits += rs->count;
	} else {
		acc->oncpu += rs->s->period;
		t->have_cpu = true;
	}
	return 0;
}

size_t threads__nr(const struct threads *t)
{
	return htab__n(&t->rows);
}

const struct thread_time *threads__row(const struct threads *t, size_t i)
{
	return i < htab__n(&t->rows) ? htab__at(&t->rows, i) : NULL;
}

bool threads__have_delay(const struct threads *t)
{
	return t->have_delay;
}

bool threads__have_cpu(const struct threads *t)
{
	return t->have_cpu;
}
