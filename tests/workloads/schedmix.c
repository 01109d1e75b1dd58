// SPDX-License-Identifier: GPL-2.0-only
/*
 * schedmix: threads with a known answer to "who woke me?" and "how long
 * did I wait for a CPU?". The reference workload of the wakeup and
 * sched-delay tests. One mode per run:
 *
 *   pipe   sm-reader blocks reading a pipe in sm_pipe_reader; sm-writer,
 *          in sm_pipe_writer, sleeps 250 ms and then writes to it: the
 *          reader's wait (~250 ms) was ended by the writer's write.
 *   chain  a mutex hand-off chain of three threads: sm-chain0 holds mutex
 *          A, sm-chain1 holds B and waits for A, sm-chain2 waits for B,
 *          each wait in sm_chain_wait. chain0 releases A in
 *          sm_chain_release (waking chain1), which then holds A and B for
 *          a while and releases B there (waking chain2).
 *   rq     two CPU-bound threads (sm-spin0, sm-spin1, in sm_spin) and a
 *          sleeper (sm-nap, in sm_nap) pinned to one CPU: the spinners
 *          wait for the CPU about as long as they run.
 *
 * Every thread measures itself from its first to its last instruction:
 * CLOCK_MONOTONIC start and end, and at its end its own schedstat
 * (/proc/self/task/TID/schedstat: on-CPU and run-queue wait since it was
 * created). In pipe mode the reader notes when it starts its read and the
 * writer when it starts its write: the reader's wait is the time between
 * (250 ms, plus whatever delayed the writer's wakeup on a busy machine).
 * With -j FILE a JSON summary is written there once all threads have ended.
 *
 * Frame pointers: Debian's libc has none, and a frame-pointer walk from
 * inside it skips its immediate caller. The named functions therefore call
 * libc through one-line sm_call_* helpers, the frames that get skipped.
 * The same source is also built as schedmix-nofp, with -O2
 * -fomit-frame-pointer (see the Makefile), to check unwinding from
 * .eh_frame: the named functions are SM_FRAME (each stays a frame of its
 * own at -O2) and no helper ends in a tail call (sm_done after it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "wl.h"

#define MS 1000000LL
#define MAX_THREADS 4

struct sm_thread {
	const char *role; /* also its comm */
	pid_t pid, tid;
	int64_t start_ns, end_ns;   /* CLOCK_MONOTONIC, first and last instruction */
	int64_t oncpu_ns, rq_ns;    /* schedstat at its end: whole life */
	int64_t slices;             /* schedstat: times it was switched in */
	int64_t blocked_ns;         /* pipe reader: its read, timed around the call */
	int64_t mark_ns;            /* pipe: when the reader began its read, the writer its write */
	void *(*fn)(struct sm_thread *);
};

static struct {
	const char *json;
	int cpu;
	int64_t pipe_delay_ns;
	int64_t hold_ns;
	int64_t spin_ns;
	int naps;
	int64_t nap_ns;
} opt = {
	.cpu = 0,
	.pipe_delay_ns = 250 * MS,
	.hold_ns = 150 * MS,
	.spin_ns = 300 * MS,
	.naps = 30,
	.nap_ns = 10 * MS,
};

static struct sm_thread th[MAX_THREADS];
static int nth;

/* ---- libc, one frame below the named functions -------------------------- */

/* A function that stays a frame of its own, whatever the optimization. */
#define SM_FRAME __attribute__((noipa))

/* After a call: keeps it from being a tail call (the caller's frame stays). */
static inline void sm_done(void)
{
	__asm__ volatile("" ::: "memory");
}

SM_FRAME void sm_call_nanosleep(int64_t ns)
{
	struct timespec ts = { ns / 1000000000LL, ns % 1000000000LL };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	sm_done();
}

SM_FRAME ssize_t sm_call_read(int fd, void *buf, size_t n)
{
	ssize_t r = read(fd, buf, n);

	sm_done();
	return r;
}

SM_FRAME ssize_t sm_call_write(int fd, const void *buf, size_t n)
{
	ssize_t r = write(fd, buf, n);

	sm_done();
	return r;
}

SM_FRAME int sm_call_lock(pthread_mutex_t *m)
{
	int r = pthread_mutex_lock(m);

	sm_done();
	return r;
}

