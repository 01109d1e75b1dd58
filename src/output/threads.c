// SPDX-License-Identifier: GPL-2.0-only
/* `offcpu report --threads`: the per-thread time table. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "output/report.h"
#include "output/threads.h"

static int cmp_rows(const void *a, const void *b)
{
	const struct thread_time *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Human units, but to the millisecond at least: rows must add up. */
static void fmt_time(char *buf, size_t len, uint64_t ns)
{
	if (ns >= 1000000000ULL)
		snprintf(buf, len, "%.3f s", ns / 1e9);
	else
		report__fmt_ns(buf, len, ns);
}

static void put_time(FILE *f, uint64_t ns, uint64_t wall, bool known)
{
	char buf[32];

	if (!known) {
		fprintf(f, "  %11s  %6s", "-", "-");
		return;
	}
	fmt_time(buf, sizeof(buf), ns);
	fprintf(f, "  %11s  %5.1f%%", buf, wall ? 100.0 * ns / wall : 0.0);
}

/*
 * The recording's window: its start and stop as the recorder wrote them
 * (waits in progress at either end are cut to it), else the first and last
 * record of the file (older files, perf's). false when neither is known.
 */
static bool window(const struct session *s, uint64_t *first, uint64_t *last)
{
	const struct perf_reader *r = session__reader(s);
	uint64_t start = 0, stop = 0, v;
	const char *name;

	for (int i = 0; perf_reader__offcpu_counter(r, i, &name, &v); i++) {
		if (!strcmp(name, "record.start_ns"))
			start = v;
		else if (!strcmp(name, "record.stop_ns"))
			stop = v;
	}
	if (start && stop > start) {
		*first = start;
		*last = stop;
		return true;
	}
	return session__time_span(s, first, last);
}

/*
 * Wall time of a thread: its life (FORK to EXIT record) inside the
 * recording's window, cut to --time when given. Threads that existed
 * before the recording start with it, those alive after it end with it.
 */
static uint64_t wall_time(const struct session_thread *th, uint64_t first, uint64_t last,
			  const struct report_opts *o)
{
	uint64_t b = th->fork_time && th->fork_time > first ? th->fork_time : first;
	uint64_t e = th->exit_time && th->exit_time >= b && th->exit_time < last ? th->exit_time
										 : last;

	if (o->time_start && b < o->time_start)
		b = o->time_start;
	if (o->time_end && e > o->time_end)
		e = o->time_end;
	return e > b ? e - b : 0;
}

int threads__print(FILE *f, const struct threads *t, const struct session *s,
		   const struct report_opts *o)
{
	struct thread_time *rows = NULL;
	size_t n = threads__nr(t);
	uint64_t first, last;
	char buf[32];

	fprintf(f, "# offcpu report --threads of %s\n#\n", o->input);
	fprintf(f, "# wall       the thread's life inside the recording: from its FORK record (or\n"
		   "#            the recording's start) to its EXIT record (or the recording's stop)\n"
		   "# on-CPU     cpu-clock samples: statistical, one period per sample\n"
		   "# off-CPU S  asleep, interruptible; off-CPU D: uninterruptible (offcpu-time)\n"
		   "# run-queue  waiting for a CPU after a wakeup, preemption or fork (sched-delay)%s\n"
		   "# rest       wall minus the four: states or threads not recorded (kernel\n"
		   "#            threads without --kernel-threads), switches the kernel did not\n"
		   "#            trace, sampling error\n#\n",
		threads__have_delay(t) ? "" : ";\n#            not in this file: record with --sched-delay");
	if (!n || !window(s, &first, &last)) {
		fprintf(f, "# no thread has samples\n");
		return ferror(f) ? -EIO : 0;
	}
	rows = malloc(n * sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		rows[i] = *threads__row(t, i);
	qsort(rows, n, sizeof(*rows), cmp_rows);
	fprintf(f, "# %7s  %7s  %-16s  %11s  %11s  %6s  %11s  %6s  %11s  %6s  %11s  %6s  %11s  %6s\n",
		"pid", "tid", "comm", "wall", "on-CPU", "%", "off-CPU S", "%", "off-CPU D", "%",
		"run-queue", "%", "rest", "%");
	for (size_t i = 0; i < n; i++) {
		const struct thread_time *r = &rows[i];
		struct session_thread th = { .pid = r->pid, .tid = r->tid };
		uint64_t wall, sum;
		int64_t rest;

		session__thread(s, r->tid, &th);
		wall = wall_time(&th, first, last, o);
		sum = r->oncpu + r->sleep_s + r->sleep_d + r->rq;
		rest = (int64_t)(wall - sum);
		fmt_time(buf, sizeof(buf), wall);
		fprintf(f, "  %7d  %7d  %-16s  %11s", (int32_t)r->pid, (int32_t)r->tid, session__comm(s, th.comm), buf);
		put_time(f, r->oncpu, wall, threads__have_cpu(t));
		put_time(f, r->sleep_s, wall, true);
		put_time(f, r->sleep_d, wall, true);
		put_time(f, r->rq, wall, threads__have_delay(t));
		fmt_time(buf + 1, sizeof(buf) - 1, rest < 0 ? (uint64_t)-rest : (uint64_t)rest);
		buf[0] = rest < 0 ? '-' : ' ';
		fprintf(f, "  %11s  %5.1f%%\n", rest < 0 ? buf : buf + 1,
			wall ? 100.0 * rest / wall : 0.0);
	}
	free(rows);
	return ferror(f) ? -EIO : 0;
}
