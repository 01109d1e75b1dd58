// SPDX-License-Identifier: GPL-2.0-only
/*
 * profile.proto from the aggregated profile. Samples are written first;
 * the locations, functions and mappings they use are created on first
 * sight and written after them, the string table last (protobuf does not
 * care about field order, only about order within a repeated field).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output/format.h"
#include "output/outputs.h"
#include "output/pprof/pprof.h"
#include "util/hash.h"
#include "util/htab.h"
#include "util/gzip.h"
#include "util/intern.h"
#include "util/outfile.h"
#include "util/vec.h"

/* Field numbers of profile.proto (github.com/google/pprof/proto/profile.proto). */
enum {
	PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_MAPPING = 3, PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5, PROFILE_STRING_TABLE = 6, PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11, PROFILE_PERIOD = 12, PROFILE_COMMENT = 13,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,
	VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3,
	LABEL_KEY = 1, LABEL_STR = 2, LABEL_NUM = 3,
	MAPPING_ID = 1, MAPPING_FILENAME = 5, MAPPING_BUILD_ID = 6, MAPPING_HAS_FUNCTIONS = 7,
	MAPPING_HAS_FILENAMES = 8, MAPPING_HAS_LINE_NUMBERS = 9, MAPPING_HAS_INLINE_FRAMES = 10,
	LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_ADDRESS = 3, LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1, LINE_LINE = 2,
	FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3, FUNCTION_FILENAME = 4,
};

enum { V_SAMPLES, V_CPU, V_OFF_CPU, V_INTERVALS, NR_VALUES };

struct mapping {
	const char *dso; /* session string: one mapping per DSO */
	uint64_t filename, build_id;
};

struct function {
	uint64_t name, filename;
};

/* The profile goes to gzip in pieces of about this, as the samples are encoded. */
#define PIECE (1u << 20)

struct enc {
	const struct session *s;
	const struct report_opts *o;
	struct gzip_stream *z;  /* NULL: all in the caller's buffer */
	struct intern st;       /* the string table, in order */
	struct htab maps;       /* struct mapping, by DSO; id = position + 1 */
	struct htab fns;        /* struct function, by (name, file); id = position + 1 */
	uint32_t *loc_of_frame; /* session frame id -> location id, 0 when not yet */
	uint32_t *loc_frames;   /* location id - 1 -> frame id */
	uint32_t *loc_fn;       /* location id - 1 -> function id */
	uint32_t *loc_map;      /* location id - 1 -> mapping id */
	size_t nr_locs;
	uint32_t *locs;         /* one sample's location ids */
	size_t cap_locs;
	int64_t *comm_str;      /* session comm id -> its string's id + 1, 0 when not yet */
	size_t cap_comm;
	int64_t state_str[256]; /* a state letter's string id + 1, 0 when not yet */
};

/* Index of s in the string table, added on first sight; -1 on ENOMEM. */
static int64_t str_id(struct intern *t, const char *s)
{
	uint32_t id;

	if (intern__id(t, s, &id))
		return -1;
	return id;
}

static const struct mapping *map_at(const struct enc *e, size_t i)
{
	return htab__at(&e->maps, i);
}

static const struct function *fn_at(const struct enc *e, size_t i)
{
	return htab__at(&e->fns, i);
}

static bool map_eq(const void *entry, const void *key)
{
	return ((const struct mapping *)entry)->dso == key;
}

/* Mapping id (1-based) of a frame's DSO; 0 on ENOMEM. */
static uint32_t mapping_id(struct enc *e, const struct frame *f)
{
	struct mapping *m;
	size_t bsz = 0;
	const uint8_t *bid;
	char hex[2 * 64 + 1];
	int64_t fn, bi = 0;
	bool added;

	m = htab__get(&e->maps, hash__mix((uintptr_t)f->dso), map_eq, f->dso, &added);
	if (!m)
		return 0;
	if (!added)
		return m - map_at(e, 0) + 1;
	fn = str_id(&e->st, f->dso);
	bid = perf_reader__build_id(session__reader(e->s), f->dso, &bsz);
	if (bid && bsz) {
		if (bsz > 64)
			bsz = 64;
		for (size_t i = 0; i < bsz; i++)
			snprintf(hex + 2 * i, 3, "%02x", bid[i]);
		bi = str_id(&e->st, hex);
	}
	if (fn < 0 || bi < 0) {
		htab__unget(&e->maps);
		return 0;
	}
	m->dso = f->dso;
	m->filename = fn;
	m->build_id = bi;
	return htab__n(&e->maps);
}

