/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `offcpu timeline`: a recording's timeline (profile/timeline.h) written
 * for a timeline viewer.
 *
 *   Perfetto (timeline_perfetto.c): a protobuf Trace for ui.perfetto.dev
 *   and trace processor. A track per thread under its process; on-CPU,
 *   off-CPU and run-queue slices; interned callstacks on the waits and on
 *   the CPU samples; a flow from each waker to the wait it ended; summed
 *   short waits as instants on a track beside their thread's.
 *
 *   speedscope (timeline_speedscope.c): speedscope's own JSON, an evented
 *   profile per thread: each slice a stack under a marker frame
 *   ([on-cpu], [off-cpu S], [runnable]...), CPU samples' stacks inside
 *   the on-CPU slices. Summed short waits have no times: left out, and
 *   counted.
 */
#ifndef OFFCPU_OUTPUT_TIMELINE_H
#define OFFCPU_OUTPUT_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "profile/timeline.h"
#include "util/msg.h"

/* What a writer wrote, for the command's last line. */
struct tl_written {
	uint64_t bytes;
	size_t threads, slices, samples, flows, summed;
};

/*
 * Write tl to path ("-" for standard output) whole or not at all
 * (util/outfile.h). 0, or a negative errno with a message in err (empty
 * when it is only "out of memory"); notes to ms.
 */
int timeline__perfetto(const struct timeline *tl, const char *path, const struct msg_sink *ms,
		       struct tl_written *w, char *err, size_t errlen);
int timeline__speedscope(const struct timeline *tl, const char *path, const struct msg_sink *ms,
			 struct tl_written *w, char *err, size_t errlen);

/*
 * A slice's name in both outputs: "S anon_pipe_read" (off CPU, by state
 * and where it blocked), "runnable (woken)" / "(preempted)" / "(new)",
 * "on CPU", or for a stretch that may hold waits nobody timed "on CPU or
 * runnable" / "on CPU or short waits". Returns buf.
 */
const char *tl_slice__name(const struct timeline *tl, const struct tl_slice *sl, char *buf,
			   size_t len);
/* What an inexact on-CPU slice may hold besides time on CPU, in words; NULL when exact. */
const char *tl_slice__may_hold(const struct tl_slice *sl);
/* The name of a thread's waker, "comm pid/tid" (its tid alone when it has no name). */
void tl_thread__label(const struct tl_thread *t, char *buf, size_t len);

#endif
