/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The DWARF user-stack unwinder of offcpu's BPF programs (--call-graph
 * dwarf), included by offcpu.bpf.c. Its tables (src/bpf/unwind.h) are built
 * by user space (src/unwind/) from each mapped file's call-frame
 * information.
 *
 * One step per frame, from the user registers at kernel entry:
 *   find the mapping of pc (the previous frame's first, else a binary
 *   search of the process's sorted mappings), then the last row at or below
 *   pc's file address (binary search); its rule gives the CFA; the return
 *   address is at CFA - 8, the caller's rbp where the rule says. Callers are
 *   looked up at return address - 1 (the call may be a function's last
 *   instruction), except the frame a signal interrupted, whose pc is exact.
 *   Code without call-frame information is stepped by its frame pointer.
 *
 * A full walk costs about 100 ns a frame (two binary searches and a read),
 * three times a frame-pointer walk. A thread blocks at the same few points
 * again and again, so stacks are cached by blocking point (tgid, table
 * generation, ip, sp) together with every read the walk made. A walk is a
 * function of its starting registers and of the values it read: on a hit
 * the same addresses are read again, and only if every value is the same
 * (and the starting rbp, when the walk used it) is the cached stack used.
 * That costs one read a frame, as a frame-pointer walk does. Stale stack
 * memory cannot fool it: whatever the memory holds, the walk would read the
 * same and find the same. One hit in unw_check_mask + 1 is walked anyway
 * and compared, and the recording says how often that differed (stale).
 */
#ifndef OFFCPU_UNWIND_BPF_H
#define OFFCPU_UNWIND_BPF_H

#include "unwind.h"

/* Set by user space before load. */
const volatile bool unwind_dwarf = false;   /* --call-graph dwarf */
const volatile __u32 unw_check_mask = 15;   /* walk 1 cache hit in mask+1 */

/* Per-CPU scratch slots: programs that can interrupt each other use their own. */
enum { UNW_SCRATCH_SWITCH = 0, UNW_SCRATCH_WAKING, UNW_SCRATCH_CPU, UNW_SCRATCH__NR };

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* sized by user space */
	__type(key, __u32);
	__type(value, struct offcpu_unw_row);
} unw_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, OFFCPU_UNW_MAX_RULES);
	__type(key, __u32);
	__type(value, struct offcpu_unw_rule);
} unw_rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* memory follows the processes */
	__uint(max_entries, 1);               /* sized by user space */
	__type(key, __u32);
	__type(value, struct offcpu_unw_proc);
} unw_procs SEC(".maps");

/* Execs seen per process (tgid), to tell a table of a replaced image. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1); /* sized by user space */
	__type(key, __u32);
	__type(value, __u32);
} unw_execs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 2048);
	__type(key, struct offcpu_unw_key);
	__type(value, struct offcpu_unw_cached);
} unw_cache SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, UNW_SCRATCH__NR);
	__type(key, __u32);
	__type(value, struct offcpu_unw_cached);
} unw_scratch SEC(".maps");

/* Per CPU: a process's mappings being copied to its child at fork. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct offcpu_unw_proc);
} unw_fork_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OFFCPU_UNW_STAT__NR);
	__type(key, __u32);
	__type(value, __u64);
} unw_stats SEC(".maps");

static __always_inline void unw_stat_add(__u32 what, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&unw_stats, &what);

	if (v)
		*v += n;
}

/* Why a walk ended, besides its natural end. */
#define UNW_STOP_NONE 0xffffffffu

/*
 * The walk's state. It lives in a per-CPU map value, not on the BPF stack:
 * values loaded from a map are unknown to the verifier, so each bpf_loop
 * callback is verified once, where scalars on the stack that change at
 * every iteration make it explore them all (past the 1 M instruction
 * limit).
 */
struct unw_state {
	__u64 pc, sp, bp;
	__u32 n;         /* frames in rec->frames */
	__u32 map;       /* index of the previous frame's mapping + 1; 0: none */
	__u32 stop;      /* UNW_STOP_NONE or the enum offcpu_unw_stat that ended it */
	__u8 exact;      /* pc is exact (first frame, or after a signal frame) */
	__u8 bp_valid;   /* bp is known */
	__u8 bp_initial; /* bp is still the starting register */
	__u8 cacheable;
	__u8 no_mapping; /* a frame outside the known mappings */
	__u8 fp_step;    /* a frame stepped by its frame pointer */
	__u8 pad[2];
	/* a binary search */
	__u64 target;
	__u32 lo, hi, base;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, UNW_SCRATCH__NR);
	__type(key, __u32);
	__type(value, struct unw_state);
} unw_state SEC(".maps");

