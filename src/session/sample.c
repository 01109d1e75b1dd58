// SPDX-License-Identifier: GPL-2.0-only
/*
 * A sample to a resolved sample: its thread and comm, its payload's
 * fields, and its callchain as frames, each address through the address
 * cache (session_int.h) to the frames resolve.c made of it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "session/session_int.h"
#include "util/hash.h"
#include "util/vec.h"

int sample__init(struct session *s)
{
	htab__init(&s->stacks, sizeof(struct stack_ent));
	s->ipc = calloc((size_t)1 << IPC_BITS, sizeof(*s->ipc));
	if (!s->ipc)
		return -ENOMEM;
	return chain_cache__new(s);
}

void sample__done(struct session *s)
{
	chain_cache__free(s);
	htab__free(&s->stacks);
	free(s->stack_frames);
	s->stack_frames = NULL;
	s->nr_stack_frames = s->cap_stack_frames = 0;
	free(s->ipc);
	s->ipc = NULL;
}

static bool is_kernel_addr(uint64_t ip)
{
	return ip >= 0xffff800000000000ULL;
}

/* An address the cache did not have: its map, its symbols; the entry is refilled. */
static __attribute__((noinline)) int ipc_miss(struct session *s, struct ipc_ent *c, uint32_t key,
					      uint32_t gen, const struct proc *p, uint64_t ip,
					      uint32_t pid, uint32_t *ent)
{
	const struct map *m = NULL;
	uint64_t shown = ip;
	int err;

	if (key == IPC_KERNEL) {
		err = resolve__addr(s, DSO_KERNEL, NULL, ip, ip, pid, ent);
	} else {
		m = procs__find_map(p, ip);
		if (m) {
			shown = ip - m->start + m->pgoff;
			err = resolve__addr(s, m->dso, m, shown, ip, pid, ent);
		} else {
			err = resolve__addr(s, DSO_UNKNOWN, NULL, ip, ip, pid, ent);
		}
	}
	if (!err) {
		const struct addr_ent *a = addr_at(s, *ent);

		*c = (struct ipc_ent){ ip, key, gen, *ent + 1, a->n, a->first, a->n ? s->res[a->first].frame : 0 };
	}
	return err;
}

/*
 * Append the frames of one address to the sample scratch; -E2BIG when
 * full. Inlined at each of push_chain()'s calls: it runs for every frame
 * of every chain the chain cache has not seen.
 */
static inline __attribute__((always_inline)) int
push_addr(struct session *s, struct rsample *rs, const struct proc *p, uint64_t ip, bool kernel)
{
	uint32_t key = kernel || is_kernel_addr(ip) ? IPC_KERNEL :
		       p ? (uint32_t)(p - proc_at(s, 0)) : IPC_NOPROC;
	uint32_t gen = key < IPC_NOPROC ? p->gen : 0;
	struct ipc_ent *c = &s->ipc[(ip * 0x9e3779b97f4a7c15ULL ^ (uint64_t)key * 0xc2b2ae3d27d4eb4fULL) >>
				    (64 - IPC_BITS)];
	const struct addr_ent *a;
	const struct res *r;
	uint32_t nr = rs->nr, ent;

	if (__builtin_expect(c->ent && c->ip == ip && c->proc == key && c->gen == gen, 1)) {
		if (__builtin_expect(c->n == 1, 1)) {
			if (nr >= MAX_FRAMES)
				return -E2BIG;
			s->sframes[nr] = c->frame;
			s->slocs[nr] = c->first;
			rs->nr = nr + 1;
			return 0;
		}
		ent = c->ent - 1;
	} else {
		int err = ipc_miss(s, c, key, gen, p, ip, rs->s->pid, &ent);

		if (err)
			return err;
	}
	a = addr_at(s, ent);
	r = &s->res[a->first];
	for (uint32_t i = 0; i < a->n; i++, nr++) {
		if (nr >= MAX_FRAMES) {
			rs->nr = nr;
			return -E2BIG;
		}
		s->sframes[nr] = r[i].frame;
		s->slocs[nr] = a->first + i;
	}
	rs->nr = nr;
	return 0;
}

