#!/bin/bash
# issue 2, check 3: with --off-cpu-thresh 100 the direct off-CPU samples of
# waitmix (300-600 ms waits) appear among its cpu-clock samples in time
# order in `perf script`: timestamps never decrease, all lie inside the
# recording window (CLOCK_MONOTONIC read before record starts and after it
# ends), perf reports no out-of-order events.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu
require_workload waitmix

disk_dir
t0=$(mono_ns)
record -o "$TESTDIR/o.data" --off-cpu-thresh 100 -- "$WORKLOADS/waitmix" -q -d "$DISK" ||
	fail "offcpu record -- waitmix exited $?"
t1=$(mono_ns)
CHECK order "$TESTDIR/o.data" "$t0" "$t1"
