// SPDX-License-Identifier: GPL-2.0-only
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/msg.h"

void msg__vsay(const struct msg_sink *ms, enum msg_kind kind, const char *fmt, va_list ap)
{
	char buf[1024], *text = buf;
	va_list again;
	int n;

	if (!ms || !ms->fn)
		return;
	va_copy(again, ap);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	/* a long path or a verifier's log: whole when memory allows, else cut */
	if (n >= (int)sizeof(buf) && vasprintf(&text, fmt, again) < 0)
		text = buf;
	va_end(again);
	ms->fn(ms->ctx, kind, text);
	if (text != buf)
		free(text);
}

void msg__say(const struct msg_sink *ms, enum msg_kind kind, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	msg__vsay(ms, kind, fmt, ap);
	va_end(ap);
}

void msg_line__add(struct msg_line *l, const char *fmt, ...)
{
	size_t room = sizeof(l->text) - l->len;
	va_list ap;
	int n;

	if (room <= 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(l->text + l->len, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		l->len += (size_t)n < room ? (size_t)n : room - 1;
}
