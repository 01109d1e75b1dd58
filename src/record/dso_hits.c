// SPDX-License-Identifier: GPL-2.0-only
/*
 * Which DSOs the samples hit, for the BUILD_ID feature: a build id lets a
 * reader check that the file it symbolizes is the one that ran. The process
 * model here is the least that answers "which file is this address in":
 * executable mappings per process, from MMAP/MMAP2 (the synthesized ones
 * included), FORK and exec. The same mappings cut user stacks at the first
 * frame outside them (dso_hits__cut_user).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perfdata/offcpu_payload.h"
#include "perfdata/perf_format.h"
#include "record/record.h"
#include "symbols/build_id.h"
#include "util/bsearch.h"

#include "util/hash.h"
#include "util/htab.h"
#include "util/vec.h"

struct hproc {
	uint32_t pid;
	struct exec_map *maps;
	size_t nr, cap;
	bool sorted;
};

struct hdso {
	char *name;
	bool hit;
};

struct dso_hits {
	struct htab procs; /* struct hproc, by pid */
	struct htab dsos;  /* struct hdso, by name */
	bool kernel_hit;
	int err;           /* the first failure (-ENOMEM): the hits are incomplete */
};

struct dso_hits *dso_hits__new(void)
{
	struct dso_hits *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	htab__init(&h->procs, sizeof(struct hproc));
	htab__init(&h->dsos, sizeof(struct hdso));
	return h;
}

void dso_hits__free(struct dso_hits *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < htab__n(&h->procs); i++)
		free(((struct hproc *)htab__at(&h->procs, i))->maps);
	for (size_t i = 0; i < htab__n(&h->dsos); i++)
		free(((struct hdso *)htab__at(&h->dsos, i))->name);
	htab__free(&h->procs);
	htab__free(&h->dsos);
	free(h);
}

static bool proc_eq(const void *entry, const void *key)
{
	return ((const struct hproc *)entry)->pid == *(const uint32_t *)key;
}

/*
 * The process pid; with create, added when new. NULL for no process (pid
 * 0 or -1), one not seen (without create), or out of memory (h->err set).
 * The address is void after the next creation.
 */
static struct hproc *proc_slot(struct dso_hits *h, uint32_t pid, bool create)
{
	struct hproc *p;
	bool added;

	if (!pid || pid == (uint32_t)-1)
		return NULL;
	if (!create)
		return htab__find(&h->procs, hash__mix(pid), proc_eq, &pid);
	p = htab__get(&h->procs, hash__mix(pid), proc_eq, &pid, &added);
	if (!p)
		h->err = -ENOMEM;
	else if (added)
		p->pid = pid;
	return p;
}

static bool dso_eq(const void *entry, const void *key)
{
	return !strcmp(((const struct hdso *)entry)->name, key);
}

/* The index of the DSO of file name, added when new; -ENOMEM. */
static int dso_index(struct dso_hits *h, const char *name)
{
	bool added;
	struct hdso *d = htab__get(&h->dsos, hash__str(name), dso_eq, name, &added);

	if (d && added && !(d->name = strdup(name))) {
		htab__unget(&h->dsos);
		d = NULL;
	}
	if (!d || htab__n(&h->dsos) > INT32_MAX)
		return -ENOMEM;
	return (int)(d - (struct hdso *)h->dsos.v);
}

/*
 * An executable mapping; one without a file ([vdso], JIT code) has no DSO
 * (-1). 0, or -ENOMEM (h->err set).
 */
static int add_map(struct dso_hits *h, uint32_t pid, uint64_t start, uint64_t len,
		   const char *name)
{
	struct hproc *p;
	int d = -1;

	if (name[0] == '/')
		d = dso_index(h, name); /* [vdso], //anon...: no file, no build id */
	if (d == -ENOMEM)
		return h->err = -ENOMEM;
	p = proc_slot(h, pid, true);
	if (!p)
		return h->err;
	if (vec__reserve((void **)&p->maps, &p->cap, p->nr + 1, sizeof(*p->maps), 16))
		return h->err = -ENOMEM;
	p->maps[p->nr++] = (struct exec_map){ .start = start, .end = start + len, .dso = d };
	p->sorted = false;
	return 0;
}

