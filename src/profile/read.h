/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A recording read whole into a model: the session opened as the options
 * say, every sample that passes the filters folded into a profile (or
 * into per-thread times). Nothing is printed: errors come back as a
 * negative errno with a message in err (empty when it is only "out of
 * memory"), warnings and notes go to the sink.
 */
#ifndef OFFCPU_PROFILE_READ_H
#define OFFCPU_PROFILE_READ_H

#include <stddef.h>

#include "profile/profile.h"
#include "profile/report_opts.h"
#include "profile/threads.h"
#include "session/session.h"
#include "util/msg.h"

/*
 * The session of o->input with o's symbol options; defer_kernel as in
 * session_opts (for callers that keep frames). NULL with err set.
 */
struct session *report__open(const struct report_opts *o, bool defer_kernel,
			     const struct msg_sink *ms, char *err, size_t errlen);
/*
 * The same for a caller that prints each sample as it comes (script):
 * kernel addresses named at once, samples' stacks not interned
 * (session_opts.no_stacks: rsample.stack is 0).
 */
struct session *report__open_stream(const struct report_opts *o, const struct msg_sink *ms,
				    char *err, size_t errlen);

/*
 * Open o->input and fold every sample that passes the filters into a new
 * profile (keep: PROFILE_KEEP_* flags). On success the caller owns *sp and
 * *pp; on error both are untouched. With o->wakeups the profile holds the
 * offcpu-time samples and, as event offcpu-wakeup, the off-wake stacks
 * (profile/offwake.h); a file without that event is an error.
 */
int profile__read(const struct report_opts *o, unsigned int keep, const struct msg_sink *ms,
		  struct session **sp, struct profile **pp, char *err, size_t errlen);

/* The same into per-thread times (`offcpu report --threads`). */
int threads__read(const struct report_opts *o, const struct msg_sink *ms, struct session **sp,
		  struct threads **tp, char *err, size_t errlen);

#endif
