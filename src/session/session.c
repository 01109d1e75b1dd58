// SPDX-License-Identifier: GPL-2.0-only
/*
 * A session's life: open the file and the symbolizer, walk the records in
 * time order (side-band to the process model, samples to their frames and
 * the caller's callback), name the kernel addresses left for the end, and
 * answer what the outputs ask afterwards. The parts are in session_int.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/session_int.h"
#include "symbols/vdso.h"

static int on_record(void *ctx, const struct perf_rec *rec)
{
	struct session *s = ctx;

	if (rec->time && rec->time < PERF_OFFCPU_AT_END) { /* perf's "at the end" is no time */
		if (!s->first_time || rec->time < s->first_time)
			s->first_time = rec->time;
		if (rec->time > s->last_time)
			s->last_time = rec->time;
	}
	switch (rec->type) {
	case PERF_RECORD_SAMPLE:
		return sample__on_sample(s, rec);
	case PERF_RECORD_EXIT:
		return procs__on_exit(s, rec);
	case PERF_RECORD_COMM:
		return procs__on_comm(s, rec);
	case PERF_RECORD_FORK:
		return procs__on_fork(s, rec);
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		return procs__on_mmap(s, rec);
	}
	return 0;
}

/* The reader's warnings from the i-th on, to the caller's sink; returns the count. */
static int reader_warnings(struct session *s, int i)
{
	const char *w;

	for (; (w = perf_reader__warning(s->reader, i)); i++)
		msg__say(&s->opts.msg, MSG_WARNING, "%s", w);
	return i;
}

/*
 * The files the recording's samples hit (its build-id table), loaded in a
 * thread beside the walk, which would otherwise stop at each file's first
 * address to load it (18 files, 10-15 ms of a 130 ms report of a
 * system-wide 100 MB recording; libc's debug file alone 4-5 ms). A file
 * listed twice is asked for by its first id (perf_reader__build_id()).
 * Kernel, vDSO and anonymous names are not files. The first PRELOAD_MAX
 * files only (finding a name's first id is a scan of the table); the walk
 * loads the others, and those not queued when memory ran out.
 */
#define PRELOAD_MAX 256

static void preload_files(struct session *s)
{
	const uint8_t *bid;
	const char *name;
	size_t bsz, fsz;

	for (size_t i = 0; i < PRELOAD_MAX && perf_reader__build_id_at(s->reader, i, &name, &bid, &bsz);
	     i++) {
		if (name[0] != '/' || perf_reader__build_id(s->reader, name, &fsz) != bid)
			continue;
		if (symbolizer__preload(s->sym, name, bid, bsz))
			break;
	}
	symbolizer__preload_start(s->sym);
}

