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
 * function of its starting registers and of the values it used (return
 * addresses, and saved rbp values a later frame needed): on a hit those
 * words are read again, and only if each is the same (and the starting
 * rbp, when the walk used it) is the cached stack used. Stale stack memory
 * cannot fool it: whatever the memory holds, the walk would read the same
 * and find the same. A read of user memory costs about 75 ns here whatever
 * its size up to a few KiB (a 2 KiB read: 110 ns), so the words are
 * re-read in spans of up to 4 KiB (the slots of a 14-frame python stack
 * lie within 1.5 KiB): a hit costs one or two reads, where a frame-pointer
 * walk costs one a frame. A thread that blocks where it blocked last
 * skips the lookup too: its storage keeps a memo of its last stack at its
 * switch-out (struct offcpu_umemo) with the words that walk used, re-read
 * as one span and compared the same way (unw_memo_try). One hit (of
 * the cache or of a memo) in unw_audit_mask + 1 is walked anyway and
 * compared, and the recording says how often that differed (stale).
 * A hit gives the stack's id (offcpu.h, struct offcpu_stack): the stacks
 * it walks are sent to user space once, through stack_announce
 * (offcpu.bpf.c), before they are cached.
 *
 * Its size (about 1 100 lines): a walk's steps (mapping, rule, read,
 * frame), the early and late mappings, the cache of blocking points and
 * the processes' life (fork, exec, exit) share the per-CPU walk state and
 * the maps, and BPF has no linking between them: all of it is inlined into
 * offcpu.bpf.c's programs.
 */
#ifndef OFFCPU_UNWIND_BPF_H
#define OFFCPU_UNWIND_BPF_H

#include "unwind.h"

/* Set by user space before load. */
const volatile bool unwind_dwarf = false;   /* --call-graph dwarf */
/* Set by user space, and changed while recording (see offcpu_bpf.c). */
__u32 unw_audit_mask; /* walk 1 cache hit in mask+1 */

/*
 * Table generation per process (tgid % OFFCPU_UNW_PGEN), part of the cache
 * key. 64-bit: an array's elements are 8-byte aligned, and user space
 * writes them through the mapping.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, OFFCPU_UNW_PGEN);
	__type(key, __u32);
	__type(value, __u64);
} unw_pgen SEC(".maps");

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

/*
 * Execs seen per process (tgid), to tell a table of a replaced image: their
 * count (user space counts COMM-exec records alike) and the kernel's
 * self_exec_id after the last one. An exec changes self_exec_id when the
 * old image is gone (begin_new_exec), before sched_process_exec: a stack
 * taken in between is of neither image.
 */
struct unw_exec {
	__u32 count;
	__u32 pad;
	__u64 exec_id;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1); /* sized by user space */
	__type(key, __u32);
	__type(value, struct unw_exec);
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

/* Files' tables by identity, for stacks taken before their process's table. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1); /* sized by user space */
	__type(key, struct offcpu_unw_file_key);
	__type(value, struct offcpu_unw_file);
} unw_files SEC(".maps");

/* Per CPU and program: an early table (unw_early_table). */
#define UNW_EARLY_MAPS 8
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, UNW_SCRATCH__NR);
	__type(key, __u32);
	__type(value, struct offcpu_unw_proc);
} unw_vprocs SEC(".maps");

/*
 * Per process (tgid), the early table's mappings found so far, for the
 * image of exec_id: a lookup that succeeded serves the process's later
 * stacks too (the lookup fails while the mmap lock is busy, as it is
 * while a starting process maps its threads' stacks).
 */
struct unw_early {
	__u64 exec_id;
	__u32 nr, pad;
	struct offcpu_unw_map maps[UNW_EARLY_MAPS];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct unw_early);
} unw_early SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct unw_early);
} unw_scratch_early SEC(".maps");

/*
 * The early mappings kept for process tgid's image exec_id into p: their
 * number, or -1 if none. A function of its own (verified once, not at
 * every unwind_user call site).
 */
__noinline int unw_early_load(struct offcpu_unw_proc *p, __u32 tgid, __u64 exec_id)
{
	struct unw_early *e = bpf_map_lookup_elem(&unw_early, &tgid);

	if (!p || !e || e->exec_id != exec_id || e->nr > UNW_EARLY_MAPS ||
	    bpf_probe_read_kernel(p->maps, sizeof(e->maps), e->maps))
		return -1;
	p->nr = e->nr;
	return e->nr;
}

/* Keep p's early mappings for process tgid's image exec_id. */
__noinline int unw_early_keep(struct offcpu_unw_proc *p, __u32 tgid, __u64 exec_id)
{
	__u32 zero = 0;
	struct unw_early *e = bpf_map_lookup_elem(&unw_scratch_early, &zero);

	if (!p || !e || p->nr > UNW_EARLY_MAPS ||
	    bpf_probe_read_kernel(e->maps, sizeof(e->maps), p->maps))
		return -1;
	e->exec_id = exec_id;
	e->nr = p->nr;
	return bpf_map_update_elem(&unw_early, &tgid, e, BPF_ANY);
}

/* Per CPU: a process's mappings being copied to its child at fork. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct offcpu_unw_proc);
} unw_fork_scratch SEC(".maps");

/* Per CPU: a span of the stack read at once to confirm a cached stack. */
#define UNW_SPAN 4096
struct unw_span {
	__u64 w[UNW_SPAN / 8 + 2];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, UNW_SCRATCH__NR);
	__type(key, __u32);
	__type(value, struct unw_span);
} unw_spans SEC(".maps");

/*
 * Per CPU and program: the memo unwind_user keeps of the stack it found,
 * for the caller to copy to the task's (unw_memo_take): the walk's
 * verification does not depend on a pointer the caller may not have.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, UNW_SCRATCH__NR);
	__type(key, __u32);
	__type(value, struct offcpu_umemo);
} unw_memos SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OFFCPU_UNW_STAT__NR);
	__type(key, __u32);
	__type(value, __u64);
} unw_stats SEC(".maps");

/*
 * Requests to user space, which otherwise reads the recording's side-band
 * in batches: a process needs its tables now.
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16384);
} unw_notify SEC(".maps");

/* Per CPU: when it last asked for a missing table (at most one request a millisecond). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} unw_notify_last SEC(".maps");

static __always_inline void unw_request(__u32 tgid, __u32 why, __u64 pc)
{
	struct offcpu_unw_notify n = { .tgid = tgid, .why = why, .pc = pc };

	bpf_ringbuf_output(&unw_notify, &n, sizeof(n), BPF_RB_FORCE_WAKEUP);
}

/*
 * A stack met a process, or at pc a mapping, without a table: ask for it,
 * rate-limited.
 */
static __always_inline void unw_request_missing(__u32 tgid, __u64 pc)
{
	__u32 zero = 0;
	__u64 *last = bpf_map_lookup_elem(&unw_notify_last, &zero), now = bpf_ktime_get_ns();

	if (!last || now - *last < 1000000)
		return;
	*last = now;
	unw_request(tgid, OFFCPU_UNW_WHY_MISSING, pc);
}

