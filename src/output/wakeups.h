/* SPDX-License-Identifier: GPL-2.0-only */
/* `offcpu report --wakeups`: the off-wake stacks (profile/offwake.h) of a profile. */
#ifndef OFFCPU_OUTPUT_WAKEUPS_H
#define OFFCPU_OUTPUT_WAKEUPS_H

#include <stdio.h>

#include "profile/profile.h"
#include "profile/report_opts.h"
#include "session/session.h"

/*
 * The off-wake stacks of p (profile__read() with o->wakeups, o->waker_by
 * and the PROFILE_KEEP_* flags of o->by), pair by pair, most time first,
 * their share taken of all the off-CPU time in p; sleepers named as o->by.
 */
int offwake__print(FILE *f, struct session *s, const struct profile *p,
		   const struct report_opts *o);

/* With --folded: the off-wake stacks folded, `sleeper;...;--;...;waker VALUE`. */
int offwake__print_folded(FILE *f, const struct session *s, const struct profile *p,
			  const struct report_opts *o);

/* The message when --wakeups or --threads meets an output or -e it does not go with. */
extern const char offwake__conflict[];

#endif
