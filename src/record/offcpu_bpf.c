// SPDX-License-Identifier: GPL-2.0-only
/*
 * The off-CPU BPF program, from user space: knobs and filters before load,
 * attach, the ring buffer of direct samples, the periodic drain of the
 * in-kernel sums, and the drop counters. With --wakeups and --sched-delay
 * the same ring buffer and drains also carry offcpu-wakeup and sched-delay
 * samples. (Their encoding as perf records and the counters' names are in
 * offcpu_encode.c.)
 *
 * Its size (about 750 lines): every part here reads or writes the one
 * struct offcpu_bpf and its skeleton (the batch buffers, the exit table,
 * the merge queue of the ring buffer's callbacks), which stays private to
 * this file.
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "offcpu.skel.h"
#include "perfdata/perf_format.h"
#include "record/record.h"
#include "util/clock.h"
#include "util/vec.h"

#define SUM_ENTRIES 10240
/* --chains: 56 bytes a switch, 300 000 switches/s: about 1 s of room at 16 MiB */
#define CHAIN_RING_BYTES (16 << 20)
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
	bool wakeups;
	bool dwarf;        /* --call-graph dwarf */
	bool cpu_sampling; /* CPU samples come through the cpu_samples ring */
	bool chains;       /* --chains: the chain ring */
	uint64_t samples, wakeup_samples, delay_samples, cpu_samples;
	uint64_t chain_switches, chain_stacks, chain_bytes;
	uint64_t *cpu_ids; /* the cpu-clock event's sample id on each CPU */
	int nr_cpu_ids;
	uint64_t in_progress[OFFCPU_IN_PROGRESS__NR];
	struct exit_ent *exits;
	size_t nr_exits, cap_exits;
	struct offcpu_sum_key *keys;
	struct offcpu_sample *vals;
	struct offcpu_wsum_key *wkeys; /* --wakeups only */
	struct offcpu_wsample *wvals;
	int ncpus;
	_Alignas(8) uint8_t rec[OFFCPU_PAYLOAD_MAX_SIZE]; /* an encoded record */
};

/* Queue the records of one sample from the kernel (and of its waker). */
static int queue_sample(struct offcpu_bpf *b, struct merge *m, const struct offcpu_sample *s,
			const struct offcpu_waker *w, uint64_t time)
{
	size_t n = offcpu_sample__encode(s, time, b->rec);
	int err = merge__add(m, time, b->rec, n);

	if (err)
		return err;
	if (s->state & OFFCPU_IN_PROGRESS_START)
		b->in_progress[s->state & OFFCPU_SCHED_DELAY ? OFFCPU_IN_PROGRESS_DELAY_START
							     : OFFCPU_IN_PROGRESS_OFFCPU_START]++;
	if (s->state & OFFCPU_IN_PROGRESS_STOP)
		b->in_progress[s->state & OFFCPU_SCHED_DELAY ? OFFCPU_IN_PROGRESS_DELAY_STOP
							     : OFFCPU_IN_PROGRESS_OFFCPU_STOP]++;
	if (s->state & OFFCPU_SCHED_DELAY) {
		b->delay_samples++;
		return 0;
	}
	b->samples++;
	if (!w)
		return 0;
	/* right after its off-CPU sample, at the same time: readers pair them */
	n = offcpu_waker__encode(s, w, time, b->rec);
	err = merge__add(m, time, b->rec, n);
	if (!err)
		b->wakeup_samples++;
	return err;
}

static int on_direct(void *ctx, void *data, size_t len)
{
	struct offcpu_bpf *b = ctx;
	const struct offcpu_sample *s = data;
	const struct offcpu_waker *w = NULL;
	int err;

	if (len < sizeof(*s))
		return 0;
	if (len >= sizeof(struct offcpu_wsample))
		w = (void *)((uint8_t *)data + offsetof(struct offcpu_wsample, w));
	err = queue_sample(b, b->m, s, w, s->time);
	if (err)
		b->err = err;
	return err;
}

