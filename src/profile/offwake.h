/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Off-wake stacks (`offcpu record --wakeups`): each offcpu-wakeup sample
 * (the waker's stack) joined to the offcpu-time sample written just before
 * it (the sleeper's stack, same tid, time and period) into one stack, in
 * Brendan Gregg's off-wake layout read root first:
 *
 *   sleeper root ... sleeper leaf ; -- ; waker leaf ... waker root ; waker
 *
 * where the last frame names the waker (its comm, or "comm pid/tid"). The
 * joined sample is an ordinary resolved sample of the offcpu-wakeup event
 * (frames leaf first, as always), so the profile, folded output and flame
 * graphs take it as they take any other.
 */
#ifndef OFFCPU_PROFILE_OFFWAKE_H
#define OFFCPU_PROFILE_OFFWAKE_H

#include <stdbool.h>
#include <stdint.h>

#include "profile/report_opts.h"
#include "session/session.h"

struct offwake;

/*
 * The "--" frame of joined stacks, in the session's frames: frames after
 * it (leaf first) are the sleeper's, those before it the waker's, frame 0
 * the waker's name (a flame graph colours them apart). 0 or -ENOMEM.
 */
int offwake__separator(struct session *s, uint32_t *id);

/* Wakers named by their comm (BY_COMM), "comm pid" (BY_PID) or "comm pid/tid" (BY_TID). */
struct offwake *offwake__new(struct session *s, enum by_key waker_by);
void offwake__free(struct offwake *w);

/*
 * Feed every sample of the session in file order. For an offcpu-wakeup
 * sample that follows its offcpu-time sample returns 1 with *out set to
 * the joined sample (valid until the next call); 0 for every other sample
 * (a wakeup sample without its sleeper is counted: offwake__unjoined());
 * a negative errno on error.
 */
int offwake__join(struct offwake *w, const struct rsample *rs, struct rsample *out);
uint64_t offwake__unjoined(const struct offwake *w);

#endif
