/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The text outputs of `offcpu report` and `offcpu script`, each from a
 * session and what was read of it (profile/read.h), shaped by the options
 * (profile/report_opts.h). Each writes to f and returns 0 or a negative
 * errno (-EIO when f failed).
 */
#ifndef OFFCPU_OUTPUT_REPORT_H
#define OFFCPU_OUTPUT_REPORT_H

#include <stdio.h>

#include "output/format.h"
#include "profile/filter.h"
#include "profile/profile.h"
#include "profile/report_opts.h"
#include "session/session.h"
#include "util/msg.h"

/*
 * perf report --stdio's layout: one section per event, entries by the sort keys, call
 * graphs. -ENODATA, with nothing written, when no event has samples to show.
 */
int report_stdio__print(FILE *f, const struct session *s, const struct profile *p,
			const struct report_opts *o);

/*
 * --folded: one `comm;outermost;...;leaf VALUE` line per stack of one
 * event; when others had samples, which one was folded is a hint to ms.
 * -ENODATA, with nothing written, when no event has samples to fold.
 */
int folded__print(FILE *f, const struct session *s, const struct profile *p,
		  const struct report_opts *o, const struct msg_sink *ms);

/*
 * `offcpu script --chains`: every wait report --chains analyses, a line
 * `wait  COMM PID/TID  STATE  START  END  NS  WAITS` (times in ns on the
 * recording's clock), then one line per segment, latest first:
 * `seg  START  END  NS  KIND  DEPTH  COMM PID/TID  LEAF` (KIND on-cpu,
 * run-queue, timer, irq, io, no-waker, unknown, depth, cycle, truncated;
 * DEPTH the hops from the sleeper; LEAF the innermost frame of its stack,
 * "(unsampled)" after on-CPU time without a CPU sample), tab-separated.
 */
struct chains;
int chains_script__print(FILE *f, struct chains *c, struct session *s, const struct report_opts *o);

/* `offcpu script`: every sample that passes the filters, as it is read (runs the session). */
int script__run(FILE *f, struct session *s, const struct report_opts *o);

#endif
