// SPDX-License-Identifier: GPL-2.0-only
/*
 * The off-CPU BPF program, from user space: knobs and filters before load,
 * attach, the ring buffer of direct samples, the periodic drain of the
 * in-kernel sums, and the drop counters.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "offcpu.skel.h"
#include "perfdata/perf_format.h"
#include "record/record.h"

#define SUM_ENTRIES 10240
#define DRAIN_BATCH 128

struct exit_ent {
	struct offcpu_exit_key key;
	uint64_t time;
	unsigned int age; /* drains seen */
};

struct offcpu_bpf {
	struct offcpu_skel *skel;
	struct ring_buffer *rb;
	struct merge *m; /* target of the ring buffer callback */
	int err;
	bool filter_perf;
	uint64_t samples;
	struct exit_ent *exits;
	size_t nr_exits, cap_exits;
	struct offcpu_sum_key *keys;
	struct offcpu_sample *vals;
	int ncpus;
	uint8_t rec[8192];
};

/* Address range of __schedule: kernel stacks start there. */
static uint64_t sched_lo, sched_hi;

static const char *const drop_names[OFFCPU_DROP__NR] = {
	[OFFCPU_DROP_RINGBUF] = "ring buffer full",
	[OFFCPU_DROP_SUM_FULL] = "sum map full",
	[OFFCPU_DROP_USTACK] = "user stack unreadable",
	[OFFCPU_DROP_KSTACK] = "kernel stack unreadable",
	[OFFCPU_DROP_TASK_STORAGE] = "task storage unavailable",
	[OFFCPU_DROP_EXITS_FULL] = "exit map full",
	[OFFCPU_DROP_UNCLOSED] = "interval end not seen",
};

const char *offcpu_drop_name(int i)
{
	return i >= 0 && i < OFFCPU_DROP__NR ? drop_names[i] : "?";
}

uint64_t offcpu_sample_type(void)
{
	return PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
	       PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW;
}

/* The attr perf sees for offcpu-time, as perf's own --off-cpu writes it. */
void offcpu_event_attr(struct perf_event_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->type = PERF_TYPE_SOFTWARE;
	attr->config = PERF_COUNT_SW_BPF_OUTPUT;
	attr->size = sizeof(*attr);
	attr->sample_period = 1;
	attr->sample_type = offcpu_sample_type();
	attr->sample_id_all = 1;
	attr->use_clockid = 1;
	attr->clockid = CLOCK_MONOTONIC;
}

/* Frames before __schedule are BPF and tracing glue: how many. */
static int sched_frame_index(const __u64 *k, uint32_t n)
{
	if (!sched_lo)
		return 0;
	for (uint32_t i = 0; i < n && i < 16; i++)
		if (k[i] >= sched_lo && k[i] < sched_hi)
			return i;
	return 0;
}

size_t offcpu_sample__encode(const struct offcpu_sample *s, uint64_t time, void *buf)
{
	struct perf_event_header *h = buf;
	uint64_t *p = (uint64_t *)(h + 1), *nr;
	const __u64 *k = &s->stack[OFFCPU_MAX_STACK];
	uint32_t klen = s->klen > OFFCPU_MAX_STACK ? OFFCPU_MAX_STACK : s->klen;
	uint32_t ulen = s->ulen > OFFCPU_MAX_STACK ? OFFCPU_MAX_STACK : s->ulen;
	struct offcpu_raw raw = {
		.state = s->state == OFFCPU_STATE_D ? 'D' : 'S',
		.flags = s->time ? OFFCPU_RAW_DIRECT : OFFCPU_RAW_AGGREGATED,
		.count = s->count,
		.cgroup = s->cgroup,
	};
	uint32_t rawsz = (sizeof(raw) + 4 + 7) / 8 * 8 - 4;
	int skip = sched_frame_index(k, klen);
	uint8_t *r;

	k += skip;
	klen -= skip;
	/* A frame-pointer walk through code built without them ends in junk. */
	for (uint32_t i = 0; i < ulen; i++)
		if (s->stack[i] < 4096) {
			ulen = i;
			break;
		}
	*p++ = OFFCPU_ID_OFFCPU;
	*p++ = klen ? k[0] : ulen ? s->stack[0] : 0;
	*p++ = (uint64_t)s->tid << 32 | s->pid;
	*p++ = time;
	*p++ = s->cpu;
	*p++ = s->period;
	nr = p++;
	*nr = 0;
	if (klen) {
		*p++ = PERF_CTX_KERNEL;
		memcpy(p, k, klen * 8);
		p += klen;
		*nr += 1 + klen;
	}
	if (ulen) {
		*p++ = PERF_CTX_USER;
		memcpy(p, s->stack, ulen * 8);
		p += ulen;
		*nr += 1 + ulen;
	}
	r = (uint8_t *)p;
	memcpy(r, &rawsz, 4);
	memset(r + 4, 0, rawsz);
	memcpy(r + 4, &raw, sizeof(raw));
	r += 4 + rawsz;
	h->type = PERF_RECORD_SAMPLE;
	h->misc = klen ? PERF_RECORD_MISC_KERNEL : PERF_RECORD_MISC_USER;
	h->size = r - (uint8_t *)buf;
	return h->size;
}

