// SPDX-License-Identifier: GPL-2.0-only
/*
 * `offcpu script`: every sample as text in perf script's default layout,
 * streamed as the file is read (nothing is kept per sample):
 *
 *   comm  tid [cpu]   sec.usec:     period event:
 *   \t      address symbol+0xoff (dso)
 *   (blank line)
 *
 * The spacing follows Debian's perf 6.1 so that FlameGraph's
 * stackcollapse-perf.pl and the speedscope / Firefox Profiler importers
 * read it as they read perf's.
 *
 * A recording's text is several times its size, most of it stack lines:
 * each named location's line is made once (the first time a sample has
 * it) and copied after that, and the text goes out through a buffer of its
 * own in large writes. A location without a symbol is made each time, not
 * kept: a system-wide recording has hundreds of thousands of them (stacks
 * walked by frame pointers through code built without them), and a hex
 * number is as cheap to format as to copy. Numbers are formatted here, as
 * printf would format them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "perfdata/offcpu_payload.h"
#include "perfdata/perf_format.h"
#include "output/report.h"
#include "util/vec.h"

#define OUT_SIZE (256u << 10)

struct line {
	uint32_t off, len; /* in the pool; len 0: not made yet */
};

struct script_ctx {
	FILE *f;
	const struct report_opts *o;
	const struct session *s;
	int name_width;
	char *out;           /* OUT_SIZE bytes, n of them written */
	size_t n;
	struct line *lines;  /* by location id: the first nr_lines zeroed or made */
	size_t nr_lines, cap_lines;
	char *pool;          /* the lines' text */
	size_t pool_n, pool_cap;
};

static int out_flush(struct script_ctx *c)
{
	if (c->n && fwrite(c->out, 1, c->n, c->f) != c->n)
		return -EIO;
	c->n = 0;
	return ferror(c->f) ? -EIO : 0;
}

/* Room for need more bytes in the buffer (need <= OUT_SIZE). */
static inline int out_room(struct script_ctx *c, size_t need)
{
	return c->n + need > OUT_SIZE ? out_flush(c) : 0;
}

/* len bytes, of any length. */
static int out_put(struct script_ctx *c, const char *p, size_t len)
{
	int err;

	if (len > OUT_SIZE) {
		err = out_flush(c);
		if (!err && fwrite(p, 1, len, c->f) != len)
			err = -EIO;
		return err;
	}
	err = out_room(c, len);
	if (!err) {
		memcpy(c->out + c->n, p, len);
		c->n += len;
	}
	return err;
}

