/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * User stacks from DWARF call-frame information: the tables user space
 * builds from each file's .eh_frame (or .debug_frame) and the BPF unwinder
 * (unwind.bpf.h) reads. Shared by BPF and user space.
 *
 *   unw_rows   one global array of rows {file address, rule}, each file's
 *              rows sorted and contiguous, a range of it (user space
 *              allocates the ranges; memory-mapped, so loading a file is a
 *              memcpy);
 *   unw_rules  the distinct rules of every file, deduplicated (a few
 *              thousand on a whole machine), so a row is 8 bytes;
 *   unw_procs  per process (tgid): its executable mappings, sorted, each
 *              with its file's row range and load bias;
 *   unw_cache  stacks by blocking point, with the stack slots they were
 *              read from, re-read on a hit to confirm;
 *   unw_pgen   per process (tgid modulo its size), the generation of its
 *              table: bumped at every change (user space writes it through
 *              a memory mapping), part of the cache key, so that a hit
 *              needs no lookup of the table itself.
 */
#ifndef OFFCPU_UNWIND_H
#define OFFCPU_UNWIND_H

#include "offcpu.h" /* struct offcpu_stack */

#define OFFCPU_UNW_MAX_MAPS 256   /* executable mappings per process */
#define OFFCPU_UNW_MAX_READS 128  /* stack reads a cached stack depends on */
#define OFFCPU_UNW_MAX_RULES 32768
#define OFFCPU_UNW_PGEN 65536     /* generations, indexed by tgid modulo this */

/* How a frame's CFA (the caller's stack pointer) is found. */
enum offcpu_unw_cfa {
	OFFCPU_UNW_CFA_NONE = 0,    /* no CFI here: a frame-pointer step */
	OFFCPU_UNW_CFA_RSP,         /* CFA = rsp + cfa_off */
	OFFCPU_UNW_CFA_RBP,         /* CFA = rbp + cfa_off */
	OFFCPU_UNW_CFA_PLT,         /* CFA = rsp + cfa_off + ((pc & 15) >= arg ? 8 : 0) */
	OFFCPU_UNW_CFA_SIGNAL,      /* rt_sigreturn trampoline: registers in the ucontext at rsp */
	OFFCPU_UNW_CFA_END,         /* return address undefined: the outermost frame */
	OFFCPU_UNW_CFA_UNSUPPORTED, /* an expression or register BPF does not follow */
};

/* Where the caller's rbp is. */
enum offcpu_unw_rbp {
	OFFCPU_UNW_RBP_SAME = 0,    /* unchanged */
	OFFCPU_UNW_RBP_OFFSET,      /* saved at CFA + rbp_off */
	OFFCPU_UNW_RBP_UNSUPPORTED, /* elsewhere: unknown from here on */
};

struct offcpu_unw_rule {
	__u8 cfa;  /* enum offcpu_unw_cfa */
	__u8 rbp;  /* enum offcpu_unw_rbp */
	__u8 arg;  /* PLT: the threshold of pc & 15 */
	__u8 pad;
	__s32 cfa_off;
	__s32 rbp_off;
};

/* From this file address up to the next row's, the rule `rule`. */
struct offcpu_unw_row {
	__u32 pc;
	__u32 rule;
};

/*
 * One executable mapping: file address = address - bias. row_count 0: no
 * call-frame information (a file without it, anonymous or JIT code):
 * frame-pointer steps; or, with row_start OFFCPU_UNW_PENDING, a table not
 * built yet: frame-pointer steps, and a request for it.
 */
#define OFFCPU_UNW_PENDING 0xffffffffu
struct offcpu_unw_map {
	__u64 start, end;
	__u64 bias;
	__u32 row_start, row_count;
};

/*
 * A file's table, by the file's identity (device and inode, as perf's
 * MMAP2 records and the kernel's inode give them; the vDSO: maj ~0, min
 * and ino 0), for a stack taken before its process's table is written:
 * the mappings are then taken from what the kernel knows. delta: p_vaddr -
 * p_offset of the file's executable segment (load bias = vm_start - file
 * offset - delta); [x_lo, x_hi): its addresses in the file.
 */
struct offcpu_unw_file_key {
	__u32 maj, min;
	__u64 ino;
};

struct offcpu_unw_file {
	__u32 row_start, row_count; /* row_count 0: no call-frame information */
	__u64 delta;
	__u64 x_lo, x_hi; /* the executable segment's addresses in the file */
};

