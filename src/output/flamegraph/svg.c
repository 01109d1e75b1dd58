// SPDX-License-Identifier: GPL-2.0-only
/*
 * The flame graph tree as an SVG in the tradition of flamegraph.pl: one
 * <g><title/><rect/><text/></g> per frame, in pre-order (the script finds
 * subtrees from document order and depth), with the CSS and JavaScript of
 * flamegraph.css and flamegraph.js inlined, nothing fetched.
 *
 * Size is linear in the frames drawn: about 150 bytes plus the name twice
 * (tooltip and label) and the detail per frame. Coordinates carry as many
 * decimals as keep a frame's width exact to 0.1 %, so zooming into a
 * narrow frame stays true to scale.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fg_assets.h" /* fg_css[], fg_js[]: generated from flamegraph.css and .js */
#include "output/flamegraph/fg_internal.h"
#include "output/format.h"
#include "util/vec.h"

#define XPAD 10
#define FRAME_H 16
#define FONT_W (12 * 0.59) /* average width of a 12px Verdana character */
#define TOP 72             /* title, subtitle, legend */
#define BOTTOM 28          /* details line */
#define MAX_WIDTH 1000000

struct drawn {
	uint32_t node;
	uint64_t x; /* ns from the left edge */
};

struct render {
	const struct fg_tree *t;
	const struct fg_svg_opts *o;
	FILE *f;
	uint32_t *kids, *kid_off; /* children of node i: kids[kid_off[i] .. kid_off[i + 1]] */
	struct drawn *d;
	size_t nr_d;
	uint32_t max_depth;
	unsigned int colors;      /* bit per fg_color drawn */
	uint64_t total;
	double scale;             /* px per ns */
};

static uint64_t node_total(const struct fg_node *n)
{
	uint64_t v = 0;

	for (int c = 0; c < FG_NR_CLASSES; c++)
		v += n->value[c];
	return v;
}

static int kid_cmp(const void *a, const void *b, void *ctx)
{
	const struct fg_tree *t = ctx;
	const struct fg_node *x = fg_node(t, *(const uint32_t *)a), *y = fg_node(t, *(const uint32_t *)b);
	int c = strcmp(fg_str(t, x->name), fg_str(t, y->name));

	if (c)
		return c;
	if (x->color != y->color)
		return x->color < y->color ? -1 : 1;
	return strcmp(fg_str(t, x->detail), fg_str(t, y->detail));
}

/* Children lists (CSR), each ordered by name, then colour, then detail. */
static int index_children(struct render *r)
{
	const struct fg_tree *t = r->t;
	size_t n = fg_tree__nr_nodes(t);
	uint32_t *fill;

	r->kid_off = calloc(n + 1, sizeof(uint32_t));
	r->kids = malloc(n * sizeof(uint32_t));
	fill = malloc((n + 1) * sizeof(uint32_t));
	if (!r->kid_off || !r->kids || !fill) {
		free(fill);
		return -ENOMEM;
	}
	for (size_t i = 1; i < n; i++)
		r->kid_off[fg_node(t, i)->parent + 1]++;
	for (size_t i = 0; i < n; i++)
		r->kid_off[i + 1] += r->kid_off[i];
	memcpy(fill, r->kid_off, (n + 1) * sizeof(uint32_t));
	for (size_t i = 1; i < n; i++)
		r->kids[fill[fg_node(t, i)->parent]++] = i;
	for (size_t i = 0; i < n; i++)
		if (r->kid_off[i + 1] - r->kid_off[i] > 1)
			qsort_r(r->kids + r->kid_off[i], r->kid_off[i + 1] - r->kid_off[i],
				sizeof(uint32_t), kid_cmp, (void *)t);
	free(fill);
	return 0;
}

/*
 * The frames to draw, in pre-order, with their left edge in ns: a frame
 * narrower than min_width is left out with its subtree. Iterative, with
 * an explicit stack of (node, x) still to visit.
 */
