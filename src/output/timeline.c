// SPDX-License-Identifier: GPL-2.0-only
/* What the timeline's writers share: the names of slices and threads. */
#include <stdio.h>

#include "output/format.h"
#include "output/timeline.h"

static const char *runq_why(char state)
{
	switch (state) {
	case 'R':
		return "runnable (preempted)";
	case 'S':
	case 'D':
		return "runnable (woken)";
	case 'N':
		return "runnable (new)";
	default:
		return "runnable";
	}
}

const char *tl_slice__name(const struct timeline *tl, const struct tl_slice *sl, char *buf,
			   size_t len)
{
	const struct frame *f;
	uint32_t leaf;
	char fbuf[256];

	switch (sl->kind) {
	case TL_OFFCPU:
		leaf = timeline__stack_leaf(tl, sl->stack);
		f = leaf == UINT32_MAX ? NULL : session__frame(timeline__session(tl), leaf);
		if (sl->state == 'S' || sl->state == 'D')
			snprintf(buf, len, "%c %s", sl->state, f ? frame__name(f, fbuf, sizeof(fbuf)) : "[unknown]");
		else
			snprintf(buf, len, "off CPU %s", f ? frame__name(f, fbuf, sizeof(fbuf)) : "[unknown]");
		break;
	case TL_RUNQ:
		snprintf(buf, len, "%s", runq_why(sl->state));
		break;
	default:
		if (sl->flags & TL_MAY_WAIT)
			snprintf(buf, len, "on CPU or short waits");
		else if (sl->flags & TL_MAY_RUNQ)
			snprintf(buf, len, "on CPU or runnable");
		else
			snprintf(buf, len, "on CPU");
	}
	return buf;
}

const char *tl_slice__may_hold(const struct tl_slice *sl)
{
	if (sl->kind != TL_ONCPU)
		return NULL;
	if ((sl->flags & TL_MAY_WAIT) && (sl->flags & TL_MAY_RUNQ))
		return "waits not timed one by one (summed in the kernel, or in a state not recorded) "
		       "and waits for a CPU (record --off-cpu-thresh 0 --sched-delay times them all)";
	if (sl->flags & TL_MAY_WAIT)
		return "waits not timed one by one (summed in the kernel, or in a state not recorded; "
		       "record --off-cpu-thresh 0 times them all)";
	if (sl->flags & TL_MAY_RUNQ)
		return "waits for a CPU (record --sched-delay --off-cpu-thresh 0 times them)";
	return NULL;
}

void tl_thread__label(const struct tl_thread *t, char *buf, size_t len)
{
	snprintf(buf, len, "%s %u/%u", t->comm ? t->comm : "[unknown]", t->pid, t->tid);
}
