// SPDX-License-Identifier: GPL-2.0-only
/*
 * The flame graph tree and its SVG: merging of equal frames and per-class
 * totals, the off-wake path shape (sleeper, "--", waker) with its palettes, layout (order by name, children from the parent's left edge,
 * widths in proportion to ns, min-width pruning, icicle orientation, the
 * head and foot drawn after the frames),
 * escaping of any byte string into well-formed XML, and the size of the
 * file: linear in the frames drawn, with a bound on bytes per frame,
 * measured on 5 000 and 50 000 distinct stacks.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/flamegraph/flamegraph.h"

static char *render(const struct fg_tree *t, const struct fg_svg_opts *o, size_t *len, size_t *drawn)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	assert_non_null(f);
	assert_int_equal(fg_tree__write_svg(t, f, o, drawn), 0);
	fclose(f);
	return buf;
}

static int count(const char *s, const char *what)
{
	int n = 0;

	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

/* x and width of the rect of the frame whose title starts with "name\n". */
static void rect_of(const char *svg, const char *name, double *x, double *w, double *y)
{
	char key[128];
	const char *p;

	snprintf(key, sizeof(key), "<g><title>%s\n", name);
	p = strstr(svg, key);
	assert_non_null(p);
	p = strstr(p, "<rect ");
	assert_non_null(p);
	assert_int_equal(sscanf(p, "<rect x=\"%lf\" y=\"%lf\" width=\"%lf\"", x, y, w), 3);
}

/* xmllint, when installed, must accept the document. */
static void well_formed(const char *svg, size_t len)
{
	FILE *p;

	if (system("command -v xmllint >/dev/null 2>&1"))
		return;
	p = popen("xmllint --noout - 2>&1", "w");
	assert_non_null(p);
	fwrite(svg, 1, len, p);
	assert_int_equal(pclose(p), 0);
}

static void test_tree(void **state)
{
	struct fg_tree *t = fg_tree__new();
	struct fg_frame a = { .name = "a", .color = FG_COLOR_CPU };
	struct fg_frame b = { .name = "b", .detail = "libx.so", .color = FG_COLOR_CPU };
	struct fg_frame c = { .name = "c", .color = FG_COLOR_CPU }, d = { .name = "d", .color = FG_COLOR_CPU };
	struct fg_frame bk = { .name = "b", .detail = "libx.so", .color = FG_COLOR_OFF }, bref;
	struct fg_frame p1[] = { a, b, d }, p2[] = { a, b, c }, p3[] = { a, b }, p4[] = { a, bk };
	struct fg_svg_opts o = { .title = "t", .width = 1200 };
	double x, y, w, xc, wc, xd, wd, yr;
	size_t len, drawn;
	char *svg;

	assert_non_null(t);
	assert_int_equal(fg_tree__add(t, p1, 3, FG_ON_CPU, 50), 0);
	assert_int_equal(fg_tree__add(t, p2, 3, FG_ON_CPU, 100), 0);
	assert_int_equal(fg_tree__add(t, p3, 2, FG_OFF_CPU, 25), 0);
	/* b as interned references (fg_tree__intern) is the same frame as b by its strings */
	bref = (struct fg_frame){ .color = FG_COLOR_CPU };
	assert_int_equal(fg_tree__intern(t, "b", &bref.name_ref), 0);
	assert_int_equal(fg_tree__intern(t, "libx.so", &bref.detail_ref), 0);
	p2[1] = bref;
	assert_int_equal(fg_tree__add(t, p2, 3, FG_ON_CPU, 1), 0);
	/* the same name in another colour is another frame */
	assert_int_equal(fg_tree__add(t, p4, 2, FG_OFF_CPU, 24), 0);
	assert_int_equal(fg_tree__nr_nodes(t), 6); /* all a b c d b' */
	assert_int_equal(fg_tree__total(t, FG_ON_CPU), 151);
	assert_int_equal(fg_tree__total(t, FG_OFF_CPU), 49);

	svg = render(t, &o, &len, &drawn);
	well_formed(svg, len);
	assert_int_equal(drawn, 6);
	assert_int_equal(count(svg, "<g><title>"), 6);
	assert_non_null(strstr(svg, "<g><title>all\n200 ns, 100.00% (on-CPU 151 ns, off-CPU 49 ns)</title>"));
	assert_non_null(strstr(svg, "<g><title>b\n176 ns, 88.00% (on-CPU 151 ns, off-CPU 25 ns)\nlibx.so</title>"));
	assert_non_null(strstr(svg, "<g><title>c\non-CPU 101 ns, 50.50%</title>"));
	/* root spans the width; c (by name before d) starts at b's left edge */
	rect_of(svg, "all", &x, &w, &yr);
	assert_true(x == 10 && w == 1180);
	rect_of(svg, "b", &x, &w, &y);
	rect_of(svg, "c", &xc, &wc, &y);
	rect_of(svg, "d", &xd, &wd, &y);
	assert_true(fabs(xc - x) < 1e-6);
	assert_true(fabs(wc - 1180.0 * 101 / 200) < 0.01);
	assert_true(fabs(xd - (xc + wc)) < 0.01);
	assert_true(fabs(wd - 1180.0 * 50 / 200) < 0.01);
	assert_true(y < yr); /* flame: children above the root */
	/* the head and the foot after the frames: flamegraph.js pins them over
	 * the frames of a graph taller than the window */
	assert_true(strstr(svg, "<g id=\"frames\">") < strstr(svg, "<g id=\"head\">"));
	assert_true(strstr(svg, "<g id=\"head\">") < strstr(svg, "<text id=\"title\""));
	assert_true(strstr(svg, "<g id=\"foot\">") < strstr(svg, "<text id=\"details\""));
	assert_non_null(strstr(svg, "<g id=\"foot\">"));
	free(svg);

	/* min-width: d (295 px) goes, c (595.9 px) stays */
	o.min_width = 300;
	svg = render(t, &o, &len, &drawn);
	assert_null(strstr(svg, "<g><title>d\n"));
	assert_non_null(strstr(svg, "<g><title>c\n"));
	free(svg);

	/* icicle: the root at the top, children below */
	o.min_width = 0;
	o.inverted = true;
	svg = render(t, &o, &len, &drawn);
	rect_of(svg, "all", &x, &w, &yr);
	rect_of(svg, "c", &x, &w, &y);
	assert_true(yr < y);
	assert_non_null(strstr(svg, "data-inverted=\"1\""));
	free(svg);
	fg_tree__free(t);
}