static __always_inline void unw_stat_add(__u32 what, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&unw_stats, &what);

	if (v)
		*v += n;
}

struct unw_vma_ctx {
	struct offcpu_unw_map *m;
	__u64 vdso;
	__u32 found;
};

/* bpf_find_vma's callback: vma's file, if its table is built, as mapping *m. */
static long unw_vma_found(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	struct unw_vma_ctx *v = data;
	struct offcpu_unw_file_key k = {};
	struct offcpu_unw_map *m = v->m;
	struct offcpu_unw_file *f;
	struct file *file = BPF_CORE_READ(vma, vm_file);
	__u64 start = BPF_CORE_READ(vma, vm_start), pgoff = BPF_CORE_READ(vma, vm_pgoff);
	__u32 dev;

	if (file) {
		dev = BPF_CORE_READ(file, f_inode, i_sb, s_dev);
		k.maj = dev >> 20; /* the kernel's dev_t: MINORBITS 20 */
		k.min = dev & ((1u << 20) - 1);
		k.ino = BPF_CORE_READ(file, f_inode, i_ino);
	} else if (start == v->vdso) {
		k.maj = ~0u;
		pgoff = 0;
	} else {
		return 0;
	}
	f = bpf_map_lookup_elem(&unw_files, &k);
	if (!f)
		return 0;
	m->start = start;
	m->end = BPF_CORE_READ(vma, vm_end);
	m->bias = start - (pgoff << 12) - f->delta;
	m->row_start = f->row_start;
	m->row_count = f->row_count;
	v->found = 1;
	return 0;
}

/*
 * The executable segment of file k loaded with bias base, appended to the
 * early table p; false if the file has no table.
 */
static __always_inline bool unw_early_add(struct offcpu_unw_proc *p, struct offcpu_unw_file_key *k,
					  __u64 base)
{
	struct offcpu_unw_file *f = bpf_map_lookup_elem(&unw_files, k);
	struct offcpu_unw_map *m;
	__u32 n = p->nr;

	if (!f || n >= UNW_EARLY_MAPS)
		return false;
	m = &p->maps[n & (UNW_EARLY_MAPS - 1)];
	m->start = base + f->x_lo;
	m->end = base + f->x_hi;
	m->bias = base;
	m->row_start = f->row_start;
	m->row_count = f->row_count;
	p->nr = n + 1;
	return true;
}

/*
 * current's table, for a stack taken before user space wrote its
 * process's (it has just started, exec'd or forked), from what the kernel
 * knows without a lock: the main executable (mm->exe_file, its text at
 * start_code) and the vDSO. Other files are found as the walk meets them
 * (unw_early_map). Only files whose table is built count (a command's
 * files are built before it runs).
 */
static __always_inline void unw_early_table(struct offcpu_unw_proc *p)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct mm_struct *mm = task->mm;
	struct offcpu_unw_file_key k = {};
	struct file *exe = BPF_CORE_READ(mm, exe_file);
	__u32 dev = BPF_CORE_READ(exe, f_inode, i_sb, s_dev);
	__u64 vdso = (__u64)BPF_CORE_READ(mm, context.vdso);
	struct offcpu_unw_file *f;

	p->nr = 0;
	k.maj = dev >> 20;
	k.min = dev & ((1u << 20) - 1);
	k.ino = BPF_CORE_READ(exe, f_inode, i_ino);
	f = bpf_map_lookup_elem(&unw_files, &k);
	if (f)
		unw_early_add(p, &k, BPF_CORE_READ(mm, start_code) - f->x_lo);
	k.maj = ~0u;
	k.min = 0;
	k.ino = 0;
	if (vdso)
		unw_early_add(p, &k, vdso);
}

/* Why a walk ended, besides its natural end. */
#define UNW_STOP_NONE 0xffffffffu
#define UNW_STOP_MISS 0xfffffffeu /* a frame without a table: the stack is deferred */

/* ---- deferred stacks (struct offcpu_unw_deferred in unwind.h) ---- */

/* Ids of deferred stacks (user space finds them by it in the samples). */
__u64 unw_defer_seq;

struct unw_defer_buf {
	__u64 hdr; /* room for the start iterator's record header (struct offcpu_iter_hdr) */
	struct offcpu_unw_deferred d;
	__u8 slack[8192]; /* a page read at the end may pass OFFCPU_UNW_DEFER_STACK */
};

/* Per CPU and program (UNW_SCRATCH_*; the start iterator's after them). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, UNW_SCRATCH__NR + 1);
	__type(key, __u32);
	__type(value, struct unw_defer_buf);
} unw_defer_bufs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} unw_deferred SEC(".maps");

/*
 * Deferred stacks already copied, by what makes them the same: a process
 * whose table is late blocks where it blocked before, and each of its
 * stacks would be copied again (16 KiB a switch, which fills the ring
 * before the recorder has unwound the first). The frames so far follow
 * from the registers, the table (its generation) and the stack below the
 * frame that had none; the callers above it, which user space unwinds,
 * from the 512 bytes above that frame (its return address, unless its
 * frame is larger).
 */
struct unw_defer_key {
	__u32 tgid, gen_nf; /* the table's generation, the frames so far */
	__u64 ip, sp, bp;
	__u64 miss_sp; /* the stack pointer of the frame without a table */
	__u64 above;   /* hash of the 512 bytes from there */
};

#define UNW_DEFER_ABOVE 512

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct unw_defer_key);
	__type(value, __u64);
} unw_defer_memo SEC(".maps");

/* The top of a stack, copied page by page from its start: the bytes kept. */
#define UNW_DEFER_PAGES (OFFCPU_UNW_DEFER_STACK / 4096 + 1)

/*
 * The registers of a stack to be unwound in user space into d, with its
 * id: all of them from regs when they are the stack's own (a stack taken
 * at kernel entry), else ip, sp and bp (a CPU sample in user mode).
 */
static __always_inline void unw_defer_regs(struct offcpu_unw_deferred *d, struct pt_regs *regs,
					   __u64 ip, __u64 sp, __u64 bp)
{
	__builtin_memset(d->regs, 0, sizeof(d->regs));
	d->flags = 0;
	if (regs && BPF_CORE_READ(regs, ip) == ip && BPF_CORE_READ(regs, sp) == sp) {
		d->regs[0] = BPF_CORE_READ(regs, ax);
		d->regs[1] = BPF_CORE_READ(regs, dx);
		d->regs[2] = BPF_CORE_READ(regs, cx);
		d->regs[3] = BPF_CORE_READ(regs, bx);
		d->regs[4] = BPF_CORE_READ(regs, si);
		d->regs[5] = BPF_CORE_READ(regs, di);
		d->regs[8] = BPF_CORE_READ(regs, r8);
		d->regs[9] = BPF_CORE_READ(regs, r9);
		d->regs[10] = BPF_CORE_READ(regs, r10);
		d->regs[11] = BPF_CORE_READ(regs, r11);
		d->regs[12] = BPF_CORE_READ(regs, r12);
		d->regs[13] = BPF_CORE_READ(regs, r13);
		d->regs[14] = BPF_CORE_READ(regs, r14);
		d->regs[15] = BPF_CORE_READ(regs, r15);
		d->flags = OFFCPU_UNW_DEFER_ALL_REGS;
	}
	d->regs[OFFCPU_UNW_REG_BP] = bp;
	d->regs[OFFCPU_UNW_REG_SP] = sp;
	d->regs[OFFCPU_UNW_REG_IP] = ip;
	d->id = __sync_fetch_and_add(&unw_defer_seq, 1) + 1;
}