/* --call-graph dwarf: a CPU sample unwound by the BPF program on the perf event. */
static int on_cpu_sample(void *ctx, void *data, size_t len)
{
	struct offcpu_bpf *b = ctx;
	const struct offcpu_cpu_sample *s = data;
	uint64_t id;
	size_t n;
	int err;

	if (len < sizeof(*s))
		return 0;
	id = s->user & OFFCPU_CPU_SAMPLE_OTHER ? OFFCPU_ID_CHAIN_CPU :
	     s->cpu < (uint32_t)b->nr_cpu_ids ? b->cpu_ids[s->cpu] : 0;
	n = cpu_sample__encode(s, id, b->rec);
	err = merge__add(b->m, s->time, b->rec, n);
	if (err)
		b->err = err;
	else
		b->cpu_samples++;
	return err;
}

/* --chains: a switch or a stack record, as its sample. */
static int on_chain(void *ctx, void *data, size_t len)
{
	struct offcpu_bpf *b = ctx;
	const struct offcpu_chain_switch *sw = data;
	const struct offcpu_chain_stack *st = data;
	size_t n = 0;
	int err;

	if (len >= sizeof(*sw) && sw->type == OFFCPU_CHAIN_SWITCH) {
		n = chain_switch__encode(sw, b->rec);
		b->chain_switches++;
	} else if (len >= sizeof(*st) && st->type == OFFCPU_CHAIN_STACK) {
		n = chain_stack__encode(st, b->rec);
		b->chain_stacks++;
	}
	if (!n)
		return 0;
	b->chain_bytes += n;
	err = merge__add(b->m, sw->type == OFFCPU_CHAIN_SWITCH ? sw->time : st->time, b->rec, n);
	if (err)
		b->err = err;
	return err;
}

static int set_filters(struct offcpu_bpf *b, const struct record_opts *o,
		       const struct msg_sink *ms)
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
		struct stat st;

		err = cgroup_resolve(o->cgroup, path, sizeof(path));
		if (err)
			return err; /* checked before: see preflight */
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		/* a cgroup v2 id is its directory's inode number: for the iterators */
		if (!fstat(fd, &st))
			sk->bss->cgroup_id = st.st_ino;
		err = bpf_map_update_elem(bpf_map__fd(sk->maps.cgroup), &zero, &fd, BPF_ANY);
		close(fd);
		if (err) {
			msg__say(ms, MSG_ERROR, "'%s' is not a cgroup v2 directory", path);
			return err;
		}
	}
	return 0;
}

/* The batch buffers of the drains. */
static int alloc_batches(struct offcpu_bpf *b, const struct record_opts *o)
{
	b->ncpus = libbpf_num_possible_cpus();
	b->keys = calloc(DRAIN_BATCH, sizeof(*b->keys));
	b->vals = calloc(DRAIN_BATCH, sizeof(*b->vals));
	if (o->wakeups) {
		b->wkeys = calloc(DRAIN_BATCH, sizeof(*b->wkeys));
		b->wvals = calloc(DRAIN_BATCH, sizeof(*b->wvals));
	}
	if (!b->keys || !b->vals || b->ncpus <= 0 || (o->wakeups && (!b->wkeys || !b->wvals)))
		return -ENOMEM;
	return 0;
}

