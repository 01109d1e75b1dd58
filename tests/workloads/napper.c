// SPDX-License-Identifier: GPL-2.0-only
/*
 * napper: threads that wait, wake and wait again without pause, each wait
 * a nanosleep of its own random length (0.5-3 ms), so that waits end all
 * the time.
 * For the tests of what a recording does while waits end: its stop
 * (test_record_stall.sh). With WORK_MS, each thread runs that long after
 * each wait; more threads than CPUs then take turns, and a thread is
 * preempted between two waits (test_record_waitmix.sh: a switch-in the
 * kernel hid, then a preemption).
 *
 *   napper [THREADS [SECONDS [WORK_MS]]]   default 4 threads for 10 s, no work
 *
 * With WORK_MS it prints, at its end, a line a thread: "TID NAPS RUNQ_NS
 * AT", the thread's naps (each one wait in wl_call_nanosleep) and its wait
 * for a CPU until AT (schedstat's run_delay; AT in CLOCK_MONOTONIC
 * seconds, as perf script prints times). The threads park first (asleep
 * in wl_park, a read of a pipe); the main thread reads every thread's
 * schedstat once all sleep there, notes AT, and 20 ms later lets them go:
 * a wait before AT ends before it, and each wait after (the park's, or a
 * preemption on the way out) ends 20 ms after AT at least. Read by each
 * thread at its end, a wait for a CPU on the way out was outside the
 * figure and inside a recording (12 ms more in CI).
 *
 * Each thread sleeps in wl_nap (through the one-line wl_call_nanosleep, as
 * in waitmix: the frame a frame-pointer walk through libc skips).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double seconds = 10, work;

struct nap_thread {
	pthread_t th;
	pid_t tid;
	long naps;
	long long runq_ns;
	int parked; /* about to sleep in wl_park */
};

static int park_fd[2] = { -1, -1 };

/* Sleep until the main thread writes a byte (WORK_MS: see the top). */
static void __attribute__((noinline)) wl_park(void)
{
	char c;

	while (read(park_fd[0], &c, 1) < 0 && errno == EINTR)
		;
}

/* /proc/self/task/TID/NAME of a thread of ours into buf (size bytes), "" if unreadable. */
static void task_file(pid_t tid, const char *name, char *buf, size_t size)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/%s", tid, name);
	fd = open(path, O_RDONLY);
	n = fd >= 0 ? read(fd, buf, size - 1) : -1;
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = 0;
}

/* A thread's state letter from its stat, 0 if unreadable. */
static char task_state(pid_t tid)
{
	char buf[512], *p;

	task_file(tid, "stat", buf, sizeof(buf));
	p = strrchr(buf, ')'); /* after the comm, which may hold anything */
	return p && p[1] == ' ' ? p[2] : 0;
}

/* schedstat's run_delay of a thread of ours, -1 if unreadable. */
static long long run_delay(pid_t tid)
{
	char buf[128];
	long long ns;

	task_file(tid, "schedstat", buf, sizeof(buf));
	return sscanf(buf, "%*s %lld", &ns) == 1 ? ns : -1;
}

static int __attribute__((noinline)) wl_call_nanosleep(const struct timespec *ts)
{
	int r = nanosleep(ts, NULL);

	__asm__ volatile("" ::: "memory");
	return r;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *__attribute__((noinline)) wl_nap(void *arg)
{
	struct nap_thread *t = arg;
	unsigned int seed = (unsigned int)(uintptr_t)t * 2654435761u ^ (unsigned int)getpid();
	double end = now() + seconds;

	__atomic_store_n(&t->tid, gettid(), __ATOMIC_RELEASE);
	while (now() < end) {
		struct timespec ts = { 0, 500000 + rand_r(&seed) % 2500000 };

		wl_call_nanosleep(&ts);
		t->naps++;
		for (double t0 = now(); now() - t0 < work;)
			;
	}
	__asm__ volatile("" ::: "memory");
	if (work) {
		__atomic_store_n(&t->parked, 1, __ATOMIC_RELEASE);
		wl_park();
	}
	return NULL;
}

/*
 * WORK_MS: once every thread sleeps in wl_park, each one's run_delay (AT:
 * when they were read), then the threads' release 20 ms later.
 */
static double park_read(struct nap_thread *th, int n)
{
	struct timespec pause = { 0, 1000000 }, gap = { 0, 20000000 };
	double at;
	int i;

	for (i = 0; i < n; i++) {
		/* asleep after `parked`: in wl_park's read, nowhere else */
		while (!__atomic_load_n(&th[i].parked, __ATOMIC_ACQUIRE) || task_state(th[i].tid) != 'S')
			nanosleep(&pause, NULL);
	}
	for (i = 0; i < n; i++)
		th[i].runq_ns = run_delay(th[i].tid);
	at = now();
	nanosleep(&gap, NULL);
	for (i = 0; i < n; i++)
		if (write(park_fd[1], "x", 1) != 1)
			perror("napper: write");
	return at;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	static struct nap_thread th[64];
	double at = 0;

	if (argc > 2)
		seconds = atof(argv[2]);
	if (argc > 3)
		work = atof(argv[3]) / 1e3;
	if (n < 1 || n > 64 || seconds <= 0 || work < 0) {
		fprintf(stderr, "usage: napper [THREADS (1-64) [SECONDS [WORK_MS]]]\n");
		return 2;
	}
	if (work && pipe(park_fd)) {
		perror("napper: pipe");
		return 1;
	}
	for (int i = 0; i < n; i++)
		if (pthread_create(&th[i].th, NULL, wl_nap, &th[i])) {
			perror("napper: pthread_create");
			return 1;
		}
	if (work)
		at = park_read(th, n);
	for (int i = 0; i < n; i++)
		pthread_join(th[i].th, NULL);
	for (int i = 0; work && i < n; i++)
		printf("%d %ld %lld %.6f\n", th[i].tid, th[i].naps, th[i].runq_ns, at);
	return 0;
}