/*
 * current's stack from its registers ip, sp, bp, kept raw for user space
 * (the unw_deferred ring): its id; UNW_DEFER_UNREADABLE when not a byte
 * of it could be read, UNW_DEFER_LOST when the ring was full. The walk
 * stopped at the frame whose stack pointer is miss_sp; gen_nf_scratch:
 * the table's generation << 16 | the frames so far << 8 | the calling
 * program's slot. The same stack as one kept before takes that one's id
 * (unw_defer_memo). A function of its own: verified once, not at every
 * unwind_user call site. Pages not resident end the copy
 * (bpf_probe_read_user cannot fault them in); the stack's own top ends it
 * too.
 */
#define UNW_DEFER_UNREADABLE 0
#define UNW_DEFER_LOST (~0ULL)
__noinline __u64 unw_defer(__u64 ip, __u64 sp, __u64 bp, __u64 miss_sp, __u64 gen_nf_scratch)
{
	__u32 scratch = gen_nf_scratch & 0xff;
	struct unw_defer_buf *b = bpf_map_lookup_elem(&unw_defer_bufs, &scratch);
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 id = bpf_get_current_pid_tgid(), addr = sp, *w, h = 0xcbf29ce484222325ULL, *memo;
	struct unw_defer_key k = {};
	struct offcpu_unw_deferred *d;
	__u32 len = 0, n;

	if (!b)
		return UNW_DEFER_LOST;
	d = &b->d;
	/* the same stack as one copied before: its id (the ring holds that copy, or had it) */
	k.tgid = id >> 32;
	k.gen_nf = gen_nf_scratch >> 8;
	k.ip = ip;
	k.sp = sp;
	k.bp = bp;
	k.miss_sp = miss_sp;
	if (!bpf_probe_read_user(d->stack, UNW_DEFER_ABOVE, (const void *)miss_sp)) {
		w = (__u64 *)d->stack;
		for (int i = 0; i < UNW_DEFER_ABOVE / 8; i++)
			h = (h ^ w[i]) * 0x100000001b3ULL;
		k.above = h;
		memo = bpf_map_lookup_elem(&unw_defer_memo, &k);
		if (memo) {
			unw_stat_add(OFFCPU_UNW_DEFER_REUSED, 1);
			return *memo;
		}
	} else {
		k.tgid = 0; /* not kept */
	}
	d->pid = id >> 32;
	d->tid = (__u32)id;
	unw_defer_regs(d, (struct pt_regs *)bpf_task_pt_regs(task), ip, sp, bp);
	for (int i = 0; i < UNW_DEFER_PAGES; i++) {
		n = 4096 - (addr & 4095);
		if (len >= OFFCPU_UNW_DEFER_STACK || n > 4096 ||
		    bpf_probe_read_user(&d->stack[len & (OFFCPU_UNW_DEFER_STACK - 1)], n,
					(const void *)addr))
			break;
		len += n;
		addr += n;
	}
	if (len > OFFCPU_UNW_DEFER_STACK)
		len = OFFCPU_UNW_DEFER_STACK;
	d->len = len;
	if (!len)
		return UNW_DEFER_UNREADABLE;
	/* no wakeup: in no epoll set, the ring is read at each turn of the loop and when a stack names a copy */
	if (bpf_ringbuf_output(&unw_deferred, d, OFFCPU_UNW_DEFERRED_HDR + len, BPF_RB_NO_WAKEUP))
		return UNW_DEFER_LOST;
	if (k.tgid)
		bpf_map_update_elem(&unw_defer_memo, &k, &d->id, BPF_ANY);
	return d->id;
}

/*
 * What a hit of the cache serves, as it was read (once) by unw_confirm:
 * the stack's id and frame count, and its facts.
 */
struct unw_hit {
	__u64 id;
	__u64 missing_pc;
	__u32 nr;
	__u32 stats;
};

/*
 * The walk's state. It lives in a per-CPU map value, not on the BPF stack:
 * values loaded from a map are unknown to the verifier, so each bpf_loop
 * callback is verified once, where scalars on the stack that change at
 * every iteration make it explore them all (past the 1 M instruction
 * limit).
 */
struct unw_state {
	__u64 pc, sp, bp;
	__u32 n;         /* frames in rec->st.frames */
	__u32 map;       /* index of the previous frame's mapping + 1; 0: none */
	__u32 stop;      /* UNW_STOP_NONE or the enum offcpu_unw_stat that ended it */
	__u8 exact;      /* pc is exact (first frame, or after a signal frame) */
	__u8 bp_valid;   /* bp is known */
	__u8 bp_initial; /* bp is still the starting register */
	__u8 cacheable;
	__u8 no_mapping; /* a frame outside the known mappings */
	__u8 fp_step;    /* a frame stepped by its frame pointer */
	__u8 by_vma;     /* no process table: the early one (unw_early_table) */
	__u8 vma_tried;  /* unw_early_map or unw_late_map was called */
	__u8 late;       /* a frame placed by unw_late_map: not cached */
	__u32 bp_src;    /* where bp was read: (read index << 1 | word) + 1; 0: not read */
	__u64 missing_pc; /* the first frame outside the tables built */
	/* a binary search */
	__u64 target;
	__u32 lo, hi, base;
	/* the stack window in unw_spans: [win_lo, win_lo + win_len) */
	__u64 win_lo, win_len;
	struct offcpu_unw_map extra; /* the mapping unw_late_map found */
	/* unwind_user's arguments, and what its steps pass on: off the BPF stack */
	__u64 ip0, sp0, bp0; /* the registers it starts from */
	__u64 exec_id;
	__u32 tgid, scratch;
	__u32 early_nr;      /* the early table's mappings before the walk */
	__u8 keep, checking; /* unw_lookup's: the walk checks a hit (hit.id) */
	struct offcpu_unw_key key;
	struct unw_hit hit;
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
	struct unw_span *win;          /* the stack window */
};

/* Binary search step: the first mapping whose start is above the target. */
static __always_inline long unw_msearch_step(__u32 i, void *vctx)
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

/*
 * A pc outside the early table: its mapping from the kernel's list
 * (bpf_find_vma), appended. Once a walk: with interrupts off (sched_switch,
 * a cpu-clock sample) the mmap lock's release is deferred to an irq_work
 * that must run before the lock can be taken again.
 */