/* The bpf_loop context (on the stack, as bpf_loop wants): what does not change. */
struct unw_ctx {
	struct unw_state *st;
	struct offcpu_unw_proc *proc;
	struct offcpu_unw_cached *rec; /* frames and reads, for the cache */
};

/* Binary search step: the first mapping whose start is above the target. */
static long unw_msearch_step(__u32 i, void *vctx)
{
	struct unw_ctx *c = vctx;
	struct unw_state *st = c->st;
	__u32 lo = st->lo, hi = st->hi, mid;

	if (lo >= hi)
		return 1;
	mid = (lo + hi) / 2;
	if (c->proc->maps[mid & (OFFCPU_UNW_MAX_MAPS - 1)].start <= st->target)
		st->lo = mid + 1;
	else
		st->hi = mid;
	return 0;
}

/* The mapping holding pc, or NULL; st->map remembers it for the next frame. */
static __always_inline struct offcpu_unw_map *unw_find_map(struct unw_ctx *c, __u64 pc)
{
	struct offcpu_unw_proc *proc = c->proc;
	struct unw_state *st = c->st;
	struct offcpu_unw_map *m;
	__u32 i;

	if (st->map) {
		m = &proc->maps[(st->map - 1) & (OFFCPU_UNW_MAX_MAPS - 1)];
		if (m->start <= pc && pc < m->end)
			return m;
	}
	st->target = pc;
	st->lo = 0;
	st->hi = proc->nr;
	if (st->hi > OFFCPU_UNW_MAX_MAPS)
		st->hi = OFFCPU_UNW_MAX_MAPS;
	bpf_loop(9, unw_msearch_step, c, 0);
	if (!st->lo)
		return NULL;
	i = (st->lo - 1) & (OFFCPU_UNW_MAX_MAPS - 1);
	m = &proc->maps[i];
	if (pc >= m->end)
		return NULL;
	st->map = i + 1;
	return m;
}

/* Binary search step: the first row whose address is above the target. */
static long unw_rsearch_step(__u32 i, void *vctx)
{
	struct unw_ctx *c = vctx;
	struct unw_state *st = c->st;
	struct offcpu_unw_row *row;
	__u32 lo = st->lo, hi = st->hi, mid, idx;

	if (lo >= hi)
		return 1;
	mid = (lo + hi) / 2;
	idx = st->base + mid;
	row = bpf_map_lookup_elem(&unw_rows, &idx);
	if (!row) {
		st->lo = 0;
		return 1;
	}
	if (row->pc <= st->target)
		st->lo = mid + 1;
	else
		st->hi = mid;
	return 0;
}

/* The rule at file address addr of mapping m; NULL: no call-frame information there. */
static __always_inline struct offcpu_unw_rule *unw_find_rule(struct unw_ctx *c,
							     struct offcpu_unw_map *m, __u64 addr)
{
	struct unw_state *st = c->st;
	struct offcpu_unw_row *row;
	__u32 idx;

	if (addr > 0xffffffffULL)
		return NULL;
	st->target = addr;
	st->base = m->row_start;
	st->lo = 0;
	st->hi = m->row_count;
	bpf_loop(32, unw_rsearch_step, c, 0);
	if (!st->lo)
		return NULL;
	idx = st->base + st->lo - 1;
	row = bpf_map_lookup_elem(&unw_rows, &idx);
	if (!row)
		return NULL;
	idx = row->rule;
	return bpf_map_lookup_elem(&unw_rules, &idx);
}

/*
 * Read len (8 or 16) bytes of user memory at addr into v, noting the read
 * for the cache. false: unreadable (not resident, or not mapped).
 */
static __always_inline bool unw_read(struct unw_ctx *c, __u64 addr, __u64 *v, __u32 len)
{
	struct offcpu_unw_cached *rec = c->rec;
	struct offcpu_unw_read *r;
	__u32 n;

	v[1] = 0;
	if (bpf_probe_read_user(v, len == 16 ? 16 : 8, (const void *)addr))
		return false;
	n = rec->nreads;
	if (n >= OFFCPU_UNW_MAX_READS || (addr & 1)) {
		c->st->cacheable = 0;
		return true;
	}
	r = &rec->reads[n & (OFFCPU_UNW_MAX_READS - 1)];
	r->addr = addr | (len == 16);
	r->v[0] = v[0];
	r->v[1] = v[1];
	rec->nreads = n + 1;
	return true;
}

