// SPDX-License-Identifier: GPL-2.0-only
/*
 * The off-CPU BPF program, from user space: knobs and filters before load,
 * attach, the ring buffer (the stacks, sent once each, and the direct
 * samples that name them by id), the periodic drain of the in-kernel sums
 * and of the tasks' accumulators, the stop, and the drop counters. With
 * --wakeups and --sched-delay the same ring buffer and drains also carry
 * offcpu-wakeup and sched-delay samples. (Their encoding as perf records
 * and the counters' names are in offcpu_encode.c.)
 *
 * A drain switches the programs to the other half of the sums, waits until
 * no program can still be writing the half it drains (wait_quiet: a grace
 * period on the programs' per-CPU count of runs inside), and only then
 * reads it; the stop is the same wait, twice: after the programs are told
 * they are stopping (the stop iterator then ends the waits still open),
 * and after they are told to stop.
 *
 * Its size (about 850 lines): every part here reads or writes the one
 * struct offcpu_bpf and its skeleton (the batch buffers, the stack table,
 * the exit table, the merge queue of the ring buffer's callbacks), which
 * stays private to this file.
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
#include "util/hash.h"
#include "util/htab.h"
#include "util/vec.h"

#define SUM_ENTRIES 10240
/* --chains: 96 bytes a switch with its ring header, 170 000 switches/s: 1 s of room at 16 MiB */
#define CHAIN_RING_BYTES (16 << 20)
#define DRAIN_BATCH 128
/* Cache audits (see audit_due in offcpu.bpf.c): 1 served hit in mask+1 walked. */
#define AUDIT_MASK_FIRST 63   /* at the start, and again after an audit differed */
#define AUDIT_MASK_QUIET 1023 /* after drains whose audits all agreed */

struct exit_ent {
	struct offcpu_exit_key key;
	uint64_t time;
	unsigned int age; /* drains seen */
};

/* A stack the BPF side sent: its frames are frames[off, off + n). */
struct stack_ent {
	uint64_t id;
	size_t off;
	uint32_t n;
};

/*
 * --chains: a stack of the file (an offcpu-stack record, written once):
 * a thread group's pair of the switch program's stack ids, of one kind.
 */
struct chain_stack_key {
	uint32_t pid;
	uint32_t kind; /* OFFCPU_CHAIN_STACK_* */
	uint64_t ustack, kstack;
};

struct chain_stack_ent {
	struct chain_stack_key key;
	uint32_t id; /* its id in the file */
};

/* --chains: a switch record waiting for the stacks it names (chain_flush). */
struct chain_pending {
	struct offcpu_chain_switch r;
	bool seen; /* a poll has passed since it came */
};

struct offcpu_bpf {
	struct offcpu_skel *skel;
	struct ring_buffer *rb;
	struct merge *m; /* target of the ring buffer callback */
	int err;
	bool filter_perf;
	bool dwarf;        /* --call-graph dwarf */
	bool python;       /* --python, with dwarf */
	bool cpu_sampling; /* CPU samples come through the cpu_samples ring */
	uint32_t stop_delay_ms; /* OFFCPU_TEST_STOP_DELAY: the stop iterator runs this late */
	bool chains;       /* --chains: the chain ring */
	uint64_t samples, wakeup_samples, delay_samples, cpu_samples;
	uint64_t chain_switches, chain_stacks, chain_bytes;
	struct htab chain_ids;          /* struct chain_stack_ent by key */
	struct chain_pending *pending;  /* switch records not yet written */
	size_t nr_pending, cap_pending;
	struct offcpu_chain_stack cst;  /* a stack record being built */
	uint64_t *cpu_ids; /* the cpu-clock event's sample id on each CPU */
	int nr_cpu_ids;
	uint64_t in_progress[OFFCPU_IN_PROGRESS__NR];
	uint64_t stacks_unknown; /* samples naming a stack never sent (counted as stack_lost) */
	struct htab stacks;      /* struct stack_ent by id */
	uint64_t *frames;        /* of every stack sent */
	size_t nr_frames, cap_frames;
	struct exit_ent *exits;
	size_t nr_exits, cap_exits;
	struct offcpu_sum_key *keys;
	struct offcpu_sum *vals;
	uint64_t *active;        /* per CPU: the programs' runs inside (wait_quiet) */
	bool *quiet;             /* per CPU: seen with none inside (wait_quiet) */
	uint64_t audits[2];      /* kernel and DWARF cache audits so far (checked) ... */
	uint64_t stale[2];       /* ... and those that differed */
	int ncpus;
	struct ustack_fix *fix;  /* user stacks finished in user space (dwarf), or NULL */
	struct pyframes *py;     /* Python frames (--python), or NULL */
	struct ring_buffer *drb; /* the deferred stacks (dwarf) */
	struct ring_buffer *prb; /* the new Python stacks (--python; also read through rb) */
	struct offcpu_stack fst; /* a stack ... */
	struct offcpu_cpu_sample fc; /* ... a CPU sample with its user stack finished */
	_Alignas(8) uint8_t rec[OFFCPU_PAYLOAD_MAX_SIZE]; /* an encoded record */
};

