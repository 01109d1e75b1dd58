// SPDX-License-Identifier: GPL-2.0-only
/*
 * A recording's aggregated profile as flame graph paths:
 *   comm (or comm-pid/tid) ; [on-cpu] | [off-cpu] ; outermost ; ... ; leaf
 * The split frame is there only when both events are drawn, so that on-CPU
 * and off-CPU time stand apart under each comm or thread.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flamegraph/flamegraph.h"

/*
 * A session frame as a flame graph frame: its symbol (or [dso], as
 * --folded shows it) and its DSO as detail. Strings are the session's own
 * except the two made here, in buffers the caller keeps until the add.
 */
static struct fg_frame to_fg(const struct frame *fr, enum fg_color c, char *name, size_t nlen,
			     char *detail, size_t dlen)
{
	struct fg_frame f = { fr->sym, fr->kernel ? fr->dso : fr->dso_short, c };

	if (!fr->sym) {
		if (strcmp(fr->dso, "[unknown]"))
			snprintf(name, nlen, "[%s]", fr->dso_short);
		else
			snprintf(name, nlen, "[unknown]");
		f.name = name;
	}
	if (fr->inlined) {
		snprintf(detail, dlen, "%s (inlined)", f.detail);
		f.detail = detail;
	}
	return f;
}

int fg__from_profile(struct fg_tree *t, const struct session *s, const struct profile *p,
		     const struct fg_profile_opts *o)
{
	static const char *const split[FG_NR_CLASSES] = { "[on-cpu]", "[off-cpu]" };
	bool both = o->cpu_event >= 0 && o->off_event >= 0;
	struct fg_frame *path = NULL;
	char (*names)[256] = NULL, (*details)[256] = NULL;
	uint32_t cap = 0;
	int err = 0;

	for (size_t i = 0; i < profile__nr_stacks(p) && !err; i++) {
		const struct pstack *st = profile__stack(p, i);
		const uint32_t *fr = profile__frames(p, st);
		enum fg_class cls;
		char group[64], ids[48];
		uint32_t n = 0;

		if ((int)st->event == o->cpu_event)
			cls = FG_ON_CPU;
		else if ((int)st->event == o->off_event)
			cls = FG_OFF_CPU;
		else
			continue;
		if (st->nr + 2 > cap) {
			cap = st->nr + 2;
			free(path);
			free(names);
			free(details);
			path = malloc(cap * sizeof(*path));
			names = malloc(cap * sizeof(*names));
			details = malloc(cap * sizeof(*details));
			if (!path || !names || !details) {
				err = -ENOMEM;
				break;
			}
		}
		if (o->per_thread) {
			snprintf(group, sizeof(group), "%s-%u/%u", session__comm(s, st->comm), st->pid, st->tid);
			snprintf(ids, sizeof(ids), "pid %u, tid %u", st->pid, st->tid);
			path[n++] = (struct fg_frame){ group, ids, FG_COLOR_META };
		} else {
			path[n++] = (struct fg_frame){ session__comm(s, st->comm), NULL, FG_COLOR_META };
		}
		if (both)
			path[n++] = (struct fg_frame){ split[cls], NULL,
						       cls == FG_ON_CPU ? FG_COLOR_CPU : FG_COLOR_OFF };
		for (uint32_t j = st->nr; j-- > 0;) {
			const struct frame *f = session__frame(s, fr[j]);
			enum fg_color c = cls == FG_ON_CPU ? (f->kernel ? FG_COLOR_CPU_KERNEL : FG_COLOR_CPU)
							   : (f->kernel ? FG_COLOR_OFF_KERNEL : FG_COLOR_OFF);

			path[n] = to_fg(f, c, names[n], sizeof(names[n]), details[n], sizeof(details[n]));
			n++;
		}
		err = fg_tree__add(t, path, n, cls, st->period);
	}
	free(path);
	free(names);
	free(details);
	return err;
}
