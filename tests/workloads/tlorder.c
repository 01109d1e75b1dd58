// SPDX-License-Identifier: GPL-2.0-only
/*
 * tlorder: a thread whose timeline has a known order, for test_timeline.sh.
 *
 *   tl-sleeper  pinned to CPU c: naps 5 x 2 ms in tl_naps, burns 40 ms of
 *               CPU in tl_run_before, then blocks reading a pipe in
 *               tl_wait_pipe; once woken and running, burns 40 ms more in
 *               tl_run_after.
 *   tl-spinner  SCHED_FIFO, pinned to CPU c: when the sleeper has blocked,
 *               sleeps 80 ms, then holds CPU c for 250 ms of wall time in
 *               tl_spin_hold.
 *   tl-writer   pinned to another CPU: when the spinner holds CPU c,
 *               sleeps 100 ms, then writes the pipe in tl_write_pipe.
 *
 * So the sleeper's timeline reads: on CPU (naps between), asleep in the
 * pipe read (~180 ms), woken by tl-writer, waiting for CPU c (~150 ms,
 * until the spinner lets go), on CPU. Each thread notes the times that
 * bound those parts (CLOCK_MONOTONIC, the recording's clock) and its CPU
 * time there (CLOCK_THREAD_CPUTIME_ID); -j FILE writes them as JSON.
 *
 * Built -O2 -fomit-frame-pointer too (tlorder-nofp): the named functions
 * are TL_FRAME, frames of their own at any optimization, and call libc
 * through one-line helpers that are no tail calls.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "wl.h"

#define MS 1000000LL
#define TL_FRAME __attribute__((noipa))

static struct {
	int cpu, other;
	const char *json;
} opt = { .cpu = 0, .other = -1 };

static struct {
	pid_t pid, sleeper, spinner, writer;
	int64_t start;                         /* the sleeper's first instruction */
	int64_t block, write, run, end;        /* sleeper: read called; writer: write called;
						  sleeper: read returned, last instruction */
	int64_t cpu_block, cpu_run, cpu_end;   /* the sleeper's CPU time at block, run, end */
	int64_t spin_start, spin_end;          /* the spinner's hold of CPU c */
	int64_t naps_ns;                       /* the sleeper's naps, timed around each */
	/*
	 * From main's call to create the sleeper to the end of its naps, and
	 * the sleeper's CPU time then: that stretch's time off the CPU, less
	 * the naps' 10 ms asleep, bounds its waits for a CPU there (after its
	 * start, its move to CPU c, each nap).
	 */
	int64_t created, settled, cpu_settled;
	/*
	 * Each burn's wall time less its CPU time: what kept the thread off
	 * its CPU while it ran there. The host's steal counts in the first
	 * (the timeline's "on CPU") and not in the second (CPU time leaves
	 * out steal under paravirt accounting).
	 */
	int64_t held_before, held_after;
} r;

static int pipefd[2];
static sem_t blocked, holding;

static inline void tl_done(void)
{
	__asm__ volatile("" ::: "memory");
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	errno = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (errno)
		die("pthread_setaffinity_np");
}

TL_FRAME void tl_call_nanosleep(int64_t ns)
{
	struct timespec ts = { ns / 1000000000LL, ns % 1000000000LL };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	tl_done();
}

TL_FRAME ssize_t tl_call_read(int fd, void *buf, size_t n)
{
	ssize_t ret = read(fd, buf, n);

	tl_done();
	return ret;
}

TL_FRAME ssize_t tl_call_write(int fd, const void *buf, size_t n)
{
	ssize_t ret = write(fd, buf, n);

	tl_done();
	return ret;
}

static void wait_sem(sem_t *s)
{
	while (sem_wait(s) && errno == EINTR)
		;
}

/*
 * Burn ns of this thread's CPU time. Returns the burn's wall time less
 * the CPU time it took: what kept the thread from its CPU meanwhile
 * (preemption, and the host's steal, which the CPU time leaves out).
 */
TL_FRAME int64_t tl_burn(int64_t ns)
{
	int64_t t0 = mono_ns(), c0 = cpu_ns(), c1;
	volatile uint64_t x = 0;

	while ((c1 = cpu_ns()) < c0 + ns)
		for (int i = 0; i < 20000; i++)
			x += i;
	tl_done();
	return mono_ns() - t0 - (c1 - c0);
}

/* ---- the sleeper ---- */

TL_FRAME void tl_naps(void)
{
	for (int i = 0; i < 5; i++) {
		int64_t t0 = mono_ns();

		tl_call_nanosleep(2 * MS);
		r.naps_ns += mono_ns() - t0;
	}
	tl_done();
}

TL_FRAME void tl_run_before(void)
{
	r.held_before = tl_burn(40 * MS);
	tl_done();
}