SM_FRAME int sm_call_unlock(pthread_mutex_t *m)
{
	int r = pthread_mutex_unlock(m);

	sm_done();
	return r;
}

/* ---- pipe --------------------------------------------------------------- */

static int pipefd[2];
static sem_t reader_ready;

SM_FRAME void sm_pipe_reader(struct sm_thread *t)
{
	int64_t t0;
	char c;

	sem_post(&reader_ready);
	t0 = t->mark_ns = mono_ns();
	if (sm_call_read(pipefd[0], &c, 1) != 1)
		die("pipe read");
	t->blocked_ns = mono_ns() - t0;
}

SM_FRAME void sm_pipe_writer(struct sm_thread *t)
{
	sm_call_nanosleep(opt.pipe_delay_ns);
	t->mark_ns = mono_ns();
	if (sm_call_write(pipefd[1], "x", 1) != 1)
		die("pipe write");
	sm_done();
}

static void *pipe_reader_main(struct sm_thread *t)
{
	sm_pipe_reader(t);
	return NULL;
}

static void *pipe_writer_main(struct sm_thread *t)
{
	while (sem_wait(&reader_ready) && errno == EINTR)
		;
	sm_pipe_writer(t);
	return NULL;
}

/* ---- chain -------------------------------------------------------------- */

static pthread_mutex_t mutex_a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t mutex_b = PTHREAD_MUTEX_INITIALIZER;
static sem_t chain_ready;

SM_FRAME void sm_chain_wait(pthread_mutex_t *m)
{
	if (sm_call_lock(m))
		die("mutex lock");
	sm_done();
}

SM_FRAME void sm_chain_release(pthread_mutex_t *m)
{
	if (sm_call_unlock(m))
		die("mutex unlock");
	sm_done();
}

static void *chain0_main(struct sm_thread *t)
{
	(void)t;
	pthread_mutex_lock(&mutex_a);
	sem_post(&chain_ready);
	/* chain1 and chain2 queue up on A and B meanwhile */
	sm_call_nanosleep(opt.hold_ns);
	sm_chain_release(&mutex_a);
	return NULL;
}

static void *chain1_main(struct sm_thread *t)
{
	(void)t;
	pthread_mutex_lock(&mutex_b);
	sem_post(&chain_ready);
	sm_chain_wait(&mutex_a);
	sm_call_nanosleep(opt.hold_ns);
	pthread_mutex_unlock(&mutex_a);
	sm_chain_release(&mutex_b);
	return NULL;
}

static void *chain2_main(struct sm_thread *t)
{
	(void)t;
	sm_chain_wait(&mutex_b);
	pthread_mutex_unlock(&mutex_b);
	return NULL;
}

/* ---- rq ----------------------------------------------------------------- */

SM_FRAME void sm_spin(struct sm_thread *t)
{
	int64_t end = cpu_ns() + opt.spin_ns;
	volatile uint64_t x = 0;

	(void)t;
	while (cpu_ns() < end)
		for (int i = 0; i < 10000; i++)
			x += i;
}

SM_FRAME void sm_nap(struct sm_thread *t)
{
	(void)t;
	for (int i = 0; i < opt.naps; i++)
		sm_call_nanosleep(opt.nap_ns);
	sm_done();
}

static void *spin_main(struct sm_thread *t)
{
	sm_spin(t);
	return NULL;
}

static void *nap_main(struct sm_thread *t)
{
	sm_nap(t);
	return NULL;
}

/* ---- threads ------------------------------------------------------------ */

/* Whole life of the thread; schedstat is read as the very last thing. */
static void *thread_main(void *arg)
{
	struct sm_thread *t = arg;
	char path[64], buf[128];
	long long oncpu = 0, rq = 0, slices = 0;
	ssize_t n;
	int fd;

	t->start_ns = mono_ns();
	t->pid = getpid();
	t->tid = gettid();
	prctl(PR_SET_NAME, t->role);
	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", t->tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die(path);
	t->fn(t);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	t->end_ns = mono_ns();
	if (n <= 0)
		die(path);
	buf[n] = 0;
	if (sscanf(buf, "%lld %lld %lld", &oncpu, &rq, &slices) != 3)
		die("schedstat");
	t->oncpu_ns = oncpu;
	t->rq_ns = rq;
	t->slices = slices;
	close(fd);
	return NULL;
}