static __always_inline struct offcpu_unw_map *unw_early_map(struct unw_ctx *c, __u64 pc)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct offcpu_unw_proc *p = c->proc;
	struct unw_vma_ctx v = {};
	__u32 n = p->nr;

	if (c->st->vma_tried || n >= UNW_EARLY_MAPS)
		return NULL;
	c->st->vma_tried = 1;
	v.m = &p->maps[n & (UNW_EARLY_MAPS - 1)];
	v.vdso = (__u64)BPF_CORE_READ(task, mm, context.vdso);
	if (bpf_find_vma(task, pc, unw_vma_found, &v, 0) || !v.found)
		return NULL;
	p->nr = n + 1;
	c->st->map = n + 1;
	return v.m;
}

/*
 * A pc outside the process's table: the table is a little behind the
 * process (a library mapped while the loader had not written it yet, as
 * a starting program's first threads block within a millisecond of its
 * exec). Its mapping from the kernel's list, once a walk, as
 * unw_early_map; the stack is not cached (the table will give it). The
 * lookup is written out in both rather than shared: a helper taking the
 * slot made the verifier process 40 000 more instructions of the switch
 * program (test_record_verifier), which is near its limit.
 */
static __always_inline struct offcpu_unw_map *unw_late_map(struct unw_ctx *c, __u64 pc)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct unw_state *st = c->st;
	struct unw_vma_ctx v = {};

	if (st->late && st->extra.start <= pc && pc < st->extra.end)
		return &st->extra;
	if (st->vma_tried)
		return NULL;
	st->vma_tried = 1;
	v.m = &st->extra;
	v.vdso = (__u64)BPF_CORE_READ(task, mm, context.vdso);
	if (bpf_find_vma(task, pc, unw_vma_found, &v, 0) || !v.found)
		return NULL;
	st->late = 1;
	st->map = 0;
	return &st->extra;
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
	if (st->by_vma) {
		for (i = 0; i < UNW_EARLY_MAPS; i++) {
			m = &proc->maps[i];
			if (i < proc->nr && m->start <= pc && pc < m->end) {
				st->map = i + 1;
				return m;
			}
		}
		return unw_early_map(c, pc);
	}
	st->target = pc;
	st->lo = 0;
	st->hi = proc->nr;
	if (st->hi > OFFCPU_UNW_MAX_MAPS)
		st->hi = OFFCPU_UNW_MAX_MAPS;
	for (__u32 j = 0; j < 9; j++)
		if (unw_msearch_step(j, c))
			break;
	if (!st->lo)
		return unw_late_map(c, pc);
	i = (st->lo - 1) & (OFFCPU_UNW_MAX_MAPS - 1);
	m = &proc->maps[i];
	if (pc >= m->end)
		return unw_late_map(c, pc);
	st->map = i + 1;
	return m;
}

/* Binary search step: the first row whose address is above the target. */
static __always_inline long unw_rsearch_step(__u32 i, void *vctx)
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
	for (__u32 i = 0; i < 32; i++)
		if (unw_rsearch_step(i, c))
			break;
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
 * for the cache with the words already known to be used (use:
 * OFFCPU_UNW_READ_USE*). Returns the read's index + 1 (for unw_bp_from),
 * 0 when unreadable (not resident, or not mapped).
 */
static __always_inline __u32 unw_read(struct unw_ctx *c, __u64 addr, __u64 *v, __u32 len, __u64 use)
{
	struct offcpu_unw_cached *rec = c->rec;
	struct unw_state *st = c->st;
	struct offcpu_unw_read *r;
	__u64 lo = st->win_lo, w;
	__u32 n;

	/*
	 * From the window of the stack read last, else a new one from addr to
	 * the end of its page (a read that stays in a readable page cannot
	 * fault), at most UNW_SPAN bytes: one read serves several frames.
	 */
	len = len == 16 ? 16 : 8;
	v[1] = 0;
	if (addr < lo || addr + len > lo + st->win_len || ((addr - lo) & 7)) {
		w = 4096 - (addr & 4095);
		if (w < len)
			w = len;
		if (bpf_probe_read_user(c->win->w, w, (const void *)addr)) {
			st->win_len = 0;
			return 0;
		}
		st->win_lo = addr;
		st->win_len = w;
		lo = addr;
	}
	w = ((addr - lo) >> 3) & (UNW_SPAN / 8 - 1);
	v[0] = c->win->w[w];
	if (len == 16)
		v[1] = c->win->w[w + 1];
	n = rec->nreads;
	if (n >= OFFCPU_UNW_MAX_READS || (addr & OFFCPU_UNW_READ_FLAGS)) {
		c->st->cacheable = 0;
		return OFFCPU_UNW_MAX_READS + 1; /* read, but not noted */
	}
	r = &rec->reads[n & (OFFCPU_UNW_MAX_READS - 1)];
	r->addr = addr | (len == 16 ? OFFCPU_UNW_READ_16 : 0) | use;
	r->v[0] = v[0];
	r->v[1] = v[1];
	rec->nreads = n + 1;
	if (addr + len > rec->hi)
		rec->hi = addr + len;
	return n + 1;
}

/* bp now comes from word `word` of read `read` (unw_read's return value). */
static __always_inline void unw_bp_from(struct unw_ctx *c, __u32 read, __u32 word)
{
	c->st->bp_initial = 0;
	c->st->bp_src = read <= OFFCPU_UNW_MAX_READS ? ((read - 1) << 1 | word) + 1 : 0;
}

/*
 * rbp is about to be used: the walk depends on its value, so the cache must
 * check it: the starting register, or the word it was read from.
 */