/* rbp is about to be used: when it is still the starting register, the cache must check it. */
static __always_inline void unw_use_bp(struct unw_ctx *c)
{
	if (c->st->bp_initial) {
		c->rec->bp_used = 1;
		c->rec->bp = c->st->bp;
	}
}

/* The walk ends here because of `why` (an enum offcpu_unw_stat). */
static __always_inline long unw_stop(struct unw_ctx *c, __u32 why)
{
	c->st->stop = why;
	if (why == OFFCPU_UNW_READ_FAILED)
		c->st->cacheable = 0; /* the slot may be readable next time */
	return 1;
}

/* Append the caller's frame: pc, with the registers sp and bp of its frame. */
static __always_inline long unw_push(struct unw_ctx *c, __u64 pc, __u64 sp, __u64 bp)
{
	struct unw_state *st = c->st;
	__u32 n = st->n;

	if (pc < 4096) /* the outermost frame's return address is 0 */
		return 1;
	c->rec->frames[n & 127] = pc;
	st->n = n + 1;
	st->pc = pc;
	st->sp = sp;
	st->bp = bp;
	return 0;
}

/*
 * One frame-pointer step: the caller's rbp and return address are the two
 * words at rbp. For code without call-frame information.
 */
static __always_inline long unw_fp_step(struct unw_ctx *c)
{
	struct unw_state *st = c->st;
	__u64 v[2], bp = st->bp;

	st->fp_step = 1;
	if (!st->bp_valid || !bp)
		return 1; /* the end of a frame-pointer chain */
	unw_use_bp(c);
	if (bp < st->sp || (bp & 7))
		return unw_stop(c, OFFCPU_UNW_BAD_FRAME);
	if (!unw_read(c, bp, v, 16))
		return unw_stop(c, OFFCPU_UNW_READ_FAILED);
	st->exact = 0;
	st->bp_initial = 0;
	return unw_push(c, v[1], bp + 16, v[0]);
}

/*
 * A signal frame (the rt_sigreturn trampoline, __restore_rt): sp points at
 * the ucontext the kernel saved (x86-64 rt_sigframe after the handler's
 * return popped pretcode); the interrupted registers are in its
 * uc_mcontext at 40: rbp at +80, rsp at +120, rip at +128. The next pc is
 * exact: it is where the signal came, not a return address.
 */
static __always_inline long unw_signal_step(struct unw_ctx *c)
{
	struct unw_state *st = c->st;
	__u64 bp[2], v[2], sp = st->sp;

	if (!unw_read(c, sp + 40 + 80, bp, 8) || !unw_read(c, sp + 40 + 120, v, 16))
		return unw_stop(c, OFFCPU_UNW_READ_FAILED);
	st->exact = 1;
	st->bp_valid = 1;
	st->bp_initial = 0;
	return unw_push(c, v[1], v[0], bp[0]);
}