static bool fn_eq(const void *entry, const void *key)
{
	const struct function *a = entry, *b = key;

	return a->name == b->name && a->filename == b->filename;
}

/* Function id (1-based) for a frame's (name, source file); 0 on ENOMEM. */
static uint32_t function_id(struct enc *e, const struct frame *f)
{
	char buf[512];
	int64_t name = str_id(&e->st, frame__name(f, buf, sizeof(buf)));
	int64_t file = f->srcfile ? str_id(&e->st, f->srcfile) : 0;
	struct function k, *fn;
	bool added;

	if (name < 0 || file < 0)
		return 0;
	k.name = name;
	k.filename = file;
	fn = htab__get(&e->fns, hash__mix((uint64_t)name << 32 ^ (uint64_t)file), fn_eq, &k, &added);
	if (!fn)
		return 0;
	*fn = k;
	return fn - fn_at(e, 0) + 1;
}

/* Location id (1-based) of a session frame, one per frame id; 0 on ENOMEM. */
static uint32_t location_id(struct enc *e, uint32_t frame)
{
	const struct frame *f;
	uint32_t fn, map;

	if (e->loc_of_frame[frame])
		return e->loc_of_frame[frame];
	f = session__frame(e->s, frame);
	fn = function_id(e, f);
	map = mapping_id(e, f);
	if (!fn || !map)
		return 0;
	e->loc_frames[e->nr_locs] = frame;
	e->loc_fn[e->nr_locs] = fn;
	e->loc_map[e->nr_locs] = map;
	e->loc_of_frame[frame] = ++e->nr_locs;
	return e->nr_locs;
}

static void value_type(struct pb *b, uint32_t field, int64_t type, int64_t unit)
{
	size_t m = pb__begin(b, field);

	pb__uint(b, VALUE_TYPE_TYPE, type);
	pb__uint(b, VALUE_TYPE_UNIT, unit);
	pb__end(b, m);
}

static void label(struct pb *b, int64_t key, int64_t str, int64_t num)
{
	static const uint32_t fields[] = { LABEL_KEY, LABEL_STR, LABEL_NUM };
	const uint64_t vals[] = { (uint64_t)key, (uint64_t)str, (uint64_t)num };

	pb__uint_msg(b, SAMPLE_LABEL, 3, fields, vals);
}

int pprof__flush(struct pb *b, struct gzip_stream *z)
{
	size_t len, cap;
	void *data;
	int err;

	if (pb__error(b))
		return pb__error(b);
	data = pb__take(b, &len);
	if (!data)
		return 0;
	err = gzip__stream_put(z, data, len);
	data = gzip__stream_spare(z, &cap); /* the next piece in a buffer whose pages are there */
	if (data)
		pb__give(b, data, cap);
	return err;
}

/* The string id of session comm id comm, looked up once per comm: -1 on ENOMEM. */
static int64_t comm_id(struct enc *e, uint32_t comm)
{
	int64_t id;

	if (comm < e->cap_comm && e->comm_str[comm])
		return e->comm_str[comm] - 1;
	if (vec__reserve_zeroed((void **)&e->comm_str, &e->cap_comm, (size_t)comm + 1,
				sizeof(*e->comm_str), 256))
		return -1;
	id = str_id(&e->st, session__comm(e->s, comm));
	if (id >= 0)
		e->comm_str[comm] = id + 1;
	return id;
}

/* The string id of a state letter, looked up once per letter: -1 on ENOMEM. */
static int64_t state_id(struct enc *e, char state)
{
	char s[2] = { state, 0 };
	int64_t *c = &e->state_str[(unsigned char)state];

	if (!*c) {
		int64_t id = str_id(&e->st, s);

		if (id < 0)
			return -1;
		*c = id + 1;
	}
	return *c - 1;
}

/*
 * What is encoded so far to the gzip stream's thread once it is a piece:
 * between two top-level fields only. 0 or a negative errno.
 */
static int piece_out(struct enc *e, struct pb *b)
{
	return e->z && pb__len(b) >= PIECE ? pprof__flush(b, e->z) : 0;
}

