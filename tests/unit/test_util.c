// SPDX-License-Identifier: GPL-2.0-only
/*
 * The two-core helpers of util/ against their one-core originals:
 * - psort (util/psort.h) against qsort_r: arrays above and below the size
 *   it splits at, with many equal keys, must come out the same, element
 *   for element, equal keys in the same order (each element carries its
 *   original place, which the comparison does not look at);
 * - the gzip stream (util/gzip.h): what zlib's gzread (which reads every
 *   member) gets back is what was put, in order: nothing, one piece, many
 *   pieces of all sizes (more than the stream's thread keeps up with); a
 *   descriptor it cannot write to is an error; a stream dropped writes
 *   nothing.
 * And hex_put (util/hex.h) against printf's "%0*" PRIx64, and
 * pairsort_by_a (util/pairsort.h) against pairsort.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <cmocka.h>

#include "util/gzip.h"
#include "util/hex.h"
#include "util/htab.h"
#include "util/hugemem.h"
#include "util/pairsort.h"
#include "util/psort.h"

struct elem {
	uint32_t key;
	uint32_t place;
	char pad[40]; /* a report entry's size, not a word's */
};

static int cmp(const void *a, const void *b, void *ctx)
{
	const struct elem *x = a, *y = b;

	__atomic_fetch_add((int *)ctx, 1, __ATOMIC_RELAXED); /* the context reaches both threads */
	return x->key < y->key ? -1 : x->key > y->key;
}

static void check(size_t n, uint32_t keys)
{
	struct elem *a = calloc(n ? n : 1, sizeof(*a)), *b = calloc(n ? n : 1, sizeof(*b));
	uint64_t x = 88172645463325252ULL;
	int calls = 0, dummy = 0;

	assert_non_null(a);
	assert_non_null(b);
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		a[i].key = (uint32_t)(x % keys);
		a[i].place = (uint32_t)i;
	}
	memcpy(b, a, n * sizeof(*a));
	qsort_r(a, n, sizeof(*a), cmp, &dummy);
	psort(b, n, sizeof(*b), cmp, &calls);
	assert_memory_equal(a, b, n * sizeof(*a));
	if (n > 1)
		assert_true(calls > 0);
	free(a);
	free(b);
}

static void test_psort_small(void **state)
{
	(void)state;
	check(0, 10);
	check(1, 10);
	check(1000, 10);
}

static void test_psort_split(void **state)
{
	(void)state;
	check(100000, 7);      /* mostly ties */
	check(100001, 100000); /* mostly distinct, odd count */
	check(16384, 3);
}

/*
 * n bytes (text-like: compressible) put in pieces of at most piece bytes,
 * read back whole by gzread.
 */
static void gzip_round_trip(size_t n, size_t piece, bool reuse)
{
	char path[] = "/tmp/offcpu-test-gzip.XXXXXX";
	unsigned char *in = malloc(n ? n : 1), *back = malloc(n + 16);
	int fd = mkstemp(path), got;
	struct gzip_stream *z;
	gzFile gz;

	assert_true(fd >= 0);
	assert_non_null(in);
	assert_non_null(back);
	for (size_t i = 0; i < n; i++)
		in[i] = (unsigned char)("offcpu-time "[i % 12] + (i / 4096) % 3);
	z = gzip__stream_new(fd, 1);
	assert_non_null(z);
	for (size_t off = 0; off < n; off += piece) {
		size_t len = n - off < piece ? n - off : piece, cap = 0;
		/* a spare is still the stream's until compressed: reused early, gzread would see it */
		void *copy = reuse ? gzip__stream_spare(z, &cap) : NULL;

		if (cap < len)
			copy = realloc(copy, len);
		assert_non_null(copy);
		memcpy(copy, in + off, len);
		assert_int_equal(gzip__stream_put(z, copy, len), 0);
	}
	assert_int_equal(gzip__stream_finish(z, true), 0);
	assert_int_equal(close(fd), 0);
	gz = gzopen(path, "rb");
	assert_non_null(gz);
	got = gzread(gz, back, (unsigned int)(n + 16));
	assert_int_equal(got, (int)n);
	assert_memory_equal(in, back, n);
	assert_int_equal(gzclose(gz), Z_OK);
	unlink(path);
	free(in);
	free(back);
}

