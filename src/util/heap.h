/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The readers' heaps on transparent huge pages.
 *
 * A report's memory is glibc's heaps: arrays growing by doubling, hash
 * indexes, interned frames, most of them small. Each first touch of a
 * 4 KiB page of them is a page fault: 6 300 for a report of a 100 MB
 * recording, about 10 µs each on a paravirtualized VM, a seventh of the
 * report's CPU time. Backed by 2 MiB pages, the same memory takes a few
 * hundred faults.
 *
 * glibc gives every thread but the first a heap of its own (an arena), a
 * mapping aligned to its 64 MiB reservation and grown in place, so one
 * madvise(MADV_HUGEPAGE) at the thread's start covers all it will use.
 * The first thread's heap is the program break, whose every extension is
 * a new mapping without the advice: the command runs on a thread of its
 * own instead (heap__run()).
 */
#ifndef OFFCPU_UTIL_HEAP_H
#define OFFCPU_UTIL_HEAP_H

/*
 * Run fn(argc, argv) on a thread whose heap takes huge pages, with every
 * thread that calls heap__thread_start() after; fn's result. Where the
 * system's transparent huge pages are off ("never"), OFFCPU_HUGE_PAGES=0
 * is set, the build is sanitized, or no thread can be made, fn runs here,
 * as it would without.
 */
int heap__run(int (*fn)(int argc, char **argv), int argc, char **argv);

/*
 * At the start of a thread that allocates much (a reader's, a fold's):
 * its heap takes huge pages too, when heap__run() chose them. Cheap when
 * it did not; the advice is a hint, so nothing here can fail.
 */
void heap__thread_start(void);

#endif