static __always_inline void unw_use_bp(struct unw_ctx *c)
{
	struct unw_state *st = c->st;
	__u32 src = st->bp_src;

	if (st->bp_initial) {
		c->rec->bp_used = 1;
		c->rec->bp = st->bp;
	} else if (src) {
		src--;
		c->rec->reads[(src >> 1) & (OFFCPU_UNW_MAX_READS - 1)].addr |=
			src & 1 ? OFFCPU_UNW_READ_USE1 : OFFCPU_UNW_READ_USE0;
	} else {
		st->cacheable = 0; /* read but not noted: cannot be checked */
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
	c->rec->st.frames[n & 127] = pc;
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
	__u32 rd;

	st->fp_step = 1;
	if (!st->bp_valid)
		return 1;
	unw_use_bp(c); /* whatever follows depends on its value, its end too */
	if (!bp)
		return 1; /* the end of a frame-pointer chain */
	if (bp < st->sp || (bp & 7))
		return unw_stop(c, OFFCPU_UNW_BAD_FRAME);
	rd = unw_read(c, bp, v, 16, OFFCPU_UNW_READ_USE1);
	if (!rd)
		return unw_stop(c, OFFCPU_UNW_READ_FAILED);
	st->exact = 0;
	unw_bp_from(c, rd, 0);
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
	__u32 rd = unw_read(c, sp + 40 + 80, bp, 8, 0);

	if (!rd || !unw_read(c, sp + 40 + 120, v, 16, OFFCPU_UNW_READ_USE0 | OFFCPU_UNW_READ_USE1))
		return unw_stop(c, OFFCPU_UNW_READ_FAILED);
	st->exact = 1;
	st->bp_valid = 1;
	unw_bp_from(c, rd, 0);
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
	__u32 rd;
	__u8 rbp;

	if (st->n >= OFFCPU_MAX_STACK)
		return unw_stop(c, OFFCPU_UNW_TRUNCATED);
	lookup = st->exact ? st->pc : st->pc - 1;
	m = unw_find_map(c, lookup);
	if (!m || (!m->row_count && m->row_start == OFFCPU_UNW_PENDING)) {
		if (!st->no_mapping)
			st->missing_pc = lookup;
		st->no_mapping = 1;
		st->stop = UNW_STOP_MISS; /* unwound in user space (unw_defer) */
		return 1;
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
		rd = unw_read(c, cfa - 16, v, 16, OFFCPU_UNW_READ_USE1);
		if (!rd)
			return unw_stop(c, OFFCPU_UNW_READ_FAILED);
		bp = v[0];
		ra = v[1];
		unw_bp_from(c, rd, 0);
	} else {
		if (!unw_read(c, cfa - 8, v, 8, OFFCPU_UNW_READ_USE0))
			return unw_stop(c, OFFCPU_UNW_READ_FAILED);
		ra = v[0];
		if (rbp == OFFCPU_UNW_RBP_OFFSET) {
			rd = unw_read(c, cfa + rbp_off, v, 8, 0);
			if (!rd)
				return unw_stop(c, OFFCPU_UNW_READ_FAILED);
			bp = v[0];
			unw_bp_from(c, rd, 0);
		}
	}
	if (rbp == OFFCPU_UNW_RBP_OFFSET)
		st->bp_valid = 1;
	else if (rbp == OFFCPU_UNW_RBP_UNSUPPORTED)
		st->bp_valid = 0;
	st->exact = 0;
	return unw_push(c, ra, cfa, bp);
}

/*
 * The task's memo of its last stack (struct offcpu_umemo, offcpu.bpf.c):
 * the cache key, the starting rbp if the walk used it, and the words the
 * walk used (a USE-marked word of each read), made from what a confirmed
 * hit read or a walk found. It holds as a hit of the cache holds: the same
 * registers and the same words give the same walk. Its words are read
 * again as one span from the lowest to the end of the highest (within
 * the stack, as the walk's reads were): one read, no lookup.
 */

/* The walk used the word at addr, of value val. */
static __always_inline void unw_memo_word(struct offcpu_umemo *um, __u64 addr, __u64 val)
{
	__u32 n = um->nw;

	if (n >= OFFCPU_UMEMO_WORDS) {
		um->over = 1;
		return;
	}
	um->addr[n & (OFFCPU_UMEMO_WORDS - 1)] = addr;
	um->val[n & (OFFCPU_UMEMO_WORDS - 1)] = val;
	um->nw = n + 1;
	if (addr < um->lo)
		um->lo = addr;
	if (addr + 8 > um->hi)
		um->hi = addr + 8;
}

/*
 * A memo about to be made (unw_memo_keep) of stack id (its facts stats,
 * missing_pc) at key k, rbp bp (bp_used: the walk depended on it), image
 * exec_id: not served until made.
 */
static __always_inline void unw_memo_head(struct offcpu_umemo *um, const struct offcpu_unw_key *k,
					  __u64 bp, __u32 bp_used, __u64 exec_id, __u64 id,
					  __u32 stats, __u64 missing_pc)
{
	um->valid = 0;
	um->tgid = k->tgid;
	um->gen = k->gen;
	um->ip = k->ip;
	um->sp = k->sp;
	um->bp = bp;
	um->bp_used = bp_used;
	um->exec_id = exec_id;
	um->id = id;
	um->stats = stats;
	um->missing_pc = missing_pc;
}

/* unw_memo_keep's bpf_loop context. */
struct unw_memo_ctx {
	struct offcpu_umemo *um;
	struct offcpu_unw_cached *e;
	__u64 rsum; /* the sum of the reads' fields, as unw_confirm's */
};

/* Read i of the stack being kept: its used words into the memo. */
static long unw_memo_step(__u32 i, void *vctx)
{
	struct unw_memo_ctx *c = vctx;
	struct offcpu_unw_read *r = &c->e->reads[i & (OFFCPU_UNW_MAX_READS - 1)];
	__u64 addr = r->addr, v0 = r->v[0], v1 = r->v[1];

	c->rsum += addr + v0 + v1;
	if (addr & OFFCPU_UNW_READ_USE0)
		unw_memo_word(c->um, addr & ~OFFCPU_UNW_READ_FLAGS, v0);
	if (addr & OFFCPU_UNW_READ_USE1)
		unw_memo_word(c->um, (addr & ~OFFCPU_UNW_READ_FLAGS) + 8, v1);
	return 0;
}

/*
 * The memo um (its head written: unw_memo_head) made of the words stack e
 * used (its nr reads), and served from now on if they fit in one span;
 * keep 0: the caller keeps none (a scalar, not a branch of the caller's).
 * rsum: what the reads summed to when unw_confirm found e whole (0: e is
 * this CPU's own, unw_scratch): an e recycled since sums otherwise, and is
 * not kept. A function of its own, its loop a bpf_loop: verified once,
 * apart from unwind_user's paths.
 */
__noinline int unw_memo_keep(struct offcpu_umemo *um, struct offcpu_unw_cached *e, __u32 nr,
			     __u64 rsum, __u32 keep)
{
	struct unw_memo_ctx c = { .um = um, .e = e };

	if (!keep || !um || !e || nr > OFFCPU_UNW_MAX_READS)
		return -1;
	um->nw = 0;
	um->over = 0;
	um->lo = ~0ULL;
	um->hi = 0;
	bpf_loop(nr, unw_memo_step, &c, 0);
	if ((rsum && c.rsum != rsum) || um->over || (um->nw && um->hi - um->lo > UNW_SPAN))
		return -1;
	um->uses = 1; /* its first use is one after the walk or hit it was made from */
	um->valid = 1;
	return 0;
}

/*
 * Does the cached stack e still hold: the same task image, the starting rbp
 * if the walk used it, and every word it used the same? The words are read
 * in spans of up to UNW_SPAN bytes into buf (each span ends at most at the
 * highest word the walk read, so it is readable as that walk's reads were).
 * Each field of e is read once, and the sum of what was read must be its
 * seal (unw_seal): an entry recycled by another CPU meanwhile is not
 * served. What it serves is in *h; when it holds, the memo um (if given;
 * keep: unw_memo_keep's) is made of it.
 */
static __always_inline bool unw_confirm(struct offcpu_unw_cached *e, struct unw_span *buf,
					__u64 bp, __u64 exec_id, struct unw_hit *h,
					const struct offcpu_unw_key *k, struct offcpu_umemo *um,
					__u32 keep)
{
	__u64 lo = 0, len = 0, hi = e->hi, ebp = e->bp, eexec = e->exec_id, seal, rsum = 0;
	__u32 nr = e->nreads, bp_used = e->bp_used;

	h->id = e->st.id;
	h->nr = e->st.nr;
	h->stats = e->stats;
	h->missing_pc = e->missing_pc;
	seal = h->id + h->nr + h->stats + h->missing_pc + hi + ebp + eexec + nr + bp_used;
	if (eexec != exec_id || (bp_used && ebp != bp))
		return false;
	for (__u32 i = 0; i < OFFCPU_UNW_MAX_READS; i++) {
		struct offcpu_unw_read *r = &e->reads[i];
		__u64 flags, addr, rlen, n, w, v0, v1;

		if (i >= nr)
			break;
		addr = r->addr;
		v0 = r->v[0];
		v1 = r->v[1];
		rsum += addr + v0 + v1;
		flags = addr & OFFCPU_UNW_READ_FLAGS;
		if (!(flags & (OFFCPU_UNW_READ_USE0 | OFFCPU_UNW_READ_USE1)))
			continue; /* nothing the walk depended on */
		addr &= ~OFFCPU_UNW_READ_FLAGS;
		rlen = flags & OFFCPU_UNW_READ_16 ? 16 : 8;
		if (addr < lo || addr + rlen > lo + len) {
			n = hi - addr;
			if (n > UNW_SPAN || n < rlen)
				n = rlen;
			if (bpf_probe_read_user(buf->w, n, (const void *)addr))
				return false;
			lo = addr;
			len = n;
		}
		w = ((addr - lo) >> 3) & (UNW_SPAN / 8 - 1);
		if (((flags & OFFCPU_UNW_READ_USE0) && buf->w[w] != v0) ||
		    ((flags & OFFCPU_UNW_READ_USE1) && buf->w[w + 1] != v1))
			return false;
	}
	if (seal + rsum != e->seal)
		return false;
	if (um) {
		unw_memo_head(um, k, bp, bp_used, exec_id, h->id, h->stats, h->missing_pc);
		unw_memo_keep(um, e, nr, rsum, keep);
	}
	return true;
}

/* The seal of a stack about to be cached: the sum unw_confirm checks. */
static __always_inline __u64 unw_seal(const struct offcpu_unw_cached *e)
{
	__u64 seal = e->st.id + e->st.nr + e->stats + e->missing_pc + e->hi + e->bp + e->exec_id +
		     e->nreads + e->bp_used;

	for (__u32 i = 0; i < OFFCPU_UNW_MAX_READS; i++) {
		if (i >= e->nreads)
			break;
		seal += e->reads[i].addr + e->reads[i].v[0] + e->reads[i].v[1];
	}
	return seal;
}

/*
 * The facts of a stack, walked or cached (its stats bits): each counted,
 * and a table it lacked asked for (again: a request may have been
 * rate-limited away, and the stack stays cached until the table comes).
 */
static __always_inline void unw_stats_of(__u32 bits, __u64 missing_pc, __u32 tgid)
{
	for (__u32 i = OFFCPU_UNW_EARLY; i < OFFCPU_UNW_STAT__NR; i++)
		if (bits & (1u << i))
			unw_stat_add(i, 1);
	if (bits & (1u << OFFCPU_UNW_NO_MAPPING))
		unw_request_missing(tgid, missing_pc);
	else if (bits & (1u << OFFCPU_UNW_EARLY))
		unw_request_missing(tgid, 0);
}

enum { UNW_MEMO_MISS, UNW_MEMO_SERVED, UNW_MEMO_AUDIT };

/*
 * Does current's memo um hold for the stack at its registers ip, sp, bp:
 * the same place (the cache's key, image, rbp if used), and each word it
 * used the same (read as one span into the slot scratch's unw_spans)?
 * UNW_MEMO_SERVED: its stack (um->id) is current's, counted as a hit of
 * the cache; UNW_MEMO_AUDIT: it holds, but is due a check by a walk (as a
 * hit of the cache is); UNW_MEMO_MISS: the cache is asked. Either way
 * the slot's memo (unw_memos) is emptied, for unwind_user to fill. A
 * function of its own: verified once, apart from unwind_user's paths.
 */
__noinline int unw_memo_try(struct offcpu_umemo *um, __u64 ip, __u64 sp, __u64 bp, __u32 scratch)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, gi = tgid % OFFCPU_UNW_PGEN, nw;
	struct offcpu_umemo *sm = bpf_map_lookup_elem(&unw_memos, &scratch);
	struct unw_span *buf;
	__u64 *gen, lo, len;

	if (sm)
		sm->valid = 0; /* until unwind_user keeps one (unw_memo_take) */
	if (!um || !um->valid || um->ip != ip || um->sp != sp || um->tgid != tgid ||
	    (um->bp_used && um->bp != bp) ||
	    um->exec_id != bpf_get_current_task_btf()->self_exec_id)
		return UNW_MEMO_MISS;
	gen = bpf_map_lookup_elem(&unw_pgen, &gi);
	if (!gen || um->gen != (__u32)*gen)
		return UNW_MEMO_MISS;
	nw = um->nw;
	if (nw) {
		lo = um->lo;
		len = um->hi - lo;
		buf = bpf_map_lookup_elem(&unw_spans, &scratch);
		if (!buf || len > UNW_SPAN || bpf_probe_read_user(buf->w, len, (const void *)lo))
			return UNW_MEMO_MISS;
		for (__u32 i = 0; i < OFFCPU_UMEMO_WORDS; i++) {
			if (i >= nw)
				break;
			if (buf->w[((um->addr[i] - lo) >> 3) & (UNW_SPAN / 8 - 1)] != um->val[i])
				return UNW_MEMO_MISS;
		}
	}
	if (audit_due(&um->uses, unw_audit_mask))
		return UNW_MEMO_AUDIT;
	unw_stat_add(OFFCPU_UNW_CACHED, 1);
	if (um->stats)
		unw_stats_of(um->stats, um->missing_pc, tgid);
	return UNW_MEMO_SERVED;
}

