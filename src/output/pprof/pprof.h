/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pprof output (`offcpu report --pprof FILE`): the aggregated profile as a
 * gzipped profile.proto, read by go tool pprof, Pyroscope and Grafana.
 *
 * Sample types, in this order (pprof's convention puts the event count
 * first):
 *   samples/count            cpu-clock samples plus off-CPU intervals
 *   cpu/nanoseconds          on-CPU time (cpu-clock or task-clock periods)
 *   off_cpu/nanoseconds      off-CPU time (offcpu-time periods)
 *   off_cpu_intervals/count  times the thread blocked there
 * The default sample type is off_cpu when the file has off-CPU time, else
 * cpu. One sample per distinct (event, stack, pid, tid, comm, state) with
 * labels pid, tid (numbers), comm and, for off-CPU, state (S or D).
 * Locations are function-level frames (an inlined function is a location
 * of its own), each with one line and function; mappings are the DSOs, with
 * the build id of the file's BUILD_ID table as lowercase hex.
 */
#ifndef OFFCPU_OUTPUT_PPROF_PPROF_H
#define OFFCPU_OUTPUT_PPROF_PPROF_H

#include "output/pprof/pb.h"
#include "output/report.h"

struct gzip_stream;

/*
 * Encode the stacks of events cpu_ev and off_ev (attr indexes, -1 for none)
 * as an uncompressed Profile message: into out; with a stream z, the
 * samples go to z as they fill out (pprof__flush), and what out holds at
 * the end is the message's rest. 0 or negative errno.
 */
int pprof__encode(struct pb *out, struct gzip_stream *z, const struct session *s,
		  const struct profile *p, int cpu_ev, int off_ev, const struct report_opts *o);
/* What out holds, to z (between two top-level fields). 0 or negative errno. */
int pprof__flush(struct pb *out, struct gzip_stream *z);
/*
 * `offcpu report --pprof path`: pick the time events, encode, gzip. 0, or
 * negative errno with a message in errbuf (-ENODATA, nothing written:
 * no time event has samples); the events skipped and what was written
 * are notes to the sink.
 */
int pprof__write(const char *path, const struct session *s, const struct profile *p,
		 const struct report_opts *o, const struct msg_sink *ms, char *errbuf, size_t errlen);

#endif
