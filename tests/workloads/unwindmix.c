// SPDX-License-Identifier: GPL-2.0-only
/*
 * unwindmix: stacks that only an unwinder from .eh_frame gets right, for
 * the --call-graph dwarf tests. One mode per run:
 *
 *   dlopen LIB [N] [MS]  sleeps 50 ms (um_before), then dlopens LIB
 *                        (tests/workloads/lib/unwlib.c) and calls its
 *                        ul_block from um_call_lib: N waits of MS ms
 *                        (default 10 of 30) in ul_block_inner, under
 *                        ul_block_outer
 *   signal [MS]          the main thread spins in um_spin_interrupted; a
 *                        thread sends it SIGUSR1, whose handler
 *                        (um_on_usr1) waits in pause() from
 *                        um_handler_block until SIGUSR2 comes MS ms later
 *                        (default 200): the wait's stack runs through the
 *                        signal frame into um_spin_interrupted
 *   plain [N] [MS]       N waits of MS ms (default 5 of 40) in
 *                        um_plain_inner under um_plain_outer
 *
 * Built twice (see the Makefile): unwindmix-nofp with -O2
 * -fomit-frame-pointer (dlopen, signal), and unwindmix-nocfi with frame
 * pointers but its .eh_frame removed (plain: the unwinder must fall back
 * to them). The named functions are UM_FRAME (each stays a frame of its
 * own) and none ends in a tail call (um_done after the call).
 *
 * Prints one line "pid TID" (the thread that waits) on stdout when done.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define UM_FRAME __attribute__((noipa))

static inline void um_done(void)
{
	__asm__ volatile("" ::: "memory");
}

static void die(const char *what)
{
	fprintf(stderr, "unwindmix: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void nap_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ---- dlopen ------------------------------------------------------------- */

UM_FRAME void um_before(void)
{
	nap_ms(50);
	um_done();
}

UM_FRAME int um_call_lib(int (*block)(int, int), int n, int ms)
{
	int r = block(n, ms);

	um_done();
	return r;
}

static int mode_dlopen(const char *lib, int n, int ms)
{
	int (*block)(int, int);
	void *h;

	um_before();
	h = dlopen(lib, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "unwindmix: dlopen %s: %s\n", lib, dlerror());
		return 1;
	}
	*(void **)&block = dlsym(h, "ul_block");
	if (!block) {
		fprintf(stderr, "unwindmix: no ul_block in %s\n", lib);
		return 1;
	}
	if (um_call_lib(block, n, ms) != n)
		return 1;
	return 0;
}

/* ---- signal ------------------------------------------------------------- */

static volatile sig_atomic_t stop_spin, in_handler;
static pthread_t main_thread;
static int signal_ms = 200;

UM_FRAME void um_handler_block(void)
{
	in_handler = 1;
	pause(); /* until SIGUSR2 */
	um_done();
}

UM_FRAME void um_on_usr1(int sig)
{
	(void)sig;
	um_handler_block();
	um_done();
}

static void on_usr2(int sig)
{
	(void)sig;
}

UM_FRAME uint64_t um_spin_interrupted(void)
{
	uint64_t x = 1;

	while (!stop_spin) {
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005ULL + 1;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

static void *signaller(void *arg)
{
	(void)arg;
	nap_ms(50);
	pthread_kill(main_thread, SIGUSR1);
	while (!in_handler)
		nap_ms(1);
	nap_ms(signal_ms);
	pthread_kill(main_thread, SIGUSR2);
	nap_ms(20);
	stop_spin = 1;
	return NULL;
}

static int mode_signal(void)
{
	struct sigaction sa = { .sa_handler = um_on_usr1 };
	pthread_t t;
	uint64_t x;

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL))
		die("sigaction");
	sa.sa_handler = on_usr2;
	if (sigaction(SIGUSR2, &sa, NULL))
		die("sigaction");
	main_thread = pthread_self();
	if (pthread_create(&t, NULL, signaller, NULL))
		die("pthread_create");
	x = um_spin_interrupted();
	pthread_join(t, NULL);
	return x == 42; /* never: keeps x alive */
}

/* ---- plain -------------------------------------------------------------- */

UM_FRAME void um_plain_inner(int ms)
{
	nap_ms(ms);
	um_done();
}

UM_FRAME void um_plain_outer(int n, int ms)
{
	for (int i = 0; i < n; i++)
		um_plain_inner(ms);
	um_done();
}

int main(int argc, char **argv)
{
	int rc = 2;

	if (argc >= 3 && !strcmp(argv[1], "dlopen"))
		rc = mode_dlopen(argv[2], argc > 3 ? atoi(argv[3]) : 10, argc > 4 ? atoi(argv[4]) : 30);
	else if (argc >= 2 && !strcmp(argv[1], "signal")) {
		if (argc > 2)
			signal_ms = atoi(argv[2]);
		rc = mode_signal();
	} else if (argc >= 2 && !strcmp(argv[1], "plain")) {
		um_plain_outer(argc > 2 ? atoi(argv[2]) : 5, argc > 3 ? atoi(argv[3]) : 40);
		rc = 0;
	} else {
		fprintf(stderr, "usage: unwindmix dlopen LIB [N] [MS] | signal [MS] | plain [N] [MS]\n");
		return 2;
	}
	printf("%d %d\n", getpid(), gettid());
	return rc;
}
