/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Off-CPU time from what perf users already record: `perf record -e
 * sched:sched_switch -g` writes one sample each time a thread leaves a
 * CPU, with the stack it left from and (in its RAW data) its state and
 * the thread that comes on next. As hotspot does, each switch-out of a
 * thread in S or D becomes an off-CPU interval with that stack, timed to
 * the thread's next switch-in:
 *   - a switch event whose next_pid is the thread: the exact end (the
 *     switch-ins the kernel traces, in a whole-machine recording, -a; in
 *     a recording of a command, those from another thread of the
 *     recorded ones);
 *   - else the thread's next event of any kind (its next switch-out, a
 *     CPU sample, its exit): an upper bound, the time it ran before is
 *     counted too;
 *   - a wait still open when the file ends: counted to the file's last
 *     record.
 * The sched:sched_switch samples are replaced by these intervals, as
 * samples of an event named offcpu-time (profile__set_attr()); a file
 * that has an offcpu-time event of its own is left alone.
 */
#ifndef OFFCPU_PROFILE_SWITCHES_H
#define OFFCPU_PROFILE_SWITCHES_H

#include <stdint.h>

#include "profile/profile.h"
#include "session/session.h"
#include "util/msg.h"

struct switches;

/*
 * The derivation for session s, or NULL: *err 0 when the file has no
 * sched:sched_switch event with RAW data (or has off-CPU samples of its
 * own), -ENOMEM.
 */
struct switches *switches__new(const struct session *s, int *err);
void switches__free(struct switches *w);

/*
 * Every sample of the session, in time order: a sched:sched_switch
 * sample is taken in (its intervals that end go to cb), any other goes to
 * cb after the interval it ends. cb's error, or -ENOMEM.
 */
int switches__sample(struct switches *w, const struct rsample *rs, session_sample_cb cb, void *ctx);
/* After the session's run: the waits still open, ended at the file's last record, to cb. */
int switches__finish(struct switches *w, const struct session *s, session_sample_cb cb, void *ctx);

/* The derived event (attr index of sched:sched_switch) into p, when it made any interval: 0 or -ENOMEM. */
int switches__set_attr(const struct switches *w, struct profile *p);
/* The note that says where the off-CPU time came from (nothing when none was derived). */
void switches__note(const struct switches *w, const struct msg_sink *ms);

#endif