static int on_direct(void *ctx, void *data, size_t len)
{
	struct offcpu_bpf *b = ctx;
	const struct offcpu_sample *s = data;
	size_t n;
	int err;

	if (len < sizeof(*s))
		return 0;
	n = offcpu_sample__encode(s, s->time, b->rec);
	err = merge__add(b->m, s->time, b->rec, n);
	if (err) {
		b->err = err;
		return err;
	}
	b->samples++;
	return 0;
}

static int set_filters(struct offcpu_bpf *b, const struct record_opts *o)
{
	struct offcpu_skel *sk = b->skel;
	uint8_t one = 1;
	int err, fd;

	for (size_t i = 0; i < o->pids.n; i++) {
		uint32_t v = o->pids.v[i];

		err = bpf_map_update_elem(bpf_map__fd(sk->maps.tgids), &v, &one, BPF_ANY);
		if (err)
			return err;
	}
	for (size_t i = 0; i < o->tids.n; i++) {
		uint32_t v = o->tids.v[i];

		err = bpf_map_update_elem(bpf_map__fd(sk->maps.tids), &v, &one, BPF_ANY);
		if (err)
			return err;
	}
	for (size_t i = 0; i < o->cpus.n; i++) {
		uint32_t v = o->cpus.v[i];

		err = bpf_map_update_elem(bpf_map__fd(sk->maps.cpus), &v, &one, BPF_ANY);
		if (err)
			return err;
	}
	if (o->cgroup) {
		uint32_t zero = 0;
		char path[4096];

		err = cgroup_resolve(o->cgroup, path, sizeof(path));
		if (err)
			return err; /* checked before: see preflight */
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		err = bpf_map_update_elem(bpf_map__fd(sk->maps.cgroup), &zero, &fd, BPF_ANY);
		close(fd);
		if (err) {
			fprintf(stderr, "offcpu record: '%s' is not a cgroup v2 directory\n", path);
			return err;
		}
	}
	return 0;
}

