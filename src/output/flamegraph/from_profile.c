// SPDX-License-Identifier: GPL-2.0-only
/*
 * A recording's aggregated profile as flame graph paths:
 *   comm (or comm-pid/tid) ; [on-cpu] | [off-cpu] ; outermost ; ... ; leaf
 * The split frame is there only when both events are drawn, so that on-CPU
 * and off-CPU time stand apart under each comm or thread. Off-wake stacks
 * (--wakeups) go on as joined:
 *   comm ; sleeper outermost ; ... ; sleeper leaf ; -- ; waker leaf ; ... ; waker
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/flamegraph/flamegraph.h"
#include "output/format.h"
#include "profile/offwake.h"
#include "util/vec.h"

/*
 * A session frame as a flame graph frame: its symbol (or [dso], as
 * --folded shows it) and its DSO as detail. Strings are the session's own
 * except the two made here, in buffers the caller keeps until the add.
 */
static struct fg_frame to_fg(const struct frame *fr, enum fg_color c, char *name, size_t nlen,
			     char *detail, size_t dlen)
{
	struct fg_frame f = { .name = frame__name(fr, name, nlen),
			       .detail = fr->kernel ? fr->dso : fr->dso_short, .color = c };

	if (fr->inlined) {
		snprintf(detail, dlen, "%s (inlined)", f.detail);
		f.detail = detail;
	}
	return f;
}

/* One stack's frames and the text their names and details are printed into. */
struct path_scratch {
	struct fg_frame *path;
	char (*names)[256], (*details)[256];
	uint32_t cap;
};

/* Room for need frames (the old contents are not kept); -ENOMEM. */
static int path_reserve(struct path_scratch *sc, uint32_t need)
{
	if (need <= sc->cap)
		return 0;
	free(sc->path);
	free(sc->names);
	free(sc->details);
	sc->cap = need;
	sc->path = malloc(need * sizeof(*sc->path));
	sc->names = malloc(need * sizeof(*sc->names));
	sc->details = malloc(need * sizeof(*sc->details));
	if (!sc->path || !sc->names || !sc->details) {
		sc->cap = 0;
		return -ENOMEM;
	}
	return 0;
}

static void path_scratch__free(struct path_scratch *sc)
{
	free(sc->path);
	free(sc->names);
	free(sc->details);
}

/* The comm frame, or comm-pid/tid with per_thread, into the caller's buffers. */
static struct fg_frame group_frame(const struct session *s, const struct pstack *st,
				   bool per_thread, char *group, size_t glen, char *ids, size_t ilen)
{
	if (!per_thread)
		return (struct fg_frame){ .name = session__comm(s, st->comm), .color = FG_COLOR_META };
	snprintf(group, glen, "%s-%d/%d", session__comm(s, st->comm), (int32_t)st->pid,
		 (int32_t)st->tid);
	snprintf(ids, ilen, "pid %d, tid %d", (int32_t)st->pid, (int32_t)st->tid);
	return (struct fg_frame){ .name = group, .detail = ids, .color = FG_COLOR_META };
}

/*
 * Frame f (a name without detail: none is ""'s ref) as refs, *ref its
 * name's once made: a string hashed once, not for every path. Interned
 * when child() would have interned it (just before fg_tree__add()), so
 * that the strings keep their order. 0 or -ENOMEM.
 */
static int ref_of(struct fg_tree *t, struct fg_frame *f, uint32_t *ref, uint32_t none)
{
	if (!*ref) {
		int err = fg_tree__intern(t, f->name, ref);

		if (err)
			return err;
	}
	f->name_ref = *ref;
	f->detail_ref = none;
	return 0;
}

/* The comm frame f of comm id comm as refs, by an array of comm ids: 0 or -ENOMEM. */
static int comm_ref(struct fg_tree *t, struct fg_frame *f, uint32_t comm, uint32_t **refs,
		    size_t *cap, uint32_t none)
{
	if (vec__reserve_zeroed((void **)refs, cap, (size_t)comm + 1, sizeof(**refs), 64))
		return -ENOMEM;
	return ref_of(t, f, &(*refs)[comm], none);
}

int fg__from_profile(struct fg_tree *t, const struct session *s, const struct profile *p,
		     const struct fg_profile_opts *o)
{
	static const char *const split[FG_NR_CLASSES] = { "[on-cpu]", "[off-cpu]" };
	bool both = o->cpu_event >= 0 && o->off_event >= 0;
	struct path_scratch sc = {};
	/* per session frame: its name and detail interned in t, made on first sight */
	uint32_t nfr = session__nr_frames(s), (*refs)[2] = calloc(nfr ? nfr : 1, sizeof(*refs));
	/* the comm frames' and split frames' names, interned where child() would first (below) */
	uint32_t *comm_refs = NULL, split_refs[FG_NR_CLASSES] = { 0 }, none = 0;
	size_t cap_comm = 0;
	int err = refs ? fg_tree__intern(t, "", &none) : -ENOMEM; /* "" comes with the tree */

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
		err = path_reserve(&sc, st->nr + 2);
		if (err)
			break;
		sc.path[n++] = group_frame(s, st, o->per_thread, group, sizeof(group), ids, sizeof(ids));
		if (both)
			sc.path[n++] = (struct fg_frame){ .name = split[cls],
						       .color = cls == FG_ON_CPU ? FG_COLOR_CPU : FG_COLOR_OFF };
		for (uint32_t j = st->nr; j-- > 0 && !err;) {
			const struct frame *f = session__frame(s, fr[j]);
			enum fg_color c = cls == FG_ON_CPU ? (f->kernel ? FG_COLOR_CPU_KERNEL : FG_COLOR_CPU)
							   : (f->kernel ? FG_COLOR_OFF_KERNEL : FG_COLOR_OFF);
			uint32_t *r = fr[j] < nfr ? refs[fr[j]] : NULL;

			if (r && r[0]) {
				sc.path[n++] = (struct fg_frame){ .color = c, .name_ref = r[0], .detail_ref = r[1] };
				continue;
			}
			sc.path[n] = to_fg(f, c, sc.names[n], sizeof(sc.names[n]), sc.details[n], sizeof(sc.details[n]));
			if (r) {
				uint32_t name, detail;

				err = fg_tree__intern(t, sc.path[n].name, &name);
				if (!err)
					err = fg_tree__intern(t, sc.path[n].detail, &detail);
				if (!err) {
					r[0] = name;
					r[1] = detail;
				}
			}
			n++;
		}
		if (!err && !o->per_thread)
			err = comm_ref(t, &sc.path[0], st->comm, &comm_refs, &cap_comm, none);
		if (!err && both)
			err = ref_of(t, &sc.path[1], &split_refs[cls], none);
		if (!err)
			err = fg_tree__add(t, sc.path, n, cls, st->period);
	}
	free(refs);
	free(comm_refs);
	path_scratch__free(&sc);
	return err;
}