static void add(const char *role, void *(*fn)(struct sm_thread *))
{
	th[nth].role = role;
	th[nth].fn = fn;
	nth++;
}

/* Start the threads (pinned to opt.cpu when pin) and wait for them all. */
static void run(bool pin)
{
	pthread_t id[MAX_THREADS];
	pthread_attr_t attr;
	cpu_set_t set;

	pthread_attr_init(&attr);
	if (pin) {
		CPU_ZERO(&set);
		CPU_SET(opt.cpu, &set);
		if (pthread_attr_setaffinity_np(&attr, sizeof(set), &set))
			die("pthread_attr_setaffinity_np");
	}
	for (int i = 0; i < nth; i++) {
		errno = pthread_create(&id[i], &attr, thread_main, &th[i]);
		if (errno)
			die("pthread_create");
		/* chain: each thread holds its mutex before the next one starts */
		if (th[i].fn == chain0_main || th[i].fn == chain1_main)
			while (sem_wait(&chain_ready) && errno == EINTR)
				;
	}
	for (int i = 0; i < nth; i++)
		pthread_join(id[i], NULL);
	pthread_attr_destroy(&attr);
}

static void write_json(const char *path, const char *mode)
{
	FILE *f = fopen(path, "w");

	if (!f)
		die(path);
	fprintf(f, "{\n  \"mode\": \"%s\",\n  \"pid\": %d,\n  \"cpu\": %d,\n", mode, getpid(),
		opt.cpu);
	fprintf(f, "  \"pipe_delay_ns\": %lld,\n  \"hold_ns\": %lld,\n  \"spin_ns\": %lld,\n",
		(long long)opt.pipe_delay_ns, (long long)opt.hold_ns, (long long)opt.spin_ns);
	fprintf(f, "  \"threads\": [\n");
	for (int i = 0; i < nth; i++)
		fprintf(f,
			"    {\"role\": \"%s\", \"pid\": %d, \"tid\": %d, \"start_ns\": %lld, "
			"\"end_ns\": %lld, \"oncpu_ns\": %lld, \"rq_ns\": %lld, \"slices\": %lld, "
			"\"blocked_ns\": %lld, \"mark_ns\": %lld}%s\n",
			th[i].role, th[i].pid, th[i].tid, (long long)th[i].start_ns,
			(long long)th[i].end_ns, (long long)th[i].oncpu_ns, (long long)th[i].rq_ns,
			(long long)th[i].slices, (long long)th[i].blocked_ns, (long long)th[i].mark_ns,
			i + 1 < nth ? "," : "");
	fprintf(f, "  ]\n}\n");
	if (fclose(f))
		die(path);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: schedmix [-j FILE] [-c CPU] pipe|chain|rq\n"
		   "  -j, --json FILE   write what the threads measured there\n"
		   "  -c, --cpu CPU     the CPU of the rq mode (default 0)\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "json", required_argument, NULL, 'j' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *mode;
	int c;

	while ((c = getopt_long(argc, argv, "j:c:h", lo, NULL)) != -1) {
		switch (c) {
		case 'j': opt.json = optarg; break;
		case 'c': opt.cpu = atoi(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind + 1 != argc) {
		usage(stderr);
		return 2;
	}
	mode = argv[optind];
	if (sem_init(&reader_ready, 0, 0) || sem_init(&chain_ready, 0, 0))
		die("sem_init");
	if (!strcmp(mode, "pipe")) {
		if (pipe(pipefd))
			die("pipe");
		add("sm-reader", pipe_reader_main);
		add("sm-writer", pipe_writer_main);
		run(false);
	} else if (!strcmp(mode, "chain")) {
		add("sm-chain0", chain0_main);
		add("sm-chain1", chain1_main);
		add("sm-chain2", chain2_main);
		run(false);
	} else if (!strcmp(mode, "rq")) {
		add("sm-spin0", spin_main);
		add("sm-spin1", spin_main);
		add("sm-nap", nap_main);
		run(true);
	} else {
		usage(stderr);
		return 2;
	}
	if (opt.json)
		write_json(opt.json, mode);
	return 0;
}