/* One frame: from pc, sp, bp of frame n-1 to its caller's. */
static long unw_step(__u32 i, void *vctx)
{
	struct unw_ctx *c = vctx;
	struct unw_state *st = c->st;
	struct offcpu_unw_rule *r = NULL;
	struct offcpu_unw_map *m;
	__u64 lookup, cfa, v[2], ra, bp, sp = st->sp;
	__s32 rbp_off;
	__u8 rbp;

	if (st->n >= OFFCPU_MAX_STACK)
		return unw_stop(c, OFFCPU_UNW_TRUNCATED);
	lookup = st->exact ? st->pc : st->pc - 1;
	m = unw_find_map(c, lookup);
	if (!m) {
		st->no_mapping = 1;
		return unw_fp_step(c);
	}
	if (m->row_count)
		r = unw_find_rule(c, m, lookup - m->bias);
	if (!r)
		return unw_fp_step(c);
	switch (r->cfa) {
	case OFFCPU_UNW_CFA_RSP:
		cfa = sp + r->cfa_off;
		break;
	case OFFCPU_UNW_CFA_RBP:
		if (!st->bp_valid)
			return unw_stop(c, OFFCPU_UNW_UNSUPPORTED);
		unw_use_bp(c);
		cfa = st->bp + r->cfa_off;
		break;
	case OFFCPU_UNW_CFA_PLT:
		cfa = sp + r->cfa_off + ((st->pc & 15) >= r->arg ? 8 : 0);
		break;
	case OFFCPU_UNW_CFA_SIGNAL:
		return unw_signal_step(c);
	case OFFCPU_UNW_CFA_END:
		return 1;
	case OFFCPU_UNW_CFA_NONE:
		return unw_fp_step(c);
	default:
		return unw_stop(c, OFFCPU_UNW_UNSUPPORTED);
	}
	if (cfa <= sp)
		return unw_stop(c, OFFCPU_UNW_BAD_FRAME);
	rbp = r->rbp;
	rbp_off = r->rbp_off;
	bp = st->bp;
	if (rbp == OFFCPU_UNW_RBP_OFFSET && rbp_off == -16) {
		/* the common prologue: rbp pushed right after the call, one read */
		if (!unw_read(c, cfa - 16, v, 16))
			return unw_stop(c, OFFCPU_UNW_READ_FAILED);
		bp = v[0];
		ra = v[1];
	} else {
		if (!unw_read(c, cfa - 8, v, 8))
			return unw_stop(c, OFFCPU_UNW_READ_FAILED);
		ra = v[0];
		if (rbp == OFFCPU_UNW_RBP_OFFSET) {
			if (!unw_read(c, cfa + rbp_off, v, 8))
				return unw_stop(c, OFFCPU_UNW_READ_FAILED);
			bp = v[0];
		}
	}
	if (rbp == OFFCPU_UNW_RBP_OFFSET) {
		st->bp_valid = 1;
		st->bp_initial = 0;
	} else if (rbp == OFFCPU_UNW_RBP_UNSUPPORTED) {
		st->bp_valid = 0;
	}
	st->exact = 0;
	return unw_push(c, ra, cfa, bp);
}

struct unw_confirm {
	struct offcpu_unw_cached *e;
	bool ok;
};

/* Re-read one of a cached stack's reads: the same value(s)? */
static long unw_confirm_step(__u32 i, void *vctx)
{
	struct unw_confirm *c = vctx;
	struct offcpu_unw_read *r = &c->e->reads[i & (OFFCPU_UNW_MAX_READS - 1)];
	__u64 v[2] = {};
	__u64 addr = r->addr;

	if (bpf_probe_read_user(v, addr & 1 ? 16 : 8, (const void *)(addr & ~1ULL)) ||
	    v[0] != r->v[0] || v[1] != r->v[1]) {
		c->ok = false;
		return 1;
	}
	return 0;
}

struct unw_cmp {
	struct offcpu_unw_cached *a, *b;
	bool same;
};

static long unw_cmp_step(__u32 i, void *vctx)
{
	struct unw_cmp *c = vctx;

	if (c->a->frames[i & 127] != c->b->frames[i & 127]) {
		c->same = false;
		return 1;
	}
	return 0;
}

/*
 * current's user stack into out[] (*n frames, at most OFFCPU_MAX_STACK)
 * from the DWARF tables, starting at its user registers ip, sp, bp (at
 * kernel entry, or where a sample interrupted it). scratch: the per-CPU
 * slot of the calling program (UNW_SCRATCH_*). false: the process has no
 * tables (yet, or for this image): the caller walks frame pointers.
 */
