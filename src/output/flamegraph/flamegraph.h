/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Flame graphs: a tree of named frames with nanosecond values, drawn as a
 * self-contained interactive SVG.
 *
 * The tree is the renderer's only input, so any producer can feed it:
 * fg__from_profile() adds the stacks of a recording (under each comm or
 * thread, an [on-cpu] and an [off-cpu] frame, then the stack outermost
 * first); an off-wake producer adds the sleeper's frames, a separator frame
 * "--" (FG_COLOR_SEPARATOR), then the waker's frames (FG_COLOR_WAKER*),
 * with the sleeper's off-CPU time as the value. Frames that are equal
 * (name, detail, colour) under the same parent are one node.
 */
#ifndef OFFCPU_OUTPUT_FLAMEGRAPH_FLAMEGRAPH_H
#define OFFCPU_OUTPUT_FLAMEGRAPH_FLAMEGRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/profile.h"
#include "profile/report_opts.h"
#include "session/session.h"
#include "util/msg.h"

/* What a value measures; every node sums each class apart (shown in its title). */
enum fg_class { FG_ON_CPU, FG_OFF_CPU, FG_NR_CLASSES };

/* Palettes: warm for on-CPU, cool for off-CPU, purple for wakers, grey for the rest. */
enum fg_color {
	FG_COLOR_META,        /* root, comm/thread frames */
	FG_COLOR_CPU,
	FG_COLOR_CPU_KERNEL,
	FG_COLOR_OFF,
	FG_COLOR_OFF_KERNEL,
	FG_COLOR_WAKER,
	FG_COLOR_WAKER_KERNEL,
	FG_COLOR_SEPARATOR,
	FG_NR_COLORS
};

struct fg_frame {
	const char *name;   /* drawn, searched, first line of the tooltip */
	const char *detail; /* tooltip only (DSO, thread ids), or NULL */
	enum fg_color color;
	/*
	 * name and detail as fg_tree__intern() made them, for a caller that
	 * adds one frame to many paths (each string is then hashed once);
	 * 0: name and detail are taken.
	 */
	uint32_t name_ref, detail_ref;
};

struct fg_tree;

struct fg_tree *fg_tree__new(void);
void fg_tree__free(struct fg_tree *t);

/* s (NULL: none) interned in t, as fg_frame.name_ref or detail_ref: 0 or -ENOMEM. */
int fg_tree__intern(struct fg_tree *t, const char *s, uint32_t *ref);

/*
 * Add value (ns) of class cls along a path of n frames, outermost first,
 * below the root "all". Strings are copied. 0 or -ENOMEM (the tree is then
 * still consistent, without this path's value).
 */
int fg_tree__add(struct fg_tree *t, const struct fg_frame *path, size_t n, enum fg_class cls,
		 uint64_t value);

uint64_t fg_tree__total(const struct fg_tree *t, enum fg_class cls);
size_t fg_tree__nr_nodes(const struct fg_tree *t);

struct fg_svg_opts {
	const char *title;
	const char *subtitle;  /* second line, or NULL */
	unsigned int width;    /* px, default 1200 */
	double min_width;      /* frames narrower than this (px) are left out, with their children */
	bool inverted;         /* icicle: root at the top */
};

/*
 * Write the SVG: each drawn frame a <g> holding <title> (name, time and
 * share of the whole, detail) and <rect> (and <text> when the label fits),
 * with inline CSS and JavaScript for hover details, click zoom, search
 * (button, Ctrl-F) and reset. Children are ordered by name, widths are
 * proportional to nanoseconds. *nr_drawn (if not NULL) gets the number of
 * frames drawn. 0, -ENOMEM or -EIO.
 */
int fg_tree__write_svg(const struct fg_tree *t, FILE *f, const struct fg_svg_opts *o,
		       size_t *nr_drawn);

struct fg_profile_opts {
	int cpu_event, off_event; /* attr indexes, -1 to leave out */
	bool per_thread;          /* "comm-pid/tid" frames instead of comm (needs pid and tid kept) */
};

/*
 * Add the profile's stacks of the two events: comm (or thread) frame, then
 * [on-cpu] / [off-cpu] when both events are drawn, then the stack outermost
 * first, coloured by event and by kernel/user. 0 or -ENOMEM.
 */
int fg__from_profile(struct fg_tree *t, const struct session *s, const struct profile *p,
		     const struct fg_profile_opts *o);

/*
 * Add the off-wake stacks of event ev of p (profile__read() with
 * --wakeups, profile/offwake.h): comm (or thread) frame, the sleeper's stack
 * outermost first in off-CPU colours, "--", the waker's stack innermost
 * first in waker colours, the waker's name; the value is the sleeper's
 * off-CPU time (FG_OFF_CPU). 0 or -ENOMEM.
 */
int fg__from_offwake(struct fg_tree *t, struct session *s, const struct profile *p, int ev,
		     bool per_thread);

/*
 * Add the wait chains of event ev of p (chains__profile(), profile/chains.h):
 * comm (or thread) frame, the sleeper's stack outermost first in off-CPU
 * colours, then per hop its "[woken by X]" frame and X's stack: in waker
 * colours where X waited itself, in on-CPU colours for X's on-CPU time
 * (the path's last hop, with no end tag), the end's tag ([timer], [io]...)
 * last. The value is the sleeper's off-CPU time (FG_OFF_CPU). 0 or -ENOMEM.
 */
int fg__from_chains(struct fg_tree *t, const struct session *s, const struct profile *p, int ev,
		    bool per_thread);

/* fg_tree__write_svg() into path ("-": stdout) whole or not at all (util/outfile.h). */
int fg_tree__write_file(const struct fg_tree *t, const char *path, const struct fg_svg_opts *so,
			size_t *drawn);

/* What `offcpu flamegraph` draws. */
struct fg_draw {
	const char *output;    /* the SVG, "-" for stdout */
	bool cpu_only, off_only, per_thread;
	bool wakeups;          /* the off-wake stacks (a profile read with o->wakeups) */
	bool chains;           /* wait chains (a profile made by chains__profile) */
	struct fg_svg_opts svg; /* title NULL: one after what is drawn */
};

/* What was drawn, for the command's summary line. */
struct fg_drawn {
	size_t frames;
	char what[160];        /* "on-CPU 1.20 s, off-CPU 3.40 s", "no ... samples" */
	char sub[4200];        /* the subtitle: "FILE: what" */
	const char *title;     /* the default title */
	bool empty;            /* neither on-CPU nor off-CPU time to draw: -ENODATA, nothing written */
};

/*
 * Draw the profile of s as fd says into fd->output: 0, or a negative errno
 * with a message in err. The events left out are notes to the sink.
 */
int flamegraph__draw(const struct fg_draw *fd, const struct report_opts *o, struct session *s,
		     const struct profile *p, const struct msg_sink *ms, struct fg_drawn *out,
		     char *err, size_t errlen);

#endif