/*
 * A process's mappings, sorted by start. execs: the execs of the process
 * user space had seen when it wrote this (COMM records with the exec flag);
 * the BPF side counts them too (unw_execs) and ignores a table of an image
 * that is gone.
 */
struct offcpu_unw_proc {
	__u32 nr;
	__u32 execs;
	struct offcpu_unw_map maps[OFFCPU_UNW_MAX_MAPS];
};

/*
 * A request to user space (the unw_notify ring): process tgid needs its
 * tables now, it has exec'd or a stack met a mapping without one.
 */
enum offcpu_unw_why {
	OFFCPU_UNW_WHY_EXEC = 1,
	OFFCPU_UNW_WHY_MISSING,
};

struct offcpu_unw_notify {
	__u32 tgid;
	__u32 why;
	__u64 pc; /* MISSING: an address whose table is wanted (0: the process's) */
};

/* Key of the stack cache: where a thread is when its stack is taken. */
struct offcpu_unw_key {
	__u32 tgid;
	__u32 gen;
	__u64 ip;
	__u64 sp;
};

/*
 * A read the walk made: 8 bytes at addr (16 when bit 0 of addr is set,
 * then v[1] too). The walk is a function of the registers it started from
 * and of the values it used: when they read the same again, it would give
 * the same stack. Bits 1 and 2 of addr mark v[0] and v[1] as used (a
 * return address is; a saved rbp is only if a later frame needed rbp):
 * only those are read and compared again.
 */
#define OFFCPU_UNW_READ_16 1ULL
#define OFFCPU_UNW_READ_USE0 2ULL
#define OFFCPU_UNW_READ_USE1 4ULL
#define OFFCPU_UNW_READ_FLAGS 7ULL
struct offcpu_unw_read {
	__u64 addr;
	__u64 v[2];
};

/*
 * A stack of the cache: its frames and id, and what it depends on. seal:
 * the sum of every field a hit reads, so that an entry read while another
 * CPU recycles it (an LRU map reuses its elements in place) is told from
 * a whole one.
 */
struct offcpu_unw_cached {
	struct offcpu_stack st; /* the frames (st.nr) and their id */
	__u64 seal;
	__u32 nreads;
	__u32 uses;
	__u32 bp_used; /* the walk used the starting rbp: it is part of the check */
	__u32 stats;   /* the stack's facts (1 << enum offcpu_unw_stat), counted on a hit too */
	__u64 bp;
	__u64 exec_id; /* the task's self_exec_id: an exec since makes it stale */
	__u64 missing_pc; /* the first frame without a table, asked for again on a hit */
	__u64 hi;      /* end of the highest read: the stack is readable up to there */
	struct offcpu_unw_read reads[OFFCPU_UNW_MAX_READS];
};

/*
 * Facts of the unwinder (the per-CPU `unw_stats` array), named once:
 * X(ID, KEY, WHAT) gives OFFCPU_UNW_ID (the enum, in this order), KEY in
 * the file's offcpu section and the record summary, WHAT in
 * unwind_loader's table of counters. Stacks, not frames, except FRAMES. A
 * stack ended by a failure keeps the frames found so far.
 */
