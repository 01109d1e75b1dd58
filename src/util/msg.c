// SPDX-License-Identifier: GPL-2.0-only
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/msg.h"

void msg__say(const struct msg_sink *ms, enum msg_kind kind, const char *fmt, ...)
{
	char buf[1024], *text = buf;
	va_list ap;
	int n;

	if (!ms || !ms->fn)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof(buf)) { /* a long path: whole when memory allows, else cut */
		va_start(ap, fmt);
		if (vasprintf(&text, fmt, ap) < 0)
			text = buf;
		va_end(ap);
	}
	ms->fn(ms->ctx, kind, text);
	if (text != buf)
		free(text);
}