/*
 * The memo unwind_user kept in slot scratch (unw_memos) becomes um (none
 * kept: um is emptied).
 */
static __always_inline void unw_memo_take(struct offcpu_umemo *um, __u32 scratch)
{
	struct offcpu_umemo *sm = bpf_map_lookup_elem(&unw_memos, &scratch);

	if (!sm || !sm->valid || bpf_probe_read_kernel(um, sizeof(*um), sm))
		um->valid = 0;
}

/*
 * A confirmed hit's frames into out[] (*n of them), when the caller wants
 * them: copied first, then checked against the id confirmed, so that a
 * copy that raced a recycling of e is not used.
 */
static __always_inline bool unw_serve(struct offcpu_unw_cached *e, const struct unw_hit *h,
				      __u64 *out, __u32 *n)
{
	__u32 nf = h->nr;

	if (!out)
		return true;
	if (nf > OFFCPU_MAX_STACK || bpf_probe_read_kernel(out, (nf & 127) * 8, e->st.frames) ||
	    stack_hash(out, nf) != h->id)
		return false;
	*n = nf;
	return true;
}

/*
 * current's user stack from the DWARF tables, starting at its user
 * registers ip, sp, bp (at kernel entry, or where a sample interrupted
 * it): its id in *id (0: none, or its frames could not be sent), and, when
 * out is given, its frames in out[] (*n, at most OFFCPU_MAX_STACK).
 * scratch: the per-CPU slot of the calling program (UNW_SCRATCH_*).
 * Without out, a memo of the stack found is kept in the slot's unw_memos
 * when keep (0 or 1) says so, and memo_check is the id of a hit of the
 * task's memo due its check (unw_memo_try): walked and compared as a hit
 * of the cache is, the cache not looked up.
 * false: the process has no tables (yet, or for this image): the caller
 * walks frame pointers.
 */