/*
 * A user stack with tagged words (bpf/unwind.h) finished by ustack_fix
 * (pid 0: the one its words carry), taken at `taken` (UINT64_MAX: a
 * stack record, sent once, when first taken: its Python names checked).
 * A deferred stack's copy comes on its own ring, before the stack that
 * names it, but may be read after it: the ring is read again before it is
 * given up for.
 */
static void fix_ustack(struct offcpu_bpf *b, uint32_t pid, __u64 *stack, __u32 *ulen,
		       uint64_t taken)
{
	int err;

	/*
	 * The Python stacks sent before it first: their code objects' names
	 * are read (again, when an address has a new object) before its
	 * frames are named. Both rings are read in this one thread, which
	 * the shared consumer position keeps apart.
	 */
	if (b->prb)
		ring_buffer__consume(b->prb);
	err = ustack_fix__apply(b->fix, pid, stack, ulen, false, taken);

	if (err == -ENOENT) {
		ring_buffer__consume(b->drb);
		err = ustack_fix__apply(b->fix, pid, stack, ulen, true, taken);
	}
	if (err && !b->err)
		b->err = err;
}

static bool stack_eq(const void *entry, const void *key)
{
	return ((const struct stack_ent *)entry)->id == *(const uint64_t *)key;
}

/* Keep a stack the BPF side sent (a second copy of one is ignored). */
static int stack_add(struct offcpu_bpf *b, const struct offcpu_stack *st, size_t len)
{
	uint32_t n = st->nr;
	struct stack_ent *e;
	bool added;

	if (len < OFFCPU_STACK_HDR_SIZE || !n || n > OFFCPU_MAX_STACK ||
	    len < OFFCPU_STACK_HDR_SIZE + n * sizeof(uint64_t))
		return 0; /* not one the BPF side sends */
	if (b->fix && ustack_fix__wanted(st->frames, n)) {
		/* a user stack to finish: its frames as they will be written */
		memcpy(&b->fst, st, OFFCPU_STACK_HDR_SIZE + n * sizeof(uint64_t));
		fix_ustack(b, 0, b->fst.frames, &b->fst.nr, UINT64_MAX);
		if (b->err)
			return b->err;
		st = &b->fst;
		n = st->nr;
		if (!n)
			return 0; /* nothing left: samples naming it have no user stack */
	}
	e = htab__get(&b->stacks, hash__mix(st->id), stack_eq, &st->id, &added);
	if (!e)
		return -ENOMEM;
	if (!added)
		return 0;
	if (vec__reserve((void **)&b->frames, &b->cap_frames, b->nr_frames + n, sizeof(*b->frames),
			 4096)) {
		htab__unget(&b->stacks);
		return -ENOMEM;
	}
	e->id = st->id;
	e->off = b->nr_frames;
	e->n = n;
	memcpy(b->frames + b->nr_frames, st->frames, n * sizeof(uint64_t));
	b->nr_frames += n;
	return 0;
}

/*
 * The frames of stack id (0: none). An id never sent (it cannot be: the
 * BPF side sends a stack before any sample names it) is counted, empty.
 */
static struct offcpu_frames stack_frames(struct offcpu_bpf *b, uint64_t id)
{
	static const uint64_t none[1];
	const struct stack_ent *e;

	if (!id)
		return (struct offcpu_frames){ none, 0 };
	e = htab__find(&b->stacks, hash__mix(id), stack_eq, &id);
	if (!e) {
		b->stacks_unknown++;
		return (struct offcpu_frames){ none, 0 };
	}
	return (struct offcpu_frames){ b->frames + e->off, e->n };
}

/* Queue the records of one sample from the kernel (and of its waker). */
static int queue_sample(struct offcpu_bpf *b, struct merge *m, const struct offcpu_sample *s,
			uint64_t time)
{
	struct offcpu_frames u = stack_frames(b, s->k.who.ustack), k = stack_frames(b, s->k.who.kstack);
	uint32_t state = s->k.state;
	size_t n = offcpu_sample__encode(s, &u, &k, time, b->rec);
	int err = merge__add(m, time, b->rec, n);

	if (err)
		return err;
	if (state & OFFCPU_IN_PROGRESS_START)
		b->in_progress[state & OFFCPU_SCHED_DELAY ? OFFCPU_IN_PROGRESS_DELAY_START
							  : OFFCPU_IN_PROGRESS_OFFCPU_START]++;
	if (state & OFFCPU_IN_PROGRESS_STOP)
		b->in_progress[state & OFFCPU_SCHED_DELAY ? OFFCPU_IN_PROGRESS_DELAY_STOP
							  : OFFCPU_IN_PROGRESS_OFFCPU_STOP]++;
	if (state & OFFCPU_SCHED_DELAY) {
		b->delay_samples++;
		return 0;
	}
	b->samples++;
	if (!(state & OFFCPU_WAKER))
		return 0;
	/* right after its off-CPU sample, at the same time: readers pair them */
	u = stack_frames(b, s->k.waker.ustack);
	k = stack_frames(b, s->k.waker.kstack);
	n = offcpu_waker__encode(s, &u, &k, time, b->rec);
	err = merge__add(m, time, b->rec, n);
	if (!err)
		b->wakeup_samples++;
	return err;
}

