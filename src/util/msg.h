/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Messages of the library for the person running a command: the layers
 * below the commands never print, they hand warnings and notes to the
 * caller's sink, which decides what to do with them (the commands print
 * them on stderr with their prefix, tests may keep them or drop them).
 */
#ifndef OFFCPU_UTIL_MSG_H
#define OFFCPU_UTIL_MSG_H

enum msg_kind {
	MSG_WARNING, /* something is missing or wrong in what was read */
	MSG_NOTE,    /* what was done, for the record (events skipped, samples left out) */
	MSG_HINT,    /* a choice made where the options left one, and how to make it
			otherwise: what the output holds, so said even when notes are not */
};

struct msg_sink {
	void (*fn)(void *ctx, enum msg_kind kind, const char *text);
	void *ctx;
};

/* Format a message (one line, no newline) and hand it to the sink; a NULL sink drops it. */
void msg__say(const struct msg_sink *ms, enum msg_kind kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