/* The comm id of a waker (at most 16 bytes, NUL-terminated): a hash and a compare when seen lately. */
static int waker_comm(struct session *s, const char *name, uint32_t *id)
{
	uint64_t w[2] = { 0, 0 };
	struct waker_comm *c;
	int err;

	memcpy(w, name, strnlen(name, 16));
	c = &s->waker_comms[hash__mix(w[0] ^ w[1] * 0x9e3779b97f4a7c15ULL) & (WAKER_COMMS - 1)];
	if (c->id && c->name[0] == w[0] && c->name[1] == w[1]) {
		*id = c->id - 1;
		return 0;
	}
	err = procs__comm(s, name, id);
	if (!err)
		*c = (struct waker_comm){ { w[0], w[1] }, *id + 1 };
	return err;
}

/*
 * perf's own direct off-CPU samples (perf --off-cpu, 6.14 and newer) carry
 * the thread id where the process id belongs and the other way round (its
 * BPF program packs them so); perf shows them so. The side-band knows
 * which thread belongs to which process: when it says the recorded tid is
 * a process and the recorded pid one of its threads, the two are put back.
 * offcpu's own payloads and perf's summed samples are left alone.
 */
static void fix_perf_offcpu_ids(struct session *s, struct perf_sample *ps)
{
	const struct thread *t;

	if (!ps->off.embedded || ps->off.own || ps->pid == ps->tid)
		return;
	t = procs__thread(s, ps->tid);
	if (t && t->pid == ps->pid)
		return; /* as it should be */
	t = procs__thread(s, ps->pid);
	if (t && t->pid == ps->tid) {
		uint32_t v = ps->pid;

		ps->pid = ps->tid;
		ps->tid = v;
	}
}

/*
 * The frames of a sample's callchain, leaf first: the sample's ip leads
 * unless the chain has it; context markers switch kernel and user; a
 * corrupt chain (a walk into junk) is dropped whole, as perf drops it, and
 * the sample counted where its ip is.
 */
static int push_chain(struct session *s, struct rsample *rs, const struct proc *p)
{
	const struct perf_sample *ps = rs->s;
	bool has_ip = ps->evattr->attr.sample_type & PERF_SAMPLE_IP;
	bool kernel = ps->cpumode == PERF_RECORD_MISC_KERNEL ||
		      ps->cpumode == PERF_RECORD_MISC_GUEST_KERNEL;
	bool first = true;
	int err = 0;

	if (!ps->nr_callchain)
		return has_ip ? push_addr(s, rs, p, ps->ip, kernel) : 0;
	for (uint64_t i = 0; i < ps->nr_callchain && !err; i++) {
		uint64_t ip = perf_sample__ip(ps, i);

		if (ip >= PERF_CTX_MAX) {
			if (ip != PERF_CTX_KERNEL && ip != PERF_CTX_USER && ip != (uint64_t)PERF_CONTEXT_HV) {
				rs->no_chain = true;
				rs->nr = 0;
				break;
			}
			kernel = ip == PERF_CTX_KERNEL;
			continue;
		}
		if (first && has_ip && ip != ps->ip)
			err = push_addr(s, rs, p, ps->ip, ps->cpumode == PERF_RECORD_MISC_KERNEL);
		first = false;
		if (!err)
			err = push_addr(s, rs, p, ip, kernel);
	}
	if (rs->no_chain && !err && has_ip)
		err = push_addr(s, rs, p, ps->ip, ps->cpumode == PERF_RECORD_MISC_KERNEL);
	return err;
}

struct stack_key {
	const struct session *s;
	const uint32_t *frames;
	uint32_t nr;
};

