/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Symbolizer: turns addresses into function names. It knows files (ELF,
 * DWARF, kallsyms, perf-PID.map), never perf.data records: the caller keeps
 * the process model (which mapping an address falls in) and asks with the
 * mapping's file, build id, start and file offset.
 *
 * Each ELF file is opened once per symbolizer; each distinct (dso, address)
 * is resolved once and cached. Strings returned are owned by the
 * symbolizer and live until symbolizer__free().
 */
#ifndef OFFCPU_SYMBOLIZER_H
#define OFFCPU_SYMBOLIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct symbolizer;
struct sym_dso;

struct symbolizer_opts {
	bool srcline;            /* file:line through libdw */
	bool inlines;            /* inlined frames through libdw */
	bool demangle;           /* C++ and Rust names */
	const char *kallsyms;    /* default "/proc/kallsyms" */
	const char *debug_dir;   /* default "/usr/lib/debug" */
	const char *perfmap_dir; /* default "/tmp" (perf-PID.map files) */
	const char *buildid_dir; /* perf's build-id cache: default $PERF_BUILDID_DIR, else
				  * $HOME/.debug; "" for none */
	const char *kernel_notes; /* the running kernel's build id: default /sys/kernel/notes */
};

struct sym_frame {
	const char *sym;     /* function name, NULL when unknown */
	uint64_t offset;     /* address - symbol start */
	const char *srcfile; /* NULL unless srcline was asked and found */
	unsigned int line;
	bool inlined;        /* inlined into the frame that follows */
};

struct symbolizer *symbolizer__new(const struct symbolizer_opts *opts);
void symbolizer__free(struct symbolizer *s);

/*
 * The DSO for a mapped file, created on first use and kept. A file whose
 * build id is not the recorded one is looked for in perf's build-id cache.
 * "[vdso]" is the image the recording carries (symbolizer__add_image),
 * else perf's build-id cache copy of the recorded build id, else this
 * process's vDSO when its build id is the recorded one or none was
 * recorded (as perf does). build_id may be
 * NULL (size 0) when the recording had none; when given and the file on
 * disk has another, the DSO resolves nothing and sym_dso__warning() says
 * so (it is never silently misresolved).
 */
struct sym_dso *symbolizer__dso(struct symbolizer *s, const char *path,
				const uint8_t *build_id, size_t build_id_size);
const char *sym_dso__name(const struct sym_dso *d);

/*
 * Files to load ahead, beside the caller's work: queue each (the
 * arguments of a later symbolizer__dso()), then start the thread that
 * loads them in that order. symbolizer__dso() of a queued file takes it:
 * loaded, being loaded (waited for), or not begun (loaded by the caller).
 * Call before any other use of the symbolizer but symbolizer__add_image()
 * and the kernel's set-up; a file never asked for is loaded for nothing.
 * symbolizer__preload() returns 0 or -ENOMEM.
 */
int symbolizer__preload(struct symbolizer *s, const char *path, const uint8_t *build_id,
			size_t build_id_size);
void symbolizer__preload_start(struct symbolizer *s);

/* An image of the file `name` (only "[vdso]" for now) carried by the recording; copied. */
int symbolizer__add_image(struct symbolizer *s, const char *name, const uint8_t *build_id,
			  size_t build_id_size, const void *data, size_t len);
const char *sym_dso__warning(const struct sym_dso *d); /* NULL when fine */

/*
 * Resolve a user-space ip that falls in a mapping of d starting at
 * map_start with file offset pgoff. Fills up to max frames, the innermost
 * (inlined) first and the real function last; returns the number filled,
 * 0 when unknown, negative errno on error.
 */
int symbolizer__resolve(struct symbolizer *s, struct sym_dso *d, uint64_t map_start,
			uint64_t pgoff, uint64_t ip, struct sym_frame *frames, int max);

/*
 * Kernel addresses through kallsyms (modules included). text_addr is the
 * `_text` address the recording saw (pgoff of its [kernel.kallsyms]_text
 * MMAP), used to relocate; 0 when unknown. *module is set to the module
 * name or "[kernel.kallsyms]".
 */
void symbolizer__set_kernel_text(struct symbolizer *s, uint64_t text_addr);
/*
 * The recorded kernel's build id. When it is not the running kernel's, the
 * running kernel's kallsyms would name other functions: kernel addresses are
 * then named from perf's build-id cache copy of that kernel's kallsyms, or
 * not at all, and symbolizer__kernel_warning() says why (as perf does). An
 * explicit opts.kallsyms is always used.
 */
void symbolizer__set_kernel_build_id(struct symbolizer *s, const uint8_t *build_id, size_t size);
const char *symbolizer__kernel_warning(const struct symbolizer *s); /* NULL when fine */
/*
 * Start reading kallsyms (tens of milliseconds of kernel time) in a thread
 * of its own; the first kernel lookup waits for it. Call after the kernel's
 * build id is set; nothing else may touch the symbolizer's kernel side
 * until a lookup has returned.
 */
int symbolizer__load_kernel_async(struct symbolizer *s);
/*
 * For a caller that never names kernel addresses but says what naming
 * them would warn about: decides which kallsyms names the recorded
 * kernel, without reading it, and returns symbolizer__kernel_warning().
 * The kernel side is done with after this: kernel lookups find nothing.
 */
const char *symbolizer__kernel_check(struct symbolizer *s);
int symbolizer__resolve_kernel(struct symbolizer *s, uint64_t ip, struct sym_frame *frame,
			       const char **module);

/* JIT code through /tmp/perf-PID.map; returns 1 when found, 0 otherwise, negative errno on error. */
int symbolizer__resolve_perfmap(struct symbolizer *s, int pid, uint64_t ip,
				struct sym_frame *frame);

#endif
