/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * CPython's own structures, from outside the process: which file is a
 * Python interpreter and of which version, where its threads and frames
 * are (the layouts of 3.11, 3.12 and 3.13), a code object's names and
 * line table, read from the process's memory. No BPF here: the BPF side
 * gets struct offcpu_py_proc (bpf/python.h) from py_layout__bpf().
 *
 * Layouts: 3.11 and 3.12 from a table of their offsets (the same for
 * every patch release of a minor version, whose internal structures do not
 * change); 3.13 and later from the debug offsets CPython keeps at the
 * start of _PyRuntime ("xdebugpy"), read from the file's data, for the
 * versions whose debug-offsets layout is known here (3.13).
 */
#ifndef OFFCPU_UNWIND_PYTHON_H
#define OFFCPU_UNWIND_PYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>

#include "bpf/python.h"

/* Offsets in bytes of the fields the frames and names are read from. */
struct py_layout {
	uint32_t version;      /* PY_VERSION_HEX >> 16: 0x030b for 3.11 */
	uint32_t rt_interp_head;                   /* _PyRuntimeState.interpreters.head */
	uint32_t interp_next, interp_threads;      /* PyInterpreterState */
	uint32_t ts_next, ts_tid, ts_frame;        /* PyThreadState: next, native_thread_id, cframe/frame */
	uint32_t cf_frame;                         /* _PyCFrame.current_frame, or OFFCPU_PY_NO_CFRAME */
	uint32_t f_code, f_previous, f_instr, f_owner; /* _PyInterpreterFrame */
	enum offcpu_py_entry entry;
	uint32_t co_filename, co_name, co_qualname, co_linetable, co_firstlineno, co_code;
	uint32_t str_ascii, str_compact, str_state, str_length; /* PyASCIIObject's size... */
	uint32_t bytes_size, bytes_data;           /* PyBytesObject: ob_size, ob_sval */
};

/* The known layout of version (PY_VERSION_HEX >> 16) from the table: 0, or -ENOENT. */
int py_layout__table(uint32_t version, struct py_layout *l);
/*
 * The layout from the debug offsets at the start of _PyRuntime (buf, len
 * bytes of it): 0, or -ENOENT (no cookie, or a version whose layout of
 * them is not known here).
 */
int py_layout__debug_offsets(const void *buf, size_t len, struct py_layout *l);
/* The BPF side's view: interp_head is where _PyRuntime.interpreters.head is in the process. */
void py_layout__bpf(const struct py_layout *l, uint64_t interp_head, struct offcpu_py_proc *p);

/* What a file says of the Python it holds (an interpreter, or libpython). */
struct py_build {
	uint32_t version;       /* PY_VERSION_HEX >> 16 (0: not known) */
	bool known;             /* layout is this version's */
	struct py_layout layout;
	uint64_t runtime;       /* _PyRuntime's link-time address */
	uint64_t x_delta;       /* p_vaddr - p_offset of the executable segment */
	uint64_t eval_lo, eval_hi; /* _PyEval_EvalFrameDefault's */
};

/*
 * Is the ELF file at path a Python (it defines _PyRuntime; 3.7 and
 * later)? 0 with *b filled (its version from Py_Version, 3.11 and later,
 * else from the file's name, 0 when neither says; b->known: a version
 * whose layout is known), -ENOENT when it is not one, another negative
 * errno when it cannot be read.
 */
int py_build__probe(const char *path, struct py_build *b);

/* n bytes at addr of process pid: 0, or a negative errno (-ESRCH: gone). */
int py_mem__read(uint32_t pid, uint64_t addr, void *buf, size_t n);

/*
 * What tells a code object from another at the same address (one freed,
 * its memory reused, as a module's code is after its import): the
 * objects it points to and its first line.
 */
struct py_code_id {
	uint64_t qualname, filename, linetable;
	int firstlineno;
};

/* A code object's names, read once. */
struct py_code {
	struct py_code_id id;
	char *qualname, *filename;  /* UTF-8, owned */
	int firstlineno;
	uint8_t *linetable;         /* owned */
	uint32_t linetable_len;
};

/* The identity of the code object at addr of process pid: 0, or a negative errno. */
int py_code__id(uint32_t pid, const struct py_layout *l, uint64_t addr, struct py_code_id *id);
/* Read the code object at addr of process pid: 0, or a negative errno. */
int py_code__read(uint32_t pid, const struct py_layout *l, uint64_t addr, struct py_code *c);
void py_code__exit(struct py_code *c);
/*
 * The line of the instruction `unit` code units into the code (3.11+
 * location table, Objects/locations.md): -1 when the table says none or
 * does not reach it.
 */
int py_linetable__line(const uint8_t *t, size_t n, int firstlineno, uint32_t unit);

/*
 * Thread tid's frames, walked in its process's memory as the BPF side
 * walks them (python.bpf.h), into w[] (at most max words of bpf/python.h,
 * innermost first, without the separator): their number, 0 when the
 * thread has no thread state, or a negative errno.
 */
int py_thread__frames(uint32_t pid, uint32_t tid, const struct py_layout *l, uint64_t interp_head,
		      uint64_t *w, uint32_t max);

#endif