static bool stack_eq(const void *entry, const void *key)
{
	const struct stack_ent *e = entry;
	const struct stack_key *k = key;

	return e->nr == k->nr &&
	       (!k->nr || !memcmp(k->s->stack_frames + e->off, k->frames, k->nr * sizeof(uint32_t)));
}

/* Frame ids are small dense integers: one multiply per pair, a full mix at the end. */
static uint64_t frames_hash(const uint32_t *f, uint32_t n)
{
	uint64_t h = n;
	uint32_t i = 0;

	for (; i + 2 <= n; i += 2)
		h = (h ^ ((uint64_t)f[i] << 32 | f[i + 1])) * 0x9e3779b97f4a7c15ULL + (h >> 29);
	if (i < n)
		h = (h ^ f[i]) * 0x9e3779b97f4a7c15ULL + (h >> 29);
	return hash__mix(h);
}

/* rs->stack for rs's frames, interned on first sight: 0 or -ENOMEM. */
static int intern_stack(struct session *s, struct rsample *rs)
{
	struct stack_key k = { s, rs->frames, (uint32_t)rs->nr };
	uint64_t h = frames_hash(rs->frames, rs->nr);
	struct stack_ent *e = htab__find(&s->stacks, h, stack_eq, &k);
	bool added;

	if (!e) {
		if (vec__reserve((void **)&s->stack_frames, &s->cap_stack_frames,
				 s->nr_stack_frames + rs->nr, sizeof(uint32_t), 4096))
			return -ENOMEM;
		e = htab__get(&s->stacks, h, stack_eq, &k, &added);
		if (!e)
			return -ENOMEM;
		e->off = s->nr_stack_frames;
		e->nr = rs->nr;
		if (rs->nr)
			memcpy(s->stack_frames + e->off, rs->frames, rs->nr * sizeof(uint32_t));
		s->nr_stack_frames += rs->nr;
	}
	rs->stack = (uint32_t)(e - (struct stack_ent *)s->stacks.v) + 1;
	return 0;
}

/* The sample's frames into the scratch arrays, as many as they hold, and its stack id. */
static int resolve_chain(struct session *s, struct rsample *rs, const struct proc *p)
{
	int err = push_chain(s, rs, p);

	rs->frames = s->sframes;
	rs->locs = s->slocs;
	if (err == -E2BIG)
		err = 0; /* deeper than we keep: the outermost frames are dropped */
	return err || s->opts.no_stacks ? err : intern_stack(s, rs);
}

int sample__on_sample(struct session *s, const struct perf_rec *rec)
{
	struct perf_sample fixed;
	const struct perf_sample *ps = &rec->sample;
	struct rsample rs = { 0 };
	struct thread *t;
	struct proc *p;
	int err;

	if (ps->off.embedded && !ps->off.own) {
		fixed = *ps;
		fix_perf_offcpu_ids(s, &fixed);
		ps = &fixed;
	}
	t = procs__thread_get(s, ps->tid, ps->pid);
	p = procs__proc(s, ps->pid, false);
	if (!t)
		return -ENOMEM;
	s->stats.nr_samples++;
	rs.s = ps;
	rs.event = ps->evattr->idx;
	rs.comm = t->comm;
	rs.thread_start = t->fork_time;
	rs.count = 1;
	if (ps->raw && (ps->evattr->is_offcpu || ps->evattr->is_wakeup || ps->evattr->is_sched_delay)) {
		rs.state = ps->off.state;
		rs.flags = ps->off.flags;
		rs.count = ps->off.count;
		rs.cgroup = ps->off.cgroup;
	}
	if (ps->off.waker) {
		rs.waker_pid = ps->off.waker_pid;
		rs.waker_tid = ps->off.waker_tid;
		err = waker_comm(s, ps->off.waker_comm, &rs.waker_comm);
		if (err)
			return err;
	}
	err = ps->nr_callchain ? chain_cache__resolve(s, &rs, p, resolve_chain) :
				 resolve_chain(s, &rs, p);
	if (err)
		return err;
	return s->cb(s->cb_ctx, &rs);
}
