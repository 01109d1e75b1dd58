// SPDX-License-Identifier: GPL-2.0-only
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "util/heap.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

#define HUGE_PAGE (UINT64_C(2) << 20)
/* glibc's HEAP_MAX_SIZE on 64-bit systems: an arena's heap is aligned to it. */
#define ARENA_SPAN (UINT64_C(64) << 20)
/*
 * Arenas and the break grow by this much past what is asked: a heap
 * grown a page at a time would take the 4 KiB pages of each 2 MiB block
 * its end crosses. Address space only; pages come when touched.
 */
#define TOP_PAD (16 << 20)

static bool huge; /* set before the threads that read it are made */

/* Anchors the main heap's low end: the program break starts past the program's data. */
static char below_break;

/* Whether the kernel lets a program ask for transparent huge pages. */
static bool thp_allowed(void)
{
	const char *env = getenv("OFFCPU_HUGE_PAGES");
	char buf[128] = "";
	FILE *f;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	return false; /* the sanitizers have their own allocator */
#endif
	if (env && !strcmp(env, "0"))
		return false;
	f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "re");
	if (!f)
		return false;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return strstr(buf, "[always]") || strstr(buf, "[madvise]");
}

void heap__thread_start(void)
{
	void *p;
	uintptr_t a;

	if (!huge)
		return;
	p = malloc(1); /* makes the thread's arena, or finds it */
	a = (uintptr_t)p;
	/* a block of the program break's heap: it cannot be covered (see heap.h) */
	if (p && !(a > (uintptr_t)&below_break && a < (uintptr_t)sbrk(0))) {
		void *base = (void *)(a & ~(ARENA_SPAN - 1));

		madvise(base, ARENA_SPAN, MADV_HUGEPAGE);
		/* the arena's first block was touched before the advice: made huge now */
		madvise(base, HUGE_PAGE, MADV_COLLAPSE);
	}
	free(p);
}

struct heap_call {
	int (*fn)(int argc, char **argv);
	int argc;
	char **argv;
	int ret;
};

static void *heap_call(void *arg)
{
	struct heap_call *c = arg;

	heap__thread_start();
	c->ret = c->fn(c->argc, c->argv);
	return NULL;
}

/* The first thread's stack limit for the command's thread (8 MiB to 1 GiB). */
static size_t stack_size(void)
{
	struct rlimit rl;
	size_t sz = 8 << 20;

	if (!getrlimit(RLIMIT_STACK, &rl) && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur > sz)
		sz = rl.rlim_cur < (UINT64_C(1) << 30) ? (size_t)rl.rlim_cur : (size_t)1 << 30;
	return sz;
}

int heap__run(int (*fn)(int argc, char **argv), int argc, char **argv)
{
	struct heap_call c = { fn, argc, argv, 0 };
	pthread_attr_t attr;
	pthread_t th;
	bool made;

	huge = thp_allowed();
	if (!huge || pthread_attr_init(&attr))
		goto in_place;
	mallopt(M_TOP_PAD, TOP_PAD); /* before the heaps it sizes are made */
	made = !pthread_attr_setstacksize(&attr, stack_size()) && !pthread_create(&th, &attr, heap_call, &c);
	pthread_attr_destroy(&attr);
	if (made) {
		pthread_join(th, NULL);
		return c.ret;
	}
in_place:
	huge = false;
	return fn(argc, argv);
}