/* The off-wake shape: sleeper frames, a "--" separator, then the waker's frames. */
static void test_off_wake(void **state)
{
	struct fg_tree *t = fg_tree__new();
	struct fg_frame p[] = { { .name = "app", .color = FG_COLOR_META },
				{ .name = "read", .detail = "libc.so.6", .color = FG_COLOR_OFF },
				{ .name = "schedule", .detail = "[kernel.kallsyms]", .color = FG_COLOR_OFF_KERNEL },
				{ .name = "--", .color = FG_COLOR_SEPARATOR },
				{ .name = "try_to_wake_up", .detail = "[kernel.kallsyms]", .color = FG_COLOR_WAKER_KERNEL },
				{ .name = "write", .detail = "libc.so.6", .color = FG_COLOR_WAKER } };
	struct fg_svg_opts o = { .width = 1200 };
	size_t len, drawn;
	char *svg;

	assert_int_equal(fg_tree__add(t, p, 6, FG_OFF_CPU, 2000000), 0);
	svg = render(t, &o, &len, &drawn);
	well_formed(svg, len);
	assert_int_equal(drawn, 7);
	assert_non_null(strstr(svg, "<g><title>--\noff-CPU 2.00 ms, 100.00%</title><rect"));
	assert_non_null(strstr(svg, "fill=\"#969696\"/><text")); /* the separator: plain grey */
	assert_non_null(strstr(svg, ">waker</text>"));          /* legend entries of what is drawn */
	assert_non_null(strstr(svg, ">waker, kernel</text>"));
	assert_non_null(strstr(svg, ">off-CPU</text>"));
	assert_null(strstr(svg, ">on-CPU</text>"));
	free(svg);
	fg_tree__free(t);
}

