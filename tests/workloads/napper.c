// SPDX-License-Identifier: GPL-2.0-only
/*
 * napper: threads that wait, wake and wait again without pause, each wait
 * a nanosleep of its own random length (0.5-3 ms), so that waits end all
 * the time and no two waits of a thread last the same to the nanosecond.
 * For the tests of what a recording does while waits end: its stop
 * (test_record_stall.sh). With WORK_MS, each thread runs that long after
 * each wait; more threads than CPUs then take turns, and a thread is
 * preempted between two waits (test_record_waitmix.sh: a switch-in the
 * kernel hid, then a preemption).
 *
 *   napper [THREADS [SECONDS [WORK_MS]]]   default 4 threads for 10 s, no work
 *
 * With WORK_MS it prints, at its end, a line a thread: "TID NAPS RUNQ_NS",
 * the thread's naps (each one wait in wl_call_nanosleep) and its wait for
 * a CPU over its life (schedstat's run_delay, read with no allocation).
 *
 * Each thread sleeps in wl_nap (through the one-line wl_call_nanosleep, as
 * in waitmix: the frame a frame-pointer walk through libc skips).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double seconds = 10, work;

struct nap_thread {
	pthread_t th;
	pid_t tid;
	long naps;
	long long runq_ns;
};

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
	char path[64], buf[128];
	ssize_t n;
	int fd;

	while (now() < end) {
		struct timespec ts = { 0, 500000 + rand_r(&seed) % 2500000 };

		wl_call_nanosleep(&ts);
		t->naps++;
		for (double t0 = now(); now() - t0 < work;)
			;
	}
	__asm__ volatile("" ::: "memory");
	t->tid = gettid();
	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", t->tid);
	fd = open(path, O_RDONLY);
	n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	buf[n > 0 ? n : 0] = 0;
	if (sscanf(buf, "%*s %lld", &t->runq_ns) != 1)
		t->runq_ns = -1;
	if (fd >= 0)
		close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	static struct nap_thread th[64];

	if (argc > 2)
		seconds = atof(argv[2]);
	if (argc > 3)
		work = atof(argv[3]) / 1e3;
	if (n < 1 || n > 64 || seconds <= 0 || work < 0) {
		fprintf(stderr, "usage: napper [THREADS (1-64) [SECONDS [WORK_MS]]]\n");
		return 2;
	}
	for (int i = 0; i < n; i++)
		if (pthread_create(&th[i].th, NULL, wl_nap, &th[i])) {
			perror("napper: pthread_create");
			return 1;
		}
	for (int i = 0; i < n; i++)
		pthread_join(th[i].th, NULL);
	for (int i = 0; work && i < n; i++)
		printf("%d %ld %lld\n", th[i].tid, th[i].naps, th[i].runq_ns);
	return 0;
}
