/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Python frames in the user stacks of CPython 3.11-3.13 (python.bpf.h),
 * shared by BPF and user space.
 *
 * A thread's frames hang off its own PyThreadState, found among its
 * interpreter's threads by native thread id (not the runtime's "current"
 * thread state, which a thread releasing the GIL before it blocks clears):
 * 3.11 and 3.12 tstate->cframe->current_frame, 3.13 tstate->current_frame;
 * each _PyInterpreterFrame has its code object, the instruction it is at
 * and the previous (calling) frame. The BPF side reads no names: it
 * appends the frames to the user stack as tagged words (code object
 * address and instruction), and user space reads each code object's
 * name, file and line table once (record/pyframes.c).
 *
 * Frames come in groups, one per native _PyEval_EvalFrameDefault frame
 * (Python-to-Python calls do not recurse in C): 3.11 marks the last frame
 * of each group (is_entry); 3.12 and 3.13 put a shim frame owned by the C
 * stack after it, which is skipped. User space puts each group in place
 * of its interpreter frame.
 */
#ifndef OFFCPU_PYTHON_H
#define OFFCPU_PYTHON_H

/* How a group of frames ends (offcpu_py_proc.entry). */
enum offcpu_py_entry {
	OFFCPU_PY_ENTRY_FLAG = 1, /* 3.11: a byte of the frame, at f_owner, set on its last frame */
	OFFCPU_PY_ENTRY_SHIM,     /* 3.12+: f_owner == OFFCPU_PY_OWNED_BY_CSTACK: a shim after it */
};
#define OFFCPU_PY_OWNED_BY_CSTACK 3

/*
 * A Python process (by tgid): where its threads are and the offsets of
 * the structures on the way, from the version's layout (user space:
 * unwind/python.c). Every offset is under 64 KiB, every read below
 * OFFCPU_PY_READ bytes.
 */
struct offcpu_py_proc {
	__u64 interp_head; /* address of _PyRuntime's interpreters.head */
	__u16 interp_next, interp_threads; /* PyInterpreterState */
	__u16 ts_next, ts_tid, ts_frame;   /* PyThreadState: next, native_thread_id, cframe or frame */
	__u16 cf_frame;                    /* _PyCFrame's current_frame; OFFCPU_PY_NO_CFRAME: none */
	__u16 f_code, f_previous, f_instr, f_owner; /* _PyInterpreterFrame */
	__u16 ts_read, f_read;             /* bytes to read of a thread state, of a frame */
	__u8 entry;                        /* enum offcpu_py_entry */
	__u8 pad[7];
};
#define OFFCPU_PY_NO_CFRAME 0xffff
#define OFFCPU_PY_READ 256

/*
 * The tagged words (src/bpf/unwind.h: OFFCPU_USTACK_TAG) after a stack's
 * native frames: OFFCPU_PY_SEP (its low bits: OFFCPU_PY_SEP_TRUNCATED and the tgid), then
 * one word per frame, innermost first: tag 0xa, or 0xb on the last frame
 * of a group; bits 59-44 the instruction's offset in the code object in
 * 2-byte units (0xffff: beyond), bits 43-0 the code object's address / 8.
 */
#define OFFCPU_PY_SEP 0xc000000000000000ULL
#define OFFCPU_PY_SEP_TRUNCATED 1ULL /* frames left out for want of room */
/* bits 8-39 of the separator: the process (stacks travel by id, without their pid) */
#define OFFCPU_PY_SEP_PID(w) ((__u32)((__u64)(w) >> 8))
#define OFFCPU_PY_SEP_OF(pid) ((__u64)(__u32)(pid) << 8)
#define OFFCPU_PY_FRAME 0xa000000000000000ULL
#define OFFCPU_PY_LAST (1ULL << 60)
#define OFFCPU_PY_IS_FRAME(w) (((__u64)(w) >> 61) == 5)
#define OFFCPU_PY_WORD(code, units, last)                                                      \
	(OFFCPU_PY_FRAME | ((last) ? OFFCPU_PY_LAST : 0) | ((__u64)((units) & 0xffff) << 44) | \
	 (((__u64)(code) >> 3) & 0xfffffffffffULL))
#define OFFCPU_PY_CODE(w) (((__u64)(w) & 0xfffffffffffULL) << 3)
#define OFFCPU_PY_UNITS(w) ((__u32)(((__u64)(w) >> 44) & 0xffff))

/*
 * A Python stack the BPF side had not seen before in its process (the
 * py_stacks ring): its frames, for user space to read their code objects'
 * names while the process lives (its samples may be written after it has
 * exited: the sums are drained every few hundred ms).
 */
struct offcpu_py_seen {
	__u32 pid, n;
	__u64 w[127];
};

/*
 * Facts of the Python frames (the per-CPU `py_stats` array), named once:
 * X(ID, KEY, WHAT) as OFFCPU_UNW_STATS.
 */
#define OFFCPU_PY_STATS(X)                                                                   \
	/* stacks of Python threads with their Python frames */                             \
	X(STACKS, "python.stacks", "stacks with Python frames")                             \
	/* frames of those stacks */                                                         \
	X(FRAMES, "python.frames", "Python frames")                                          \
	/* a thread of a Python process without a thread state (a C thread, or one starting \
	   or ending): its native stack only */                                              \
	X(NO_THREAD, "python.no_thread_state", "threads without a Python thread state")     \
	/* a process without an interpreter (never initialised, as perf's libpython3.11, or  \
	   finalised): its stacks skip the Python frames, a look again a millisecond */           \
	X(IDLE, "python.idle", "looks at a process without an interpreter")                  \
	/* a frame, a thread state or the interpreter unreadable (not resident, or being     \
	   changed): the frames found so far */                                              \
	X(READ_FAILED, "python.read_failed", "ended at an unreadable frame")                 \
	/* frames left out: the stack was full (127 frames in all) */                        \
	X(TRUNCATED, "python.truncated", "stacks without their outer Python frames (full)") \
	/* a new Python stack's frames not sent to user space (ring full) */                 \
	X(SEEN_LOST, "python.seen_lost", "new stacks not sent for their names")

#define OFFCPU_PY_STAT_ENUM(id, key, what) OFFCPU_PY_##id,
enum offcpu_py_stat {
	OFFCPU_PY_STATS(OFFCPU_PY_STAT_ENUM)
	OFFCPU_PY_STAT__NR,
};
#undef OFFCPU_PY_STAT_ENUM

#endif
