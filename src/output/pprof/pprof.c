// SPDX-License-Identifier: GPL-2.0-only
/*
 * profile.proto from the aggregated profile. Samples are written first;
 * the locations, functions and mappings they use are created on first
 * sight and written after them, the string table last (protobuf does not
 * care about field order, only about order within a repeated field).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "output/pprof/pprof.h"
#include "util/htab.h"

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

struct strtab {
	char **s;
	size_t n, cap;
	struct htab ht;
};

struct mapping {
	const char *dso; /* session string: one mapping per DSO */
	uint64_t filename, build_id;
};

struct function {
	uint64_t name, filename;
};

struct enc {
	const struct session *s;
	const struct report_opts *o;
	struct strtab st;
	struct mapping *maps;
	size_t nr_maps, cap_maps;
	struct htab map_ht;
	struct function *fns;
	size_t nr_fns, cap_fns;
	struct htab fn_ht;
	uint32_t *loc_of_frame; /* session frame id -> location id, 0 when not yet */
	uint32_t *loc_frames;   /* location id - 1 -> frame id */
	uint32_t *loc_fn;       /* location id - 1 -> function id */
	uint32_t *loc_map;      /* location id - 1 -> mapping id */
	size_t nr_locs;
};

struct str_key {
	const struct strtab *t;
	const char *s;
};

static bool str_eq(const void *ctx, uint32_t idx)
{
	const struct str_key *k = ctx;

	return !strcmp(k->t->s[idx], k->s);
}

/* Index of s in the string table, added on first sight; -1 on ENOMEM. */
static int64_t str_id(struct strtab *t, const char *s)
{
	struct str_key k = { t, s };
	uint64_t h = htab__hash_bytes(s, strlen(s), 7);
	size_t slot;
	uint32_t idx = htab__find(&t->ht, h, str_eq, &k, &slot);
	char **e;

	if (idx != HTAB_EMPTY)
		return idx;
	if (htab__reserve(&t->ht))
		return -1;
	e = vec__push((void **)&t->s, &t->n, &t->cap, sizeof(*e));
	if (!e)
		return -1;
	*e = strdup(s);
	if (!*e) {
		t->n--;
		return -1;
	}
	htab__find(&t->ht, h, str_eq, &k, &slot);
	htab__put(&t->ht, slot, h, t->n - 1);
	return t->n - 1;
}

struct ptr_key {
	const struct enc *e;
	const void *p;
};

static bool map_eq(const void *ctx, uint32_t idx)
{
	const struct ptr_key *k = ctx;

	return k->e->maps[idx].dso == k->p;
}

/* Mapping id (1-based) of a frame's DSO; 0 on ENOMEM. */
static uint32_t mapping_id(struct enc *e, const struct frame *f)
{
	struct ptr_key k = { e, f->dso };
	uint64_t h = htab__mix((uintptr_t)f->dso);
	size_t slot, bsz = 0;
	uint32_t idx = htab__find(&e->map_ht, h, map_eq, &k, &slot);
	const uint8_t *bid;
	struct mapping *m;
	char hex[2 * 64 + 1];
	int64_t fn, bi = 0;

	if (idx != HTAB_EMPTY)
		return idx + 1;
	fn = str_id(&e->st, f->dso);
	bid = perf_reader__build_id(session__reader(e->s), f->dso, &bsz);
	if (bid && bsz) {
		if (bsz > 64)
			bsz = 64;
		for (size_t i = 0; i < bsz; i++)
			snprintf(hex + 2 * i, 3, "%02x", bid[i]);
		bi = str_id(&e->st, hex);
	}
	if (fn < 0 || bi < 0 || htab__reserve(&e->map_ht))
		return 0;
	m = vec__push((void **)&e->maps, &e->nr_maps, &e->cap_maps, sizeof(*m));
	if (!m)
		return 0;
	m->dso = f->dso;
	m->filename = fn;
	m->build_id = bi;
	htab__find(&e->map_ht, h, map_eq, &k, &slot);
	htab__put(&e->map_ht, slot, h, e->nr_maps - 1);
	return e->nr_maps;
}

struct fn_key {
	const struct enc *e;
	struct function f;
};

static bool fn_eq(const void *ctx, uint32_t idx)
{
	const struct fn_key *k = ctx;
	const struct function *a = &k->e->fns[idx];

	return a->name == k->f.name && a->filename == k->f.filename;
}

