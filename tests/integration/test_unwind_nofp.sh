#!/bin/bash
# issue 11, check 1: user stacks unwound from .eh_frame (the default,
# --call-graph dwarf) on waitmix built with -O2 -fomit-frame-pointer
# (waitmix-nofp): every named function, the outer wl_* and the inner
# wl_call_* it waits in, has its off-CPU time within 5 % of what its thread
# measured (from asleep to asleep + the wake-up's wait for a CPU), on the
# right thread; wl_spin and its frameless leaf wl_spin_step their CPU time
# within 15 %. Read back with Debian's perf script and with offcpu report
# --folded. The same workload recorded with --call-graph fp loses most of
# the named functions (so the check is one frame pointers cannot pass).
# The vfork thread waits in glibc's clone, whose FDE ends before its
# syscall: no CFI there, a frame-pointer step (counted, unwind.fp_steps)
# that this build cannot take; its stack is checked to end in __clone.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu
require_workload waitmix-nofp
UNW() { "$PY" "$HERE/unwindcheck.py" "$@"; }

disk_dir
record -o "$TESTDIR/fp.data" --call-graph fp -- \
	"$WORKLOADS/waitmix-nofp" -q -c -d "$DISK" -j "$TESTDIR/fp.json" ||
	fail "offcpu record --call-graph fp -- waitmix-nofp exited $?"
record -v -o "$TESTDIR/dwarf.data" -- "$WORKLOADS/waitmix-nofp" -q -c -d "$DISK" -j "$TESTDIR/dwarf.json" ||
	fail "offcpu record -- waitmix-nofp exited $?"
measure "$(grep 'DWARF tables' "$TESTDIR/record.err" | sed 's/^\[ offcpu record: //; s/ \]$//')"
UNW nofp "$OFFCPU" "$TESTDIR/dwarf.data" "$TESTDIR/dwarf.json" "$TESTDIR/fp.data"
