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
	uint64_t start;       /* a thread's start (its tid may have been given again) */
	uint64_t wall, oncpu, sleep_s, sleep_d, rq, oncpu_cut;
	size_t threads;
};

/* The time a row is ranked by (--sort). */
static uint64_t sort_value(const struct row *r, int key)
{
	switch (key) {
	case TS_S:
		return r->sleep_s;
	case TS_D:
		return r->sleep_d;
	case TS_ON:
		return r->oncpu;
	case TS_RUNQ:
		return r->rq;
	case TS_WALL:
		return r->wall;
	}
	return r->sleep_s + r->sleep_d;
}

static const char *const sort_titles[TS_MAX] = {
	[TS_OFF] = "off-CPU time (S + D)", [TS_S] = "off-CPU S time", [TS_D] = "off-CPU D time",
	[TS_ON] = "on-CPU time", [TS_RUNQ] = "run-queue delay", [TS_WALL] = "wall time",
};

/* Most of the --sort key's time first, then by pid, tid, start: the order of a stable table. */
static int cmp_rows(const void *a, const void *b, void *ctx)
{
	const struct row *x = a, *y = b;
	int key = *(const int *)ctx;
	uint64_t ox = sort_value(x, key), oy = sort_value(y, key);

	if (ox != oy)
		return ox > oy ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
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
	if (by == BY_TID) {
		k->tid = t->tid;
		k->start = t->start;
	}
}

/*
 * A thread that did nothing in the recording's window but wait, in one
 * wait: alive through the window, no CPU sample, no run-queue delay, one
 * interval that covers it (to 1 %: the wait in progress at the start and
 * at the stop of a whole-machine recording; every idle daemon). Such threads lead a table by off-CPU time
 * and push out the ones that alternate between running and waiting.
 */
static bool asleep_throughout(const struct thread_time *tt, const struct session_thread *th,
			      uint64_t wall, uint64_t first, uint64_t last)
{
	uint64_t off = tt->sleep_s + tt->sleep_d;

	return wall && (!th->fork_time || th->fork_time <= first) &&
	       (!th->exit_time || th->exit_time >= last) && !tt->oncpu && !tt->rq && tt->waits <= 1 &&
	       off >= wall - wall / 100;
}

/* The threads set aside (asleep_throughout), counted by comm for their line. */
struct idle {
	size_t n;
	uint64_t time;
	struct { uint32_t comm; size_t n; } *comms;
	size_t ncomms;
};

static int idle__add(struct idle *id, uint32_t comm, uint64_t wall)
{
	size_t i;

	id->n++;
	id->time += wall;
	for (i = 0; i < id->ncomms; i++)
		if (id->comms[i].comm == comm) {
			id->comms[i].n++;
			return 0;
		}
	if (!(id->ncomms & (id->ncomms + 1))) { /* grow at 0, 1, 3, 7...: to 1, 2, 4, 8... */
		void *v = realloc(id->comms, (id->ncomms * 2 + 1) * sizeof(*id->comms));

		if (!v)
			return -ENOMEM;
		id->comms = v;
	}
	id->comms[id->ncomms].comm = comm;
	id->comms[id->ncomms++].n = 1;
	return 0;
}

/* "# N threads asleep ...: comm xN, ..." (the commonest comms first). */
static void idle__print(FILE *f, struct idle *id, const struct session *s)
{
	char buf[32];
	size_t shown = 0;

	if (!id->n)
		return;
	fmt_time(buf, sizeof(buf), id->time);
	fprintf(f, "# %zu thread(s) asleep the whole window in one wait (%s in all), not listed"
		   " (--idle lists them):", id->n, buf);
	while (shown < 8) {
		size_t best = id->ncomms;

		for (size_t i = 0; i < id->ncomms; i++)
			if (id->comms[i].n && (best == id->ncomms || id->comms[i].n > id->comms[best].n))
				best = i;
		if (best == id->ncomms)
			break;
		fprintf(f, "%s %s x%zu", shown ? "," : "", session__comm(s, id->comms[best].comm),
			id->comms[best].n);
		id->comms[best].n = 0;
		shown++;
	}
	fprintf(f, "%s\n", shown < id->ncomms ? ", ..." : "");
}

/*
 * The rows of the table, one per thread or summed per process or comm:
 * n threads into *rows (the caller frees it), *nrows of them; those asleep
 * throughout to *idle unless --idle.
 */
