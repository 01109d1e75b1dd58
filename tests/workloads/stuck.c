// SPDX-License-Identifier: GPL-2.0-only
/*
 * stuck: threads that are already waiting when a recorder attaches, for the
 * tests of waits in progress (`offcpu record -p PID -d SECS`).
 *
 *   pipe-block  wl_pipe_block   read() of a pipe nobody writes (S, for ever)
 *   long-sleep  wl_long_sleep   nanosleep() of 30 s, again and again
 *   wake-once   wl_wake_once    read() of FIFO, which it holds open for
 *                               writing too (no EOF): blocked until the test
 *                               writes a byte, then blocked again
 *   mutex-wait  wl_mutex_wait   pthread_mutex_lock() of a mutex the main
 *                               thread holds for ever (a futex wait)
 *
 *   stuck TIDFILE FIFO    writes "ROLE TID" lines to TIDFILE once every
 *                         thread is about to block, then waits until killed
 *
 * Frame pointers: Debian's libc has none, and a frame-pointer walk from
 * inside it skips its immediate caller: each named function calls libc
 * through a one-line wl_call_* helper (the frame that is skipped), as in
 * waitmix. Built twice: stuck with frame pointers, stuck-nofp with -O2
 * -fomit-frame-pointer (the waits in progress unwound from .eh_frame);
 * the functions are WL_FRAME, so that each stays a frame of its own and
 * no call to one is a function's last instruction (a return address past
 * its caller's end would name the next function).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define WL_FRAME __attribute__((noipa))
#define NR_ROLES 4

static int pipe_fds[2];
static int fifo_fd;
static pthread_barrier_t ready;
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static pid_t tids[NR_ROLES];

static WL_FRAME ssize_t wl_call_read(int fd, void *buf, size_t n)
{
	return read(fd, buf, n);
}

static WL_FRAME int wl_call_nanosleep(const struct timespec *ts)
{
	return nanosleep(ts, NULL);
}

static WL_FRAME int wl_call_lock(pthread_mutex_t *m)
{
	return pthread_mutex_lock(m);
}

static WL_FRAME void wl_pipe_block(void)
{
	char c;

	for (;;)
		wl_call_read(pipe_fds[0], &c, 1);
}

static WL_FRAME void wl_long_sleep(void)
{
	struct timespec ts = { .tv_sec = 30 };

	for (;;)
		wl_call_nanosleep(&ts);
}

static WL_FRAME void wl_wake_once(void)
{
	char c;

	for (;;)
		if (wl_call_read(fifo_fd, &c, 1) < 0 && errno != EINTR)
			return;
}

static WL_FRAME void wl_mutex_wait(void)
{
	wl_call_lock(&held); /* held by the main thread until the end */
	pthread_mutex_unlock(&held);
}

static const char *const roles[NR_ROLES] = { "pipe-block", "long-sleep", "wake-once", "mutex-wait" };

static WL_FRAME void *thread_main(void *arg)
{
	long i = (long)arg;

	pthread_setname_np(pthread_self(), roles[i]);
	tids[i] = gettid();
	pthread_barrier_wait(&ready);
	if (i == 0)
		wl_pipe_block();
	else if (i == 1)
		wl_long_sleep();
	else if (i == 2)
		wl_wake_once();
	else
		wl_mutex_wait();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[NR_ROLES];
	FILE *f;

	if (argc != 3) {
		fprintf(stderr, "usage: stuck TIDFILE FIFO\n");
		return 2;
	}
	if (pipe(pipe_fds)) {
		perror("stuck: pipe");
		return 1;
	}
	fifo_fd = open(argv[2], O_RDWR);
	if (fifo_fd < 0) {
		perror("stuck: FIFO");
		return 1;
	}
	pthread_mutex_lock(&held);
	pthread_barrier_init(&ready, NULL, NR_ROLES + 1);
	for (long i = 0; i < NR_ROLES; i++)
		if (pthread_create(&th[i], NULL, thread_main, (void *)i)) {
			fprintf(stderr, "stuck: cannot create a thread\n");
			return 1;
		}
	pthread_barrier_wait(&ready);
	f = fopen(argv[1], "w");
	if (!f) {
		perror("stuck: TIDFILE");
		return 1;
	}
	for (int i = 0; i < NR_ROLES; i++)
		fprintf(f, "%s %d\n", roles[i], (int)tids[i]);
	fclose(f);
	pause();
	return 0;
}