enum { UNW_LOOKUP_WALK, UNW_LOOKUP_SERVED };
static __noinline int unw_lookup(struct unw_state *st, __u64 *out, __u32 *n, __u64 memo_check);
static __noinline int unw_walk(struct unw_state *st);
static __noinline __u64 unw_finish(struct unw_state *st, __u64 *out, __u32 *n);

static __always_inline bool unwind_user(__u64 ip, __u64 sp, __u64 bp, __u32 scratch, __u64 *id,
					__u64 *out, __u32 *n, __u32 keep, __u64 memo_check)
{
	struct unw_state *st = bpf_map_lookup_elem(&unw_state, &scratch);
	int r;

	if (!st)
		return false;
	st->ip0 = ip;
	st->sp0 = sp;
	st->bp0 = bp;
	st->scratch = scratch;
	st->keep = keep;
	st->tgid = bpf_get_current_pid_tgid() >> 32;
	st->exec_id = bpf_get_current_task_btf()->self_exec_id;
	r = unw_lookup(st, out, n, memo_check);
	if (r == UNW_LOOKUP_SERVED) {
		*id = st->hit.id;
		return true;
	}
	if (r < 0 || unw_walk(st) < 0)
		return false;
	*id = unw_finish(st, out, n);
	return true;
}

/*
 * unwind_user's first step: the cache (a hit needs neither the process's
 * table nor its exec count). UNW_LOOKUP_SERVED: the hit's stack (st->hit,
 * its frames in out[] when given); UNW_LOOKUP_WALK: to be walked
 * (st->checking: the walk checks a hit due its audit, st->hit's id); < 0:
 * no scratch. Each step a function of its own: their frames do not add
 * up on the BPF stack, their live values do not spill onto one frame.
 */
static __noinline int unw_lookup(struct unw_state *st, __u64 *out, __u32 *n, __u64 memo_check)
{
	__u32 scratch = st->scratch, gi = st->tgid % OFFCPU_UNW_PGEN;
	struct offcpu_unw_key *k = &st->key;
	struct unw_hit *hit = &st->hit;
	struct offcpu_umemo *um = NULL;
	struct offcpu_unw_cached *e;
	struct unw_span *buf;
	__u64 *gen;

	gen = bpf_map_lookup_elem(&unw_pgen, &gi);
	buf = bpf_map_lookup_elem(&unw_spans, &scratch);
	if (!gen || !buf)
		return -1;
	hit->id = 0;
	hit->missing_pc = 0;
	hit->nr = 0;
	hit->stats = 0;
	k->tgid = st->tgid;
	k->gen = (__u32)*gen;
	k->ip = st->ip0;
	k->sp = st->sp0;
	st->checking = 0;
	if (!out) {
		um = bpf_map_lookup_elem(&unw_memos, &scratch);
		if (!um)
			return -1;
		if (memo_check) {
			/* a hit of the memo due its check (unw_memo_try): walked, not looked up */
			st->checking = 1;
			hit->id = memo_check;
			return UNW_LOOKUP_WALK;
		}
	}
	e = bpf_map_lookup_elem(&unw_cache, k);
	if (!e || !unw_confirm(e, buf, st->bp0, st->exec_id, hit, k, um, st->keep))
		return UNW_LOOKUP_WALK;
	st->checking = audit_due(&e->uses, unw_audit_mask);
	if (st->checking || !unw_serve(e, hit, out, n))
		return UNW_LOOKUP_WALK;
	unw_stat_add(OFFCPU_UNW_CACHED, 1);
	if (hit->stats)
		unw_stats_of(hit->stats, hit->missing_pc, st->tgid);
	return UNW_LOOKUP_SERVED;
}

/*
 * unwind_user's walk, from st's registers, into the slot's unw_scratch
 * record. < 0: no table applies (or no scratch): no stack.
 */
static __noinline int unw_walk(struct unw_state *st)
{
	__u32 scratch = st->scratch, tgid = st->tgid, execs = 0;
	__u64 exec_id = st->exec_id;
	struct offcpu_unw_cached *rec;
	struct unw_exec *ne;
	struct unw_ctx c;

	ne = bpf_map_lookup_elem(&unw_execs, &tgid);
	if (ne) {
		execs = ne->count;
		if (ne->exec_id != exec_id)
			execs = ~0u; /* inside an exec: no image's table applies */
	} else {
		struct unw_exec first = { .exec_id = exec_id };

		bpf_map_update_elem(&unw_execs, &tgid, &first, BPF_NOEXIST);
	}
	/*
	 * No table of this image yet: ask for it, and meanwhile find the
	 * mappings from what the kernel knows (unw_early_table). Inside an exec, the
	 * registers and the memory are of different images: no stack.
	 */
	st->by_vma = 0;
	c.proc = bpf_map_lookup_elem(&unw_procs, &tgid);
	if (!c.proc || c.proc->execs != execs) {
		unw_request_missing(tgid, 0);
		c.proc = bpf_map_lookup_elem(&unw_vprocs, &scratch);
		if (execs == ~0u || !c.proc) {
			unw_stat_add(OFFCPU_UNW_NO_TABLE, 1);
			return -1;
		}
		if (unw_early_load(c.proc, tgid, exec_id) < 0)
			unw_early_table(c.proc);
		st->early_nr = c.proc->nr;
		st->by_vma = 1;
	}
	rec = bpf_map_lookup_elem(&unw_scratch, &scratch);
	c.win = bpf_map_lookup_elem(&unw_spans, &scratch);
	if (!rec || !c.win)
		return -1;
	st->win_lo = 0;
	st->win_len = 0;
	rec->hi = 0;
	rec->exec_id = exec_id;
	rec->nreads = 0;
	rec->bp_used = 0;
	rec->bp = 0;
	rec->uses = 1;
	rec->st.frames[0] = st->ip0;
	st->pc = st->ip0;
	st->sp = st->sp0;
	st->bp = st->bp0;
	st->n = 1;
	st->map = 0;
	st->stop = UNW_STOP_NONE;
	st->exact = 1;
	st->bp_valid = 1;
	st->bp_initial = 1;
	st->cacheable = 1;
	st->no_mapping = 0;
	st->fp_step = 0;
	st->vma_tried = 0;
	st->late = 0;
	st->bp_src = 0;
	c.st = st;
	c.rec = rec;
	bpf_loop(OFFCPU_MAX_STACK, unw_step, &c, 0);
	return 0;
}

