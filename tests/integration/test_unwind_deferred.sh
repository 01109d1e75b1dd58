#!/bin/bash
# A library loaded and entered at once: unwindmix-nofp dlopens
# libunwlib.so (both -O2 -fomit-frame-pointer) and its function blocks
# 300 ms on its first call. The unwinder's thread is held back
# (OFFCPU_TEST_UNWIND_LATE=1000: its first wake-up is handled a second
# late), so that no table of the library can be there when the stack is
# taken: the BPF unwinder keeps the stack raw, and it is unwound in user
# space when written. The wait has the library's frames and its caller's
# in the main binary (ul_block_inner, ul_block_outer, um_call_lib, main),
# 300 ms +- 5 %, in Debian's perf script and in offcpu report;
# unwind.deferred and unwind.deferred_unwound count it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu
require_workload unwindmix-nofp
require_workload libunwlib.so

cd "$TESTDIR"
OFFCPU_TEST_UNWIND_LATE=1000 record -o dl.data --off-cpu-thresh 10 -- \
	"$WORKLOADS/unwindmix-nofp" dlopen "$WORKLOADS/libunwlib.so" 1 300 >ids.txt ||
	fail "offcpu record -- unwindmix-nofp dlopen exited $?"
read -r pid tid <ids.txt
"$PY" "$HERE/unwindcheck.py" deferred "$OFFCPU" dl.data "$tid" 300