/* One Sample per profile stack of the chosen events. */
static int put_samples(struct enc *e, struct pb *b, const struct profile *p, int cpu_ev,
		       int off_ev, uint64_t tot[NR_VALUES])
{
	int64_t k_pid = str_id(&e->st, "pid"), k_tid = str_id(&e->st, "tid");
	int64_t k_comm = str_id(&e->st, "comm"), k_state = str_id(&e->st, "state");

	if (k_pid < 0 || k_tid < 0 || k_comm < 0 || k_state < 0)
		return -ENOMEM;
	for (size_t i = 0; i < profile__nr_stacks(p); i++) {
		const struct pstack *st = profile__stack(p, i);
		const uint32_t *fr = profile__frames(p, st);
		uint64_t v[NR_VALUES] = { 0 };
		int64_t comm;
		size_t m;
		int err;

		if ((int)st->event == cpu_ev) {
			v[V_SAMPLES] = st->samples;
			v[V_CPU] = st->period;
		} else if ((int)st->event == off_ev) {
			v[V_SAMPLES] = st->count;
			v[V_OFF_CPU] = st->period;
			v[V_INTERVALS] = st->count;
		} else {
			continue;
		}
		comm = comm_id(e, st->comm);
		if (comm < 0 || vec__reserve((void **)&e->locs, &e->cap_locs, st->nr ? st->nr : 1,
					     sizeof(*e->locs), 64))
			return -ENOMEM;
		for (uint32_t j = 0; j < st->nr; j++) { /* leaf first, as pprof wants */
			e->locs[j] = location_id(e, fr[j]);
			if (!e->locs[j])
				return -ENOMEM;
		}
		m = pb__begin(b, PROFILE_SAMPLE);
		pb__packed_u32(b, SAMPLE_LOCATION_ID, e->locs, st->nr);
		pb__packed_u64(b, SAMPLE_VALUE, v, NR_VALUES);
		for (int j = 0; j < NR_VALUES; j++)
			tot[j] += v[j];
		if (st->pid)
			label(b, k_pid, 0, (int32_t)st->pid);
		if (st->tid)
			label(b, k_tid, 0, (int32_t)st->tid);
		label(b, k_comm, comm, 0);
		if ((int)st->event == off_ev && st->state) {
			int64_t sv = state_id(e, st->state);

			if (sv < 0)
				return -ENOMEM;
			label(b, k_state, sv, 0);
		}
		pb__end(b, m);
		err = piece_out(e, b);
		if (err)
			return err;
	}
	return 0;
}

/*
 * pprof takes the first mapping for the main binary (its "File:" line):
 * the executable (a file, not a shared object) with the most locations,
 * moved there by swapping two ids. Returns the new id of each mapping
 * (index: old id - 1), or NULL.
 */
static uint32_t *main_first(const struct enc *e)
{
	size_t nr_maps = htab__n(&e->maps);
	uint32_t *id = malloc((nr_maps + 1) * sizeof(*id)), *nloc;
	size_t best = SIZE_MAX;

	nloc = calloc(nr_maps + 1, sizeof(*nloc));
	if (!id || !nloc) {
		free(id);
		free(nloc);
		return NULL;
	}
	for (size_t i = 0; i < e->nr_locs; i++)
		nloc[e->loc_map[i] - 1]++;
	for (size_t i = 0; i < nr_maps; i++) {
		const char *d = map_at(e, i)->dso, *base = strrchr(d, '/');

		id[i] = i + 1;
		if (d[0] == '/' && !strstr(base, ".so") && (best == SIZE_MAX || nloc[i] > nloc[best]))
			best = i;
	}
	if (best != SIZE_MAX) {
		id[best] = 1;
		id[0] = best + 1;
	}
	free(nloc);
	return id;
}

/*
 * Mappings, locations and functions, in pieces to the gzip stream's thread
 * as they grow (the tables of a big profile are megabytes: in one piece,
 * one thread compressed them after the encoding ended).
 */
