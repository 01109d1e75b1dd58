// SPDX-License-Identifier: GPL-2.0-only
/*
 * The feed (profile/feed.h) against profile__add() in one thread: the same
 * samples, many batches' worth (the ring full and waited on), with and
 * without session stack ids, with events the profile has not (whose
 * frames must still go over with the next sample of their id), and with
 * chain ids (rsample.chain) whose generation changes, must make the same
 * profile as profile__add() of the same samples without chain ids: the
 * same stacks, in the same order, with the same frames and sums.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <cmocka.h>

#include "profile/feed.h"
#include "profile/profile.h"

#define NR_EVENTS 3
#define NR_IDS 500
#define NR_SAMPLES 200000 /* past the ring of 16 batches of 4096 three times: the filler waits */

/* A stack id's frames, 0..40 of them, a function of the id alone. */
static uint32_t frames_of(uint32_t id, uint32_t *fr)
{
	uint32_t n = (id * 7) % 41;

	for (uint32_t i = 0; i < n; i++)
		fr[i] = (id * 131 + i * 17) % 997;
	return n;
}

/*
 * The i-th sample (xorshift from i): into rs, ps and fr; with chain ids
 * when chains says. A chain id's frames are a function of its generation
 * and id: a new generation gives its ids other frames.
 */
static void sample_at(uint64_t i, struct rsample *rs, struct perf_sample *ps, uint32_t *fr,
		      bool chains)
{
	uint32_t gen = 1 + (uint32_t)(i / 7000), cid;

	uint64_t x = i * 0x9e3779b97f4a7c15ULL + 1;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*ps = (struct perf_sample){ .pid = x % 13, .tid = x % 29, .period = x % 1000 };
	*rs = (struct rsample){ .s = ps, .event = (int)(x >> 8) % (NR_EVENTS + 2) - 1,
				.comm = (x >> 16) % 5, .state = "SDR"[(x >> 20) % 3], .count = 1 + (x >> 24) % 3,
				.cgroup = (x >> 28) % 2, .frames = fr };
	if (i == 0) /* id 7 seen first with an event the profile has not */
		rs->event = NR_EVENTS, rs->stack = 7;
	else if (i == 1)
		rs->event = 0, rs->stack = 7;
	else
		rs->stack = (x >> 32) % (NR_IDS + 1); /* 0: no id */
	cid = 1 + (uint32_t)((x >> 40) % 50);
	if (rs->stack) {
		rs->nr = (int)frames_of(rs->stack, fr);
	} else if ((x >> 48) % 2) {
		rs->nr = (int)frames_of(1000 + cid + 50 * (gen % 3), fr);
		rs->chain = chains ? (uint64_t)gen << 32 | cid : 0;
	} else {
		rs->nr = (int)frames_of(2000 + (x >> 40) % 50, fr);
	}
}

/* The profile of the samples, through the feed (threaded or not) or profile__add(). */
static struct profile *make(bool feed, const char *threads)
{
	struct profile *p = profile__new(NR_EVENTS, PROFILE_KEEP_PID | PROFILE_KEEP_TID | PROFILE_KEEP_CGROUP);
	struct feed *f = NULL;

	assert_non_null(p);
	if (feed) {
		setenv("OFFCPU_PROFILE_THREADS", threads, 1);
		f = feed__new(p);
		assert_non_null(f);
	}
	for (uint64_t i = 0; i < NR_SAMPLES; i++) {
		struct perf_sample ps;
		struct rsample rs;
		uint32_t fr[64];

		sample_at(i, &rs, &ps, fr, feed);
		assert_int_equal(feed ? feed__add(f, &rs) : profile__add(p, &rs), 0);
	}
	if (feed)
		assert_int_equal(feed__finish(f), 0);
	return p;
}

static void assert_same(const struct profile *a, const struct profile *b)
{
	assert_true(profile__nr_stacks(a) > NR_IDS); /* the samples make many stacks */
	assert_int_equal(profile__nr_stacks(a), profile__nr_stacks(b));
	for (size_t i = 0; i < profile__nr_stacks(a); i++) {
		const struct pstack *x = profile__stack(a, i), *y = profile__stack(b, i);

		assert_int_equal(x->event, y->event);
		assert_int_equal(x->state, y->state);
		assert_int_equal(x->comm, y->comm);
		assert_int_equal(x->pid, y->pid);
		assert_int_equal(x->tid, y->tid);
		assert_int_equal(x->cgroup, y->cgroup);
		assert_int_equal(x->samples, y->samples);
		assert_int_equal(x->period, y->period);
		assert_int_equal(x->count, y->count);
		assert_int_equal(x->nr, y->nr);
		if (x->nr)
			assert_memory_equal(profile__frames(a, x), profile__frames(b, y), x->nr * sizeof(uint32_t));
	}
	for (int e = 0; e < NR_EVENTS; e++) {
		assert_int_equal(profile__event(a, e)->samples, profile__event(b, e)->samples);
		assert_int_equal(profile__event(a, e)->period, profile__event(b, e)->period);
	}
}

static void test_feed_threaded(void **state)
{
	struct profile *ref = make(false, NULL), *p = make(true, "1");

	(void)state;
	assert_same(ref, p);
	profile__free(p);
	profile__free(ref);
}

static void test_feed_inline(void **state)
{
	struct profile *ref = make(false, NULL), *p = make(true, "0");

	(void)state;
	assert_same(ref, p);
	profile__free(p);
	profile__free(ref);
}

static void test_feed_empty(void **state)
{
	struct profile *p = profile__new(NR_EVENTS, 0);

	(void)state;
	setenv("OFFCPU_PROFILE_THREADS", "1", 1);
	assert_int_equal(feed__finish(feed__new(p)), 0);
	assert_int_equal(profile__nr_stacks(p), 0);
	assert_int_equal(feed__finish(NULL), 0);
	profile__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_feed_threaded),
		cmocka_unit_test(test_feed_inline),
		cmocka_unit_test(test_feed_empty),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
