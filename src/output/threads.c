// SPDX-License-Identifier: GPL-2.0-only
/* `offcpu report --threads`: the per-thread time table. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "output/outputs.h"
#include "output/report.h"
#include "output/threads.h"
#include "output/wakeups.h"

/* A row: a thread, or the threads of a process or comm (--by), their times summed. */
struct row {
	uint32_t pid, tid, comm;
	uint64_t wall, oncpu, sleep_s, sleep_d, rq, oncpu_cut;
	size_t threads;
};

/* Most off-CPU time first, then by pid, tid: the order of a stable table. */
static int cmp_rows(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	uint64_t ox = x->sleep_s + x->sleep_d, oy = y->sleep_s + y->sleep_d;

	if (ox != oy)
		return ox > oy ? -1 : 1;
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

/* A time and its share of wall time, at most 100 %: see cut_oncpu(). */
static void put_time(FILE *f, uint64_t ns, uint64_t wall, bool known, bool mark)
{
	char buf[32];
	double share = wall ? 100.0 * ns / wall : 0.0;

	if (!known) {
		fprintf(f, "  %11s  %6s", "-", "-");
		return;
	}
	fmt_time(buf + 1, sizeof(buf) - 1, ns);
	buf[0] = '*';
	fprintf(f, "  %11s  %5.1f%%", mark ? buf : buf + 1, share > 100.0 ? 100.0 : share);
}

/*
 * On-CPU time is estimated: one period per cpu-clock sample, so a thread
 * that ran a little more than a whole number of periods, or whose samples
 * fell at the edges of its life, can come out above what its wall time
 * leaves once its off-CPU and run-queue times (measured at each switch)
 * are taken out. Then on-CPU is shown as what is left, marked with *, and
 * the excess is said under the table, never as a share above 100 % or a
 * negative rest.
 */
static void cut_oncpu(struct row *r)
{
	uint64_t other = r->sleep_s + r->sleep_d + r->rq;
	uint64_t room = r->wall > other ? r->wall - other : 0;

	r->oncpu_cut = 0;
	if (r->oncpu > room) {
		r->oncpu_cut = r->oncpu - room;
		r->oncpu = room;
	}
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

/* The key of a thread's row under --by. */
static void row_key(struct row *k, const struct thread_time *t, uint32_t comm, int by)
{
	memset(k, 0, sizeof(*k));
	if (by == BY_COMM) {
		k->comm = comm;
		return;
	}
	k->pid = t->pid;
	k->comm = comm;
	if (by == BY_TID)
		k->tid = t->tid;
}

/*
 * The rows of the table, one per thread or summed per process or comm:
 * n threads into *rows (the caller frees it), *nrows of them.
 */
static int make_rows(const struct threads *t, const struct session *s, const struct report_opts *o,
		     uint64_t first, uint64_t last, struct row **rows, size_t *nrows)
{
	size_t n = threads__nr(t), nr = 0;
	int by = o->by < 0 ? BY_TID : o->by;
	struct row *rw = calloc(n ? n : 1, sizeof(*rw));

	if (!rw)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct thread_time *tt = threads__row(t, i);
		struct session_thread th = { .pid = tt->pid, .tid = tt->tid };
		struct row k, *r = NULL;

		session__thread(s, tt->tid, &th);
		row_key(&k, tt, th.comm, by);
		/* few rows: a linear search is enough (by comm, a few dozen) */
		for (size_t j = 0; j < nr && !r && by != BY_TID; j++)
			if (rw[j].pid == k.pid && rw[j].comm == k.comm)
				r = &rw[j];
		if (!r) {
			r = &rw[nr++];
			*r = k;
		}
		r->threads++;
		r->wall += wall_time(&th, first, last, o);
		r->oncpu += tt->oncpu;
		r->sleep_s += tt->sleep_s;
		r->sleep_d += tt->sleep_d;
		r->rq += tt->rq;
	}
	for (size_t j = 0; j < nr; j++)
		cut_oncpu(&rw[j]);
	qsort(rw, nr, sizeof(*rw), cmp_rows);
	*rows = rw;
	*nrows = nr;
	return 0;
}

int threads__print(FILE *f, const struct threads *t, const struct session *s,
		   const struct report_opts *o)
{
	int by = o->by < 0 ? BY_TID : o->by;
	struct row *rows = NULL;
	size_t n, shown, ncut = 0;
	uint64_t first, last, maxcut = 0;
	char buf[32];
	int err;

	fprintf(f, "# offcpu report --threads of %s\n#\n", o->input);
	fprintf(f, "# wall       the thread's life inside the recording: from its FORK record (or\n"
		   "#            the recording's start) to its EXIT record (or the recording's stop)%s\n"
		   "# on-CPU     cpu-clock samples: statistical, one period per sample\n"
		   "# off-CPU S  asleep, interruptible; off-CPU D: uninterruptible (offcpu-time)\n"
		   "# run-queue  waiting for a CPU after a wakeup, preemption or fork (sched-delay)%s\n"
		   "# rest       wall minus the four: states or threads not recorded (kernel\n"
		   "#            threads without --kernel-threads), switches the kernel did not\n"
		   "#            trace\n"
		   "# %%          of wall time; rows by off-CPU time (S + D), most first\n#\n",
		by == BY_TID ? "" : by == BY_PID ? ";\n#            summed over the threads of each process (--by pid)"
						 : ";\n#            summed over the threads of each comm (--by comm)",
		threads__have_delay(t) ? "" : ";\n#            not in this file: record with --sched-delay");
	if (!threads__nr(t) || !window(s, &first, &last)) {
		fprintf(f, "# no thread has samples\n");
		return ferror(f) ? -EIO : 0;
	}
	err = make_rows(t, s, o, first, last, &rows, &n);
	if (err)
		return err;
	shown = o->limit > 0 && (size_t)o->limit < n ? (size_t)o->limit : n;
	fprintf(f, "# %7s  %7s  %-16s  %11s  %11s  %6s  %11s  %6s  %11s  %6s  %11s  %6s  %11s  %6s\n",
		by == BY_COMM ? "threads" : "pid", by == BY_TID ? "tid" : "threads", "comm", "wall",
		"on-CPU", "%", "off-CPU S", "%", "off-CPU D", "%", "run-queue", "%", "rest", "%");
	for (size_t i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		uint64_t sum = r->oncpu + r->sleep_s + r->sleep_d + r->rq;
		uint64_t rest = r->wall > sum ? r->wall - sum : 0;

		if (r->oncpu_cut) {
			ncut++;
			if (r->oncpu_cut > maxcut)
				maxcut = r->oncpu_cut;
		}
		if (i >= shown)
			continue;
		fmt_time(buf, sizeof(buf), r->wall);
		if (by == BY_COMM)
			fprintf(f, "  %7zu  %7s", r->threads, "-");
		else if (by == BY_PID)
			fprintf(f, "  %7d  %7zu", (int32_t)r->pid, r->threads);
		else
			fprintf(f, "  %7d  %7d", (int32_t)r->pid, (int32_t)r->tid);
		fprintf(f, "  %-16s  %11s", session__comm(s, r->comm), buf);
		put_time(f, r->oncpu, r->wall, threads__have_cpu(t), r->oncpu_cut);
		put_time(f, r->sleep_s, r->wall, true, false);
		put_time(f, r->sleep_d, r->wall, true, false);
		put_time(f, r->rq, r->wall, threads__have_delay(t), false);
		put_time(f, rest, r->wall, true, false);
		fputc('\n', f);
	}
	if (shown < n)
		fprintf(f, "# %zu more rows with less off-CPU time left out (--limit 0 shows all)\n", n - shown);
	if (ncut) {
		fmt_time(buf, sizeof(buf), maxcut);
		fprintf(f, "# *: on-CPU sampled above what wall leaves after the measured times, in %zu\n"
			   "#    row(s), by %s at most: sampling error, shown as the room left\n",
			ncut, buf);
	}
	free(rows);
	return ferror(f) ? -EIO : 0;
}

static int threads_write(const struct output_run *r)
{
	return threads__print(r->f, r->t, r->s, r->o);
}

const struct report_output threads_output = {
	.name = "threads",
	.short_name = 'T',
	.help = "  -T, --threads           per thread: wall, on-CPU, off-CPU S and D,\n"
		"                          run-queue delay (record --sched-delay), most\n"
		"                          off-CPU time first\n"
		"      --limit N           --threads: the first N rows (default 30, 0: all)\n",
	.excludes = "pprof wakeups folded",
	.no_event = true,
	.conflict = offwake__conflict, /* one message for the views that go alone */
	.by = true,
	.reads = OUTPUT_READS_THREADS,
	.write = threads_write,
};