/* The knobs (const volatile in offcpu.bpf.c), set between open and load. */
static void set_knobs(struct offcpu_skel *sk, const struct record_opts *o,
		      const struct kernel_facts *kf)
{
	sk->rodata->sched_lo = kf->sched_lo;
	sk->rodata->sched_hi = kf->sched_hi;
	sk->rodata->sys_lo = kf->sys_lo;
	sk->rodata->sys_hi = kf->sys_hi;
	sk->rodata->use_kcache = o->kstack_cache;
	sk->rodata->thresh_ns = o->thresh_ns;
	sk->rodata->state_mask = o->state_mask;
	sk->rodata->want_ustack = o->ustack;
	sk->rodata->want_kstack = o->kstack;
	sk->rodata->kernel_threads = o->kernel_threads;
	sk->rodata->user_threads = o->user_threads;
	sk->rodata->filter_kind_cpu = o->thread_kind_cpu;
	sk->rodata->min_ns = o->min_ns;
	sk->rodata->max_ns = o->max_ns;
	sk->rodata->filter_tgid = o->pids.n || o->argv;
	sk->rodata->filter_tid = o->tids.n > 0;
	sk->rodata->filter_cpu = o->cpus.n > 0;
	sk->rodata->filter_cgroup = o->cgroup != NULL;
	sk->rodata->follow_children = o->argv != NULL;
	sk->rodata->want_wakeups = o->wakeups;
	sk->rodata->want_sched_delay = o->sched_delay;
	sk->rodata->want_chains = o->chains;
	sk->rodata->chain_nr_cpus = libbpf_num_possible_cpus() > 0 ? libbpf_num_possible_cpus() : 1;
	sk->rodata->test_hide = o->test_hide;
	sk->rodata->unwind_dwarf = o->dwarf;
}

/*
 * Does the kernel keep sched_info (CONFIG_SCHED_INFO, which is what gives
 * /proc/PID/schedstat)? Then the switch program reads when a waiting thread
 * was woken from it, at the switch-in, and the sched_wakeup program (a run
 * at every wakeup of the machine, ~90 ns each) is not loaded.
 */
static bool kernel_has_sched_info(void)
{
	return access("/proc/self/schedstat", F_OK) == 0;
}

/* Map sizes, and the programs loaded: only those the options need. */
static void set_maps_and_progs(struct offcpu_bpf *b, const struct record_opts *o)
{
	struct offcpu_skel *sk = b->skel;

	if (o->dwarf) {
		bpf_map__set_max_entries(sk->maps.unw_rows, OFFCPU_UNWIND_ROWS);
		bpf_map__set_max_entries(sk->maps.unw_procs, OFFCPU_UNWIND_PROCS);
		bpf_map__set_max_entries(sk->maps.unw_execs, OFFCPU_UNWIND_PROCS);
		bpf_map__set_max_entries(sk->maps.unw_files, OFFCPU_UNWIND_FILES);
	} else {
		bpf_map__set_max_entries(sk->maps.unw_cache, 64);
		bpf_map__set_max_entries(sk->maps.unw_rules, 1);
		bpf_map__set_max_entries(sk->maps.unw_vprocs, 1);
		bpf_map__set_max_entries(sk->maps.unw_pgen, 1);
	}
	if (!b->cpu_sampling)
		bpf_map__set_max_entries(sk->maps.cpu_samples, 4096);
	bpf_map__set_max_entries(sk->maps.sum0, SUM_ENTRIES);
	bpf_map__set_max_entries(sk->maps.sum1, SUM_ENTRIES);
	if (o->wakeups) {
		bpf_map__set_max_entries(sk->maps.wsum0, SUM_ENTRIES);
		bpf_map__set_max_entries(sk->maps.wsum1, SUM_ENTRIES);
	}
	bpf_program__set_autoload(sk->progs.offcpu_wakeup, o->test_wakeup_prog || !kernel_has_sched_info());
	bpf_program__set_autoload(sk->progs.offcpu_waking, o->wakeups);
	bpf_program__set_autoload(sk->progs.offcpu_wakeup_new, o->sched_delay || o->chains);
	if (o->chains)
		bpf_map__set_max_entries(sk->maps.chain_events, CHAIN_RING_BYTES);
	bpf_program__set_autoload(sk->progs.offcpu_delay_wakeup, o->sched_delay);
	bpf_program__set_autoload(sk->progs.offcpu_fork, o->argv != NULL || o->dwarf);
	bpf_program__set_autoload(sk->progs.offcpu_cpu_filter,
				  b->filter_perf && !o->no_cpu && !b->cpu_sampling);
	bpf_program__set_autoload(sk->progs.offcpu_cpu_sample, b->cpu_sampling);
}