/* A piece put comes back as a spare once compressed, as big as it was. */
static void gzip_spare(void)
{
	struct gzip_stream *z = gzip__stream_new(-1, 1);
	void *spare = NULL;
	size_t cap = 0;

	assert_non_null(z);
	assert_int_equal(gzip__stream_put(z, calloc(1, 100000), 100000), 0);
	for (int i = 0; i < 5000 && !spare; i++) { /* the stream's thread compresses it */
		spare = gzip__stream_spare(z, &cap);
		if (!spare)
			usleep(1000);
	}
	assert_non_null(spare);
	assert_true(cap >= 100000);
	free(spare);
	assert_null(gzip__stream_spare(z, &cap)); /* given once */
	assert_int_equal(gzip__stream_finish(z, false), 0);
}

/* A stream finished without write: nothing goes out, whatever was put (freed, as ASan checks). */
static void gzip_dropped(void)
{
	char path[] = "/tmp/offcpu-test-gzip.XXXXXX";
	int fd = mkstemp(path);
	struct gzip_stream *z = gzip__stream_new(fd, 1);

	assert_true(fd >= 0);
	assert_non_null(z);
	for (int i = 0; i < 50; i++) {
		size_t len = 100000;
		char *piece = malloc(len);

		assert_non_null(piece);
		memset(piece, 'a' + i % 26, len);
		assert_int_equal(gzip__stream_put(z, piece, len), 0);
	}
	assert_int_equal(gzip__stream_finish(z, false), 0);
	assert_int_equal(lseek(fd, 0, SEEK_END), 0);
	close(fd);
	unlink(path);
}

/*
 * pairsort_by_a() against pairsort(): keys in no order, with many equal
 * (the b's, each pair's first place, must keep their order among them),
 * spread over low bits, high bits and all 64.
 */
static void test_pairsort_by_a(void **state)
{
	static const uint64_t masks[] = { 0xff, 0xfffff, 0xff00000000000000ULL, ~0ULL, 0x0f0f0f0f00ULL, 0 };
	uint64_t x = 0x853c49e6748fea9bULL;

	(void)state;
	for (size_t m = 0; m < sizeof(masks) / sizeof(masks[0]); m++) {
		for (size_t n = 0; n < 5000; n = n * 3 + 1) {
			struct u64pair *a = malloc((n + 1) * sizeof(*a)), *b = malloc((n + 1) * sizeof(*b));
			struct u64pair *t = malloc((n + 1) * sizeof(*t));

			assert_non_null(a);
			assert_non_null(b);
			assert_non_null(t);
			for (size_t i = 0; i < n; i++) {
				x ^= x << 13;
				x ^= x >> 7;
				x ^= x << 17;
				a[i] = b[i] = (struct u64pair){ x & masks[m], i };
			}
			pairsort(a, n, t);
			pairsort_by_a(b, n, t);
			if (n)
				assert_memory_equal(a, b, n * sizeof(*a));
			free(a);
			free(b);
			free(t);
		}
	}
}

/*
 * A hugemem block keeps its contents as it grows (moved, past 2 MiB
 * pages, from 1 byte to 40 MiB) and its new bytes are zero.
 */
static void test_hugemem(void **state)
{
	static const size_t sizes[] = { 1, 4096, 1 << 20, (2 << 20) + 1, 3 << 20, 10 << 20, 40 << 20 };
	struct hugemem m = { 0 };
	size_t filled = 0;

	(void)state;
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		assert_int_equal(hugemem__grow(&m, sizes[k]), 0);
		assert_true(m.len >= sizes[k]);
		for (size_t i = 0; i < filled; i += 4093)
			assert_int_equal(m.p[i], (uint8_t)(i * 7 + 1));
		for (size_t i = filled; i < m.len; i += 4093)
			assert_int_equal(m.p[i], 0);
		for (size_t i = filled; i < sizes[k]; i++)
			m.p[i] = (uint8_t)(i * 7 + 1);
		filled = sizes[k];
	}
	assert_int_equal(hugemem__grow(&m, 5), 0); /* has room: nothing moves */
	hugemem__free(&m);
	assert_null(m.p);
}

/*
 * An array from hugemem__reserve(): on the heap while small, moved once
 * to hugemem at huge_from bytes with its contents, grown there; freed
 * wherever it is.
 */
static void test_hugemem_reserve(void **state)
{
	struct hugemem m = { 0 };
	uint32_t *a = NULL;
	size_t cap = 0, n = 0;

	(void)state;
	for (size_t want = 1; want <= (1u << 20); want = want * 3 + 1) {
		assert_int_equal(hugemem__reserve(&m, (void **)&a, &cap, n, want, sizeof(*a), 64 << 10), 0);
		assert_true(cap >= want);
		if (want * sizeof(*a) < (64u << 10))
			assert_null(m.p); /* on the heap while small */
		for (size_t i = 0; i < n; i++)
			assert_int_equal(a[i], (uint32_t)(i * 2654435761u));
		for (; n < want; n++)
			a[n] = (uint32_t)(n * 2654435761u);
	}
	assert_non_null(m.p); /* 3 MB: moved */
	assert_true((void *)a == (void *)m.p);
	hugemem__free_array(&m, (void **)&a);
	assert_null(a);
	assert_null(m.p);
	cap = 0;
	assert_int_equal(hugemem__reserve(&m, (void **)&a, &cap, 0, 10, sizeof(*a), 64 << 10), 0);
	assert_null(m.p);
	hugemem__free_array(&m, (void **)&a); /* from the heap */
}

