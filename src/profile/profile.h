/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Profile: the samples of a file folded into distinct stacks. A stack is
 * (event, comm, pid, tid, state, cgroup, frames) — the fields a report can
 * sort or filter on — with its summed sample count and period. pid, tid
 * and cgroup are kept only when the caller asks (profile__new's keep
 * flags), so that a report by symbol keeps few stacks.
 *
 * Every output (stdio report, folded, call graphs, later flame graphs and
 * pprof) starts from here.
 */
#ifndef OFFCPU_PROFILE_PROFILE_H
#define OFFCPU_PROFILE_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "session/session.h"
#include "util/msg.h"

#define PROFILE_KEEP_PID    0x1
#define PROFILE_KEEP_TID    0x2
#define PROFILE_KEEP_CGROUP 0x4

struct profile;

/* 56 bytes: a profile by thread holds hundreds of thousands. */
struct pstack {
	uint16_t event;       /* attr index (a file has at most 4096) */
	char state;
	uint32_t comm;
	uint32_t pid, tid;
	uint32_t nr;          /* frames, leaf first */
	uint32_t frames_off;  /* into profile__frames() */
	uint64_t cgroup;
	uint64_t samples;
	uint64_t period;
	uint64_t count;       /* off-CPU intervals (offcpu-time), else samples */
};

struct profile_event {
	uint64_t samples;
	uint64_t period;
};

struct profile *profile__new(int nr_events, unsigned int keep);
void profile__free(struct profile *p);

/* Fold one resolved sample in. */
int profile__add(struct profile *p, const struct rsample *rs);

/*
 * Replace each frame id f (< n) of every stack by map[f] (session__remap())
 * and merge the stacks that become equal. A NULL map changes nothing.
 */
int profile__remap(struct profile *p, const uint32_t *map, uint32_t n);

/*
 * Change stacks' frames in place: fn gets each stack (a copy: it may lower
 * nr, or raise frames_off with nr lowered as much) and its frames (NULL
 * when no stack has any), which it may rewrite within the first nr; the
 * stacks that become equal are merged. What fn does may depend on the
 * frames and the stack's event only: stacks of one sequence and event may
 * be given the first one's result without fn being called. 0 or -ENOMEM.
 */
typedef void (*profile_rewrite_fn)(void *ctx, struct pstack *st, uint32_t *frames);
int profile__rewrite(struct profile *p, profile_rewrite_fn fn, void *ctx);
/*
 * profile__remap() then profile__rewrite() in one pass over the stacks
 * (fn sees the frames mapped): the same profile, the same order of stacks
 * (each pass keeps the first of the stacks it merges, and fn depends on a
 * stack alone), one rebuild of the table instead of two.
 */
int profile__remap_rewrite(struct profile *p, const uint32_t *map, uint32_t n, profile_rewrite_fn fn,
			   void *ctx);

size_t profile__nr_stacks(const struct profile *p);
const struct pstack *profile__stack(const struct profile *p, size_t i);
const uint32_t *profile__frames(const struct profile *p, const struct pstack *st);
const struct profile_event *profile__event(const struct profile *p, int event);
int profile__nr_events(const struct profile *p);

/*
 * The event of attr index event as the profile holds it: the file's
 * (perf_reader__attr()), or the one its samples were turned into (off-CPU
 * time derived from sched:sched_switch: profile/switches.h), set with
 * profile__set_attr() (copied: 0, -EINVAL, -ENOMEM); from says what it
 * was made of (NULL: the file's own).
 */
const struct perf_evattr *profile__attr(const struct profile *p, const struct session *s, int event);
int profile__set_attr(struct profile *p, int event, const struct perf_evattr *a, const char *from);
const char *profile__attr_from(const struct profile *p, int event);

/*
 * The events of a time picture (flame graph, pprof), by attr index, -1 when
 * absent: *off the off-CPU event (offcpu-time), *cpu the first other event
 * whose period is nanoseconds (cpu-clock, task-clock; not offcpu-wakeup or
 * sched-delay). Only events with samples count; others with samples are
 * named to the sink as skipped.
 */
void profile__time_events(const struct profile *p, const struct session *s,
			  const struct msg_sink *ms, int *cpu, int *off);

#endif
