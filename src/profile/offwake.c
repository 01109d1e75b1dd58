// SPDX-License-Identifier: GPL-2.0-only
/* Off-wake stacks: each wakeup sample joined to its sleeper's off-CPU sample. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfdata/perf_format.h"
#include "profile/offwake.h"

#define SIDE_MAX 512 /* frames kept per side, as the session keeps per sample */

struct offwake {
	struct session *s;
	enum by_key waker_by;
	uint32_t sep; /* the "--" frame */
	/* the last offcpu-time sample, waiting for its offcpu-wakeup */
	bool have_prev;
	uint32_t prev_tid;
	uint64_t prev_time, prev_period;
	uint32_t prev_nr;
	uint32_t prev_frames[SIDE_MAX];
	/* the joined sample */
	uint32_t frames[2 * SIDE_MAX + 2];
	uint64_t unjoined;
};

int offwake__separator(struct session *s, uint32_t *id)
{
	return session__label_frame(s, "--", id);
}

struct offwake *offwake__new(struct session *s, enum by_key waker_by)
{
	struct offwake *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->s = s;
	w->waker_by = waker_by;
	if (offwake__separator(s, &w->sep)) {
		free(w);
		return NULL;
	}
	return w;
}

void offwake__free(struct offwake *w)
{
	free(w);
}

uint64_t offwake__unjoined(const struct offwake *w)
{
	return w->unjoined;
}

/* The frame that names the waker: its comm, "comm pid", "comm pid/tid", or "[irq]". */
static int waker_frame(struct offwake *w, const struct rsample *rs, uint32_t *id)
{
	const char *comm = rs->waker_comm ? session__comm(w->s, rs->waker_comm) : "[unknown]";
	char name[64];

	if (rs->flags & OFFCPU_RAW_WAKER_IRQ)
		snprintf(name, sizeof(name), "[irq]");
	else if (w->waker_by == BY_TID)
		snprintf(name, sizeof(name), "%s %d/%d", comm, (int32_t)rs->waker_pid,
			 (int32_t)rs->waker_tid);
	else if (w->waker_by == BY_PID)
		snprintf(name, sizeof(name), "%s %d", comm, (int32_t)rs->waker_pid);
	else
		snprintf(name, sizeof(name), "%s", comm);
	return session__label_frame(w->s, name, id);
}

int offwake__join(struct offwake *w, const struct rsample *rs, struct rsample *out)
{
	const struct perf_sample *ps = rs->s;
	uint32_t nw, n = 0;
	int err;

	if (ps->evattr->is_offcpu) {
		w->have_prev = true;
		w->prev_tid = ps->tid;
		w->prev_time = ps->time;
		w->prev_period = ps->period;
		w->prev_nr = rs->nr > SIDE_MAX ? SIDE_MAX : rs->nr;
		memcpy(w->prev_frames, rs->frames, w->prev_nr * sizeof(uint32_t));
		return 0;
	}
	if (!ps->evattr->is_wakeup)
		return 0;
	if (!w->have_prev || w->prev_tid != ps->tid || w->prev_time != ps->time ||
	    w->prev_period != ps->period) {
		w->unjoined++;
		return 0;
	}
	w->have_prev = false;
	/* leaf first: waker name, waker root .. waker leaf, --, sleeper leaf .. root */
	err = waker_frame(w, rs, &w->frames[n++]);
	if (err)
		return err;
	nw = rs->nr > SIDE_MAX ? SIDE_MAX : rs->nr;
	for (uint32_t i = nw; i-- > 0;)
		w->frames[n++] = rs->frames[i];
	w->frames[n++] = w->sep;
	memcpy(&w->frames[n], w->prev_frames, w->prev_nr * sizeof(uint32_t));
	n += w->prev_nr;
	*out = *rs;
	out->nr = n;
	out->frames = w->frames;
	out->locs = NULL;
	out->stack = 0;
	out->chain = 0;
	return 1;
}