/* An htab past HTAB_HUGE (on hugemem): every entry found, in insertion order, after each growth. */
static bool u64_eq(const void *e, const void *k)
{
	return *(const uint64_t *)e == *(const uint64_t *)k;
}

static void test_htab_big(void **state)
{
	const size_t n = 400000; /* 3.2 MB of entries, an index of 8 MB */
	struct htab t;
	bool added;

	(void)state;
	htab__init(&t, sizeof(uint64_t));
	for (int round = 0; round < 2; round++) {
		for (uint64_t i = 0; i < n; i++) {
			uint64_t key = i * 0x9e3779b97f4a7c15ULL, *e;

			e = htab__get(&t, key ^ (key >> 29), u64_eq, &key, &added);
			assert_non_null(e);
			assert_true(added);
			*e = key;
		}
		for (uint64_t i = 0; i < n; i++) {
			uint64_t key = i * 0x9e3779b97f4a7c15ULL;
			const uint64_t *e = htab__find(&t, key ^ (key >> 29), u64_eq, &key);

			assert_non_null(e);
			assert_true(e == htab__at(&t, i));
		}
		htab__clear(&t); /* again into the memory kept */
	}
	htab__free(&t);
}

/*
 * hex_put() writes what printf's "%0*" PRIx64 writes, and hex_parse() and
 * hex_parse16() read it back; hex_parse16() refuses a non-digit anywhere.
 */
static void test_hex(void **state)
{
	uint64_t x = 0x2545f4914f6cdd1dULL, back;
	char a[24], b[24];

	(void)state;
	for (int k = 0; k < 20000; k++) {
		uint64_t v = k < 64 ? (k < 32 ? (uint64_t)k : 1ULL << (k - 32) << 31) : x >> (x & 63);
		int min = k % 18;
		size_t n = hex_put(a, v, min);

		a[n] = 0;
		snprintf(b, sizeof(b), "%0*" PRIx64, min > 16 ? 16 : min, v);
		assert_string_equal(a, b);
		assert_ptr_equal(hex_parse(a, NULL, &back), a + n);
		assert_true(back == v);
		n = hex_put(a, v, 16);
		assert_int_equal(n, 16);
		for (int c = 0; c < 16; c++) /* either case, as hex_parse() */
			if (k & (1 << c) && a[c] >= 'a')
				a[c] -= 'a' - 'A';
		back = ~v;
		assert_true(hex_parse16(a, &back));
		assert_true(back == v);
		memcpy(b, a, 16); /* every byte in each position: taken if a digit, refused if not */
		for (int c = 0; k < 64 && c < 256; c++) {
			uint64_t want;

			b[k % 16] = (char)c;
			assert_int_equal(hex_parse16(b, &back), hex_digit(c) >= 0);
			if (hex_digit(c) >= 0) {
				assert_ptr_equal(hex_parse(b, b + 16, &want), b + 16);
				assert_true(back == want);
			}
		}
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
}

static void test_gzip(void **state)
{
	struct gzip_stream *z;

	(void)state;
	gzip_round_trip(0, 1, false);        /* nothing put: one empty member */
	gzip_round_trip(1000, 1000, false);  /* one member */
	gzip_round_trip((3u << 20) + 7, 1u << 20, false);
	gzip_round_trip(200000, 997, false); /* 201 members, faster than they compress */
	gzip_round_trip((3u << 20) + 7, 1u << 20, true);
	gzip_round_trip(200000, 997, true);
	gzip_spare();
	z = gzip__stream_new(-1, 1);
	assert_non_null(z);
	assert_int_equal(gzip__stream_put(z, strdup("x"), 1), 0);
	assert_int_equal(gzip__stream_finish(z, true), -EBADF);
	gzip_dropped();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_psort_small),
		cmocka_unit_test(test_psort_split),
		cmocka_unit_test(test_pairsort_by_a),
		cmocka_unit_test(test_hex),
		cmocka_unit_test(test_hugemem),
		cmocka_unit_test(test_hugemem_reserve),
		cmocka_unit_test(test_htab_big),
		cmocka_unit_test(test_gzip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