int offcpu_bpf__new(const struct record_opts *o, const struct kernel_facts *kf,
		    struct offcpu_bpf **out)
{
	struct offcpu_bpf *b;
	struct offcpu_skel *sk;
	int err;

	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->ncpus = libbpf_num_possible_cpus();
	b->keys = calloc(DRAIN_BATCH, sizeof(*b->keys));
	b->vals = calloc(DRAIN_BATCH, sizeof(*b->vals));
	if (!b->keys || !b->vals || b->ncpus <= 0) {
		err = -ENOMEM;
		goto cleanup;
	}
	sched_lo = kf->sched_lo;
	sched_hi = kf->sched_hi;
	sk = offcpu_skel__open();
	if (!sk) {
		err = -errno;
		goto cleanup;
	}
	b->skel = sk;
	sk->rodata->sched_lo = sched_lo;
	sk->rodata->sched_hi = sched_hi;
	sk->rodata->thresh_ns = o->thresh_ns;
	sk->rodata->state_mask = o->state_mask;
	sk->rodata->want_ustack = o->ustack;
	sk->rodata->want_kstack = o->kstack;
	sk->rodata->kernel_threads = o->kernel_threads;
	sk->rodata->filter_tgid = o->pids.n || o->argv;
	sk->rodata->filter_tid = o->tids.n > 0;
	sk->rodata->filter_cpu = o->cpus.n > 0;
	sk->rodata->filter_cgroup = o->cgroup != NULL;
	sk->rodata->follow_children = o->argv != NULL;
	b->filter_perf = o->pids.n || o->tids.n || o->argv || o->cgroup;
	bpf_map__set_max_entries(sk->maps.sum0, SUM_ENTRIES);
	bpf_map__set_max_entries(sk->maps.sum1, SUM_ENTRIES);
	bpf_program__set_autoload(sk->progs.offcpu_fork, o->argv != NULL);
	bpf_program__set_autoload(sk->progs.offcpu_cpu_filter, b->filter_perf && !o->no_cpu);
	err = offcpu_skel__load(sk);
	if (err)
		goto cleanup;
	err = set_filters(b, o);
	if (err)
		goto cleanup;
	b->rb = ring_buffer__new(bpf_map__fd(sk->maps.events), on_direct, b, NULL);
	if (!b->rb) {
		err = -errno;
		goto cleanup;
	}
	*out = b;
	return 0;
cleanup:
	offcpu_bpf__free(b);
	return err;
}

void offcpu_bpf__free(struct offcpu_bpf *b)
{
	if (!b)
		return;
	ring_buffer__free(b->rb);
	offcpu_skel__destroy(b->skel);
	free(b->exits);
	free(b->keys);
	free(b->vals);
	free(b);
}

int offcpu_bpf__add_tgid(struct offcpu_bpf *b, uint32_t tgid)
{
	uint8_t one = 1;

	return bpf_map_update_elem(bpf_map__fd(b->skel->maps.tgids), &tgid, &one, BPF_ANY);
}

int offcpu_bpf__attach(struct offcpu_bpf *b)
{
	struct offcpu_skel *sk = b->skel;
	struct bpf_link *l;

	l = bpf_program__attach(sk->progs.offcpu_switch);
	if (!l)
		return -errno;
	sk->links.offcpu_switch = l;
	l = bpf_program__attach(sk->progs.offcpu_wakeup);
	if (!l)
		return -errno;
	sk->links.offcpu_wakeup = l;
	l = bpf_program__attach(sk->progs.offcpu_exit);
	if (!l)
		return -errno;
	sk->links.offcpu_exit = l;
	if (bpf_program__autoload(sk->progs.offcpu_fork)) {
		l = bpf_program__attach(sk->progs.offcpu_fork);
		if (!l)
			return -errno;
		sk->links.offcpu_fork = l;
	}
	return 0;
}

int offcpu_bpf__filter_prog_fd(const struct offcpu_bpf *b)
{
	if (!bpf_program__autoload(b->skel->progs.offcpu_cpu_filter))
		return -1;
	return bpf_program__fd(b->skel->progs.offcpu_cpu_filter);
}

int offcpu_bpf__ringbuf_fd(const struct offcpu_bpf *b)
{
	return ring_buffer__epoll_fd(b->rb);
}

int offcpu_bpf__poll(struct offcpu_bpf *b, struct merge *m)
{
	int n;

	b->m = m;
	n = ring_buffer__consume(b->rb);
	if (b->err)
		return b->err;
	return n < 0 ? n : 0;
}

bool offcpu_bpf__needs_drain(const struct offcpu_bpf *b)
{
	uint32_t act = b->skel->bss->sum_active & 1;

	return b->skel->bss->sum_entries[act] > SUM_ENTRIES * 3 / 4;
}

static int exits_cmp(const void *a, const void *b)
{
	const struct exit_ent *x = a, *y = b;

	if (x->key.tid != y->key.tid)
		return x->key.tid < y->key.tid ? -1 : 1;
	return x->key.start_time < y->key.start_time ? -1 : x->key.start_time > y->key.start_time;
}

/*
 * Move the exit map into our table. An entry is kept for two drains: the
 * exited task's sums may sit in either sum map.
 */
