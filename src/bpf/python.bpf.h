/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Python frames for the user stacks of CPython 3.11-3.13 threads
 * (bpf/python.h says what is read and how the frames are written),
 * included by offcpu.bpf.c. One call, py_frames(), after a stack's
 * native frames, wherever user stacks are taken (switch-out, waker,
 * run-queue delay, CPU sample); a process is a Python one when user space
 * has put it in py_procs (record/pyframes.c), and a bit of py_hint,
 * indexed by tgid, tells the others apart at the cost of an array load.
 *
 * Per stack: the thread's PyThreadState (remembered in task storage,
 * checked by its native thread id at each use; found by walking the
 * interpreter's threads otherwise), its current frame, then one read a
 * frame. What costs nothing to know is remembered: a process that maps a
 * Python but runs none (py_idle) and a thread without a thread state (a
 * C thread) read nothing, but for a look a millisecond. Names are not
 * read here: a stack not seen before in its process
 * (by the hash of its frames) is sent to user space, which reads the
 * names of its code objects while the process lives.
 */
#ifndef OFFCPU_PYTHON_BPF_H
#define OFFCPU_PYTHON_BPF_H

#include "python.h"

const volatile bool want_python = false; /* --python (with --call-graph dwarf) */

#define PY_HINTS 65536

/* Per tgid % PY_HINTS: how many Python processes user space put there. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PY_HINTS);
	__type(key, __u32);
	__type(value, __u32);
} py_hint SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct offcpu_py_proc);
} py_procs SEC(".maps");

/*
 * A thread's PyThreadState, found once; when none was, the head of the
 * interpreter's list of threads then: a new thread state goes in at the
 * head, so the list is searched again once it changed, and now and then
 * (a C thread of a Python process never has one, and is not searched at
 * every switch).
 */
#define PY_SEARCHES 16

struct py_task {
	__u64 tstate;
	__u64 head;   /* threads.head when none was found (with looked) */
	__u64 lo;     /* the lowest frame of the data stack the last walk saw (PY_SPAN) */
	__u64 looked; /* searches that found none under that head (see py_frames) */
	__u64 until;  /* after PY_SEARCHES of them: bpf_ktime_get_ns() of the next */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct py_task);
} py_tasks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OFFCPU_PY_STAT__NR);
	__type(key, __u32);
	__type(value, __u64);
} py_stats SEC(".maps");

/* Python stacks sent to user space, by (tgid, hash of the frames). */
struct py_seen_key {
	__u32 pid, pad;
	__u64 hash;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct py_seen_key);
	__type(value, __u8);
} py_seen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} py_stacks SEC(".maps");

/* The whole user stack, as global functions take a pointer: of known size. */
struct py_ustack {
	__u64 w[OFFCPU_MAX_STACK];
};

static __always_inline void py_stat(__u32 what, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&py_stats, &what);

	if (v)
		*v += n;
}

/*
 * Per tgid % PY_HINTS: a Python process found not running Python (its
 * interpreter not initialised, or finalised: Debian's perf links
 * libpython3.11 and never starts it). Its stacks skip the Python frames
 * until jiffies has moved on twice (1-2 ticks: 4-8 ms at CONFIG_HZ=250),
 * then one looks again: an interpreter started late is seen that soon,
 * and a process without one pays a read of jiffies a stack (a
 * bpf_ktime_get_ns there cost about 45 ns a switch on the pipe benchmark,
 * whose perf links libpython) and a look every tick or two. Cleared at its
 * exec and exit, and by a look that finds it running. (Not a count of
 * stacks: a process that blocks a few times a second would skip seconds.)
 */
#define PY_RECHECK_TICKS 2
/* A thread of a Python process without a thread state: its next search (py_frames). */
#define PY_RECHECK_NS 1000000

struct py_idle {
	__u32 tgid;
	__u32 pad;
	__u64 until; /* bpf_jiffies64() of the next look */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PY_HINTS);
	__type(key, __u32);
	__type(value, struct py_idle);
} py_idle SEC(".maps");

/*
 * Is tgid perhaps a Python process running Python? An array load for
 * every stack of every process, a second for those of a Python one.
 */
static __always_inline bool py_maybe(__u32 tgid)
{
	__u32 i = tgid % PY_HINTS;
	__u32 *h = bpf_map_lookup_elem(&py_hint, &i);
	struct py_idle *q;

	if (!h || !*h)
		return false;
	q = bpf_map_lookup_elem(&py_idle, &i);
	return !q || q->tgid != tgid || bpf_jiffies64() >= q->until;
}