static int layout(struct render *r)
{
	const struct fg_tree *t = r->t;
	struct drawn *stack = malloc(fg_tree__nr_nodes(t) * sizeof(*stack));
	size_t sp = 0, cap = 0;
	int err = 0;

	r->d = NULL;
	if (!stack)
		return -ENOMEM;
	stack[sp++] = (struct drawn){ 0, 0 };
	while (sp) {
		struct drawn cur = stack[--sp];
		const struct fg_node *n = fg_node(t, cur.node);
		uint64_t x, v = node_total(n);
		struct drawn *e;

		if (!v || (cur.node && v * r->scale < r->o->min_width))
			continue;
		e = vec__push((void **)&r->d, &r->nr_d, &cap, sizeof(*e));
		if (!e) {
			err = -ENOMEM;
			break;
		}
		*e = cur;
		if (n->depth > r->max_depth)
			r->max_depth = n->depth;
		r->colors |= 1u << n->color;
		/* children from the parent's left edge (its self time on the right),
		 * pushed reversed so that the leftmost is drawn first */
		x = cur.x;
		for (uint32_t k = r->kid_off[cur.node]; k < r->kid_off[cur.node + 1]; k++) {
			uint32_t c = r->kids[k];

			stack[sp++] = (struct drawn){ c, x };
			x += node_total(fg_node(t, c));
		}
		for (size_t a = sp - (r->kid_off[cur.node + 1] - r->kid_off[cur.node]), b = sp; a + 1 < b; a++, b--) {
			struct drawn tmp = stack[a];

			stack[a] = stack[b - 1];
			stack[b - 1] = tmp;
		}
	}
	free(stack);
	return err;
}

/* Text for XML content and attributes: markup escaped, control characters
 * and bytes that are not UTF-8 replaced by U+FFFD (XML 1.0 forbids them). */
static void put_xml(FILE *f, const char *s, size_t max_chars)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p && max_chars--) {
		unsigned char c = *p;
		size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 :
			     (c & 0xf8) == 0xf0 ? 4 : 0;
		size_t i;

		for (i = 1; i < len && (p[i] & 0xc0) == 0x80; i++)
			;
		if (!len || i < len || (len == 2 && c < 0xc2)) {
			fputs("\xef\xbf\xbd", f);
			p++;
			continue;
		}
		if (len > 1) {
			fwrite(p, 1, len, f);
		} else if (c == '&') {
			fputs("&amp;", f);
		} else if (c == '<') {
			fputs("&lt;", f);
		} else if (c == '>') {
			fputs("&gt;", f);
		} else if (c == '"') {
			fputs("&quot;", f);
		} else if (c < 0x20 && c != '\n' && c != '\t') {
			fputs("\xef\xbf\xbd", f);
		} else {
			fputc(c, f);
		}
		p += len;
	}
}

static size_t utf8_chars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* The label of a frame w px wide, as flamegraph.js computes it again on zoom. */
static void put_label(FILE *f, const char *name, double w)
{
	long fit = (long)((w - 6) / FONT_W);
	size_t n = utf8_chars(name);

	if (fit < 3)
		return;
	if (n <= (size_t)fit) {
		put_xml(f, name, SIZE_MAX);
	} else {
		put_xml(f, name, fit - 2);
		fputs("..", f);
	}
}

/* Per-name variation inside a palette, stable across graphs (FNV-1a). */
static void name_hash(const char *s, double v[3])
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	v[0] = (h & 0xff) / 255.0;
	v[1] = ((h >> 8) & 0xff) / 255.0;
	v[2] = ((h >> 16) & 0xff) / 255.0;
}