/* The name a frame is shown with, as in --folded: [dso] when the symbol is unknown. */
static const char *frame_name(const struct frame *f, char *buf, size_t len)
{
	if (f->sym)
		return f->sym;
	if (strcmp(f->dso, "[unknown]"))
		snprintf(buf, len, "[%s]", f->dso_short);
	else
		snprintf(buf, len, "[unknown]");
	return buf;
}

/* Function id (1-based) for a frame's (name, source file); 0 on ENOMEM. */
static uint32_t function_id(struct enc *e, const struct frame *f)
{
	char buf[512];
	struct fn_key k = { e, { 0, 0 } };
	int64_t name = str_id(&e->st, frame_name(f, buf, sizeof(buf)));
	int64_t file = f->srcfile ? str_id(&e->st, f->srcfile) : 0;
	uint64_t h;
	size_t slot;
	uint32_t idx;
	struct function *fn;

	if (name < 0 || file < 0)
		return 0;
	k.f.name = name;
	k.f.filename = file;
	h = htab__mix((uint64_t)name << 32 ^ (uint64_t)file);
	idx = htab__find(&e->fn_ht, h, fn_eq, &k, &slot);
	if (idx != HTAB_EMPTY)
		return idx + 1;
	if (htab__reserve(&e->fn_ht))
		return 0;
	fn = vec__push((void **)&e->fns, &e->nr_fns, &e->cap_fns, sizeof(*fn));
	if (!fn)
		return 0;
	*fn = k.f;
	htab__find(&e->fn_ht, h, fn_eq, &k, &slot);
	htab__put(&e->fn_ht, slot, h, e->nr_fns - 1);
	return e->nr_fns;
}