static int collect_exits(struct offcpu_bpf *b)
{
	int fd = bpf_map__fd(b->skel->maps.exits);
	struct offcpu_exit_key key, next;
	size_t keep = 0;
	void *prev = NULL;

	for (size_t i = 0; i < b->nr_exits; i++)
		if (++b->exits[i].age < 3)
			b->exits[keep++] = b->exits[i];
	b->nr_exits = keep;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		uint64_t t;

		if (!bpf_map_lookup_elem(fd, &next, &t)) {
			if (b->nr_exits == b->cap_exits) {
				size_t ncap = b->cap_exits ? b->cap_exits * 2 : 256;
				struct exit_ent *ne = realloc(b->exits, ncap * sizeof(*ne));

				if (!ne)
					return -ENOMEM;
				b->exits = ne;
				b->cap_exits = ncap;
			}
			b->exits[b->nr_exits++] = (struct exit_ent){ next, t, 0 };
		}
		key = next;
		prev = &key;
	}
	for (size_t i = 0; i < b->nr_exits; i++)
		if (!b->exits[i].age)
			bpf_map_delete_elem(fd, &b->exits[i].key);
	qsort(b->exits, b->nr_exits, sizeof(*b->exits), exits_cmp);
	return 0;
}

static uint64_t exit_time(struct offcpu_bpf *b, uint32_t tid, uint64_t start_time)
{
	struct exit_ent k = { .key = { .tid = tid, .start_time = start_time } };
	struct exit_ent *e = bsearch(&k, b->exits, b->nr_exits, sizeof(k), exits_cmp);

	return e ? e->time : 0;
}

int offcpu_bpf__drain(struct offcpu_bpf *b, struct merge *m, uint64_t now)
{
	struct offcpu_skel *sk = b->skel;
	uint32_t old = sk->bss->sum_active & 1;
	struct offcpu_sum_key batch;
	void *in = NULL;
	int fd, err;

	/* Switch writers to the other map; let programs in flight finish. */
	__atomic_store_n(&sk->bss->sum_active, old ^ 1, __ATOMIC_SEQ_CST);
	usleep(1000);
	err = collect_exits(b);
	if (err)
		return err;
	fd = bpf_map__fd(old ? sk->maps.sum1 : sk->maps.sum0);
	for (;;) {
		__u32 count = DRAIN_BATCH;
		int ret;

		ret = bpf_map_lookup_and_delete_batch(fd, in, &batch, b->keys, b->vals, &count,
						      NULL);
		if (ret && errno != ENOENT)
			return -errno;
		for (__u32 i = 0; i < count; i++) {
			struct offcpu_sample *s = &b->vals[i];
			uint64_t t = exit_time(b, b->keys[i].tid, b->keys[i].start_time);
			size_t n;

			/* a task that exited is timed just before its exit */
			t = t && t <= now ? t - 1 : now;
			s->time = 0;
			n = offcpu_sample__encode(s, t, b->rec);
			err = merge__add(m, t, b->rec, n);
			if (err)
				return err;
			b->samples++;
		}
		if (ret)
			break;
		in = &batch;
	}
	sk->bss->sum_entries[old] = 0;
	return 0;
}

/* Sum a per-CPU array of n u64 counters into out[]. */
static int sum_percpu(const struct offcpu_bpf *b, int fd, uint64_t *out, uint32_t n)
{
	uint64_t *v = calloc(b->ncpus, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		out[i] = 0;
		if (bpf_map_lookup_elem(fd, &i, v))
			continue;
		for (int c = 0; c < b->ncpus; c++)
			out[i] += v[c];
	}
	free(v);
	return 0;
}

int offcpu_bpf__drops(const struct offcpu_bpf *b, uint64_t drops[OFFCPU_DROP__NR])
{
	return sum_percpu(b, bpf_map__fd(b->skel->maps.drops), drops, OFFCPU_DROP__NR);
}

int offcpu_bpf__stats(const struct offcpu_bpf *b, uint64_t stats[OFFCPU_STAT__NR])
{
	return sum_percpu(b, bpf_map__fd(b->skel->maps.stats), stats, OFFCPU_STAT__NR);
}

uint64_t offcpu_bpf__samples(const struct offcpu_bpf *b)
{
	return b->samples;
}
