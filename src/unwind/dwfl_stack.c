// SPDX-License-Identifier: GPL-2.0-only
/*
 * Deferred stacks unwound with libdw (see dwfl_stack.h), as perf's
 * --call-graph dwarf does with a sample's registers and stack copy: libdw
 * reads each file's call-frame information itself (every rule, not only
 * those the BPF unwinder follows) and asks us for the stack's words.
 * Written on libdw rather than on our own tables (src/unwind/tables.c):
 * a deferred stack is one whose table was missing, and a table is built
 * in the unwinder's thread, milliseconds later; libdw needs none.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gelf.h>
#include <elfutils/libdwfl.h>
#include <dwarf.h>

#include "unwind/dwfl_stack.h"

#define SESSIONS 8

/* One process's libdw session, and the stack being unwound in it. */
struct session {
	uint32_t pid;
	Dwfl *dwfl;
	uint64_t used; /* the tick of its last use: the least recent goes first */
	bool fresh;    /* begun for the stack being unwound: its files are today's */
	uint32_t tid;
	const __u64 *regs;
	const uint8_t *stack;
	size_t len;
	uint64_t *out;
	int n, max;
};

struct dwfl_stack {
	struct session s[SESSIONS]; /* by address: libdw keeps a pointer to each */
	uint64_t tick;
};

/* No separate debug files: the call-frame information in the file itself will do. */
static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			const char *file_name, const char *debuglink_file,
			GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	(void)mod, (void)userdata, (void)modname, (void)base, (void)file_name;
	(void)debuglink_file, (void)debuglink_crc, (void)debuginfo_file_name;
	return -1;
}

static const Dwfl_Callbacks proc_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = no_debuginfo,
};

/* ---- the thread callbacks: one thread, its registers and stack copy ---- */

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_arg)
{
	struct session *s = arg;

	(void)dwfl;
	if (*thread_arg)
		return 0;
	*thread_arg = s;
	return s->tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_arg)
{
	(void)dwfl, (void)tid;
	*thread_arg = arg;
	return true;
}

/* A word of the stack copy; nothing else of the process's memory is at hand. */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct session *s = arg;
	uint64_t sp = s->regs[OFFCPU_UNW_REG_SP];

	(void)dwfl;
	if (addr < sp || addr - sp > s->len || s->len - (addr - sp) < sizeof(*result))
		return false;
	memcpy(result, s->stack + (addr - sp), sizeof(*result));
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct session *s = arg;
	Dwarf_Word r[OFFCPU_UNW_NREGS];

	for (int i = 0; i < OFFCPU_UNW_NREGS; i++)
		r[i] = s->regs[i];
	return dwfl_thread_state_registers(thread, 0, OFFCPU_UNW_NREGS, r);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

/* ---- sessions ---- */

static void session_end(struct session *s)
{
	if (s->dwfl)
		dwfl_end(s->dwfl);
	s->dwfl = NULL;
	s->pid = 0;
}

/* A session of pid with its files as /proc/PID/maps has them now. */
static int session_begin(struct session *s, uint32_t pid)
{
	int err;

	session_end(s);
	s->dwfl = dwfl_begin(&proc_callbacks);
	if (!s->dwfl)
		return -ENOMEM;
	dwfl_report_begin(s->dwfl);
	err = dwfl_linux_proc_report(s->dwfl, pid);
	if (!err && dwfl_report_end(s->dwfl, NULL, NULL))
		err = EINVAL;
	if (!err && !dwfl_attach_state(s->dwfl, NULL, pid, &thread_callbacks, s))
		err = EINVAL;
	if (err) {
		session_end(s);
		return err == ENOENT ? -ESRCH : -(err > 0 ? err : EINVAL);
	}
	s->pid = pid;
	s->fresh = true;
	return 0;
}

struct dwfl_stack *dwfl_stack__new(void)
{
	elf_version(EV_CURRENT);
	return calloc(1, sizeof(struct dwfl_stack));
}

void dwfl_stack__free(struct dwfl_stack *u)
{
	if (!u)
		return;
	for (int i = 0; i < SESSIONS; i++)
		session_end(&u->s[i]);
	free(u);
}

void dwfl_stack__forget(struct dwfl_stack *u, uint32_t pid)
{
	for (int i = 0; u && i < SESSIONS; i++)
		if (u->s[i].dwfl && u->s[i].pid == pid)
			session_end(&u->s[i]);
}

/* pid's session (begun anew when begin), or the least recently used one begun for pid. */
static int session_of(struct dwfl_stack *u, uint32_t pid, bool begin, struct session **out)
{
	struct session *lru = &u->s[0];

	for (int i = 0; i < SESSIONS; i++) {
		struct session *s = &u->s[i];

		if (s->dwfl && s->pid == pid) {
			*out = s;
			return begin ? session_begin(s, pid) : 0;
		}
		if (!s->dwfl || (lru->dwfl && s->used < lru->used))
			lru = s;
	}
	*out = lru;
	return session_begin(lru, pid);
}