/* Digits of v in base 10 or 16 at the end of buf[24]: their start. */
static char *digits(char *end, uint64_t v, unsigned int base)
{
	do {
		*--end = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	return end;
}

/* printf's %*<conv> of an unsigned value: right-aligned in width, padded with pad. */
static size_t fmt_u64(char *dst, uint64_t v, unsigned int base, int width, char pad)
{
	char tmp[24], *d = digits(tmp + sizeof(tmp), v, base);
	size_t len = tmp + sizeof(tmp) - d, at = 0;

	for (; (int)(len + at) < width; at++)
		dst[at] = pad;
	memcpy(dst + at, d, len);
	return at + len;
}

/* %5d */
static size_t fmt_i32(char *dst, int32_t v, int width)
{
	char tmp[24], *d = digits(tmp + sizeof(tmp), v < 0 ? -(int64_t)v : v, 10);
	size_t len, at = 0;

	if (v < 0)
		*--d = '-';
	len = tmp + sizeof(tmp) - d;
	for (; (int)(len + at) < width; at++)
		dst[at] = ' ';
	memcpy(dst + at, d, len);
	return at + len;
}

/* %*s: s right-aligned in width; dst has room for width + strlen(s). */
static size_t fmt_str(char *dst, const char *s, size_t len, int width)
{
	size_t at = 0;

	for (; (int)(len + at) < width; at++)
		dst[at] = ' ';
	memcpy(dst + at, s, len);
	return at + len;
}

/* "\t%16lx [unknown] (dso)\n": the line of a location without a symbol, into the buffer. */
static int unnamed_line(struct script_ctx *c, const struct frame *fr, uint32_t loc)
{
	size_t dso = strlen(fr->dso);
	uint64_t addr, off;
	char *p;
	int err;

	if (dso + 64 > OUT_SIZE)
		return -E2BIG;
	err = out_room(c, dso + 64);
	if (err)
		return err;
	session__loc(c->s, loc, &addr, &off);
	p = c->out + c->n;
	*p++ = '\t';
	p += fmt_u64(p, addr, 16, 16, ' ');
	memcpy(p, " [unknown] (", 12);
	p += 12;
	memcpy(p, fr->dso, dso);
	p += dso;
	*p++ = ')';
	*p++ = '\n';
	c->n = p - c->out;
	return 0;
}

/* The text of a location's stack line, made the first time: NULL on ENOMEM. */
static const struct line *loc_line(struct script_ctx *c, uint32_t loc, uint32_t frame)
{
	const struct frame *fr;
	struct line *l;
	uint64_t addr, off;
	size_t sym, dso, max;
	int len;

	if (loc >= c->nr_lines) {
		/* zeroed only as far as used: the room vec__reserve adds past
		 * it stays untouched, not resident */
		if (vec__reserve((void **)&c->lines, &c->cap_lines, (size_t)loc + 1, sizeof(*c->lines), 4096))
			return NULL;
		memset(c->lines + c->nr_lines, 0, ((size_t)loc + 1 - c->nr_lines) * sizeof(*c->lines));
		c->nr_lines = (size_t)loc + 1;
	}
	l = &c->lines[loc];
	if (l->len)
		return l;
	fr = session__frame(c->s, frame);
	session__loc(c->s, loc, &addr, &off);
	sym = fr->sym ? strlen(fr->sym) : 0;
	dso = strlen(fr->dso);
	max = sym + dso + 128;
	if (c->pool_n + max > UINT32_MAX ||
	    vec__reserve((void **)&c->pool, &c->pool_cap, c->pool_n + max, 1, 1 << 16))
		return NULL;
	if (fr->sym)
		len = snprintf(c->pool + c->pool_n, max, "\t%16" PRIx64 " %s+0x%" PRIx64 " (%s)%s\n", addr,
			       fr->sym, off, fr->dso, fr->inlined ? " (inlined)" : "");
	else
		len = snprintf(c->pool + c->pool_n, max, "\t%16" PRIx64 " [unknown] (%s)\n", addr, fr->dso);
	l->off = c->pool_n;
	l->len = len;
	c->pool_n += len;
	return l;
}

/* "comm  tid [cpu]   sec.usec:     period event: " as perf script lays it out. */
static int sample_head(struct script_ctx *c, const struct rsample *rs, bool chain)
{
	const struct perf_sample *ps = rs->s;
	const struct perf_evattr *a = ps->evattr;
	uint64_t st = a->attr.sample_type;
	const char *comm = session__comm(c->s, rs->comm);
	size_t clen = strlen(comm), nlen = strlen(a->name), need = clen + nlen + c->name_width + 128;
	char *p;
	int err;

	if (need > OUT_SIZE)
		return -E2BIG; /* a name longer than anything perf.data holds */
	err = out_room(c, need);
	if (err)
		return err;
	p = c->out + c->n;
	p += fmt_str(p, comm, clen, chain ? 0 : 16);
	*p++ = ' ';
	p += fmt_i32(p, (int32_t)ps->tid, 5); /* perf prints -1 as such */
	*p++ = ' ';
	if (st & PERF_SAMPLE_CPU) {
		*p++ = '[';
		p += fmt_u64(p, ps->cpu, 10, 3, '0');
		*p++ = ']';
		*p++ = ' ';
	}
	if (st & PERF_SAMPLE_TIME) {
		p += fmt_u64(p, ps->time / UINT64_C(1000000000), 10, 5, ' ');
		*p++ = '.';
		p += fmt_u64(p, ps->time % UINT64_C(1000000000) / 1000, 10, 6, '0');
		*p++ = ':';
		*p++ = ' ';
	}
	if (st & PERF_SAMPLE_PERIOD) {
		p += fmt_u64(p, ps->period, 10, 10, ' ');
		*p++ = ' ';
	}
	p += fmt_str(p, a->name, nlen, c->name_width);
	*p++ = ':';
	*p++ = ' ';
	c->n = p - c->out;
	return 0;
}

/* What perf script prints where it dumps the raw payload: a wait cut to the recording, the waker. */
static int sample_tail(struct script_ctx *c, const struct rsample *rs)
{
	char buf[128];
	int len = 0;

	if (rs->flags & (OFFCPU_RAW_IN_PROGRESS_START | OFFCPU_RAW_IN_PROGRESS_STOP))
		len = snprintf(buf, sizeof(buf), "%*s[in progress at %s]\n\n", 6, "",
			       !(rs->flags & OFFCPU_RAW_IN_PROGRESS_STOP)    ? "start"
			       : !(rs->flags & OFFCPU_RAW_IN_PROGRESS_START) ? "stop"
									     : "start and stop");
	if (len > 0 && out_put(c, buf, len))
		return -EIO;
	if (!rs->s->evattr->is_wakeup || !rs->waker_comm)
		return 0;
	if (rs->flags & OFFCPU_RAW_WAKER_IRQ)
		len = snprintf(buf, sizeof(buf), "%*swaker: [irq]\n\n", 6, "");
	else
		len = snprintf(buf, sizeof(buf), "%*swaker: %s %u/%u\n\n", 6, "",
			       session__comm(c->s, rs->waker_comm), rs->waker_pid, rs->waker_tid);
	return out_put(c, buf, len);
}

/* A sample without a callchain: its one frame on the sample's line. */
static int one_frame(struct script_ctx *c, const struct rsample *rs)
{
	const struct frame *fr = session__frame(c->s, rs->frames[0]);
	uint64_t addr, off;
	char *buf;
	int len, err;

	session__loc(c->s, rs->locs[0], &addr, &off);
	if (fr->sym)
		len = asprintf(&buf, "%16" PRIx64 " %s+0x%" PRIx64 " (%s)\n", addr, fr->sym, off, fr->dso);
	else
		len = asprintf(&buf, "%16" PRIx64 " [unknown] (%s)\n", addr, fr->dso);
	if (len < 0)
		return -ENOMEM;
	err = out_put(c, buf, len);
	free(buf);
	return err;
}

/*
 * An offcpu-switch sample (record --chains) on its line, where perf script
 * dumps the raw payload: "out OUT wake WAKE STATE waker TID stack ID/ID seq
 * N flags". 0 if it is not one, 1 once written, or a negative errno.
 */
static int print_switch(struct script_ctx *c, const struct perf_sample *ps)
{
	struct offcpu_switch sw;
	char buf[256];
	int len, err;

	if (strcmp(ps->evattr->name, OFFCPU_SWITCH_EVENT_NAME) ||
	    !offcpu_payload__decode_switch(ps->raw, ps->raw_size, &sw))
		return 0;
	len = snprintf(buf, sizeof(buf),
		       "%c out %" PRIu64 ".%09" PRIu64 " wake %" PRIu64 ".%09" PRIu64
		       " waker %u stacks %u/%u seq %u%s%s%s%s%s\n\n",
		       sw.state ? sw.state : '?', sw.out / UINT64_C(1000000000),
		       sw.out % UINT64_C(1000000000), sw.wake / UINT64_C(1000000000),
		       sw.wake % UINT64_C(1000000000), sw.waker_tid, sw.stack, sw.waker_stack, sw.seq,
		       sw.flags & OFFCPU_SWITCH_TARGET ? " target" : "",
		       sw.flags & OFFCPU_SWITCH_FROM_START ? " from-start" : "",
		       sw.flags & OFFCPU_SWITCH_REPAIRED ? " repaired" : "",
		       sw.flags & OFFCPU_SWITCH_GAP ? " gap" : "",
		       sw.flags & OFFCPU_SWITCH_WAKE_UNSEEN ? " wake-unseen" : "");
	if (len < 0 || (size_t)len >= sizeof(buf))
		return -EOVERFLOW;
	err = out_put(c, buf, len);
	return err ? err : 1;
}

static int script_sample(void *ctx, const struct rsample *rs)
{
	struct script_ctx *c = ctx;
	const struct perf_sample *ps = rs->s;
	/* perf's embedded off-CPU samples have a callchain in their payload */
	bool chain = (ps->evattr->attr.sample_type & PERF_SAMPLE_CALLCHAIN) || ps->off.embedded;
	int nr = rs->no_chain ? 0 : rs->nr, err;

	if (!report__match(c->o, c->s, rs))
		return 0;
	err = sample_head(c, rs, chain);
	if (err)
		return err;
	if (ps->evattr->is_chain) {
		err = print_switch(c, ps);
		if (err)
			return err < 0 ? err : 0;
	}
	if (!chain && rs->nr)
		return one_frame(c, rs);
	if (c->o->max_stack && nr > c->o->max_stack)
		nr = c->o->max_stack;
	c->out[c->n++] = '\n';
	for (int i = 0; i < nr; i++) {
		const struct frame *fr = session__frame(c->s, rs->frames[i]);
		const struct line *l;

		if (!fr->sym) {
			err = unnamed_line(c, fr, rs->locs[i]);
			if (err)
				return err;
			continue;
		}
		l = loc_line(c, rs->locs[i], rs->frames[i]);
		if (!l)
			return -ENOMEM;
		err = out_put(c, c->pool + l->off, l->len);
		if (err)
			return err;
	}
	err = out_put(c, "\n", 1);
	return err ? err : sample_tail(c, rs);
}

int script__run(FILE *f, struct session *s, const struct report_opts *o)
{
	const struct perf_reader *r = session__reader(s);
	struct script_ctx c = { .f = f, .o = o, .s = s };
	int nr = perf_reader__nr_attrs(r), err;

	/* perf pads event names to the longest one when there are several */
	if (nr > 1)
		for (int i = 0; i < nr; i++) {
			int len = strlen(perf_reader__attr(r, i)->name);

			if (len > c.name_width)
				c.name_width = len;
		}
	c.out = malloc(OUT_SIZE);
	if (!c.out)
		return -ENOMEM;
	err = session__run(s, script_sample, &c);
	if (out_flush(&c) && !err)
		err = -EIO;
	free(c.out);
	free(c.lines);
	free(c.pool);
	return err;
}