#define OFFCPU_UNW_STATS(X)                                                                       \
	/* unwound from the tables */                                                             \
	X(WALKED, "unwind.walked", "unwound")                                                     \
	/* taken from the cache of blocking points (slots re-read, equal) */                      \
	X(CACHED, "unwind.cached", "from the cache of blocking points")                           \
	/* cache hits unwound anyway to check the cache */                                        \
	X(CHECKED, "unwind.checked", "cache hits checked by a walk")                              \
	/* ... and found different */                                                             \
	X(STALE, "unwind.stale", "checked hits that differed")                                    \
	/* frames of the unwound stacks */                                                        \
	X(FRAMES, "unwind.frames", "frames unwound")                                              \
	/* process without tables (inside an exec): frame-pointer stack kept */                   \
	X(NO_TABLE, "unwind.no_table", "process without tables (inside an exec): frame pointers") \
	/* process without its table yet, or a frame in a mapping its table does not have yet:   \
	   walked with the mappings the kernel gives (its executable, the vDSO, one lookup) in    \
	   the files already built */                                                             \
	X(EARLY, "unwind.early",                                                                  \
	  "before the process's table was complete: mappings from the kernel")                   \
	/* a frame outside the process's known mappings, or in a file whose table is not          \
	   built yet: frame pointers from there */                                                \
	X(NO_MAPPING, "unwind.no_mapping",                                                        \
	  "a frame outside the known mappings (frame pointers from there)")                       \
	/* a frame in code without CFI (a file without it, JIT or anonymous code): stepped        \
	   by its frame pointer */                                                                \
	X(FP_STEPS, "unwind.fp_steps", "a frame in code without CFI (frame pointer)")             \
	/* ended at a rule BPF does not follow */                                                 \
	X(UNSUPPORTED, "unwind.unsupported", "ended at a rule BPF does not follow")               \
	/* ended at a stack slot that could not be read */                                        \
	X(READ_FAILED, "unwind.read_failed", "ended at an unreadable stack slot")                 \
	/* ended at a frame whose CFA is not above it */                                          \
	X(BAD_FRAME, "unwind.bad_frame", "ended at a frame not above the last")                   \
	/* ended at the frame limit */                                                            \
	X(TRUNCATED, "unwind.truncated", "ended at the frame limit")                              \
	/* a frame in a mapping without a table (a library dlopened a moment ago, a process       \
	   that has just exec'd): the registers and the top of the stack kept, unwound in user    \
	   space when the sample is written (struct offcpu_unw_deferred) */                       \
	X(DEFERRED, "unwind.deferred", "unwound in user space (a table was missing)")             \
	/* ... and its copy could not be kept (ring buffer full): the frames found so far */      \
	X(DEFER_LOST, "unwind.deferred_lost", "a table missing, the stack's copy lost")           \
	/* deferred stacks that were one deferred before (the same registers, frames so far and  \
	   512 bytes above them, the same table): its copy's id again, no copy */                 \
	X(DEFER_REUSED, "unwind.deferred_reused", "a table missing, the same stack as before")

/*
 * A stack the BPF unwinder cannot finish for want of a table (unw_step
 * meets a frame in a mapping whose table is not built: a library dlopened
 * a moment ago, a process that has just exec'd) is kept raw, as perf's
 * --call-graph dwarf keeps every stack: the user registers and the top
 * OFFCPU_UNW_DEFER_STACK bytes of the stack from rsp, written to user
 * space (the unw_deferred ring, or the start iterator's output for the
 * waits in progress at the start), which unwinds it with libdw when the
 * sample is written, by which time the file is mapped and readable. The
 * sample's user stack then ends in OFFCPU_USTACK_DEFERRED | id after the
 * frames found so far (kept if user space cannot do better). Twice perf's
 * default of 8 KiB: a python3 stack reaches _start within 6-12 KiB.
 */
#define OFFCPU_UNW_DEFER_STACK 16384
#define OFFCPU_UNW_NREGS 17 /* DWARF x86-64: rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip */
#define OFFCPU_UNW_REG_BP 6
#define OFFCPU_UNW_REG_SP 7
#define OFFCPU_UNW_REG_IP 16
/* flags of a deferred stack */
#define OFFCPU_UNW_DEFER_ALL_REGS 1 /* every register known (kernel entry), else ip, sp, bp */
#define OFFCPU_UNW_DEFER_START 2    /* a wait in progress at the start: Python frames from user space */

struct offcpu_unw_deferred {
	__u32 pid, tid;
	__u64 id;
	__u64 regs[OFFCPU_UNW_NREGS];
	__u32 flags;
	__u32 len; /* bytes of stack[] kept, from regs[OFFCPU_UNW_REG_SP] up */
	__u8 stack[OFFCPU_UNW_DEFER_STACK];
};

#define OFFCPU_UNW_DEFERRED_HDR ((unsigned long)&((struct offcpu_unw_deferred *)0)->stack)

/*
 * Tagged words in a sample's user stack, never a user address (those have
 * their top byte 0): user space replaces them before the sample is
 * written (src/record/ustack_fix.c). The tag is the top 4 bits.
 */
#define OFFCPU_USTACK_TAG(w) ((__u64)(w) >> 60)
#define OFFCPU_USTACK_DEFERRED 0xd000000000000000ULL /* | id: a deferred stack */

#define OFFCPU_UNW_STAT_ENUM(id, key, what) OFFCPU_UNW_##id,
enum offcpu_unw_stat {
	OFFCPU_UNW_STATS(OFFCPU_UNW_STAT_ENUM)
	OFFCPU_UNW_STAT__NR,
};
#undef OFFCPU_UNW_STAT_ENUM

#endif