static int queue_sum(struct offcpu_bpf *b, struct merge *m, const struct offcpu_sum_key *k,
		     const struct offcpu_sum *v, uint64_t now);

/* A record of the ring buffer: a stack, or a sample (direct, or a sum of its own). */
static int on_event(void *ctx, void *data, size_t len)
{
	struct offcpu_bpf *b = ctx;
	const struct offcpu_sample *s = data;
	int err = 0;

	if (len < sizeof(uint32_t))
		return 0;
	if (s->kind == OFFCPU_REC_STACK)
		err = stack_add(b, data, len);
	else if (s->kind == OFFCPU_REC_SAMPLE && len >= sizeof(*s) && (s->flags & OFFCPU_SAMPLE_SUM))
		err = queue_sum(b, b->m, &s->k, &s->v, UINT64_MAX);
	else if (s->kind == OFFCPU_REC_SAMPLE && len >= sizeof(*s))
		err = queue_sample(b, b->m, s, s->v.time);
	if (err)
		b->err = err;
	return err;
}

/* A deferred stack (dwarf): unwound now, while its process lives. */
static int on_deferred(void *ctx, void *data, size_t len)
{
	struct offcpu_bpf *b = ctx;
	int err = b->fix ? ustack_fix__deferred(b->fix, data, len) : 0;

	if (err)
		b->err = err;
	return err;
}