/* The symbolizer, told which kernel and which vDSO the recording saw. */
static int open_symbolizer(struct session *s, char *errbuf, size_t errlen)
{
	struct symbolizer_opts so = { 0 };
	const uint8_t *bid;
	const void *image;
	size_t bsz, len;

	so.srcline = s->opts.srcline;
	so.inlines = s->opts.inlines;
	so.demangle = !s->opts.no_demangle;
	so.kallsyms = s->opts.kallsyms;
	s->sym = symbolizer__new(&so);
	if (!s->sym) {
		snprintf(errbuf, errlen, "cannot create the symbolizer");
		return -ENOMEM;
	}
	bid = perf_reader__build_id(s->reader, "[kernel.kallsyms]", &bsz);
	if (bid)
		symbolizer__set_kernel_build_id(s->sym, bid, bsz);
	if (perf_reader__vdso(s->reader, &bid, &bsz, &image, &len) &&
	    symbolizer__add_image(s->sym, VDSO_NAME, bid, bsz, image, len)) {
		snprintf(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	/* kallsyms loads beside the walk; a lookup before the end (script) waits for it */
	if (!s->opts.no_symbols && !s->opts.no_kernel_names) {
		s->kernel_deferred = s->opts.defer_kernel;
		symbolizer__load_kernel_async(s->sym);
	}
	if (!s->opts.no_symbols)
		preload_files(s);
	return 0;
}

struct session *session__new(const char *path, const struct session_opts *opts,
			     char *errbuf, size_t errlen)
{
	struct session *s = calloc(1, sizeof(*s));

	if (!s) {
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	if (opts)
		s->opts = *opts;
	procs__init(s);
	resolve__init(s);
	s->reader = perf_reader__open(path, errbuf, errlen);
	if (!s->reader)
		goto cleanup;
	reader_warnings(s, 0);
	if (open_symbolizer(s, errbuf, errlen))
		goto cleanup;
	return s;
cleanup:
	session__free(s);
	return NULL;
}

void session__free(struct session *s)
{
	if (!s)
		return;
	symbolizer__free(s->sym);
	perf_reader__free(s->reader);
	procs__free(s);
	resolve__free(s);
	sample__done(s);
	free(s);
}

int session__run(struct session *s, session_sample_cb cb, void *ctx)
{
	int seen = 0, err;

	while (perf_reader__warning(s->reader, seen))
		seen++; /* said when the file was opened */
	s->cb = cb;
	s->cb_ctx = ctx;
	err = sample__init(s);
	if (!err)
		err = perf_reader__process(s->reader, on_record, s);
	sample__done(s); /* what only the walk needs goes before the outputs' work */
	reader_warnings(s, seen);
	if (!err && s->kernel_deferred)
		err = resolve__kernel_finish(s);
	if (err) {
		if (perf_reader__error(s->reader)[0])
			snprintf(s->err, sizeof(s->err), "%s", perf_reader__error(s->reader));
		else
			snprintf(s->err, sizeof(s->err), "%s", strerror(-err));
	}
	s->stats.lost = perf_reader__lost(s->reader);
	return err;
}

const char *session__error(const struct session *s)
{
	return s->err;
}

const uint32_t *session__remap(const struct session *s, uint32_t *n)
{
	*n = s->nr_remap;
	return s->remap;
}

const struct perf_reader *session__reader(const struct session *s)
{
	return s->reader;
}

int session__event(const struct session *s, const char *name)
{
	for (int i = 0; i < perf_reader__nr_attrs(s->reader); i++)
		if (!strcmp(perf_reader__attr(s->reader, i)->name, name))
			return i;
	return -1;
}

const struct frame *session__frame(const struct session *s, uint32_t id)
{
	return id < htab__n(&s->frames) ? htab__at(&s->frames, id) : NULL;
}

void session__loc(const struct session *s, uint32_t loc, uint64_t *addr, uint64_t *off)
{
	const struct res *r = &s->res[loc];

	*addr = addr_at(s, r->ent)->addr;
	*off = r->off;
}

uint32_t session__nr_frames(const struct session *s)
{
	return htab__n(&s->frames);
}

const char *session__comm(const struct session *s, uint32_t id)
{
	return id < htab__n(&s->comms) ? *(const char **)htab__at(&s->comms, id) : "[unknown]";
}

void session__stats(const struct session *s, struct session_stats *st)
{
	*st = s->stats;
}

int session__label_frame(struct session *s, const char *name, uint32_t *id)
{
	struct frame f = { 0 };

	f.sym = intern__str(&s->strs, name);
	f.dso = f.dso_short = intern__str(&s->strs, "[label]");
	if (!f.sym || !f.dso)
		return -ENOMEM;
	return resolve__frame(s, &f, id);
}

bool session__thread(const struct session *s, uint32_t tid, uint64_t start,
		     struct session_thread *out)
{
	const struct thread *t = procs__thread_peek(s, tid);

	if (t && t->fork_time == start) {
		*out = (struct session_thread){ t->pid, t->tid, t->comm, t->fork_time, t->exit_time };
		return true;
	}
	for (size_t i = 0; i < s->nr_lives; i++)
		if (s->lives[i].tid == tid && s->lives[i].fork_time == start) {
			*out = s->lives[i];
			return true;
		}
	if (!t)
		return false;
	/* no life started then (a sample before its FORK record): the latest one */
	*out = (struct session_thread){ t->pid, t->tid, t->comm, t->fork_time, t->exit_time };
	return true;
}

bool session__time_span(const struct session *s, uint64_t *first, uint64_t *last)
{
	*first = s->first_time;
	*last = s->last_time;
	return s->first_time != 0;
}