/* The ring buffers of direct samples and (dwarf) of CPU samples, read as one. */
static int open_rings(struct offcpu_bpf *b)
{
	struct offcpu_skel *sk = b->skel;

	b->rb = ring_buffer__new(bpf_map__fd(sk->maps.events), on_direct, b, NULL);
	if (!b->rb)
		return -errno;
	if (b->cpu_sampling && ring_buffer__add(b->rb, bpf_map__fd(sk->maps.cpu_samples), on_cpu_sample, b))
		return -errno;
	if (b->chains && ring_buffer__add(b->rb, bpf_map__fd(sk->maps.chain_events), on_chain, b))
		return -errno;
	return 0;
}

int offcpu_bpf__new(const struct record_opts *o, const struct kernel_facts *kf,
		    const struct msg_sink *ms, struct offcpu_bpf **out)
{
	struct offcpu_bpf *b;
	int err;

	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->wakeups = o->wakeups;
	b->chains = o->chains;
	b->dwarf = o->dwarf;
	b->cpu_sampling = record_opts__bpf_cpu_samples(o);
	b->filter_perf = o->pids.n || o->tids.n || o->argv || o->cgroup || o->thread_kind_cpu;
	err = alloc_batches(b, o);
	if (err)
		goto cleanup;
	offcpu_encode__set_kernel(kf);
	b->skel = offcpu_skel__open();
	if (!b->skel) {
		err = -errno;
		goto cleanup;
	}
	set_knobs(b->skel, o, kf);
	set_maps_and_progs(b, o);
	if (getenv("OFFCPU_DEBUG")) {
		/* the verifier's statistics of each program (how near its limit) in libbpf's log */
		struct bpf_program *p;

		bpf_object__for_each_program(p, b->skel->obj)
			bpf_program__set_log_level(p, 4);
	}
	err = offcpu_skel__load(b->skel);
	if (!err)
		err = set_filters(b, o, ms);
	if (!err)
		err = open_rings(b);
	if (err)
		goto cleanup;
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
	free(b->wkeys);
	free(b->wvals);
	free(b->cpu_ids);
	free(b);
}

void offcpu_bpf__trace_from_exec(struct offcpu_bpf *b, uint32_t tgid)
{
	b->skel->bss->exec_tgid = tgid;
}

int offcpu_bpf__attach(struct offcpu_bpf *b)
{
	struct offcpu_skel *sk = b->skel;
	struct bpf_link *l;

	l = bpf_program__attach(sk->progs.offcpu_switch);
	if (!l)
		return -errno;
	sk->links.offcpu_switch = l;
	if (bpf_program__autoload(sk->progs.offcpu_wakeup)) {
		l = bpf_program__attach(sk->progs.offcpu_wakeup);
		if (!l)
			return -errno;
		sk->links.offcpu_wakeup = l;
	}
	l = bpf_program__attach(sk->progs.offcpu_exit);
	if (!l)
		return -errno;
	sk->links.offcpu_exit = l;
	l = bpf_program__attach(sk->progs.offcpu_exec);
	if (!l)
		return -errno;
	sk->links.offcpu_exec = l;
	l = bpf_program__attach(sk->progs.offcpu_rename);
	if (!l)
		return -errno;
	sk->links.offcpu_rename = l;
	if (bpf_program__autoload(sk->progs.offcpu_fork)) {
		l = bpf_program__attach(sk->progs.offcpu_fork);
		if (!l)
			return -errno;
		sk->links.offcpu_fork = l;
	}
	if (bpf_program__autoload(sk->progs.offcpu_waking)) {
		l = bpf_program__attach(sk->progs.offcpu_waking);
		if (!l)
			return -errno;
		sk->links.offcpu_waking = l;
	}
	if (bpf_program__autoload(sk->progs.offcpu_wakeup_new)) {
		l = bpf_program__attach(sk->progs.offcpu_wakeup_new);
		if (!l)
			return -errno;
		sk->links.offcpu_wakeup_new = l;
	}
	if (bpf_program__autoload(sk->progs.offcpu_delay_wakeup)) {
		l = bpf_program__attach(sk->progs.offcpu_delay_wakeup);
		if (!l)
			return -errno;
		sk->links.offcpu_delay_wakeup = l;
	}
	return 0;
}

