/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Messages of the library for the person running a command: the layers
 * below the commands never print, they hand errors, warnings, notes and
 * summaries to the caller's sink, which decides what to do with them (the
 * commands print them on stderr with their prefix, tests may keep them or
 * drop them).
 */
#ifndef OFFCPU_UTIL_MSG_H
#define OFFCPU_UTIL_MSG_H

#include <stdarg.h>
#include <stddef.h>

enum msg_kind {
	MSG_WARNING, /* something is missing or wrong in what was read */
	MSG_NOTE,    /* what was done, for the record (events skipped, samples left out) */
	MSG_HINT,    /* a choice made where the options left one, and how to make it
			otherwise: what the output holds, so said even when notes are not */
	MSG_ERROR,   /* why a step failed: said once, before its negative errno comes back */
	MSG_SUMMARY, /* a line of the account a step gives at its end (what a recording
			wrote, what it lost): the sink frames it */
	MSG_STATUS,  /* the live status line: each one takes the place of the last on
			the screen, without a newline; "" clears it */
	MSG_DEBUG,   /* a library's own log (OFFCPU_DEBUG), verbatim: whole lines with
			their newlines, or parts of lines */
};

/*
 * fn may be called from any thread of the library (the recorder's unwinder
 * loader runs in its own): it must be safe there.
 */
struct msg_sink {
	void (*fn)(void *ctx, enum msg_kind kind, const char *text);
	void *ctx;
};

/*
 * Format a message (one line, no newline; MSG_DEBUG: as it comes) and hand
 * it to the sink; a NULL sink drops it.
 */
void msg__say(const struct msg_sink *ms, enum msg_kind kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same with a va_list: for a library's print callback (libbpf's). */
void msg__vsay(const struct msg_sink *ms, enum msg_kind kind, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/*
 * A message made in parts (one part a counter), then said whole with
 * msg__say(ms, kind, "%s", l.text): a sink sees whole lines only. Room for
 * the longest list of counters the recorder says; a longer text is cut,
 * never overrun.
 */
struct msg_line {
	char text[4096];
	size_t len;
};
void msg_line__add(struct msg_line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