/* Location id (1-based) of a session frame, one per frame id; 0 on ENOMEM. */
static uint32_t location_id(struct enc *e, uint32_t frame)
{
	const struct frame *f = session__frame(e->s, frame);
	uint32_t fn, map;

	if (e->loc_of_frame[frame])
		return e->loc_of_frame[frame];
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
	size_t m = pb__begin(b, SAMPLE_LABEL);

	pb__uint(b, LABEL_KEY, key);
	pb__uint(b, LABEL_STR, str);
	pb__uint(b, LABEL_NUM, num);
	pb__end(b, m);
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
		size_t m, mm;
		char state[2] = { st->state, 0 };

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
		comm = str_id(&e->st, session__comm(e->s, st->comm));
		if (comm < 0)
			return -ENOMEM;
		m = pb__begin(b, PROFILE_SAMPLE);
		mm = pb__begin(b, SAMPLE_LOCATION_ID);
		for (uint32_t j = 0; j < st->nr; j++) { /* leaf first, as pprof wants */
			uint32_t loc = location_id(e, fr[j]);

			if (!loc)
				return -ENOMEM;
			pb__varint(b, loc);
		}
		pb__end(b, mm);
		mm = pb__begin(b, SAMPLE_VALUE);
		for (int j = 0; j < NR_VALUES; j++) {
			pb__varint(b, v[j]);
			tot[j] += v[j];
		}
		pb__end(b, mm);
		if (st->pid)
			label(b, k_pid, 0, (int32_t)st->pid);
		if (st->tid)
			label(b, k_tid, 0, (int32_t)st->tid);
		label(b, k_comm, comm, 0);
		if ((int)st->event == off_ev && st->state) {
			int64_t sv = str_id(&e->st, state);

			if (sv < 0)
				return -ENOMEM;
			label(b, k_state, sv, 0);
		}
		pb__end(b, m);
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
	uint32_t *id = malloc((e->nr_maps + 1) * sizeof(*id)), *nloc;
	size_t best = SIZE_MAX;

	nloc = calloc(e->nr_maps + 1, sizeof(*nloc));
	if (!id || !nloc) {
		free(id);
		free(nloc);
		return NULL;
	}
	for (size_t i = 0; i < e->nr_locs; i++)
		nloc[e->loc_map[i] - 1]++;
	for (size_t i = 0; i < e->nr_maps; i++) {
		const char *d = e->maps[i].dso, *base = strrchr(d, '/');

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

static int put_tables(struct enc *e, struct pb *b)
{
	uint32_t *id = main_first(e);

	if (!id)
		return -ENOMEM;
	for (size_t j = 0; j < e->nr_maps; j++) {
		size_t m = pb__begin(b, PROFILE_MAPPING), i = id[j] - 1; /* a swap is its own inverse */

		pb__uint(b, MAPPING_ID, j + 1);
		pb__uint(b, MAPPING_FILENAME, e->maps[i].filename);
		pb__uint(b, MAPPING_BUILD_ID, e->maps[i].build_id);
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
	}
	for (size_t i = 0; i < e->nr_fns; i++) {
		size_t m = pb__begin(b, PROFILE_FUNCTION);

		pb__uint(b, FUNCTION_ID, i + 1);
		pb__uint(b, FUNCTION_NAME, e->fns[i].name);
		pb__uint(b, FUNCTION_SYSTEM_NAME, e->fns[i].name);
		pb__uint(b, FUNCTION_FILENAME, e->fns[i].filename);
		pb__end(b, m);
	}
	free(id);
	return 0;
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
	if (perf_reader__sample_time(r, &first, &last) && last > first)
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
	for (size_t i = 0; i < e->st.n; i++)
		free(e->st.s[i]);
	free(e->st.s);
	htab__free(&e->st.ht);
	free(e->maps);
	htab__free(&e->map_ht);
	free(e->fns);
	htab__free(&e->fn_ht);
	free(e->loc_of_frame);
	free(e->loc_frames);
	free(e->loc_fn);
	free(e->loc_map);
}

int pprof__encode(struct pb *out, const struct session *s, const struct profile *p, int cpu_ev,
		  int off_ev, const struct report_opts *o)
{
	static const char *const types[NR_VALUES][2] = {
		[V_SAMPLES] = { "samples", "count" },
		[V_CPU] = { "cpu", "nanoseconds" },
		[V_OFF_CPU] = { "off_cpu", "nanoseconds" },
		[V_INTERVALS] = { "off_cpu_intervals", "count" },
	};
	struct enc e = { .s = s, .o = o };
	uint32_t nf = session__nr_frames(s);
	uint64_t tot[NR_VALUES] = { 0 };
	int64_t ids[NR_VALUES][2];
	int err = -ENOMEM;

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
	for (size_t i = 0; i < e.st.n; i++)
		pb__string(out, PROFILE_STRING_TABLE, e.st.s[i]);
	err = pb__error(out);
cleanup:
	enc_free(&e);
	return err;
}

int pprof__gzip(const char *path, const void *data, size_t len)
{
	bool out = !strcmp(path, "-");
	size_t plen = strlen(path);
	char *tmp = malloc(plen + 5);
	gzFile gz = NULL;
	int fd = -1, err = 0;

	if (!tmp)
		return -ENOMEM;
	snprintf(tmp, plen + 5, "%s.tmp", path);
	/* a fresh file, never through a link planted at PATH.tmp */
	if (!out)
		unlink(tmp);
	fd = out ? dup(STDOUT_FILENO) :
		   open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	gz = gzdopen(fd, "wb");
	if (!gz) {
		close(fd);
		err = -ENOMEM;
		goto cleanup;
	}
	while (len && !err) {
		unsigned int n = len > (1u << 30) ? 1u << 30 : (unsigned int)len;

		if (gzwrite(gz, data, n) != (int)n)
			err = -EIO;
		data = (const char *)data + n;
		len -= n;
	}
	if (gzclose(gz) != Z_OK && !err)
		err = -EIO;
	if (!err && !out && rename(tmp, path))
		err = -errno;
cleanup:
	if (err && !out)
		unlink(tmp);
	free(tmp);
	return err;
}

int pprof__write(const char *path, const struct session *s, const struct profile *p,
		 const struct report_opts *o)
{
	struct pb *b = pb__new();
	int cpu, off, err;

	if (!b) {
		fprintf(stderr, "offcpu report: out of memory\n");
		return -ENOMEM;
	}
	report__time_events(s, p, "report", &cpu, &off);
	err = pprof__encode(b, s, p, cpu, off, o);
	if (err) {
		fprintf(stderr, "offcpu report: --pprof: %s\n", strerror(-err));
		goto cleanup;
	}
	err = pprof__gzip(path, pb__data(b), pb__len(b));
	if (err) {
		fprintf(stderr, "offcpu report: cannot write %s: %s\n", path, strerror(-err));
		goto cleanup;
	}
	if (cpu < 0 && off < 0)
		fprintf(stderr, "offcpu report: %s: no on-CPU or off-CPU time in %s (empty profile)\n",
			path, o->input);
cleanup:
	pb__free(b);
	return err;
}
