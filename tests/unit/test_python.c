// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests of the Python frames' pure parts: CPython's line tables, the
 * layout read from 3.13's debug offsets (and refused when unknown), the
 * probe of Debian's python3, and the symbol file the names go to, read
 * back through offcpu's own symbolizer.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record/record.h"
#include "symbols/build_id.h"
#include "symbols/symbolizer.h"
#include "unwind/python.h"

/*
 * A function's line table as CPython 3.11.2 wrote it, and the line of each
 * of its code units as code.co_lines() gives it (-1: none), for
 *
 *	def f(a):                          # line 2
 *	    x = a + 1
 *	    if x:
 *	        y = [i for i in range(3)]
 *
 *	    try:
 *	        z = 1 / a
 *	    except ZeroDivisionError:
 *	        z = 0
 *	    return x + len(y) + z
 *
 * short, one-line, no-column and long forms, a line going back, and units
 * without a location.
 */
#include "fixture_lt311.h"

static void test_linetable(void **state)
{
	size_t n = sizeof(lines311) / sizeof(lines311[0]);

	(void)state;
	for (size_t u = 0; u < n; u++)
		assert_int_equal(py_linetable__line(lt311, sizeof(lt311), 2, u), lines311[u]);
	/* past the end, an empty table, a byte that starts no entry */
	assert_int_equal(py_linetable__line(lt311, sizeof(lt311), 2, n + 10), -1);
	assert_int_equal(py_linetable__line(lt311, 0, 2, 0), -1);
	assert_int_equal(py_linetable__line((const uint8_t *)"\x01", 1, 2, 0), -1);
	/* a long form cut short */
	assert_int_equal(py_linetable__line((const uint8_t *)"\xf0\x41", 2, 2, 0), -1);
}

/* 3.13.0's _Py_DebugOffsets (x86-64, with the GIL), as its _PyRuntime starts. */
static void debug_offsets(uint8_t *b, uint64_t version, uint64_t free_threaded)
{
	static const struct {
		size_t at;
		uint64_t v;
	} f[] = {
		{ 40, 632 }, { 64, 7264 }, { 72, 7344 }, { 168, 8 }, { 184, 72 }, { 200, 160 },
		{ 232, 8 }, { 240, 0 }, { 248, 56 }, { 264, 70 }, { 280, 112 }, { 288, 120 },
		{ 296, 128 }, { 304, 136 }, { 312, 68 }, { 344, 200 }, { 520, 16 }, { 528, 32 },
		{ 544, 32 }, { 552, 16 }, { 560, 40 },
	};

	memset(b, 0, 1024);
	memcpy(b, "xdebugpy", 8);
	memcpy(b + 8, &version, 8);
	memcpy(b + 16, &free_threaded, 8);
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		memcpy(b + f[i].at, &f[i].v, 8);
}

