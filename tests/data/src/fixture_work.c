// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fixture workload for tests/data/*.data: burns CPU in three functions of
 * known relative weight (4:2:1 iterations) and sleeps a little between
 * rounds, in two threads. Built with frame pointers so perf's fp unwinder
 * sees the stacks. Argument: run time in seconds (default 0.3).
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void burn(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i;
}

__attribute__((noinline)) void work_heavy(void)
{
	for (unsigned long i = 0; i < 400000; i++)
		sink += i;
}
__attribute__((noinline)) void work_medium(void)
{
	for (unsigned long i = 0; i < 200000; i++)
		sink += i;
}
__attribute__((noinline)) void work_light(void) { burn(100000); }

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
	double end = now() + *(double *)arg;
	while (now() < end) {
		work_heavy();
		work_medium();
		work_light();
		usleep(300);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double sec = argc > 1 ? atof(argv[1]) : 0.3;
	pthread_t t;
	pthread_create(&t, NULL, worker, &sec);
	worker(&sec);
	pthread_join(t, NULL);
	return 0;
}