/* Base and spread (r, g, b) of each palette. */
static const struct { unsigned char base[3], span[3]; const char *legend; } palette[FG_NR_COLORS] = {
	[FG_COLOR_META]         = { { 200, 200, 205 }, { 30, 30, 30 }, NULL },
	[FG_COLOR_CPU]          = { { 205, 40, 20 }, { 50, 110, 40 }, "on-CPU" },
	[FG_COLOR_CPU_KERNEL]   = { { 230, 160, 30 }, { 25, 60, 40 }, "on-CPU, kernel" },
	[FG_COLOR_OFF]          = { { 40, 90, 190 }, { 60, 80, 65 }, "off-CPU" },
	[FG_COLOR_OFF_KERNEL]   = { { 30, 160, 170 }, { 40, 60, 50 }, "off-CPU, kernel" },
	[FG_COLOR_WAKER]        = { { 140, 80, 200 }, { 60, 50, 55 }, "waker" },
	[FG_COLOR_WAKER_KERNEL] = { { 180, 140, 220 }, { 40, 40, 35 }, "waker, kernel" },
	[FG_COLOR_SEPARATOR]    = { { 150, 150, 150 }, { 0, 0, 0 }, NULL },
};

static void color_of(int color, const char *name, char out[8])
{
	double v[3];
	int c[3];

	name_hash(name, v);
	for (int i = 0; i < 3; i++)
		c[i] = palette[color].base[i] + (int)(palette[color].span[i] * v[(i + 1) % 3]);
	snprintf(out, 8, "#%02x%02x%02x", c[0] & 0xff, c[1] & 0xff, c[2] & 0xff);
}

/* Decimals that keep w px exact to 0.1 %: one for wide frames, more for narrow ones. */
static int decimals(double w)
{
	int d = 1;

	while (d < 9 && w * 10 < 1000) {
		w *= 10;
		d++;
	}
	return d;
}

/* "1.23 s, 4.56% (on-CPU 1.00 s, off-CPU 230.00 ms)" or "off-CPU 1.23 s, 4.56%". */
static void put_values(FILE *f, const struct fg_node *n, uint64_t total)
{
	static const char *const cls[FG_NR_CLASSES] = { "on-CPU", "off-CPU" };
	uint64_t v = node_total(n);
	char buf[32];
	int nz = 0, last = 0;

	for (int c = 0; c < FG_NR_CLASSES; c++)
		if (n->value[c])
			nz++, last = c;
	report__fmt_ns(buf, sizeof(buf), v);
	if (nz == 1) {
		fprintf(f, "%s %s, %.2f%%", cls[last], buf, 100.0 * v / total);
		return;
	}
	fprintf(f, "%s, %.2f%% (", buf, 100.0 * v / total);
	for (int c = 0, first = 1; c < FG_NR_CLASSES; c++) {
		if (!n->value[c])
			continue;
		report__fmt_ns(buf, sizeof(buf), n->value[c]);
		fprintf(f, "%s%s %s", first ? "" : ", ", cls[c], buf);
		first = 0;
	}
	fputc(')', f);
}

static void put_frame(struct render *r, const struct drawn *d, double height)
{
	const struct fg_tree *t = r->t;
	const struct fg_node *n = fg_node(t, d->node);
	const char *name = fg_str(t, n->name), *detail = fg_str(t, n->detail);
	double x = XPAD + d->x * r->scale, w = (d->x + node_total(n)) * r->scale - d->x * r->scale;
	double y = r->o->inverted ? TOP + (double)n->depth * FRAME_H
				  : height - BOTTOM - (double)(n->depth + 1) * FRAME_H;
	int dec = decimals(w);
	char fill[8];
	FILE *f = r->f;

	color_of(n->color, name, fill);
	fputs("<g><title>", f);
	put_xml(f, name, SIZE_MAX);
	fputc('\n', f);
	put_values(f, n, r->total);
	if (*detail) {
		fputc('\n', f);
		put_xml(f, detail, SIZE_MAX);
	}
	fprintf(f, "</title><rect x=\"%.*f\" y=\"%.0f\" width=\"%.*f\" height=\"%d\" fill=\"%s\"/>",
		dec, x, y, dec, w, FRAME_H - 1, fill);
	if ((w - 6) / FONT_W >= 3) {
		fprintf(f, "<text x=\"%.2f\" y=\"%.0f\">", x + 3, y + 11);
		put_label(f, name, w);
		fputs("</text>", f);
	}
	fputs("</g>\n", f);
}

