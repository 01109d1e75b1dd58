// SPDX-License-Identifier: GPL-2.0-only
/*
 * napper: threads that wait, wake and wait again without pause, each wait
 * a nanosleep of its own random length (0.5-3 ms), so that waits end all
 * the time and no two waits of a thread last the same to the nanosecond.
 * For the tests of what a recording does while waits end: its stop
 * (test_record_stall.sh).
 *
 *   napper [THREADS [SECONDS]]   default 4 threads for 10 s
 *
 * Each thread sleeps in wl_nap (through the one-line wl_call_nanosleep, as
 * in waitmix: the frame a frame-pointer walk through libc skips).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double seconds = 10;

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
	unsigned int seed = (unsigned int)(uintptr_t)arg * 2654435761u ^ (unsigned int)getpid();
	double end = now() + seconds;

	while (now() < end) {
		struct timespec ts = { 0, 500000 + rand_r(&seed) % 2500000 };

		wl_call_nanosleep(&ts);
	}
	__asm__ volatile("" ::: "memory");
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	pthread_t th[64];

	if (argc > 2)
		seconds = atof(argv[2]);
	if (n < 1 || n > 64 || seconds <= 0) {
		fprintf(stderr, "usage: napper [THREADS (1-64) [SECONDS]]\n");
		return 2;
	}
	for (int i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, wl_nap, (void *)(uintptr_t)(i + 1))) {
			perror("napper: pthread_create");
			return 1;
		}
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	return 0;
}