static __always_inline bool unwind_user(__u64 ip, __u64 sp, __u64 bp, __u64 *out, __u32 *n,
					__u32 scratch)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, execs = 0, *ne, nf;
	struct offcpu_unw_cached *e, *rec;
	struct offcpu_unw_key k = {};
	struct unw_state *st;
	struct unw_ctx c;
	bool checking = false;

	c.proc = bpf_map_lookup_elem(&unw_procs, &tgid);
	ne = bpf_map_lookup_elem(&unw_execs, &tgid);
	if (ne)
		execs = *ne;
	if (!c.proc || c.proc->execs != execs) {
		unw_stat_add(OFFCPU_UNW_NO_TABLE, 1);
		return false;
	}
	k.tgid = tgid;
	k.gen = c.proc->gen;
	k.ip = ip;
	k.sp = sp;
	e = bpf_map_lookup_elem(&unw_cache, &k);
	if (e) {
		struct unw_confirm cf = { .e = e, .ok = !e->bp_used || e->bp == bp };

		if (cf.ok)
			bpf_loop(e->nreads & (OFFCPU_UNW_MAX_READS * 2 - 1), unw_confirm_step, &cf, 0);
		/* uses is a racy count: a lost increment only moves the next check */
		if (cf.ok && (e->uses++ & unw_check_mask)) {
			nf = e->nframes;
			if (nf > OFFCPU_MAX_STACK)
				nf = OFFCPU_MAX_STACK;
			if (bpf_probe_read_kernel(out, (nf & 127) * 8, e->frames))
				nf = 0;
			*n = nf;
			unw_stat_add(OFFCPU_UNW_CACHED, 1);
			return true;
		}
		checking = cf.ok;
	}

	rec = bpf_map_lookup_elem(&unw_scratch, &scratch);
	st = bpf_map_lookup_elem(&unw_state, &scratch);
	if (!rec || !st)
		return false;
	rec->nreads = 0;
	rec->bp_used = 0;
	rec->bp = 0;
	rec->uses = 1;
	rec->frames[0] = ip;
	st->pc = ip;
	st->sp = sp;
	st->bp = bp;
	st->n = 1;
	st->map = 0;
	st->stop = UNW_STOP_NONE;
	st->exact = 1;
	st->bp_valid = 1;
	st->bp_initial = 1;
	st->cacheable = 1;
	st->no_mapping = 0;
	st->fp_step = 0;
	c.st = st;
	c.rec = rec;
	bpf_loop(OFFCPU_MAX_STACK, unw_step, &c, 0);
	nf = st->n;
	if (nf > OFFCPU_MAX_STACK)
		nf = OFFCPU_MAX_STACK;
	rec->nframes = nf;
	if (bpf_probe_read_kernel(out, (nf & 127) * 8, rec->frames))
		nf = 0;
	*n = nf;

	unw_stat_add(OFFCPU_UNW_WALKED, 1);
	unw_stat_add(OFFCPU_UNW_FRAMES, nf);
	if (st->stop != UNW_STOP_NONE)
		unw_stat_add(st->stop, 1);
	if (st->no_mapping)
		unw_stat_add(OFFCPU_UNW_NO_MAPPING, 1);
	if (st->fp_step)
		unw_stat_add(OFFCPU_UNW_FP_STEPS, 1);
	if (checking) {
		struct unw_cmp cm = { .a = e, .b = rec, .same = e->nframes == rec->nframes };

		if (cm.same)
			bpf_loop(nf, unw_cmp_step, &cm, 0);
		unw_stat_add(OFFCPU_UNW_CHECKED, 1);
		if (cm.same)
			return true;
		unw_stat_add(OFFCPU_UNW_STALE, 1);
	}
	if (st->cacheable)
		bpf_map_update_elem(&unw_cache, &k, rec, BPF_ANY);
	return true;
}

/*
 * A process forks: the child has the parent's mappings, hence its tables,
 * from its first instruction on (user space follows from the FORK record).
 */
static __always_inline void unwind_fork(__u32 ptgid, __u32 ctgid)
{
	struct offcpu_unw_proc *p = bpf_map_lookup_elem(&unw_procs, &ptgid), *c;
	__u32 zero = 0, *ne = bpf_map_lookup_elem(&unw_execs, &ptgid);

	if (!p || p->execs != (ne ? *ne : 0))
		return;
	c = bpf_map_lookup_elem(&unw_fork_scratch, &zero);
	if (!c || bpf_probe_read_kernel(c, sizeof(*c), p))
		return;
	c->execs = 0; /* the child's own count starts here */
	bpf_map_update_elem(&unw_procs, &ctgid, c, BPF_NOEXIST);
}

/* A process execs: its tables describe the old image until user space writes the new one. */
static __always_inline void unwind_exec(__u32 tgid)
{
	__u32 *n = bpf_map_lookup_elem(&unw_execs, &tgid), one = 1;

	if (n)
		__sync_fetch_and_add(n, 1);
	else
		bpf_map_update_elem(&unw_execs, &tgid, &one, BPF_NOEXIST);
}

/* A process is gone. */
static __always_inline void unwind_exit(__u32 tgid)
{
	bpf_map_delete_elem(&unw_execs, &tgid);
	bpf_map_delete_elem(&unw_procs, &tgid);
}

#endif