static int map_cmp(const void *a, const void *b)
{
	const struct exec_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

void exec_maps__sort(struct exec_map *m, size_t nr)
{
	uint64_t max = 0;

	if (nr) /* qsort takes no NULL array, even empty */
		qsort(m, nr, sizeof(*m), map_cmp);
	for (size_t i = 0; i < nr; i++) {
		if (m[i].end > max)
			max = m[i].end;
		m[i].end_max = max;
	}
}

struct ip_key {
	const struct exec_map *m;
	uint64_t ip;
};

static bool starts_above(const void *ctx, size_t i)
{
	const struct ip_key *k = ctx;

	return k->m[i].start > k->ip;
}

/* The number of maps that start at or below ip. */
static size_t maps_upto(const struct exec_map *m, size_t nr, uint64_t ip)
{
	struct ip_key k = { m, ip };

	return bsearch_first(nr, starts_above, &k);
}

bool exec_maps__covers(const struct exec_map *m, size_t nr, uint64_t ip)
{
	size_t n = maps_upto(m, nr, ip);

	return n && ip < m[n - 1].end_max;
}

size_t ustack_keep(const struct exec_map *m, size_t nr, const uint64_t *frames, size_t n)
{
	if (!nr)
		return n; /* the process's maps are not known: nothing to judge by */
	for (size_t i = 0; i < n; i++)
		if (!exec_maps__covers(m, nr, frames[i]))
			return i;
	return n;
}

static void sort_maps(struct hproc *p)
{
	if (!p->sorted) {
		exec_maps__sort(p->maps, p->nr);
		p->sorted = true;
	}
}

/* The latest map that covers ip wins: later mmaps replace earlier ones. */
static void hit_user(struct dso_hits *h, struct hproc *p, uint64_t ip)
{
	size_t lo;

	if (!p->nr)
		return;
	sort_maps(p);
	lo = maps_upto(p->maps, p->nr, ip);
	for (size_t i = lo; i-- > 0;) {
		if (ip < p->maps[i].end) {
			if (p->maps[i].dso >= 0)
				((struct hdso *)htab__at(&h->dsos, p->maps[i].dso))->hit = true;
			return;
		}
		if (lo - i > 8)
			break;
	}
}

/* A new process starts with a copy of its parent's maps. 0, or -ENOMEM (h->err set). */
static int on_fork(struct dso_hits *h, uint32_t pid, uint32_t ppid)
{
	struct hproc *parent, *child;

	if (pid == ppid)
		return 0; /* a thread shares its process's maps */
	child = proc_slot(h, pid, true);
	if (!child)
		return h->err;
	parent = proc_slot(h, ppid, false); /* after the child's creation, which may move entries */
	child->nr = 0;
	if (!parent || !parent->nr)
		return 0;
	if (vec__reserve((void **)&child->maps, &child->cap, parent->nr, sizeof(*child->maps), 16))
		return h->err = -ENOMEM;
	memcpy(child->maps, parent->maps, parent->nr * sizeof(*child->maps));
	child->nr = parent->nr;
	child->sorted = parent->sorted;
	return 0;
}

/*
 * Whether a sample record (16 bytes at least) has the layout read here.
 * The records of one sample type all do but the offcpu-switch records of
 * --chains (IDENTIFIER TID TIME CPU RAW: sample_tid_at()), whose RAW data
 * read as a callchain would be junk frames of a junk pid.
 */
static bool has_callchain_layout(const void *rec)
{
	return sample_tid_at(rec) == 16;
}

int dso_hits__record(struct dso_hits *h, const void *rec, size_t len)
{
	const struct perf_event_header *eh = rec;
	const uint8_t *b = (const uint8_t *)(eh + 1);
	const uint8_t *end = (const uint8_t *)rec + len;
	uint32_t pid, pid2;
	uint64_t a, l;

	switch (eh->type) {
	case PERF_RECORD_MMAP2:
		if (len < sizeof(*eh) + 64)
			return 0;
		memcpy(&pid, b, 4);
		memcpy(&a, b + 8, 8);
		memcpy(&l, b + 16, 8);
		{
			uint32_t prot;

			memcpy(&prot, b + 56, 4);
			if (prot & 4 /* PROT_EXEC */)
				return add_map(h, pid, a, l, (const char *)b + 64);
		}
		return 0;
	case PERF_RECORD_MMAP:
		if (len < sizeof(*eh) + 32 || (eh->misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
						      PERF_RECORD_MISC_KERNEL)
			return 0;
		memcpy(&pid, b, 4);
		memcpy(&a, b + 8, 8);
		memcpy(&l, b + 16, 8);
		return add_map(h, pid, a, l, (const char *)b + 32);
	case PERF_RECORD_FORK:
		if (len < sizeof(*eh) + 8)
			return 0;
		memcpy(&pid, b, 4);
		memcpy(&pid2, b + 4, 4);
		return on_fork(h, pid, pid2);
	case PERF_RECORD_COMM:
		if (len < sizeof(*eh) + 8 || !(eh->misc & PERF_RECORD_MISC_COMM_EXEC))
			return 0;
		memcpy(&pid, b, 4);
		{
			struct hproc *p = proc_slot(h, pid, false);

			if (p)
				p->nr = 0; /* exec: a new address space */
		}
		return 0;
	case PERF_RECORD_SAMPLE:
		break;
	default:
		return 0;
	}
	/* Samples: IDENTIFIER IP TID TIME CPU PERIOD CALLCHAIN, all but one of our layouts */
	if (b + 56 > end || !has_callchain_layout(rec))
		return 0;
	memcpy(&pid, b + 16, 4);
	memcpy(&l, b + 48, 8); /* callchain nr */
	b += 56;
	{
		struct hproc *p = proc_slot(h, pid, false);
		bool user = false;

		for (uint64_t i = 0; i < l && b + 8 <= end; i++, b += 8) {
			memcpy(&a, b, 8);
			if (a >= PERF_CTX_MAX) {
				user = a == PERF_CTX_USER;
				if (a == PERF_CTX_KERNEL)
					h->kernel_hit = true;
				continue;
			}
			if (user && p)
				hit_user(h, p, a);
		}
	}
	return 0;
}

/*
 * Cut the user stack of a sample record (our layouts: IDENTIFIER IP TID
 * TIME CPU PERIOD CALLCHAIN [RAW]) at its first frame that is not in an
 * executable mapping of the process: the frame-pointer walk's fallback
 * through code built without frame pointers reads stack data as return
 * addresses (sqlite's stack ended in 0x642e742f71732f77, the ASCII of a
 * path). Done here, in user space at write time, because this is where the
 * process's mappings are known in time order for every sample (off-CPU,
 * waker and CPU samples alike) and the check costs nothing in the kernel;
 * unwinding in BPF with the processes' mapping tables (DWARF, another
 * change) will stop at such addresses too, and this stays as the safety
 * net for every stack. Returns the record's new length (its header's size
 * updated); *cut is set when frames were removed.
 */
size_t dso_hits__cut_user(struct dso_hits *h, void *rec, size_t len, bool *cut)
{
	uint64_t frames[PERF_MAX_STACK + 1], first = 0, n, keep;
	struct hproc *p;
	uint32_t pid;
	size_t nlen;

	*cut = false;
	if (len < sizeof(struct perf_event_header) + 8 || !has_callchain_layout(rec))
		return len;
	n = offcpu_payload__user_frames(rec, len, &first);
	if (!n || n > PERF_MAX_STACK + 1)
		return len;
	memcpy(&pid, (const uint8_t *)rec + sizeof(struct perf_event_header) + 16, 4);
	p = proc_slot(h, pid, false);
	if (!p || !p->nr)
		return len;
	sort_maps(p);
	memcpy(frames, (const uint8_t *)rec + sizeof(struct perf_event_header) + 56 + first * 8, n * 8);
	keep = ustack_keep(p->maps, p->nr, frames, n);
	nlen = offcpu_payload__cut_user(rec, len, keep);
	*cut = nlen != len;
	return nlen;
}

/* One BUILD_ID table entry: header, pid, id[20], size, pad[3], name. */
static int put_entry(uint8_t **buf, size_t *len, size_t *cap, uint16_t misc, const uint8_t *id,
		     size_t idlen, const char *name)
{
	size_t nlen = strlen(name) + 1, plen = (nlen + 63) / 64 * 64;
	size_t sz = 8 + 4 + 20 + 4 + plen;
	struct perf_event_header h = {
		.type = 0, /* perf writes 0 here */
		.misc = misc | (1 << 15) /* PERF_RECORD_MISC_BUILD_ID_SIZE */,
		.size = sz,
	};
	int32_t pid = -1;
	uint8_t *p;

	if (vec__reserve((void **)buf, cap, *len + sz, 1, 4096))
		return -ENOMEM;
	p = *buf + *len;
	memset(p, 0, sz);
	memcpy(p, &h, 8);
	memcpy(p + 8, &pid, 4);
	memcpy(p + 12, id, idlen > 20 ? 20 : idlen);
	p[32] = idlen > 20 ? 20 : idlen;
	memcpy(p + 36, name, nlen);
	*len += sz;
	return 0;
}

int dso_hits__build_id_feature(struct dso_hits *h, uint8_t **out, size_t *len)
{
	uint8_t *buf = NULL, id[64];
	size_t l = 0, cap = 0;
	int n, err = h->err;

	if (err)
		return err; /* a table with files missing would say less than it seems to */
	if (h->kernel_hit) {
		n = sym_kernel_build_id("/sys/kernel/notes", id, sizeof(id));
		if (n > 0)
			err = put_entry(&buf, &l, &cap, PERF_RECORD_MISC_KERNEL, id, n,
					"[kernel.kallsyms]");
	}
	for (size_t i = 0; !err && i < htab__n(&h->dsos); i++) {
		const struct hdso *d = htab__at(&h->dsos, i);

		if (!d->hit)
			continue;
		n = sym_read_build_id(d->name, id, sizeof(id));
		if (n > 0)
			err = put_entry(&buf, &l, &cap, PERF_RECORD_MISC_USER, id, n, d->name);
	}
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	*len = l;
	return 0;
}