static void test_escaping(void **state)
{
	struct fg_tree *t = fg_tree__new();
	/* markup, a control character, a stray continuation byte, a cut sequence,
	 * and a valid two-byte character */
	struct fg_frame f[] = { { .name = "operator<<(a&b, \"c\")\x01\x80x\xc3", .detail = "d>e",
				  .color = FG_COLOR_OFF_KERNEL },
				{ .name = "caf\xc3\xa9", .color = FG_COLOR_OFF } };
	struct fg_svg_opts o = { .title = "<title & more>", .subtitle = "a\"b", .width = 1200 };
	size_t len, drawn;
	char *svg;

	assert_int_equal(fg_tree__add(t, f, 2, FG_OFF_CPU, 1000), 0);
	svg = render(t, &o, &len, &drawn);
	well_formed(svg, len);
	assert_non_null(strstr(svg, "<g><title>operator&lt;&lt;(a&amp;b, &quot;c&quot;)\xef\xbf\xbd\xef\xbf\xbdx\xef\xbf\xbd\n"));
	assert_non_null(strstr(svg, "\nd&gt;e</title>"));
	assert_non_null(strstr(svg, ">caf\xc3\xa9</text>"));
	assert_non_null(strstr(svg, "&lt;title &amp; more&gt;"));
	assert_null(strstr(svg, "\x01"));
	free(svg);
	fg_tree__free(t);
}

static void test_empty(void **state)
{
	struct fg_tree *t = fg_tree__new();
	struct fg_svg_opts o = { .width = 1200 };
	size_t len, drawn = 1;
	char *svg = render(t, &o, &len, &drawn);

	well_formed(svg, len);
	assert_int_equal(drawn, 0);
	assert_non_null(strstr(svg, "No samples"));
	free(svg);
	o.width = 5; /* too narrow to draw anything */
	assert_int_equal(fg_tree__write_svg(t, stdout, &o, NULL), -EINVAL);
	fg_tree__free(t);
}

/*
 * n distinct stacks main;mid_NNN;leaf_NNNNN (100 leaves per mid) of 1 to
 * 1000 us: 1 + n/100 + n + 1 frames, all drawn (min-width 0).
 */
static char *many(size_t n, size_t *len, size_t *drawn)
{
	struct fg_tree *t = fg_tree__new();
	struct fg_svg_opts o = { .title = "many", .width = 1200, .min_width = 0 };
	char mid[32], leaf[32];
	char *svg;

	for (size_t i = 0; i < n; i++) {
		struct fg_frame p[3] = { { .name = "main", .detail = "app", .color = FG_COLOR_CPU },
					 { .name = mid, .detail = "app", .color = FG_COLOR_CPU },
					 { .name = leaf, .detail = "libc.so.6", .color = FG_COLOR_CPU_KERNEL } };

		snprintf(mid, sizeof(mid), "mid_%03zu", i / 100);
		snprintf(leaf, sizeof(leaf), "leaf_%05zu", i);
		assert_int_equal(fg_tree__add(t, p, 3, i % 3 ? FG_ON_CPU : FG_OFF_CPU, 1000 * (1 + i % 1000)), 0);
	}
	assert_int_equal(fg_tree__nr_nodes(t), 2 + n / 100 + n);
	svg = render(t, &o, len, drawn);
	fg_tree__free(t);
	return svg;
}

#define BYTES_PER_FRAME 200 /* names of 4 to 10 characters, details of 3 to 9 */

static void test_size_linear(void **state)
{
	size_t len5, len50, d5, d50, fixed;
	char *s5 = many(5000, &len5, &d5), *s50 = many(50000, &len50, &d50), *frames;
	double per5, per50;

	well_formed(s50, len50);
	assert_int_equal(d5, 5052);
	assert_int_equal(d50, 50502);
	/* everything but the frames: CSS, script, title, legend (head), details (foot) */
	frames = strstr(s5, "<g id=\"frames\">");
	assert_non_null(frames);
	fixed = (size_t)(frames - s5) + strlen(strstr(s5, "</g>\n<g id=\"head\">"));
	per5 = (double)(len5 - fixed) / d5;
	per50 = (double)(len50 - fixed) / d50;
	print_message("svg: %zu frames %zu bytes (%.1f B/frame), %zu frames %zu bytes (%.1f B/frame), fixed %zu\n",
		      d5, len5, per5, d50, len50, per50, fixed);
	assert_true(per50 <= BYTES_PER_FRAME);
	/* linear: ten times the stacks, the same cost per frame (within 5 %) */
	assert_true(fabs(per50 - per5) <= 0.05 * per5);
	free(s5);
	free(s50);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tree),
		cmocka_unit_test(test_off_wake),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_size_linear),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