static int put_tables(struct enc *e, struct pb *b)
{
	uint32_t *id = main_first(e);
	int err = 0;

	if (!id)
		return -ENOMEM;
	for (size_t j = 0; j < htab__n(&e->maps); j++) {
		size_t m = pb__begin(b, PROFILE_MAPPING), i = id[j] - 1; /* a swap is its own inverse */

		pb__uint(b, MAPPING_ID, j + 1);
		pb__uint(b, MAPPING_FILENAME, map_at(e, i)->filename);
		pb__uint(b, MAPPING_BUILD_ID, map_at(e, i)->build_id);
		pb__uint(b, MAPPING_HAS_FUNCTIONS, 1);
		pb__uint(b, MAPPING_HAS_FILENAMES, e->o && e->o->srcline);
		pb__uint(b, MAPPING_HAS_LINE_NUMBERS, e->o && e->o->srcline);
		pb__uint(b, MAPPING_HAS_INLINE_FRAMES, e->o && e->o->inlines);
		pb__end(b, m);
	}
	for (size_t i = 0; i < e->nr_locs; i++) {
		const struct frame *f = session__frame(e->s, e->loc_frames[i]);
		size_t m = pb__begin(b, PROFILE_LOCATION), ml;

		pb__uint(b, LOCATION_ID, i + 1);
		pb__uint(b, LOCATION_MAPPING_ID, id[e->loc_map[i] - 1]);
		pb__uint(b, LOCATION_ADDRESS, f->sym ? 0 : f->addr);
		ml = pb__begin(b, LOCATION_LINE);
		pb__uint(b, LINE_FUNCTION_ID, e->loc_fn[i]);
		pb__uint(b, LINE_LINE, f->line);
		pb__end(b, ml);
		pb__end(b, m);
		err = piece_out(e, b);
		if (err)
			goto cleanup;
	}
	for (size_t i = 0; i < htab__n(&e->fns); i++) {
		size_t m = pb__begin(b, PROFILE_FUNCTION);

		pb__uint(b, FUNCTION_ID, i + 1);
		pb__uint(b, FUNCTION_NAME, fn_at(e, i)->name);
		pb__uint(b, FUNCTION_SYSTEM_NAME, fn_at(e, i)->name);
		pb__uint(b, FUNCTION_FILENAME, fn_at(e, i)->filename);
		pb__end(b, m);
		err = piece_out(e, b);
		if (err)
			goto cleanup;
	}
cleanup:
	free(id);
	return err;
}

/* period_type, period (from the on-CPU event's attr), duration and comment. */
static int put_header(struct enc *e, struct pb *b, int cpu_ev, int64_t cpu, int64_t ns)
{
	const struct perf_reader *r = session__reader(e->s);
	uint64_t first, last, period = 0;
	char buf[4200];
	int64_t c;

	if (cpu_ev >= 0) {
		const struct perf_event_attr *a = &perf_reader__attr(r, cpu_ev)->attr;

		if (a->freq && a->sample_freq)
			period = (1000000000ULL + a->sample_freq / 2) / a->sample_freq;
		else if (!a->freq)
			period = a->sample_period;
		value_type(b, PROFILE_PERIOD_TYPE, cpu, ns);
		pb__uint(b, PROFILE_PERIOD, period);
	}
	if (report__window(e->s, &first, &last) && last > first)
		pb__uint(b, PROFILE_DURATION_NANOS, last - first);
	snprintf(buf, sizeof(buf), "offcpu report --pprof of %s", e->o ? e->o->input : "perf.data");
	c = str_id(&e->st, buf);
	if (c < 0)
		return -ENOMEM;
	pb__uint(b, PROFILE_COMMENT, c);
	return 0;
}

static void enc_free(struct enc *e)
{
	intern__free(&e->st);
	htab__free(&e->maps);
	htab__free(&e->fns);
	free(e->loc_of_frame);
	free(e->loc_frames);
	free(e->loc_fn);
	free(e->loc_map);
	free(e->locs);
	free(e->comm_str);
}

int pprof__encode(struct pb *out, struct gzip_stream *z, const struct session *s,
		  const struct profile *p, int cpu_ev, int off_ev, const struct report_opts *o)
{
	static const char *const types[NR_VALUES][2] = {
		[V_SAMPLES] = { "samples", "count" },
		[V_CPU] = { "cpu", "nanoseconds" },
		[V_OFF_CPU] = { "off_cpu", "nanoseconds" },
		[V_INTERVALS] = { "off_cpu_intervals", "count" },
	};
	struct enc e = { .s = s, .o = o, .z = z };
	uint32_t nf = session__nr_frames(s);
	uint64_t tot[NR_VALUES] = { 0 };
	int64_t ids[NR_VALUES][2];
	int err = -ENOMEM;

	intern__init(&e.st);
	htab__init(&e.maps, sizeof(struct mapping));
	htab__init(&e.fns, sizeof(struct function));
	e.loc_of_frame = calloc(nf + 1, sizeof(uint32_t));
	e.loc_frames = malloc((nf + 1) * sizeof(uint32_t));
	e.loc_fn = malloc((nf + 1) * sizeof(uint32_t));
	e.loc_map = malloc((nf + 1) * sizeof(uint32_t));
	if (!e.loc_of_frame || !e.loc_frames || !e.loc_fn || !e.loc_map || str_id(&e.st, "") != 0)
		goto cleanup;
	for (int i = 0; i < NR_VALUES; i++) {
		ids[i][0] = str_id(&e.st, types[i][0]);
		ids[i][1] = str_id(&e.st, types[i][1]);
		if (ids[i][0] < 0 || ids[i][1] < 0)
			goto cleanup;
		value_type(out, PROFILE_SAMPLE_TYPE, ids[i][0], ids[i][1]);
	}
	err = put_samples(&e, out, p, cpu_ev, off_ev, tot);
	if (err)
		goto cleanup;
	err = put_tables(&e, out);
	if (err)
		goto cleanup;
	err = put_header(&e, out, cpu_ev, ids[V_CPU][0], ids[V_CPU][1]);
	if (err)
		goto cleanup;
	pb__uint(out, PROFILE_DEFAULT_SAMPLE_TYPE, tot[V_OFF_CPU] ? ids[V_OFF_CPU][0] : ids[V_CPU][0]);
	for (size_t i = 0; i < intern__n(&e.st) && !err; i++) {
		pb__string(out, PROFILE_STRING_TABLE, intern__at(&e.st, i));
		err = piece_out(&e, out);
	}
	if (!err)
		err = pb__error(out);
cleanup:
	enc_free(&e);
	return err;
}