/*
 * Run one of the task iterators (offcpu_start, offcpu_stop) to its end;
 * each record of `size` bytes it writes goes to on_record. The first task
 * it visits notes the time on the run-queue clock of the CPU it runs on:
 * bring that clock up to date first (reading this thread's CPU time does,
 * under the run queue's lock).
 */
static int run_iter(struct bpf_program *prog, size_t size,
		    int (*on_record)(void *ctx, const void *rec), void *ctx)
{
	const size_t bufsize = 64 * sizeof(struct offcpu_sample);
	struct bpf_link *link = bpf_program__attach_iter(prog, NULL);
	uint8_t *buf = malloc(bufsize);
	size_t have = 0;
	struct timespec ts;
	int fd, err = 0;

	if (!link || !buf) {
		err = link ? -ENOMEM : -errno;
		goto cleanup;
	}
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	for (;;) {
		ssize_t n = read(fd, buf + have, bufsize - have);
		size_t i = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		have += n;
		for (; i + size <= have; i += size)
			if (!err)
				err = on_record(ctx, buf + i);
		memmove(buf, buf + i, have - i);
		have -= i;
		if (err)
			break;
	}
	close(fd);
cleanup:
	bpf_link__destroy(link);
	free(buf);
	return err;
}

struct seen_ctx {
	int (*on_task)(void *ctx, uint32_t pid, uint32_t tid, const char *comm);
	void *ctx;
};

static int on_seen_task(void *ctx, const void *rec)
{
	const struct seen_ctx *c = ctx;
	const struct offcpu_seen_task *t = rec;
	char comm[sizeof(t->comm) + 1];

	memcpy(comm, t->comm, sizeof(t->comm));
	comm[sizeof(t->comm)] = 0;
	return c->on_task(c->ctx, t->pid, t->tid, comm);
}

int offcpu_bpf__start(struct offcpu_bpf *b,
		     int (*on_task)(void *ctx, uint32_t pid, uint32_t tid, const char *comm),
		     void *ctx)
{
	struct seen_ctx c = { on_task, ctx };

	return run_iter(b->skel->progs.offcpu_start, sizeof(struct offcpu_seen_task),
			on_seen_task, &c);
}

static int on_stop_sample(void *ctx, const void *rec)
{
	struct offcpu_bpf *b = ctx;
	const struct offcpu_sample *s = rec;

	return queue_sample(b, b->m, s, NULL, s->time);
}

int offcpu_bpf__stop(struct offcpu_bpf *b, struct merge *m)
{
	/*
	 * Detach first: no wait ends or starts any more, and the iterator is
	 * the only one left to touch the tasks' storage (programs already
	 * running on other CPUs are given a moment to finish).
	 */
	offcpu_skel__detach(b->skel);
	usleep(1000);
	b->m = m;
	return run_iter(b->skel->progs.offcpu_stop, sizeof(struct offcpu_sample), on_stop_sample,
			b);
}

void offcpu_bpf__window(const struct offcpu_bpf *b, uint64_t *start, uint64_t *stop)
{
	*start = b->skel->bss->rec_start_mono;
	*stop = b->skel->bss->rec_stop_mono;
}

uint64_t offcpu_bpf__in_progress(const struct offcpu_bpf *b, int which)
{
	return which >= 0 && which < OFFCPU_IN_PROGRESS__NR ? b->in_progress[which] : 0;
}