static void test_debug_offsets(void **state)
{
	uint8_t b[1024];
	struct py_layout l;
	struct offcpu_py_proc p;

	(void)state;
	debug_offsets(b, 0x030d00f0, 0);
	assert_int_equal(py_layout__debug_offsets(b, sizeof(b), &l), 0);
	assert_int_equal(l.version, 0x030d);
	assert_int_equal(l.rt_interp_head, 632);
	assert_int_equal(l.interp_threads, 7344);
	assert_int_equal(l.interp_next, 7264);
	assert_int_equal(l.ts_tid, 160);
	assert_int_equal(l.ts_frame, 72);
	assert_int_equal(l.cf_frame, OFFCPU_PY_NO_CFRAME);
	assert_int_equal(l.f_code, 0);
	assert_int_equal(l.f_previous, 8);
	assert_int_equal(l.f_instr, 56);
	assert_int_equal(l.f_owner, 70);
	assert_int_equal(l.entry, OFFCPU_PY_ENTRY_SHIM);
	assert_int_equal(l.co_qualname, 128);
	assert_int_equal(l.co_code, 200);
	assert_int_equal(l.str_ascii, 40);
	assert_int_equal(l.str_compact, 56);
	py_layout__bpf(&l, 0x1000, &p);
	assert_int_equal(p.interp_head, 0x1000);
	assert_int_equal(p.ts_read, 168);
	assert_int_equal(p.f_read, 78);
	/* refused: no cookie, too short, 3.14 (another layout of them), free-threaded */
	assert_int_equal(py_layout__debug_offsets(b, 100, &l), -ENOENT);
	debug_offsets(b, 0x030e00f0, 0);
	assert_int_equal(py_layout__debug_offsets(b, sizeof(b), &l), -ENOENT);
	debug_offsets(b, 0x030d00f0, 1);
	assert_int_equal(py_layout__debug_offsets(b, sizeof(b), &l), -ENOENT);
	debug_offsets(b, 0x030d00f0, 0);
	b[0] = 'y';
	assert_int_equal(py_layout__debug_offsets(b, sizeof(b), &l), -ENOENT);
	/* the table's versions */
	assert_int_equal(py_layout__table(0x030b, &l), 0);
	assert_int_equal(l.entry, OFFCPU_PY_ENTRY_FLAG);
	assert_int_equal(py_layout__table(0x030c, &l), 0);
	assert_int_equal(py_layout__table(0x030a, &l), -ENOENT);
}

/* Debian 12's python3 (3.11, stripped, not PIE), when it is there. */
static void test_probe(void **state)
{
	struct py_build b;

	(void)state;
	assert_int_equal(py_build__probe("/bin/sh", &b), -ENOENT);
	if (access("/usr/bin/python3.11", R_OK)) {
		print_message("no /usr/bin/python3.11: not probed\n");
		return;
	}
	assert_int_equal(py_build__probe("/usr/bin/python3.11", &b), 0);
	assert_int_equal(b.version, 0x030b);
	assert_true(b.known);
	assert_true(b.runtime != 0);
	assert_true(b.eval_lo && b.eval_hi > b.eval_lo);
}

/* The symbol file, read back by offcpu's symbolizer as a reader would. */
static void test_symfile(void **state)
{
	const char *names[] = { "worker (app.py:12)", "Thread.run (threading.py:975)",
				"<module> (pkg/__init__.py:1)" };
	char path[] = "/tmp/offcpu-unit-pysym.XXXXXX";
	uint8_t id[SYMFILE_BUILD_ID], got[64];
	struct symbolizer_opts opts = { .buildid_dir = "" };
	struct symbolizer *s;
	struct sym_dso *d;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(symfile__write(path, names, 3, (uid_t)-1, (gid_t)-1, id), 0);
	assert_int_equal(sym_read_build_id(path, got, sizeof(got)), SYMFILE_BUILD_ID);
	assert_memory_equal(got, id, SYMFILE_BUILD_ID);
	s = symbolizer__new(&opts);
	assert_non_null(s);
	d = symbolizer__dso(s, path, id, SYMFILE_BUILD_ID);
	assert_non_null(d);
	assert_null(sym_dso__warning(d));
	for (int i = 0; i < 3; i++) {
		struct sym_frame f = { 0 };
		uint64_t base = 0x800000000000ULL, ip = base + SYMFILE_TEXT + i * SYMFILE_SYM + 8;

		assert_int_equal(symbolizer__resolve(s, d, base, 0, ip, &f, 1), 1);
		assert_string_equal(f.sym, names[i]);
		/* a return address's -1 too */
		assert_int_equal(symbolizer__resolve(s, d, base, 0, ip - 1, &f, 1), 1);
		assert_string_equal(f.sym, names[i]);
	}
	symbolizer__free(s);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_linetable),
		cmocka_unit_test(test_debug_offsets),
		cmocka_unit_test(test_probe),
		cmocka_unit_test(test_symfile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
