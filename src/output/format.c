// SPDX-License-Identifier: GPL-2.0-only
#include <string.h>

#include "output/format.h"

void report__fmt_ns(char *buf, size_t len, uint64_t ns)
{
	if (ns >= 1000000000ULL)
		snprintf(buf, len, "%.2f s", ns / 1e9);
	else if (ns >= 1000000ULL)
		snprintf(buf, len, "%.2f ms", ns / 1e6);
	else if (ns >= 1000ULL)
		snprintf(buf, len, "%.2f us", ns / 1e3);
	else
		snprintf(buf, len, "%llu ns", (unsigned long long)ns);
}

size_t report__put_u64(char *buf, uint64_t v)
{
	char d[20];
	size_t n = 0;

	do {
		d[sizeof(d) - 1 - n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	memcpy(buf, d + sizeof(d) - n, n);
	return n;
}

size_t report__fmt_fixed2(char *buf, size_t len, double v, int width)
{
	char digits[24];
	uint64_t bits, m, t, q;
	size_t n = 0, pad;
	int e;

	memcpy(&bits, &v, sizeof(bits));
	if (!(v >= 0 && v < 35184372088832.0) || bits >> 63 || len < 24 || width < 0 ||
	    (size_t)width >= len) { /* -0.0 prints "-0.00" */
		int r = snprintf(buf, len, "%*.2f", width, v);

		return r < 0 ? 0 : (size_t)r < len ? (size_t)r : len - 1;
	}
	/* v = m * 2^e exactly (IEEE 754 binary64); below 2^45, e < -7 and v * 100 = t * 2^e, t < 2^60 */
	m = bits & ((1ULL << 52) - 1);
	e = (int)(bits >> 52 & 0x7ff);
	if (e) {
		m |= 1ULL << 52;
		e -= 1075;
	} else {
		e = -1074;
	}
	t = m * 100;
	if (e <= -64) {
		q = 0; /* t * 2^e < 2^-4: rounds to 0 */
	} else {
		uint64_t rem = t & ((1ULL << -e) - 1), half = 1ULL << (-e - 1);

		q = t >> -e;
		if (rem > half || (rem == half && (q & 1)))
			q++;
	}
	n = report__put_u64(digits, q / 100);
	digits[n++] = '.';
	digits[n++] = (char)('0' + q / 10 % 10);
	digits[n++] = (char)('0' + q % 10);
	pad = (size_t)width > n ? (size_t)width - n : 0;
	memset(buf, ' ', pad);
	memcpy(buf + pad, digits, n);
	buf[pad + n] = 0;
	return pad + n;
}

bool report__window(const struct session *s, uint64_t *first, uint64_t *last)
{
	const struct perf_reader *r = session__reader(s);
	uint64_t start = 0, stop = 0, v;
	const char *name;

	for (int i = 0; perf_reader__offcpu_counter(r, i, &name, &v); i++) {
		if (!strcmp(name, "record.start_ns"))
			start = v;
		else if (!strcmp(name, "record.stop_ns"))
			stop = v;
	}
	if (start && stop > start) {
		*first = start;
		*last = stop;
		return true;
	}
	if (perf_reader__sample_time(r, first, last) && *last > *first && *last < PERF_OFFCPU_AT_END)
		return true;
	return session__time_span(s, first, last) && *last >= *first;
}

/* snprintf(buf, len, "%s%s%s", a, b, c) for len > 0, without printf (every frame of a file without symbols comes here). */
static void put3(char *buf, size_t len, const char *a, const char *b, const char *c)
{
	const char *part[3] = { a, b, c };
	size_t n = 0;

	for (int i = 0; i < 3 && n + 1 < len; i++) {
		size_t l = strnlen(part[i], len - 1 - n);

		memcpy(buf + n, part[i], l);
		n += l;
	}
	buf[n] = 0;
}

const char *frame__name(const struct frame *fr, char *buf, size_t len)
{
	if (fr->sym)
		return fr->sym;
	if (!len)
		return "";
	if (fr->dso_short[0] == '[') /* [kernel.kallsyms], [vdso]: already in brackets */
		put3(buf, len, fr->dso_short, "", "");
	else if (strcmp(fr->dso, "[unknown]"))
		put3(buf, len, "[", fr->dso_short, "]");
	else
		put3(buf, len, "[unknown]", "", "");
	return buf;
}

void frame__fput(FILE *f, const struct frame *fr, const char *inl, const char *kern)
{
	char buf[512];

	fputs(frame__name(fr, buf, sizeof(buf)), f);
	if (fr->inlined)
		fputs(inl, f);
	else if (fr->kernel)
		fputs(kern, f);
}