static void put_legend(struct render *r)
{
	double x = XPAD;
	char fill[8];

	for (int c = 0; c < FG_NR_COLORS; c++) {
		if (!palette[c].legend || !(r->colors & (1u << c)))
			continue;
		color_of(c, palette[c].legend, fill);
		fprintf(r->f, "<rect x=\"%.0f\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>"
			      "<text x=\"%.0f\" y=\"%d\">%s</text>\n",
			x, TOP - 22, fill, x + 16, TOP - 12, palette[c].legend);
		x += 16 + strlen(palette[c].legend) * FONT_W + 18;
	}
}

int fg_tree__write_svg(const struct fg_tree *t, FILE *f, const struct fg_svg_opts *o,
		       size_t *nr_drawn)
{
	struct render r = { .t = t, .o = o, .f = f };
	unsigned int width = o->width ? o->width : 1200;
	double height;
	int err;

	if (width < 2 * XPAD + 10 || width > MAX_WIDTH)
		return -EINVAL;
	r.total = node_total(fg_node(t, 0));
	r.scale = r.total ? (double)(width - 2 * XPAD) / r.total : 0;
	err = index_children(&r);
	if (!err)
		err = layout(&r);
	if (err)
		goto cleanup;
	height = TOP + (double)(r.nr_d ? r.max_depth + 1 : 1) * FRAME_H + BOTTOM;
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		   "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%u\" height=\"%.0f\" "
		   "viewBox=\"0 0 %u %.0f\" data-total=\"%" PRIu64 "\" data-xpad=\"%d\" data-fontw=\"%.2f\" "
		   "data-frameh=\"%d\" data-inverted=\"%d\">\n",
		width, height, width, height, r.total, XPAD, FONT_W, FRAME_H, o->inverted);
	fprintf(f, "<style type=\"text/css\"><![CDATA[\n%s]]></style>\n", fg_css);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#f8f8f4\"/>\n");
	fputs("<g id=\"frames\">\n", f);
	for (size_t i = 0; i < r.nr_d; i++)
		put_frame(&r, &r.d[i], height);
	fputs("</g>\n", f);
	if (!r.nr_d)
		fprintf(f, "<text x=\"50%%\" y=\"%d\" text-anchor=\"middle\">No samples</text>\n",
			TOP + FRAME_H - 4);
	/*
	 * The head (title, buttons, legend) and the foot (details line) come
	 * after the frames, each on a band of the background, so that they are
	 * drawn over the frames when flamegraph.js pins them to the window's
	 * top and bottom edges in a graph taller than the window.
	 */
	fprintf(f, "<g id=\"head\">\n<rect class=\"band\" x=\"0\" y=\"0\" width=\"%u\" height=\"%d\"/>\n"
		   "<text id=\"title\" x=\"50%%\" y=\"24\">", width, TOP);
	put_xml(f, o->title ? o->title : "Flame Graph", SIZE_MAX);
	fputs("</text>\n<text id=\"subtitle\" x=\"50%\" y=\"44\">", f);
	put_xml(f, o->subtitle ? o->subtitle : "", SIZE_MAX);
	fprintf(f, "</text>\n<text id=\"unzoom\" class=\"btn hide\" x=\"%d\" y=\"24\">Reset Zoom</text>\n"
		   "<text id=\"search\" class=\"btn\" x=\"%d\" y=\"24\">Search</text>\n",
		XPAD, width - XPAD);
	put_legend(&r);
	fprintf(f, "</g>\n<g id=\"foot\">\n<rect class=\"band\" x=\"0\" y=\"%.0f\" width=\"%u\" height=\"%d\"/>\n"
		   "<text id=\"details\" x=\"%d\" y=\"%.0f\"> </text>\n"
		   "<text id=\"matched\" x=\"%d\" y=\"%.0f\"> </text>\n</g>\n",
		height - BOTTOM, width, BOTTOM, XPAD, height - 10, width - XPAD, height - 10);
	fprintf(f, "<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n</svg>\n", fg_js);
	if (nr_drawn)
		*nr_drawn = r.nr_d;
	err = ferror(f) ? -EIO : 0;
cleanup:
	free(r.kids);
	free(r.kid_off);
	free(r.d);
	return err;
}
