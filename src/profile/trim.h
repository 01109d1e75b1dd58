/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The stacks as the aggregated outputs show them. An off-CPU or
 * run-queue stack is taken where the thread entered the scheduler, so its
 * innermost frames are always the scheduler's own (__schedule, schedule,
 * schedule_timeout...): every stack would have the same "self" frame.
 * These are left out, so that self is the blocking point (do_nanosleep,
 * futex_wait, anon_pipe_read...). --max-stack then keeps the N innermost
 * frames that remain. `offcpu script` prints callchains as recorded.
 */
#ifndef OFFCPU_PROFILE_TRIM_H
#define OFFCPU_PROFILE_TRIM_H

#include <stdbool.h>

#include "profile/profile.h"
#include "profile/report_opts.h"
#include "session/session.h"

/* Whether sym (a kernel function name, a ".isra.0"-like suffix allowed) is the scheduler's own. */
bool sched_frame__is(const char *sym);

/*
 * Each frame id f (< nmap) of every stack replaced by map[f] (the frames
 * named: session__remap(); map may be NULL), as profile__remap() does, and
 * in the same pass over the stacks: unless o->keep_sched_frames,
 * the scheduler's innermost frames out of the stacks of offcpu-time and
 * sched-delay (of the sleeper's side of off-wake stacks with o->wakeups,
 * never a stack's outermost frame); then each stack (each side of an
 * off-wake stack) cut to its o->max_stack innermost frames. 0 or -ENOMEM.
 */
int profile__trim(struct profile *p, struct session *s, const struct report_opts *o,
		  const uint32_t *map, uint32_t nmap);

#endif
