/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A user stack unwound in user space, with libdw, from a thread's
 * registers and a copy of the top of its stack: the stacks the BPF
 * unwinder could not finish (src/bpf/unwind.h, "deferred"). The files
 * come from the process's /proc/PID/maps when the stack is unwound, a
 * moment after it was taken: a library dlopened just before is mapped by
 * then. One libdw session per process, kept for the next stack of the
 * same process (the last few processes), and reported again when a frame
 * falls outside the files it knows.
 */
#ifndef OFFCPU_UNWIND_DWFL_STACK_H
#define OFFCPU_UNWIND_DWFL_STACK_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "bpf/unwind.h"

struct dwfl_stack;

struct dwfl_stack *dwfl_stack__new(void);
void dwfl_stack__free(struct dwfl_stack *u);

/*
 * The stack of thread tid of process pid from its registers (DWARF
 * numbering, OFFCPU_UNW_NREGS of them; those unknown 0) and the len bytes
 * of its stack copied from regs[OFFCPU_UNW_REG_SP] up: return addresses
 * into out[] (the first one regs' pc), innermost first, at most max.
 * Returns their number (at least 1), or a negative errno: -ESRCH when the
 * process is gone.
 */
int dwfl_stack__unwind(struct dwfl_stack *u, uint32_t pid, uint32_t tid,
		       const __u64 regs[OFFCPU_UNW_NREGS], const void *stack, size_t len,
		       uint64_t *out, int max);

/* A file's executable mapping in a process, as the recording's side-band gave it. */
struct dwfl_file_map {
	uint64_t start, end, pgoff;
	const char *path;
};

/*
 * dwfl_stack__unwind for a process that is gone (its /proc with it): its
 * files are the nm mappings m (of its last image), opened by path. The
 * vDSO and anonymous code are not among them: a walk ends there. Returns
 * the number of frames (at least 1), or a negative errno (-ENOENT: no
 * mapping given could be used).
 */
int dwfl_stack__unwind_files(struct dwfl_stack *u, uint32_t pid, uint32_t tid,
			     const struct dwfl_file_map *m, size_t nm,
			     const __u64 regs[OFFCPU_UNW_NREGS], const void *stack, size_t len,
			     uint64_t *out, int max);

/* The process pid is gone or has exec'd: its session is of no more use. */
void dwfl_stack__forget(struct dwfl_stack *u, uint32_t pid);

#endif