/* A Python stack the BPF side saw for the first time: its names read now. */
static int on_py_seen(void *ctx, void *data, size_t len)
{
	struct offcpu_bpf *b = ctx;
	const struct offcpu_py_seen *s = data;

	if (b->py && len >= 8 && s->n <= OFFCPU_MAX_STACK && len >= 8 + s->n * 8ULL)
		pyframes__seen(b->py, s->pid, (const uint64_t *)s->w, s->n);
	return 0;
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
	if (b->fix && ustack_fix__wanted(s->stack, s->ulen)) {
		memcpy(&b->fc, s, sizeof(*s));
		fix_ustack(b, s->pid, b->fc.stack, &b->fc.ulen, s->time);
		if (b->err)
			return b->err;
		s = &b->fc;
	}
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

/*
 * --chains: a switch record of the chain ring, kept until the stacks it
 * names have come (chain_flush). The chain ring is consumed before the
 * events ring, on which the switch program sends each stack before any
 * record names it: after the same poll, they have come.
 */
static int on_chain(void *ctx, void *data, size_t len)
{
	struct offcpu_bpf *b = ctx;
	const struct offcpu_chain_switch *sw = data;

	if (len < sizeof(*sw) || sw->type != OFFCPU_CHAIN_SWITCH)
		return 0;
	if (vec__reserve((void **)&b->pending, &b->cap_pending, b->nr_pending + 1,
			 sizeof(*b->pending), 1024)) {
		b->err = -ENOMEM;
		return -ENOMEM;
	}
	b->pending[b->nr_pending++] = (struct chain_pending){ .r = *sw };
	return 0;
}

static bool chain_key_eq(const void *entry, const void *key)
{
	return !memcmp(&((const struct chain_stack_ent *)entry)->key, key,
		       sizeof(struct chain_stack_key));
}

static bool stack_known(struct offcpu_bpf *b, uint64_t id)
{
	return !id || htab__find(&b->stacks, hash__mix(id), stack_eq, &id);
}

/*
 * The file's id of the stack (ustack, kstack) of pid, of kind, seen at
 * time: its offcpu-stack record is written the first time (0: no stack).
 */
static int chain_stack(struct offcpu_bpf *b, uint32_t pid, uint32_t tid, uint32_t cpu,
		       uint32_t kind, uint64_t ustack, uint64_t kstack, uint64_t time, uint32_t *id)
{
	struct chain_stack_key key = { pid, kind, ustack, kstack };
	struct offcpu_chain_stack *cs = &b->cst;
	struct offcpu_frames u, k;
	struct chain_stack_ent *e;
	bool added;
	size_t n;
	int err;

	*id = 0;
	if (!ustack && !kstack)
		return 0;
	e = htab__get(&b->chain_ids, hash__mix(pid ^ kind * 0x9e3779b97f4a7c15ULL ^ ustack ^
					       kstack * 0xff51afd7ed558ccdULL),
		      chain_key_eq, &key, &added);
	if (!e)
		return -ENOMEM;
	if (!added) {
		*id = e->id;
		return 0;
	}
	e->key = key;
	e->id = (uint32_t)b->chain_stacks + 1;
	u = stack_frames(b, ustack);
	k = stack_frames(b, kstack);
	cs->type = OFFCPU_CHAIN_STACK;
	cs->id = e->id;
	cs->pid = pid;
	cs->tid = tid;
	cs->kind = kind;
	cs->cpu = cpu;
	cs->time = time;
	cs->ulen = u.n > OFFCPU_MAX_STACK ? OFFCPU_MAX_STACK : u.n;
	cs->klen = k.n > OFFCPU_MAX_STACK ? OFFCPU_MAX_STACK : k.n;
	memcpy(cs->stack, u.ip, cs->ulen * sizeof(uint64_t));
	memcpy(&cs->stack[OFFCPU_MAX_STACK], k.ip, cs->klen * sizeof(uint64_t));
	n = chain_stack__encode(cs, b->rec);
	err = merge__add(b->m, time, b->rec, n);
	if (err)
		return err;
	b->chain_stacks++;
	b->chain_bytes += n;
	*id = e->id;
	return 0;
}

/* One switch record into the file, after the stack records it names. */
static int chain_write(struct offcpu_bpf *b, const struct offcpu_chain_switch *r)
{
	uint32_t sid, wid;
	size_t n;
	int err;

	err = chain_stack(b, r->pid, r->tid, r->cpu,
			  r->flags & OFFCPU_CHAIN_FROM_START ? OFFCPU_CHAIN_STACK_TASK
							     : OFFCPU_CHAIN_STACK_SLEEP,
			  r->ustack, r->kstack, r->time, &sid);
	if (!err)
		err = chain_stack(b, r->waker_pid, r->waker_tid, r->cpu,
				  r->state == 'N' ? OFFCPU_CHAIN_STACK_NEW : OFFCPU_CHAIN_STACK_WAKER,
				  r->waker_ustack, r->waker_kstack, r->time, &wid);
	if (err)
		return err;
	n = chain_switch__encode(r, sid, wid, b->rec);
	err = merge__add(b->m, r->time, b->rec, n);
	if (err)
		return err;
	b->chain_switches++;
	b->chain_bytes += n;
	return 0;
}

/*
 * Write the switch records whose stacks have come. One whose stacks have
 * not, a poll after it came (a stack can sit behind a record another CPU
 * has yet to commit), or at the stop (all), is written with what is known:
 * a stack never sent is counted lost (stack_frames).
 */
static int chain_flush(struct offcpu_bpf *b, bool all)
{
	size_t keep = 0;
	int err = 0;

	for (size_t i = 0; i < b->nr_pending; i++) {
		struct chain_pending *p = &b->pending[i];
		const struct offcpu_chain_switch *r = &p->r;

		if (!err && !all && !p->seen &&
		    !(stack_known(b, r->ustack) && stack_known(b, r->kstack) &&
		      stack_known(b, r->waker_ustack) && stack_known(b, r->waker_kstack))) {
			p->seen = true;
			b->pending[keep++] = *p;
			continue;
		}
		if (!err)
			err = chain_write(b, r);
	}
	b->nr_pending = keep;
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

/* The batch buffers of the drains, the per-CPU counts of wait_quiet, the stack table. */
static int alloc_batches(struct offcpu_bpf *b)
{
	b->ncpus = libbpf_num_possible_cpus();
	if (b->ncpus <= 0)
		return b->ncpus < 0 ? b->ncpus : -EINVAL;
	b->keys = calloc(DRAIN_BATCH, sizeof(*b->keys));
	b->vals = calloc(DRAIN_BATCH, sizeof(*b->vals));
	b->active = calloc(b->ncpus, sizeof(*b->active));
	b->quiet = calloc(b->ncpus, sizeof(*b->quiet));
	htab__init(&b->stacks, sizeof(struct stack_ent));
	htab__init(&b->chain_ids, sizeof(struct chain_stack_ent));
	if (!b->keys || !b->vals || !b->active || !b->quiet)
		return -ENOMEM;
	return 0;
}

/*
 * Does the kernel keep sched_info (CONFIG_SCHED_INFO, which is what gives
 * /proc/PID/schedstat)? Then the switch program reads when a waiting thread
 * was woken from it, at the switch-in, and the sched_wakeup program (a run
 * at every wakeup of the machine, ~90 ns each) is not loaded but for
 * --sched-delay.
 */
static bool kernel_has_sched_info(void)
{
	return access("/proc/self/schedstat", F_OK) == 0;
}

/* The knobs (const volatile in offcpu.bpf.c), set between open and load. */
static void set_knobs(struct offcpu_skel *sk, const struct record_opts *o,
		      const struct kernel_facts *kf)
{
	sk->rodata->sched_lo = kf->sched_lo;
	sk->rodata->sched_hi = kf->sched_hi;
	sk->rodata->ttwu_lo = kf->ttwu_lo;
	sk->rodata->ttwu_hi = kf->ttwu_hi;
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
	/* -p follows the children its processes fork, as perf's inherit; -t does not */
	sk->rodata->follow_children = o->argv != NULL || o->pids.n;
	sk->rodata->want_wakeups = o->wakeups;
	sk->rodata->want_sched_delay = o->sched_delay;
	sk->rodata->want_chains = o->chains;
	sk->rodata->test_hide = o->test_hide;
	sk->rodata->test_hide_waking = o->test_hide_waking;
	sk->rodata->test_stall_ns = o->test_stall_ms * 1000000ULL;
	sk->rodata->wakeup_times_intervals = o->test_wakeup_prog || !kernel_has_sched_info();
	sk->rodata->unwind_dwarf = o->dwarf;
	sk->rodata->want_python = o->dwarf && o->python;
	sk->bss->kcache_audit_mask = AUDIT_MASK_FIRST;
	sk->bss->unw_audit_mask = AUDIT_MASK_FIRST;
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
		bpf_map__set_max_entries(sk->maps.unw_defer_bufs, 1);
		bpf_map__set_max_entries(sk->maps.unw_deferred, 4096);
		bpf_map__set_max_entries(sk->maps.unw_defer_memo, 1);
	}
	if (!o->dwarf || !o->python) {
		bpf_map__set_max_entries(sk->maps.py_hint, 1);
		bpf_map__set_max_entries(sk->maps.py_idle, 1);
		bpf_map__set_max_entries(sk->maps.py_procs, 1);
		bpf_map__set_max_entries(sk->maps.py_seen, 1);
		bpf_map__set_max_entries(sk->maps.py_stacks, 4096);
	}
	if (!b->cpu_sampling)
		bpf_map__set_max_entries(sk->maps.cpu_samples, 4096);
	bpf_map__set_max_entries(sk->maps.sum0, SUM_ENTRIES);
	bpf_map__set_max_entries(sk->maps.sum1, SUM_ENTRIES);
	/* always: it also times the wakeups sched_info would time too early (queued_early) */
	bpf_program__set_autoload(sk->progs.offcpu_wakeup, true);
	bpf_program__set_autoload(sk->progs.offcpu_waking, o->wakeups);
	bpf_program__set_autoload(sk->progs.offcpu_wakeup_new, o->sched_delay || o->chains);
	if (o->chains)
		bpf_map__set_max_entries(sk->maps.chain_events, CHAIN_RING_BYTES);
	bpf_program__set_autoload(sk->progs.offcpu_fork, o->argv != NULL || o->pids.n || o->dwarf);
	bpf_program__set_autoload(sk->progs.offcpu_cpu_filter,
				  b->filter_perf && !o->no_cpu && !b->cpu_sampling);
	bpf_program__set_autoload(sk->progs.offcpu_cpu_sample, b->cpu_sampling);
}

/* The ring buffers of direct samples and (dwarf) of CPU samples, read as one. */
static int open_rings(struct offcpu_bpf *b)
{
	struct offcpu_skel *sk = b->skel;
	int err = 0;

	if (b->dwarf) {
		/* read first, before the stacks that need them, and again when one is missing */
		b->drb = ring_buffer__new(bpf_map__fd(sk->maps.unw_deferred), on_deferred, b, NULL);
		if (!b->drb)
			return -errno;
	}
	/* a poll consumes the rings in this order: the chain ring's records before their stacks */
	if (b->chains) {
		b->rb = ring_buffer__new(bpf_map__fd(sk->maps.chain_events), on_chain, b, NULL);
		if (!b->rb || ring_buffer__add(b->rb, bpf_map__fd(sk->maps.events), on_event, b))
			return -errno;
	} else {
		b->rb = ring_buffer__new(bpf_map__fd(sk->maps.events), on_event, b, NULL);
		if (!b->rb)
			return -errno;
	}
	if (b->python) { /* woken at once: a process's names are read while it lives */
		err = ring_buffer__add(b->rb, bpf_map__fd(sk->maps.py_stacks), on_py_seen, b);
		b->prb = ring_buffer__new(bpf_map__fd(sk->maps.py_stacks), on_py_seen, b, NULL);
		if (!err && !b->prb)
			err = -errno;
	}
	if (!err && b->cpu_sampling)
		err = ring_buffer__add(b->rb, bpf_map__fd(sk->maps.cpu_samples), on_cpu_sample, b);
	return err;
}

int offcpu_bpf__new(const struct record_opts *o, const struct kernel_facts *kf,
		    const struct msg_sink *ms, struct offcpu_bpf **out)
{
	struct offcpu_bpf *b;
	int err;

	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->chains = o->chains;
	b->dwarf = o->dwarf;
	b->python = o->dwarf && o->python;
	b->stop_delay_ms = o->test_stop_delay_ms;
	b->cpu_sampling = record_opts__bpf_cpu_samples(o);
	b->filter_perf = o->pids.n || o->tids.n || o->argv || o->cgroup || o->thread_kind_cpu;
	err = alloc_batches(b);
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
		/*
		 * the verifier's statistics of each program (how near its
		 * limit) in libbpf's log; OFFCPU_DEBUG=2: its whole log too
		 * (libbpf shows the end of a failed program's)
		 */
		struct bpf_program *p;
		int level = !strcmp(getenv("OFFCPU_DEBUG"), "2") ? 1 | 4 : 4;

		bpf_object__for_each_program(p, b->skel->obj)
			bpf_program__set_log_level(p, level);
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
	ring_buffer__free(b->drb);
	ring_buffer__free(b->prb);
	offcpu_skel__destroy(b->skel);
	free(b->exits);
	free(b->keys);
	free(b->vals);
	free(b->active);
	free(b->quiet);
	htab__free(&b->stacks);
	htab__free(&b->chain_ids);
	free(b->pending);
	free(b->frames);
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
	return 0;
}

/*
 * Run one of the task iterators (offcpu_names, offcpu_start, offcpu_stop)
 * to its end; each record it writes goes to on_record: records of `size`
 * bytes, or with size 0 of the size their struct offcpu_iter_hdr says (a
 * raw stack is about 16 KiB: the buffer holds a few). The first task the
 * start's or the stop's visits notes the time on the run-queue clock of
 * the CPU it runs on: bring that clock up to date first (reading this
 * thread's CPU time does, under the run queue's lock).
 */
static int run_iter(struct bpf_program *prog, size_t size,
		    int (*on_record)(void *ctx, const void *rec, size_t len), void *ctx)
{
	const size_t bufsize = 64 * sizeof(struct offcpu_sample) +
			       4 * (sizeof(struct offcpu_iter_hdr) + sizeof(struct offcpu_unw_deferred));
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
		for (size_t len = size; !err && have - i >= sizeof(struct offcpu_iter_hdr); i += len) {
			if (!size) {
				uint32_t l32;

				memcpy(&l32, buf + i + offsetof(struct offcpu_iter_hdr, size), 4);
				len = l32;
				if (len < sizeof(struct offcpu_iter_hdr) || len > bufsize) {
					err = -EBADMSG;
					break;
				}
			}
			if (have - i < len)
				break;
			err = on_record(ctx, buf + i, len);
		}
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
	struct offcpu_bpf *b;
};

static int on_seen_task(void *ctx, const void *rec, size_t len)
{
	const struct seen_ctx *c = ctx;
	const struct offcpu_seen_task *t = rec;
	char comm[sizeof(t->comm) + 1];

	if (t->h.kind == OFFCPU_ITER_STACK)
		return c->b->fix ? ustack_fix__deferred(c->b->fix, (const uint8_t *)rec + sizeof(t->h),
							len - sizeof(t->h)) : 0;
	if (t->h.kind != OFFCPU_ITER_SEEN || len < sizeof(*t))
		return 0;

	memcpy(comm, t->comm, sizeof(t->comm));
	comm[sizeof(t->comm)] = 0;
	return c->on_task(c->ctx, t->pid, t->tid, comm);
}

int offcpu_bpf__start(struct offcpu_bpf *b,
		     int (*on_task)(void *ctx, uint32_t pid, uint32_t tid, const char *comm),
		     void *ctx)
{
	struct seen_ctx c = { on_task, ctx, b };
	int err;

	/* the names first, in one quick pass: see offcpu_names */
	err = run_iter(b->skel->progs.offcpu_names, 0, on_seen_task, &c);
	return err ? err : run_iter(b->skel->progs.offcpu_start, 0, on_seen_task, &c);
}

static int on_stop_sample(void *ctx, const void *rec, size_t len)
{
	struct offcpu_bpf *b = ctx;
	const struct offcpu_sample *s = rec;

	(void)len; /* of the size run_iter was told */
	return queue_sample(b, b->m, s, s->v.time);
}

/*
 * The grace period: wait until no program run that may have read the
 * programs' state before now is still going, on any CPU. Each run counts
 * itself in and out of its CPU's `active` count with atomic adds (the
 * first a full barrier before it reads sum_active and stopped), so a CPU
 * seen at 0 after the caller's change has no run that began before it,
 * and every run that begins later sees the change. Polled every 20 us: a
 * run takes about a microsecond, unless its vCPU is stopped by the host,
 * which this waits out however long it takes.
 */
static int wait_quiet(struct offcpu_bpf *b)
{
	int fd = bpf_map__fd(b->skel->maps.active), left = b->ncpus;
	const struct timespec pause = { 0, 20000 };
	uint32_t zero = 0;

	memset(b->quiet, 0, b->ncpus * sizeof(*b->quiet));
	for (;;) {
		if (bpf_map_lookup_elem(fd, &zero, b->active))
			return -errno;
		for (int c = 0; c < b->ncpus; c++) {
			if (b->quiet[c] || b->active[c])
				continue;
			b->quiet[c] = true;
			left--;
		}
		if (!left)
			return 0;
		nanosleep(&pause, NULL);
	}
}

int offcpu_bpf__stop(struct offcpu_bpf *b, struct merge *m)
{
	int err, quiet;

	/*
	 * Stopping first, and wait until every program run sees it: from here
	 * the programs start and end no wait, but note the stop's time and
	 * each waiting task's wakeup for the iterator, and end the waits of a
	 * task that exits. Then take the stacks their last samples sent (the
	 * iterator's samples name them) and run the iterator, the programs
	 * still attached: stopped first, a busy thread could wake, run and
	 * wait again many times before the iterator reached it, its wakeup
	 * then unknown (its wait counted lost: "interval end not seen"). Only
	 * then are they stopped, and detached once none is still running.
	 */
	__atomic_store_n(&b->skel->bss->stopping, 1, __ATOMIC_SEQ_CST);
	err = wait_quiet(b);
	if (!err)
		err = offcpu_bpf__poll(b, m);
	if (b->stop_delay_ms) /* a recorder starved here, for the tests */
		usleep(b->stop_delay_ms * 1000);
	if (!err) {
		b->m = m;
		err = run_iter(b->skel->progs.offcpu_stop, sizeof(struct offcpu_sample),
			       on_stop_sample, b);
	}
	__atomic_store_n(&b->skel->bss->stopped, 1, __ATOMIC_SEQ_CST);
	quiet = wait_quiet(b);
	offcpu_skel__detach(b->skel);
	/* --chains: what came since the iterator (its programs run until the detach), then all */
	if (!err && b->chains)
		err = offcpu_bpf__poll(b, m);
	if (!err && b->nr_pending)
		err = chain_flush(b, true);
	return err ? err : quiet;
}

void offcpu_bpf__window(const struct offcpu_bpf *b, uint64_t *start, uint64_t *stop)
{
	*start = b->skel->bss->rec_start_mono;
	*stop = b->skel->bss->rec_stop_mono;
}

/*
 * Samples up to `upto` (CLOCK_MONOTONIC) will be written at the next flush:
 * the programs stamp a wait with a past time (a switch-in the kernel hid)
 * only after it, so that it is not written out of order.
 */
void offcpu_bpf__written_upto(struct offcpu_bpf *b, uint64_t upto)
{
	__atomic_store_n(&b->skel->bss->written_upto, upto, __ATOMIC_RELAXED);
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
	if (b->drb)
		ring_buffer__consume(b->drb);
	n = ring_buffer__consume(b->rb);
	if (!b->err && b->nr_pending)
		b->err = chain_flush(b, false);
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

/* When the gen of sum key k ended (the task's exit, exec or rename); 0: it lives. */
static uint64_t exit_time(struct offcpu_bpf *b, const struct offcpu_sum_key *sk)
{
	struct exit_ent k = {
		.key = { .tid = sk->who.tid, .gen = sk->gen, .start_time = sk->who.start_time }
	};
	struct exit_ent *e = b->nr_exits ? bsearch(&k, b->exits, b->nr_exits, sizeof(k), exits_cmp) : NULL;

	return e ? e->time : 0;
}

/* A sum of the kernel as a sample, timed no later than now. */
static int queue_sum(struct offcpu_bpf *b, struct merge *m, const struct offcpu_sum_key *k,
		     const struct offcpu_sum *v, uint64_t now)
{
	struct offcpu_sample s = { .kind = OFFCPU_REC_SAMPLE, .flags = OFFCPU_SAMPLE_SUM, .k = *k,
				   .v = *v };
	uint64_t end = exit_time(b, k), t = v->time && v->time <= now ? v->time : now;

	/*
	 * At the end of its last interval (on the switch program's clock, a
	 * few us off at most: see now_of in offcpu.bpf.c), and before the
	 * exit, exec or rename that ended its task's gen.
	 */
	if (end && t >= end)
		t = end - 1;
	return queue_sample(b, m, &s, t);
}

/* Move every entry of one sum map into the merge queue, through the batch buffers. */
static int drain_map(struct offcpu_bpf *b, struct merge *m, int fd, uint64_t now)
{
	struct offcpu_sum_key batch;
	void *in = NULL;
	int err;

	for (;;) {
		__u32 count = DRAIN_BATCH;
		int ret;

		ret = bpf_map_lookup_and_delete_batch(fd, in, &batch, b->keys, b->vals, &count, NULL);
		if (ret && errno != ENOENT)
			return -errno;
		for (__u32 i = 0; i < count; i++) {
			err = queue_sum(b, m, &b->keys[i], &b->vals[i], now);
			if (err)
				return err;
		}
		if (ret)
			break;
		in = &batch;
	}
	return 0;
}

static int no_record(void *ctx, const void *rec, size_t len)
{
	(void)ctx;
	(void)rec;
	(void)len;
	return -EINVAL; /* offcpu_flush writes none */
}

/* The value of key `key` of a per-CPU array of u64 counters, summed over the CPUs. */
static uint64_t percpu_total(const struct offcpu_bpf *b, int fd, uint32_t key)
{
	uint64_t n = 0;

	if (bpf_map_lookup_elem(fd, &key, b->active))
		return 0;
	for (int c = 0; c < b->ncpus; c++)
		n += b->active[c];
	return n;
}

/*
 * The audit rate of a cache (kernel stacks: 0, DWARF stacks: 1), after a
 * drain: 1 served hit in AUDIT_MASK_FIRST + 1 is walked and compared at the
 * start; each drain whose audits all agreed (16 at least) halves the rate,
 * down to 1 in AUDIT_MASK_QUIET + 1; an audit that differed brings it back
 * up at once. The audits check the verification of hits, which serves no
 * stack it has not confirmed: once it has agreed for a while, auditing
 * every 64th hit costs more than it tells (a DWARF walk is ~1 us).
 */
static void audit_rate(struct offcpu_bpf *b, int which, uint64_t checked, uint64_t stale,
		       uint32_t *mask)
{
	uint32_t m = *mask;

	if (stale > b->stale[which])
		m = AUDIT_MASK_FIRST;
	else if (checked >= b->audits[which] + 16 && m < AUDIT_MASK_QUIET)
		m = m * 2 + 1;
	else
		return;
	b->audits[which] = checked;
	b->stale[which] = stale;
	__atomic_store_n(mask, m, __ATOMIC_RELAXED);
}

int offcpu_bpf__drain(struct offcpu_bpf *b, struct merge *m)
{
	struct offcpu_skel *sk = b->skel;
	uint32_t old = sk->bss->sum_active & 1;
	int stats = bpf_map__fd(sk->maps.stats), unw = bpf_map__fd(sk->maps.unw_stats);
	uint64_t now;
	int err;

	/*
	 * Switch writers to the other half, wait until no program can still
	 * be writing this one, and take the stacks sent so far: every stack
	 * a sum of this half names is among them.
	 */
	__atomic_store_n(&sk->bss->sum_active, old ^ 1, __ATOMIC_SEQ_CST);
	err = wait_quiet(b);
	if (!err)
		err = offcpu_bpf__poll(b, m);
	if (err)
		return err;
	/*
	 * The sums' time: read now that nothing adds to them any more, so
	 * that no sum is timed before an interval it holds.
	 */
	now = mono_ns();
	/* the tasks' accumulators of this half (both, after the stop) join its sums */
	sk->bss->flush_half = old;
	err = run_iter(sk->progs.offcpu_flush, sizeof(struct offcpu_sample), no_record, b);
	if (!err)
		err = collect_exits(b);
	if (!err)
		err = drain_map(b, m, bpf_map__fd(old ? sk->maps.sum1 : sk->maps.sum0), now);
	if (err)
		return err;
	sk->bss->sum_entries[old] = 0;
	audit_rate(b, 0, percpu_total(b, stats, OFFCPU_STAT_KSTACK_CHECKED),
		   percpu_total(b, stats, OFFCPU_STAT_KSTACK_STALE), &sk->bss->kcache_audit_mask);
	if (b->dwarf)
		audit_rate(b, 1, percpu_total(b, unw, OFFCPU_UNW_CHECKED),
			   percpu_total(b, unw, OFFCPU_UNW_STALE), &sk->bss->unw_audit_mask);
	return 0;
}

/* Sum a per-CPU array of n u64 counters into out[]: 0, or a negative errno (out[] zeroed). */
static int sum_percpu(const struct offcpu_bpf *b, int fd, uint64_t *out, uint32_t n)
{
	uint64_t *v = calloc(b->ncpus, sizeof(*v));
	int err = v ? 0 : -ENOMEM;

	memset(out, 0, n * sizeof(*out));
	for (uint32_t i = 0; !err && i < n; i++) {
		if (bpf_map_lookup_elem(fd, &i, v)) {
			err = -errno;
			break;
		}
		for (int c = 0; c < b->ncpus; c++)
			out[i] += v[c];
	}
	if (err)
		memset(out, 0, n * sizeof(*out));
	free(v);
	return err;
}

int offcpu_bpf__drops(const struct offcpu_bpf *b, uint64_t drops[OFFCPU_DROP__NR])
{
	int err = sum_percpu(b, bpf_map__fd(b->skel->maps.drops), drops, OFFCPU_DROP__NR);

	drops[OFFCPU_DROP_STACK_LOST] += b->stacks_unknown;
	return err;
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

int offcpu_bpf__python_maps(const struct offcpu_bpf *b, int *procs_fd, int *hint_fd)
{
	if (!b->python)
		return -ENOENT;
	*procs_fd = bpf_map__fd(b->skel->maps.py_procs);
	*hint_fd = bpf_map__fd(b->skel->maps.py_hint);
	return 0;
}

int offcpu_bpf__python_stats(const struct offcpu_bpf *b, uint64_t stats[OFFCPU_PY_STAT__NR])
{
	return sum_percpu(b, bpf_map__fd(b->skel->maps.py_stats), stats, OFFCPU_PY_STAT__NR);
}

void offcpu_bpf__set_ustack_fix(struct offcpu_bpf *b, struct ustack_fix *f, struct pyframes *py)
{
	b->fix = f;
	b->py = py;
}