static int make_rows(const struct threads *t, const struct session *s, const struct report_opts *o,
		     uint64_t first, uint64_t last, struct row **rows, size_t *nrows, struct idle *idle)
{
	size_t n = threads__nr(t), nr = 0;
	int by = o->by < 0 ? BY_TID : o->by, key = o->thread_sort < 0 ? TS_OFF : o->thread_sort;
	struct row *rw = calloc(n ? n : 1, sizeof(*rw));

	if (!rw)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct thread_time *tt = threads__row(t, i);
		struct session_thread th = { .pid = tt->pid, .tid = tt->tid };
		struct row k, *r = NULL;
		uint64_t wall;

		session__thread(s, tt->tid, tt->start, &th);
		wall = wall_time(&th, first, last, o);
		if (!o->idle && asleep_throughout(tt, &th, wall, first, last)) {
			if (idle__add(idle, th.comm, wall)) {
				free(rw);
				return -ENOMEM;
			}
			continue;
		}
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
		r->wall += wall;
		r->oncpu += tt->oncpu;
		r->sleep_s += tt->sleep_s;
		r->sleep_d += tt->sleep_d;
		r->rq += tt->rq;
	}
	for (size_t j = 0; j < nr; j++)
		cut_oncpu(&rw[j]);
	qsort_r(rw, nr, sizeof(*rw), cmp_rows, &key);
	*rows = rw;
	*nrows = nr;
	return 0;
}

int threads__print(FILE *f, const struct threads *t, const struct session *s,
		   const struct report_opts *o)
{
	int by = o->by < 0 ? BY_TID : o->by, key = o->thread_sort < 0 ? TS_OFF : o->thread_sort;
	struct row *rows = NULL;
	struct idle idle = { 0 };
	size_t n, shown, ncut = 0;
	uint64_t first, last, maxcut = 0;
	char buf[32];
	int err;

	if (!threads__nr(t) || !report__window(s, &first, &last))
		return -ENODATA;
	fprintf(f, "# offcpu report --threads of %s\n#\n", o->input);
	fprintf(f, "# wall       the thread's life inside the recording: from its FORK record (or\n"
		   "#            the recording's start) to its EXIT record (or the recording's stop)%s\n"
		   "# on-CPU     cpu-clock samples: statistical, one period per sample\n"
		   "# off-CPU S  asleep, interruptible; off-CPU D: uninterruptible (offcpu-time)\n"
		   "# run-queue  waiting for a CPU after a wakeup, preemption or fork (sched-delay)%s\n"
		   "# rest       wall minus the four: states or threads not recorded (kernel\n"
		   "#            threads without --kernel-threads), switches the kernel did not\n"
		   "#            trace\n"
		   "# %%          of wall time; rows by %s, most first (--sort off|S|D|on|runq|wall)\n#\n",
		by == BY_TID ? "" : by == BY_PID ? ";\n#            summed over the threads of each process (--by pid)"
						 : ";\n#            summed over the threads of each comm (--by comm)",
		threads__have_delay(t) ? "" : ";\n#            not in this file: record with --sched-delay",
		sort_titles[key]);
	err = make_rows(t, s, o, first, last, &rows, &n, &idle);
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
		fprintf(f, "# %zu more rows with less %s left out (--limit 0 shows all)\n", n - shown,
			sort_titles[key]);
	idle__print(f, &idle, s);
	if (ncut) {
		fmt_time(buf, sizeof(buf), maxcut);
		fprintf(f, "# *: on-CPU sampled above what wall leaves after the measured times, in %zu\n"
			   "#    row(s), by %s at most: sampling error, shown as the room left\n",
			ncut, buf);
	}
	free(rows);
	free(idle.comms);
	return ferror(f) ? -EIO : 0;
}

static int threads_write(const struct output_run *r)
{
	int err = threads__print(r->f, r->t, r->s, r->o);

	if (err == -ENODATA)
		snprintf(r->err, r->errlen, "%s: no thread has samples of a time event (off-CPU, CPU, run-queue)%s",
			 r->o->input, report__filtered(r->o) ? " that pass the filters" : "");
	return err;
}

const struct report_output threads_output = {
	.name = "threads",
	.short_name = 'T',
	.help = "  -T, --threads           per thread: wall, on-CPU, off-CPU S and D,\n"
		"                          run-queue delay (record --sched-delay), most\n"
		"                          off-CPU time first\n"
		"      --sort KEY          --threads: rows by off (S + D, the default), S, D,\n"
		"                          on, runq or wall\n"
		"      --limit N           --threads: the first N rows (default 30, 0: all)\n"
		"      --idle              --threads: list the threads asleep the whole window\n"
		"                          in one wait (by default one line counts them)\n",
	.excludes = "pprof wakeups folded",
	.no_event = true,
	.conflict = offwake__conflict, /* one message for the views that go alone */
	.by = true,
	.thread_keys = true,
	.reads = OUTPUT_READS_THREADS,
	.write = threads_write,
};