int offcpu_bpf__filter_prog_fd(const struct offcpu_bpf *b)
{
	if (b->cpu_sampling)
		return bpf_program__fd(b->skel->progs.offcpu_cpu_sample);
	if (!bpf_program__autoload(b->skel->progs.offcpu_cpu_filter))
		return -1;
	return bpf_program__fd(b->skel->progs.offcpu_cpu_filter);
}

int offcpu_bpf__set_cpu_ids(struct offcpu_bpf *b, const int *cpus, const uint64_t *ids, size_t n)
{
	int max = 0;

	for (size_t i = 0; i < n; i++)
		if (cpus[i] + 1 > max)
			max = cpus[i] + 1;
	free(b->cpu_ids);
	b->cpu_ids = calloc(max ? max : 1, sizeof(*b->cpu_ids));
	if (!b->cpu_ids)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		b->cpu_ids[cpus[i]] = ids[i];
	b->nr_cpu_ids = max;
	return 0;
}

int offcpu_bpf__unwind_maps(const struct offcpu_bpf *b, struct offcpu_unwind_maps *m)
{
	struct offcpu_skel *sk = b->skel;

	if (!b->dwarf)
		return -ENOENT;
	m->rows = bpf_map__fd(sk->maps.unw_rows);
	m->rules = bpf_map__fd(sk->maps.unw_rules);
	m->procs = bpf_map__fd(sk->maps.unw_procs);
	m->execs = bpf_map__fd(sk->maps.unw_execs);
	m->files = bpf_map__fd(sk->maps.unw_files);
	m->pgen = bpf_map__fd(sk->maps.unw_pgen);
	m->notify = bpf_map__fd(sk->maps.unw_notify);
	m->row_cap = bpf_map__max_entries(sk->maps.unw_rows);
	return 0;
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

	return b->skel->bss->sum_entries[act] > SUM_ENTRIES * 3 / 4 ||
	       b->skel->bss->wsum_entries[act] > SUM_ENTRIES * 3 / 4;
}

static int exits_cmp(const void *a, const void *b)
{
	const struct exit_ent *x = a, *y = b;

	if (x->key.tid != y->key.tid)
		return x->key.tid < y->key.tid ? -1 : 1;
	if (x->key.gen != y->key.gen)
		return x->key.gen < y->key.gen ? -1 : 1;
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
			if (vec__reserve((void **)&b->exits, &b->cap_exits, b->nr_exits + 1,
					 sizeof(*b->exits), 256))
				return -ENOMEM;
			b->exits[b->nr_exits++] = (struct exit_ent){ next, t, 0 };
		}
		key = next;
		prev = &key;
	}
	for (size_t i = 0; i < b->nr_exits; i++)
		if (!b->exits[i].age)
			bpf_map_delete_elem(fd, &b->exits[i].key);
	if (b->nr_exits) /* qsort and bsearch take no NULL array, even empty */
		qsort(b->exits, b->nr_exits, sizeof(*b->exits), exits_cmp);
	return 0;
}

/* When the task image of sum key k ended (exit or exec); 0: it lives. */
static uint64_t exit_time(struct offcpu_bpf *b, const struct offcpu_sum_key *sk)
{
	struct exit_ent k = { .key = { .tid = sk->tid, .gen = sk->gen, .start_time = sk->start_time } };
	struct exit_ent *e = b->nr_exits ? bsearch(&k, b->exits, b->nr_exits, sizeof(k), exits_cmp) : NULL;

	return e ? e->time : 0;
}

/*
 * Move every entry of one sum map into the merge queue. keys and vals are
 * batch buffers of DRAIN_BATCH entries of key_size and val_size bytes; each
 * key starts with an offcpu_sum_key and each value with an offcpu_sample,
 * followed by its offcpu_waker when val_size says so.
 */