static int on_frame(Dwfl_Frame *frame, void *arg)
{
	struct session *s = arg;
	Dwarf_Addr pc;

	if (!dwfl_frame_pc(frame, &pc, NULL) || pc < 4096)
		return DWARF_CB_ABORT;
	s->out[s->n++] = pc;
	return s->n < s->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

/* Unwind in session s: the frames found. */
static int walk(struct session *s, uint32_t tid, const __u64 *regs, const void *stack, size_t len,
		uint64_t *out, int max)
{
	s->tid = tid;
	s->regs = regs;
	s->stack = stack;
	s->len = len;
	s->out = out;
	s->n = 0;
	s->max = max;
	dwfl_getthread_frames(s->dwfl, tid, on_frame, s);
	return s->n;
}

/* Did the walk stop at a frame outside every file the session knows (one mapped since)? */
static bool stopped_outside(struct session *s)
{
	uint64_t pc;

	if (!s->n)
		return true;
	pc = s->out[s->n - 1] - (s->n > 1);
	return !dwfl_addrmodule(s->dwfl, pc);
}

int dwfl_stack__unwind(struct dwfl_stack *u, uint32_t pid, uint32_t tid,
		       const __u64 regs[OFFCPU_UNW_NREGS], const void *stack, size_t len,
		       uint64_t *out, int max)
{
	struct session *s;
	bool fresh;
	int n, err;

	if (max <= 0)
		return -EINVAL;
	err = session_of(u, pid, false, &s);
	if (err)
		return err;
	fresh = s->fresh;
	s->fresh = false;
	s->used = ++u->tick;
	n = walk(s, tid, regs, stack, len, out, max);
	if (!fresh && n < max && stopped_outside(s) && !session_of(u, pid, true, &s)) {
		s->fresh = false;
		s->used = ++u->tick; /* files mapped since the session began: again with them */
		n = walk(s, tid, regs, stack, len, out, max);
	}
	if (!n) {
		out[0] = regs[OFFCPU_UNW_REG_IP];
		n = 1;
	}
	return n;
}

/*
 * The load bias of the file at path mapped executable at start from file
 * offset pgoff: start - pgoff - (p_vaddr - p_offset) of the loadable
 * segment that holds pgoff. 0 on success.
 */
static int file_bias(const char *path, uint64_t start, uint64_t pgoff, uint64_t *bias)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err = -ENOENT;
	size_t nph = 0;
	Elf *elf;

	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && !elf_getphdrnum(elf, &nph)) {
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
				continue;
			if ((ph.p_offset & ~4095ULL) <= pgoff && pgoff < ph.p_offset + ph.p_filesz) {
				*bias = start - pgoff - (ph.p_vaddr - ph.p_offset);
				err = 0;
				break;
			}
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

int dwfl_stack__unwind_files(struct dwfl_stack *u, uint32_t pid, uint32_t tid,
			     const struct dwfl_file_map *m, size_t nm,
			     const __u64 regs[OFFCPU_UNW_NREGS], const void *stack, size_t len,
			     uint64_t *out, int max)
{
	struct session s = { 0 }; /* of this stack only: the process has no more stacks to come */
	size_t reported = 0;
	int n, err = 0;

	(void)u;
	if (max <= 0)
		return -EINVAL;
	s.dwfl = dwfl_begin(&proc_callbacks);
	if (!s.dwfl)
		return -ENOMEM;
	dwfl_report_begin(s.dwfl);
	for (size_t i = 0; i < nm; i++) {
		uint64_t bias = 0;
		bool again = false;

		/* a file with more than one executable mapping is one module, reported once */
		for (size_t j = 0; j < i && !again; j++)
			again = m[j].path && m[i].path && !strcmp(m[j].path, m[i].path);
		if (again || !m[i].path || m[i].path[0] != '/' ||
		    file_bias(m[i].path, m[i].start, m[i].pgoff, &bias))
			continue;
		if (dwfl_report_elf(s.dwfl, m[i].path, m[i].path, -1, bias, false))
			reported++;
	}
	if (dwfl_report_end(s.dwfl, NULL, NULL))
		err = -EINVAL;
	if (!err && !reported)
		err = -ENOENT;
	if (!err && !dwfl_attach_state(s.dwfl, NULL, pid, &thread_callbacks, &s))
		err = -EINVAL;
	if (err) {
		dwfl_end(s.dwfl);
		return err;
	}
	n = walk(&s, tid, regs, stack, len, out, max);
	dwfl_end(s.dwfl);
	if (!n) {
		out[0] = regs[OFFCPU_UNW_REG_IP];
		n = 1;
	}
	return n;
}