/*
 * Encode into a gzip stream to path: the samples go to the stream's thread
 * a piece at a time while the rest is encoded. Level 1, as Go's
 * runtime/pprof writes its profiles: on a 13.7 MB profile 0.15 s against
 * level 6's 0.30 s, for a file 14 % larger. 0 or a negative errno, with
 * *encoding telling whose.
 */
static int encode_to(const char *path, struct pb *b, const struct session *s,
		     const struct profile *p, int cpu, int off, const struct report_opts *o,
		     bool *encoding)
{
	struct outfile of;
	struct gzip_stream *z;
	int err = outfile__open(&of, path, 0644), zerr;

	*encoding = false;
	if (err)
		return err;
	z = gzip__stream_new(of.fd, 1);
	if (!z) {
		err = -ENOMEM;
	} else {
		err = pprof__encode(b, z, s, p, cpu, off, o);
		*encoding = err != 0;
		if (!err)
			err = pprof__flush(b, z); /* the tables and strings */
		zerr = gzip__stream_finish(z, !err); /* after an error, nothing goes out */
		if (!err)
			err = zerr;
	}
	if (close(of.fd) && !err)
		err = -errno; /* a full disk can say so at close */
	return outfile__commit(&of, err);
}

int pprof__write(const char *path, const struct session *s, const struct profile *p,
		 const struct report_opts *o, const struct msg_sink *ms, char *errbuf, size_t errlen)
{
	struct pb *b = pb__new();
	bool encoding;
	int cpu, off, err;

	if (!b) {
		snprintf(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	profile__time_events(p, s, ms, &cpu, &off);
	if (cpu < 0 && off < 0) { /* an empty profile is no answer: nothing is written */
		snprintf(errbuf, errlen, "%s: no on-CPU or off-CPU samples%s: %s not written", o->input,
			 report__filtered(o) ? " that pass the filters" : "", path);
		err = -ENODATA;
		goto cleanup;
	}
	err = encode_to(path, b, s, p, cpu, off, o, &encoding);
	if (err) {
		if (encoding)
			snprintf(errbuf, errlen, "--pprof: %s", strerror(-err));
		else
			snprintf(errbuf, errlen, "cannot write %s: %s", path, strerror(-err));
		goto cleanup;
	}
	{
		char on[32] = "-", offt[32] = "-";

		if (cpu >= 0)
			report__fmt_ns(on, sizeof(on), profile__event(p, cpu)->period);
		if (off >= 0)
			report__fmt_ns(offt, sizeof(offt), profile__event(p, off)->period);
		msg__say(ms, MSG_NOTE, "wrote %s: on-CPU %s, off-CPU %s (go tool pprof -http=: %s)", path,
			 on, offt, path);
	}
cleanup:
	pb__free(b);
	return err;
}

/* Its samples carry pid and tid labels. */
static unsigned int pprof_prepare(struct report_opts *o, const struct output_choice *c)
{
	(void)o;
	(void)c;
	return PROFILE_KEEP_PID | PROFILE_KEEP_TID;
}

static int pprof_write(const struct output_run *r)
{
	return pprof__write(r->arg, r->s, r->p, r->o, r->ms, r->err, r->errlen);
}

const struct report_output pprof_output = {
	.name = "pprof",
	.has_arg = true,
	.help = "      --pprof FILE        write a gzipped pprof profile (go tool pprof) instead\n",
	.prepare = pprof_prepare,
	.write = pprof_write,
};