/* tgid is running Python (idle false) or not: py_maybe's memo. */
static __always_inline void py_idle_set(__u32 tgid, bool idle)
{
	__u32 i = tgid % PY_HINTS;
	struct py_idle *q = bpf_map_lookup_elem(&py_idle, &i);

	if (!q)
		return;
	if (idle) {
		q->until = bpf_jiffies64() + PY_RECHECK_TICKS;
		q->tgid = tgid;
	} else if (q->tgid == tgid) {
		q->tgid = 0;
	}
}

/* tgid execs or ends: a new image (or none) is looked at from its first stack. */
static __always_inline void py_forget(__u32 tgid)
{
	if (want_python)
		py_idle_set(tgid, false);
}

/*
 * A thread's frames of Python-to-Python calls lie one after the other in
 * its data stack (the innermost highest): the span from the lowest one
 * the last walk saw (py_task.lo) to the innermost is read at once, up to
 * PY_SPAN bytes, and its frames are taken from that copy, one read where
 * a frame cost one each. Frames elsewhere (a generator's, 3.12's entry
 * shims on the C stack, an older chunk) are read one by one.
 */
#define PY_SPAN 8192
#define PY_SPAN_BUF 16384 /* PY_SPAN and a frame's read, a power of 2 */

/*
 * Per CPU and program (UNW_SCRATCH_*, as the unwinder's: programs that can
 * interrupt each other use their own): the walk's state, what it reads and
 * what it sends. In a map value, not on the BPF stack, as the unwinder's
 * (struct unw_state): the verifier sees each bpf_loop callback once with
 * values it cannot know, where counters on the stack would make it follow
 * every iteration.
 */
struct py_walk {
	__u64 addr;   /* the next thread state (search), the next frame (walk) */
	__u64 found;  /* the thread state searched for */
	__u64 hash;   /* of the frames' words */
	__u32 tid;
	__u32 n;      /* words in the stack */
	__u32 nf;     /* frames of them */
	__u32 failed; /* a read failed */
	__u64 top;    /* the innermost frame */
	__u64 lo;     /* the lowest frame within PY_SPAN below it */
	__u64 span_lo, span_len; /* span[] holds span_len bytes from span_lo */
	__u8 buf[OFFCPU_PY_READ];
	struct offcpu_py_seen seen;
	__u8 span[PY_SPAN_BUF];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, UNW_SCRATCH__NR);
	__type(key, __u32);
	__type(value, struct py_walk);
} py_walks SEC(".maps");

/* The bpf_loop context of a walk (on the stack, as bpf_loop wants): what does not change. */
struct py_ctx {
	const struct offcpu_py_proc *p;
	struct py_walk *wk;
	struct py_ustack *out;
};

static __always_inline __u64 py_u64(struct py_walk *wk, __u32 off)
{
	return *(__u64 *)&wk->buf[off & (OFFCPU_PY_READ - 8)];
}

/* One thread state of the interpreter's list: is it tid's? */
static long py_search_step(__u32 i, void *vctx)
{
	struct py_ctx *c = vctx;
	const struct offcpu_py_proc *p = c->p;
	struct py_walk *wk = c->wk;

	if (!wk->addr)
		return 1;
	if (bpf_probe_read_user(wk->buf, p->ts_read & (OFFCPU_PY_READ - 1), (const void *)wk->addr)) {
		wk->failed = 1;
		return 1;
	}
	if ((__u32)py_u64(wk, p->ts_tid) == wk->tid) {
		wk->found = wk->addr;
		return 1;
	}
	wk->addr = py_u64(wk, p->ts_next);
	return 0;
}

