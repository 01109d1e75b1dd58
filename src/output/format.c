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

const char *frame__name(const struct frame *fr, char *buf, size_t len)
{
	if (fr->sym)
		return fr->sym;
	if (fr->dso_short[0] == '[') /* [kernel.kallsyms], [vdso]: already in brackets */
		snprintf(buf, len, "%s", fr->dso_short);
	else if (strcmp(fr->dso, "[unknown]"))
		snprintf(buf, len, "[%s]", fr->dso_short);
	else
		snprintf(buf, len, "[unknown]");
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