TL_FRAME void tl_wait_pipe(void)
{
	char c;

	sem_post(&blocked);
	r.cpu_block = cpu_ns();
	r.block = mono_ns();
	if (tl_call_read(pipefd[0], &c, 1) != 1)
		die("pipe read");
	r.run = mono_ns();
	r.cpu_run = cpu_ns();
}

TL_FRAME void tl_run_after(void)
{
	r.held_after = tl_burn(40 * MS);
	tl_done();
}

static void *sleeper(void *arg)
{
	(void)arg;
	r.start = mono_ns();
	r.sleeper = gettid();
	prctl(PR_SET_NAME, "tl-sleeper");
	pin(opt.cpu);
	tl_naps();
	r.settled = mono_ns();
	r.cpu_settled = cpu_ns();
	tl_run_before();
	tl_wait_pipe();
	tl_run_after();
	r.cpu_end = cpu_ns();
	r.end = mono_ns();
	return NULL;
}

/* ---- the spinner and the writer ---- */

TL_FRAME void tl_spin_hold(int64_t until)
{
	volatile uint64_t x = 0;

	while (mono_ns() < until)
		for (int i = 0; i < 20000; i++)
			x += i;
	tl_done();
}

static void *spinner(void *arg)
{
	struct sched_param sp = { .sched_priority = 1 };

	(void)arg;
	r.spinner = gettid();
	prctl(PR_SET_NAME, "tl-spinner");
	pin(opt.cpu);
	errno = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	if (errno)
		die("SCHED_FIFO (needs root or CAP_SYS_NICE)");
	wait_sem(&blocked);
	tl_call_nanosleep(80 * MS);
	r.spin_start = mono_ns();
	sem_post(&holding);
	tl_spin_hold(r.spin_start + 250 * MS);
	r.spin_end = mono_ns();
	return NULL;
}

TL_FRAME void tl_write_pipe(void)
{
	r.write = mono_ns();
	if (tl_call_write(pipefd[1], "x", 1) != 1)
		die("pipe write");
	tl_done();
}

static void *writer(void *arg)
{
	(void)arg;
	r.writer = gettid();
	prctl(PR_SET_NAME, "tl-writer");
	pin(opt.other);
	wait_sem(&holding);
	tl_call_nanosleep(100 * MS);
	tl_write_pipe();
	return NULL;
}

static void write_json(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		die(path);
	fprintf(f, "{\"pid\": %d, \"cpu\": %d, \"other_cpu\": %d,\n", r.pid, opt.cpu, opt.other);
	fprintf(f, " \"sleeper\": %d, \"spinner\": %d, \"writer\": %d,\n", r.sleeper, r.spinner, r.writer);
	fprintf(f, " \"start\": %lld, \"block\": %lld, \"write\": %lld, \"run\": %lld, \"end\": %lld,\n",
		(long long)r.start, (long long)r.block, (long long)r.write, (long long)r.run,
		(long long)r.end);
	fprintf(f, " \"cpu_block\": %lld, \"cpu_run\": %lld, \"cpu_end\": %lld,\n", (long long)r.cpu_block,
		(long long)r.cpu_run, (long long)r.cpu_end);
	fprintf(f, " \"held_before\": %lld, \"held_after\": %lld,\n", (long long)r.held_before,
		(long long)r.held_after);
	fprintf(f, " \"created\": %lld, \"settled\": %lld, \"cpu_settled\": %lld,\n",
		(long long)r.created, (long long)r.settled, (long long)r.cpu_settled);
	fprintf(f, " \"spin_start\": %lld, \"spin_end\": %lld, \"naps_ns\": %lld}\n",
		(long long)r.spin_start, (long long)r.spin_end, (long long)r.naps_ns);
	if (fclose(f))
		die(path);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "json", required_argument, NULL, 'j' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "other-cpu", required_argument, NULL, 'o' },
		{ 0 },
	};
	pthread_t t[3];
	int c;

	while ((c = getopt_long(argc, argv, "j:c:o:", lo, NULL)) != -1) {
		switch (c) {
		case 'j': opt.json = optarg; break;
		case 'c': opt.cpu = atoi(optarg); break;
		case 'o': opt.other = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: tlorder [-j FILE] [-c CPU] [-o OTHER_CPU]\n");
			return 2;
		}
	}
	if (opt.other < 0)
		opt.other = opt.cpu ? 0 : 1;
	r.pid = getpid();
	if (pipe(pipefd) || sem_init(&blocked, 0, 0) || sem_init(&holding, 0, 0))
		die("pipe, sem_init");
	r.created = mono_ns();
	if (pthread_create(&t[0], NULL, sleeper, NULL) || pthread_create(&t[1], NULL, spinner, NULL) ||
	    pthread_create(&t[2], NULL, writer, NULL))
		die("pthread_create");
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	if (opt.json)
		write_json(opt.json);
	return 0;
}