/* One frame: its word appended to the stack; a shim ends its group. */
static long py_frame_step(__u32 i, void *vctx)
{
	struct py_ctx *c = vctx;
	const struct offcpu_py_proc *p = c->p;
	struct py_walk *wk = c->wk;
	__u64 code, instr, units, w, a, off;
	__u32 n = wk->n;
	__u8 owner;

	if (!wk->addr)
		return 1;
	if (n >= OFFCPU_MAX_STACK) {
		py_stat(OFFCPU_PY_TRUNCATED, 1);
		return 1;
	}
	a = wk->addr;
	if (a <= wk->top && wk->top - a < PY_SPAN && a < wk->lo)
		wk->lo = a;
	if (a >= wk->span_lo && a - wk->span_lo < PY_SPAN + 8 &&
	    a - wk->span_lo + p->f_read <= wk->span_len) {
		/* in the span read at once */
		off = a - wk->span_lo;
		code = *(__u64 *)&wk->span[(off + p->f_code) & (PY_SPAN_BUF - 8)];
		instr = *(__u64 *)&wk->span[(off + p->f_instr) & (PY_SPAN_BUF - 8)];
		owner = wk->span[(off + p->f_owner) & (PY_SPAN_BUF - 1)];
		wk->addr = *(__u64 *)&wk->span[(off + p->f_previous) & (PY_SPAN_BUF - 8)];
	} else {
		if (bpf_probe_read_user(wk->buf, p->f_read & (OFFCPU_PY_READ - 1), (const void *)a)) {
			wk->failed = 1;
			return 1;
		}
		code = py_u64(wk, p->f_code);
		instr = py_u64(wk, p->f_instr);
		owner = wk->buf[p->f_owner & (OFFCPU_PY_READ - 1)];
		wk->addr = py_u64(wk, p->f_previous);
	}
	if (p->entry == OFFCPU_PY_ENTRY_SHIM && owner == OFFCPU_PY_OWNED_BY_CSTACK) {
		if (n && n <= OFFCPU_MAX_STACK && OFFCPU_PY_IS_FRAME(c->out->w[n - 1]))
			c->out->w[n - 1] |= OFFCPU_PY_LAST;
		return 0;
	}
	units = instr >= code && instr - code < 0x1fffe ? (instr - code) / 2 : 0xffff;
	w = OFFCPU_PY_WORD(code, units, p->entry == OFFCPU_PY_ENTRY_FLAG && owner);
	if (n >= OFFCPU_MAX_STACK)
		return 1;
	c->out->w[n] = w;
	wk->hash = (wk->hash ^ w) * 0x100000001b3ULL;
	wk->n = n + 1;
	wk->nf++;
	return 0;
}

/*
 * The stack's Python frames sent to user space, the first time the
 * process has this stack (py_seen).
 */
static __always_inline void py_send(struct py_ctx *c, __u32 tgid, __u32 first)
{
	struct py_seen_key k = { .pid = tgid, .hash = c->wk->hash };
	struct offcpu_py_seen *s = &c->wk->seen;
	__u8 one = 1;
	__u32 nf = c->wk->nf;

	if (bpf_map_lookup_elem(&py_seen, &k))
		return;
	if (nf > OFFCPU_MAX_STACK || first > OFFCPU_MAX_STACK)
		return;
	s->pid = tgid;
	s->n = nf;
	if (bpf_probe_read_kernel(s->w, (nf & 127) * 8, &c->out->w[first & 127]))
		return;
	if (bpf_ringbuf_output(&py_stacks, s, 8 + (nf & 127) * 8, BPF_RB_FORCE_WAKEUP)) {
		py_stat(OFFCPU_PY_SEEN_LOST, 1);
		return;
	}
	bpf_map_update_elem(&py_seen, &k, &one, BPF_ANY);
}

/*
 * current's Python frames after the ulen native frames of its user stack
 * out: OFFCPU_PY_SEP and one word a frame (bpf/python.h). Returns the
 * stack's new length (ulen when the thread has none). scratch: the
 * calling program's slot (UNW_SCRATCH_*). A function of its own, verified
 * once for all its callers; call it for a process py_maybe() says may be
 * one.
 */