/*
 * unwind_user's last step, after the walk: the stack deferred to user
 * space where the walk missed a table, announced, its frames into out[]
 * when given, counted, and cached (with the memo) when it can be. Returns
 * its id.
 */
static __noinline __u64 unw_finish(struct unw_state *st, __u64 *out, __u32 *n)
{
	__u32 scratch = st->scratch, tgid = st->tgid, nf = st->n;
	struct offcpu_unw_cached *rec = bpf_map_lookup_elem(&unw_scratch, &scratch);
	struct offcpu_umemo *um = NULL;
	struct offcpu_unw_proc *proc;
	__u64 id;

	if (!rec)
		return 0;
	if (nf > OFFCPU_MAX_STACK)
		nf = OFFCPU_MAX_STACK;
	if (st->stop == UNW_STOP_MISS) {
		/* the frames so far, then the deferred stack's mark; never cached */
		__u64 did = unw_defer(st->ip0, st->sp0, st->bp0, st->sp,
				      (((__u64)st->key.gen << 8 | (nf & 0xff)) << 8) | (scratch & 0xff));

		st->stop = did == UNW_DEFER_UNREADABLE ? OFFCPU_UNW_READ_FAILED
			   : did == UNW_DEFER_LOST     ? OFFCPU_UNW_DEFER_LOST
						       : OFFCPU_UNW_DEFERRED;
		st->cacheable = 0;
		if (st->stop == OFFCPU_UNW_DEFERRED && nf < OFFCPU_MAX_STACK) {
			rec->st.frames[nf & 127] = OFFCPU_USTACK_DEFERRED | (did & 0xffffffffffffULL);
			nf++;
		}
	}
	rec->st.nr = nf;
	id = stack_announce(&rec->st);
	if (out) {
		if (bpf_probe_read_kernel(out, (nf & 127) * 8, rec->st.frames))
			nf = 0;
		*n = nf;
	}

	unw_stat_add(OFFCPU_UNW_WALKED, 1);
	unw_stat_add(OFFCPU_UNW_FRAMES, nf);
	rec->stats = 0;
	if (st->stop != UNW_STOP_NONE)
		rec->stats |= 1u << (st->stop & 31);
	if (st->by_vma || st->late)
		rec->stats |= 1u << OFFCPU_UNW_EARLY;
	if (st->no_mapping)
		rec->stats |= 1u << OFFCPU_UNW_NO_MAPPING;
	if (st->fp_step)
		rec->stats |= 1u << OFFCPU_UNW_FP_STEPS;
	rec->missing_pc = st->missing_pc;
	if (rec->stats)
		unw_stats_of(rec->stats, rec->missing_pc, tgid);
	if (st->by_vma) {
		proc = bpf_map_lookup_elem(&unw_vprocs, &scratch);
		if (proc && proc->nr != st->early_nr)
			unw_early_keep(proc, tgid, st->exec_id);
	}
	/*
	 * A frame placed by a late mapping: the process's table may give
	 * it otherwise, and may never bump the generation. A stack of the
	 * early table is cached: it is served only under this generation,
	 * which the process's table, when it comes, replaces (put_proc in
	 * unwind_loader.c bumps it after writing the table); until then a
	 * walk finds what this one found.
	 */
	if (st->late)
		return id;
	if (!out)
		um = bpf_map_lookup_elem(&unw_memos, &scratch);
	if (st->checking) {
		unw_stat_add(OFFCPU_UNW_CHECKED, 1);
		if (st->hit.id == rec->st.id)
			return id;
		unw_stat_add(OFFCPU_UNW_STALE, 1);
		if (um)
			um->valid = 0; /* made of the stale stack (or its entry): not served again */
	}
	/* only a stack user space has: a hit serves its id */
	if (st->cacheable && id) {
		rec->seal = unw_seal(rec);
		bpf_map_update_elem(&unw_cache, &st->key, rec, BPF_ANY);
		if (um) {
			unw_memo_head(um, &st->key, rec->bp, rec->bp_used, st->exec_id, id, rec->stats,
				      rec->missing_pc);
			unw_memo_keep(um, rec, rec->nreads, 0, st->keep);
		}
	}
	return id;
}

/* A new generation of tgid's table: its cached stacks are not used again. */
static __always_inline void unwind_bump(__u32 tgid)
{
	__u32 gi = tgid % OFFCPU_UNW_PGEN;
	__u64 *gen = bpf_map_lookup_elem(&unw_pgen, &gi);

	if (gen)
		__sync_fetch_and_add(gen, 1);
}

/*
 * A process forks: the child has the parent's mappings, hence its tables,
 * from its first instruction on (user space follows from the FORK record).
 */
static __always_inline void unwind_fork(__u32 ptgid, __u32 ctgid)
{
	struct offcpu_unw_proc *p = bpf_map_lookup_elem(&unw_procs, &ptgid), *c;
	struct unw_exec *ne = bpf_map_lookup_elem(&unw_execs, &ptgid);
	__u32 zero = 0;

	if (!p || p->execs != (ne ? ne->count : 0))
		return;
	c = bpf_map_lookup_elem(&unw_fork_scratch, &zero);
	if (!c || bpf_probe_read_kernel(c, sizeof(*c), p))
		return;
	c->execs = 0; /* the child's own count starts here */
	unwind_bump(ctgid);
	bpf_map_update_elem(&unw_procs, &ctgid, c, BPF_NOEXIST);
}

/*
 * A process execs: its tables describe the old image until user space
 * writes the new one; a recorded one asks for it at once (want).
 */
static __always_inline void unwind_exec(struct task_struct *p, bool want)
{
	struct unw_exec *n, first = { .count = 1, .exec_id = p->self_exec_id };
	__u32 tgid = p->tgid;

	unwind_bump(tgid);
	if (want)
		unw_request(tgid, OFFCPU_UNW_WHY_EXEC, 0);
	n = bpf_map_lookup_elem(&unw_execs, &tgid);
	if (!n) {
		bpf_map_update_elem(&unw_execs, &tgid, &first, BPF_ANY);
		return;
	}
	n->count++; /* the exec'ing task is the only one left in its group */
	n->exec_id = p->self_exec_id;
}

/* A process is gone. */
static __always_inline void unwind_exit(__u32 tgid)
{
	unwind_bump(tgid);
	bpf_map_delete_elem(&unw_execs, &tgid);
	bpf_map_delete_elem(&unw_procs, &tgid);
	bpf_map_delete_elem(&unw_early, &tgid);
}

#endif