int fg__from_offwake(struct fg_tree *t, struct session *s, const struct profile *p, int ev,
		     bool per_thread)
{
	struct path_scratch sc = {};
	uint32_t sep;
	int err = offwake__separator(s, &sep);

	for (size_t i = 0; i < profile__nr_stacks(p) && !err; i++) {
		const struct pstack *st = profile__stack(p, i);
		const uint32_t *fr = profile__frames(p, st);
		char group[64], ids[48];
		bool waker = false;
		uint32_t n = 0;

		if ((int)st->event != ev)
			continue;
		err = path_reserve(&sc, st->nr + 1);
		if (err)
			break;
		sc.path[n++] = group_frame(s, st, per_thread, group, sizeof(group), ids, sizeof(ids));
		/* leaf first: waker name, waker root .. leaf, --, sleeper leaf .. root */
		for (uint32_t j = st->nr; j-- > 0;) {
			const struct frame *f = session__frame(s, fr[j]);
			enum fg_color c;

			if (fr[j] == sep) {
				sc.path[n++] = (struct fg_frame){ .name = "--", .color = FG_COLOR_SEPARATOR };
				waker = true;
				continue;
			}
			if (!j && waker) { /* the waker's name */
				sc.path[n++] = (struct fg_frame){ .name = f->sym, .detail = "waker", .color = FG_COLOR_META };
				continue;
			}
			if (waker)
				c = f->kernel ? FG_COLOR_WAKER_KERNEL : FG_COLOR_WAKER;
			else
				c = f->kernel ? FG_COLOR_OFF_KERNEL : FG_COLOR_OFF;
			sc.path[n] = to_fg(f, c, sc.names[n], sizeof(sc.names[n]), sc.details[n], sizeof(sc.details[n]));
			n++;
		}
		err = fg_tree__add(t, sc.path, n, FG_OFF_CPU, st->period);
	}
	path_scratch__free(&sc);
	return err;
}

/* A label frame (an output's own: "[woken by X]", "[timer]"), not code. */
static bool is_label(const struct frame *f)
{
	return f && f->dso && !strcmp(f->dso, "[label]");
}

/* The marker frame that opens a hop of a chain: "[woken by COMM]". */
static bool is_hop_marker(const struct frame *f)
{
	return is_label(f) && !strncmp(f->sym, "[woken by ", 10);
}

int fg__from_chains(struct fg_tree *t, const struct session *s, const struct profile *p, int ev,
		    bool per_thread)
{
	struct path_scratch sc = {};
	int err = 0;

	for (size_t i = 0; i < profile__nr_stacks(p) && !err; i++) {
		const struct pstack *st = profile__stack(p, i);
		const uint32_t *fr = profile__frames(p, st);
		const struct frame *leaf = st->nr ? session__frame(s, fr[0]) : NULL;
		bool tag = is_label(leaf) && !is_hop_marker(leaf);
		uint32_t last = st->nr, n = 0, hop = 0;
		char group[64], ids[48];

		if ((int)st->event != ev)
			continue;
		err = path_reserve(&sc, st->nr + 1);
		if (err)
			break;
		/* the last hop starts after the innermost marker (frames are leaf first) */
		for (uint32_t j = 0; j < st->nr && last == st->nr; j++) {
			const struct frame *f = session__frame(s, fr[j]);

			if (is_hop_marker(f))
				last = j;
		}
		sc.path[n++] = group_frame(s, st, per_thread, group, sizeof(group), ids, sizeof(ids));
		for (uint32_t j = st->nr; j-- > 0;) {
			const struct frame *f = session__frame(s, fr[j]);
			enum fg_color c;

			if (is_label(f)) {
				bool marker = is_hop_marker(f);

				hop += marker;
				sc.path[n++] = (struct fg_frame){ .name = f->sym, .detail = marker ? "woken by" : "end",
							       .color = marker ? FG_COLOR_SEPARATOR : FG_COLOR_META };
				continue;
			}
			if (!hop)
				c = f->kernel ? FG_COLOR_OFF_KERNEL : FG_COLOR_OFF;
			else if (j < last && !tag)
				c = f->kernel ? FG_COLOR_CPU_KERNEL : FG_COLOR_CPU;
			else
				c = f->kernel ? FG_COLOR_WAKER_KERNEL : FG_COLOR_WAKER;
			sc.path[n] = to_fg(f, c, sc.names[n], sizeof(sc.names[n]), sc.details[n], sizeof(sc.details[n]));
			n++;
		}
		err = fg_tree__add(t, sc.path, n, FG_OFF_CPU, st->period);
	}
	path_scratch__free(&sc);
	return err;
}
