/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A profile filled in a thread of its own: the session's walk (reading,
 * side-band, resolution, filters) stays in the caller's thread, and the
 * samples it passes are folded into the profile (profile__add) on the
 * second core meanwhile. The samples go over in batches, in the order
 * they came, so the profile is the one profile__add() in the caller's
 * thread would have made: the same stacks, in the same order.
 *
 * A sample goes over as the few values profile__add() keeps; its frames
 * only when the profile may read them (a sample without a session stack
 * id, or the first of each id): nothing of the session is read in the
 * other thread, which the walk keeps changing.
 *
 * Without a second CPU (or with OFFCPU_PROFILE_THREADS=0) the feed adds
 * each sample at once in the caller's thread.
 */
#ifndef OFFCPU_PROFILE_FEED_H
#define OFFCPU_PROFILE_FEED_H

#include "profile/profile.h"

struct feed;

/* A feed into p, which nothing else touches until feed__finish(); NULL on ENOMEM. */
struct feed *feed__new(struct profile *p);
/*
 * Fold rs into the profile (now or later): 0, or the first error of an
 * earlier sample's addition (-ENOMEM), after which nothing more is added.
 */
int feed__add(struct feed *f, const struct rsample *rs);
/*
 * Every sample added, the thread ended, f freed (NULL is fine): 0 or the
 * first error. The profile is the caller's again after it.
 */
int feed__finish(struct feed *f);

#endif