static int drain_map(struct offcpu_bpf *b, struct merge *m, int fd, void *keys, size_t key_size,
		     void *vals, size_t val_size, uint64_t now)
{
	uint8_t batch[sizeof(struct offcpu_wsum_key)];
	void *in = NULL;
	int err;

	for (;;) {
		__u32 count = DRAIN_BATCH;
		int ret;

		ret = bpf_map_lookup_and_delete_batch(fd, in, batch, keys, vals, &count, NULL);
		if (ret && errno != ENOENT)
			return -errno;
		for (__u32 i = 0; i < count; i++) {
			const struct offcpu_sum_key *k = (void *)((uint8_t *)keys + i * key_size);
			uint8_t *v = (uint8_t *)vals + i * val_size;
			struct offcpu_sample *s = (void *)v;
			const struct offcpu_waker *w = NULL;
			uint64_t t = exit_time(b, k);

			if (val_size >= sizeof(struct offcpu_wsample))
				w = (void *)(v + offsetof(struct offcpu_wsample, w));
			/*
			 * At the end of its last interval (see sum_ended in
			 * offcpu.bpf.c); else, as before that was known, just
			 * before its image exited or exec'd, or now.
			 */
			if (s->time && s->time <= now)
				t = s->time;
			else
				t = t && t <= now ? t - 1 : now;
			s->time = 0; /* a sum, not a direct sample (offcpu_sample__encode) */
			err = queue_sample(b, m, s, w, t);
			if (err)
				return err;
		}
		if (ret)
			break;
		in = batch;
	}
	return 0;
}

int offcpu_bpf__drain(struct offcpu_bpf *b, struct merge *m)
{
	struct offcpu_skel *sk = b->skel;
	uint32_t old = sk->bss->sum_active & 1;
	uint64_t now;
	int err;

	/* Switch writers to the other map; let programs in flight finish. */
	__atomic_store_n(&sk->bss->sum_active, old ^ 1, __ATOMIC_SEQ_CST);
	usleep(1000);
	/*
	 * The sums' time: read now that nothing adds to them any more, so
	 * that no sum is timed before an interval it holds (read before the
	 * switch, a recorder descheduled in between timed a wait before its
	 * own end, and before an exec's COMM record that followed it). Sums
	 * of a task that exited or exec'd meanwhile are timed just before.
	 */
	now = mono_ns();
	err = collect_exits(b);
	if (!err)
		err = drain_map(b, m, bpf_map__fd(old ? sk->maps.sum1 : sk->maps.sum0), b->keys,
				sizeof(*b->keys), b->vals, sizeof(*b->vals), now);
	if (!err && b->wakeups)
		err = drain_map(b, m, bpf_map__fd(old ? sk->maps.wsum1 : sk->maps.wsum0), b->wkeys,
				sizeof(*b->wkeys), b->wvals, sizeof(*b->wvals), now);
	if (err)
		return err;
	sk->bss->sum_entries[old] = 0;
	sk->bss->wsum_entries[old] = 0;
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

int offcpu_bpf__unwind_stats(const struct offcpu_bpf *b, uint64_t stats[OFFCPU_UNW_STAT__NR])
{
	return sum_percpu(b, bpf_map__fd(b->skel->maps.unw_stats), stats, OFFCPU_UNW_STAT__NR);
}

uint64_t offcpu_bpf__cpu_samples(const struct offcpu_bpf *b)
{
	return b->cpu_samples;
}

void offcpu_bpf__chain_counts(const struct offcpu_bpf *b, uint64_t *switches, uint64_t *stacks,
			      uint64_t *bytes)
{
	*switches = b->chain_switches;
	*stacks = b->chain_stacks;
	*bytes = b->chain_bytes;
}

uint64_t offcpu_bpf__samples(const struct offcpu_bpf *b)
{
	return b->samples;
}

uint64_t offcpu_bpf__wakeup_samples(const struct offcpu_bpf *b)
{
	return b->wakeup_samples;
}

uint64_t offcpu_bpf__delay_samples(const struct offcpu_bpf *b)
{
	return b->delay_samples;
}

