// SPDX-License-Identifier: GPL-2.0-only
/*
 * The unwind tables (unwind/tables.h) in plain memory: a fork in a
 * system-wide recording whose parent has no mappings at all (kthreadd,
 * pid 2, forking a kernel worker) makes a child without mappings; the
 * copy of the parent's empty list once passed memcpy a NULL source
 * (UBSan in test_record_syswide). And a fork from a process with
 * mappings gives the child the same ones.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <unistd.h>
#include <cmocka.h>

#include "unwind/tables.h"

#define ROWS 4096

static struct offcpu_unw_row rows[ROWS];

static int put_rules(void *ctx, uint32_t first, uint32_t n, const struct offcpu_unw_rule *r)
{
	(void)ctx, (void)first, (void)n, (void)r;
	return 0;
}

static int put_proc(void *ctx, uint32_t tgid, const struct offcpu_unw_proc *p)
{
	(void)ctx, (void)tgid, (void)p;
	return 0;
}

static int del_proc(void *ctx, uint32_t tgid)
{
	(void)ctx, (void)tgid;
	return 0;
}

static void test_fork_of_process_without_mappings(void **state)
{
	struct unw_backend be = { .rows = rows, .row_cap = ROWS, .put_rules = put_rules,
				  .put_proc = put_proc, .del_proc = del_proc };
	struct unw_tables *t = NULL;
	int err;

	(void)state;
	assert_int_equal(unw_tables__new(&be, true, &t), 0);
	err = unw_tables__add_process(t, 2); /* kthreadd: /proc/2/maps is empty */
	if (err) {
		unw_tables__free(t);
		skip(); /* no kthreadd visible here (a pid namespace) */
	}
	assert_true(unw_tables__follows(t, 2));
	assert_int_equal(unw_tables__fork(t, 2, 999999), 0);
	assert_true(unw_tables__follows(t, 999999));
	/* a parent with mappings: this process */
	assert_int_equal(unw_tables__add_process(t, (uint32_t)getpid()), 0);
	assert_int_equal(unw_tables__fork(t, (uint32_t)getpid(), 999998), 0);
	assert_true(unw_tables__follows(t, 999998));
	unw_tables__free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fork_of_process_without_mappings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