__noinline __u32 py_frames(struct py_ustack *out, __u32 ulen, __u32 scratch)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 id = bpf_get_current_pid_tgid(), frame, interp = 0, head, now;
	__u32 tgid = id >> 32, n, nf;
	__u64 sep = ulen; /* 64-bit: one zero extension, checked and used alike */
	struct offcpu_py_proc *p;
	struct py_walk *wk;
	struct py_task *t;
	struct py_ctx c;
	bool recheck;

	if (!out || ulen >= OFFCPU_MAX_STACK - 1)
		return ulen;
	t = task_storage_make(&py_tasks, task);
	if (!t)
		return ulen;
	/*
	 * A thread without a thread state after PY_SEARCHES searches (a C
	 * thread: BLAS workers switch often) reads nothing until
	 * PY_RECHECK_NS have passed, then searches again.
	 */
	if (!t->tstate && t->looked > PY_SEARCHES) {
		now = bpf_ktime_get_ns();
		if (now < t->until) {
			py_stat(OFFCPU_PY_NO_THREAD, 1);
			return ulen;
		}
		t->until = now + PY_RECHECK_NS;
	}
	p = bpf_map_lookup_elem(&py_procs, &tgid);
	wk = bpf_map_lookup_elem(&py_walks, &scratch);
	if (!p || !wk)
		return ulen;
	c.p = p;
	c.wk = wk;
	c.out = out;
	wk->tid = (__u32)id;
	wk->failed = 0;
	wk->found = 0;
	/* its thread state: the one found before, if it is still this thread's */
	wk->addr = t->tstate;
	if (wk->addr && !bpf_probe_read_user(wk->buf, p->ts_read & (OFFCPU_PY_READ - 1),
					     (const void *)wk->addr) &&
	    (__u32)py_u64(wk, p->ts_tid) == wk->tid)
		wk->found = wk->addr;
	if (!wk->found) {
		/*
		 * Among the threads of the interpreter at the head of the
		 * runtime's list (the main one, but for subinterpreters), once
		 * its list has changed since the last search that found none.
		 */
		if (bpf_probe_read_user(&interp, 8, (const void *)p->interp_head)) {
			py_stat(OFFCPU_PY_READ_FAILED, 1);
			return ulen;
		}
		if (!interp) {
			/* no interpreter (not yet, or no more): the process's stacks skip this */
			py_idle_set(tgid, true);
			py_stat(OFFCPU_PY_IDLE, 1);
			return ulen;
		}
		if (bpf_probe_read_user(&head, 8, (const void *)(interp + p->interp_threads))) {
			py_stat(OFFCPU_PY_READ_FAILED, 1);
			return ulen;
		}
		/*
		 * 3.11 sets a new thread's native id in the thread itself,
		 * after its thread state went in at the head: a search when
		 * the head has changed, else the first PY_SEARCHES; then one
		 * a PY_RECHECK_NS (above), whatever the head.
		 */
		recheck = t->looked > PY_SEARCHES;
		if (!recheck && t->looked && head == t->head && ++t->looked > PY_SEARCHES) {
			t->until = bpf_ktime_get_ns() + PY_RECHECK_NS;
			py_stat(OFFCPU_PY_NO_THREAD, 1);
			return ulen;
		}
		wk->addr = head;
		bpf_loop(1024, py_search_step, &c, 0);
		t->tstate = wk->found;
		if (wk->found)
			t->looked = 0;
		else if (!recheck && (!t->looked || head != t->head))
			t->looked = 1;
		t->head = head;
		py_idle_set(tgid, false); /* an interpreter runs */
		if (!wk->found) {
			py_stat(wk->failed ? OFFCPU_PY_READ_FAILED : OFFCPU_PY_NO_THREAD, 1);
			return ulen;
		}
	}
	/* the thread state is in the buffer: its current frame */
	frame = py_u64(wk, p->ts_frame);
	if (p->cf_frame != OFFCPU_PY_NO_CFRAME && frame &&
	    bpf_probe_read_user(&frame, 8, (const void *)(frame + p->cf_frame))) {
		py_stat(OFFCPU_PY_READ_FAILED, 1);
		return ulen;
	}
	wk->n = ulen + 1;
	wk->nf = 0;
	wk->addr = frame;
	wk->failed = 0;
	wk->hash = 0xcbf29ce484222325ULL;
	/* the frames below the innermost the last walk saw, at once (PY_SPAN) */
	wk->top = frame;
	wk->lo = frame;
	wk->span_lo = 0;
	wk->span_len = 0;
	if (frame && t->lo && t->lo <= frame && frame - t->lo < PY_SPAN) {
		__u64 len = frame - t->lo + p->f_read;

		if (len <= PY_SPAN + OFFCPU_PY_READ &&
		    !bpf_probe_read_user(wk->span, len & (PY_SPAN_BUF - 1), (const void *)t->lo)) {
			wk->span_lo = t->lo;
			wk->span_len = len;
		}
	}
	bpf_loop(OFFCPU_MAX_STACK, py_frame_step, &c, 0);
	t->lo = wk->lo;
	if (wk->failed)
		py_stat(OFFCPU_PY_READ_FAILED, 1);
	n = wk->n;
	nf = wk->nf;
	if (!nf || n > OFFCPU_MAX_STACK)
		return ulen;
	barrier_var(sep); /* the check above is the compiler's, not the verifier's */
	if (sep >= OFFCPU_MAX_STACK)
		return ulen;
	out->w[sep] = OFFCPU_PY_SEP | OFFCPU_PY_SEP_OF(tgid) | (wk->addr && !wk->failed ? OFFCPU_PY_SEP_TRUNCATED : 0);
	py_stat(OFFCPU_PY_STACKS, 1);
	py_stat(OFFCPU_PY_FRAMES, nf);
	py_send(&c, tgid, sep + 1);
	return n;
}

#endif
