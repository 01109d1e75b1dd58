#!/bin/bash
# Drains and the stop of a recording wait for BPF programs still running,
# however long a CPU is held up inside one (a vCPU the host stops): with
# OFFCPU_TEST_STALL=20, 1 in 8 of the waits counted stall their CPU for
# 20 ms inside the switch program, between reading the task's accumulator
# (and the half of the sums it writes) and writing them, before the wait's
# end is recorded. Nothing may be lost or counted twice:
#  - drains every 10 ms (--flush-interval 10) of the waitmix workload: each
#    thread's intervals in its blocking calls, summed or direct, are exactly
#    its voluntary context switches there (getrusage, counted by the
#    thread); its whole off-CPU time within 2 % of schedstat's (perfcheck's
#    waitmix checks, but for the spin thread's CPU samples); nothing lost;
#  - the stop, while waits end all the time (napper: threads sleeping
#    0.5-3 ms of their own random lengths, recorded with -p for 1 s, every
#    interval a direct sample): no wait written by the stop iterator was
#    also ended by the programs (a wait of the same thread overlapping it), at
#    most one wait open per thread at the stop; nothing lost.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu
require_workload waitmix
require_workload napper

disk_dir
rc=0
measure "--- drains: OFFCPU_TEST_STALL=20 record --flush-interval 10 -- waitmix"
stat0=$(grep '^cpu' /proc/stat)
OFFCPU_TEST_STALL=20 record -v -o "$TESTDIR/d.data" --flush-interval 10 -- \
	"$WORKLOADS/waitmix" -q -d "$DISK" -j "$TESTDIR/d.json" || fail "offcpu record -- waitmix exited $?"
grep -q 'nothing lost' "$TESTDIR/record.err" || { echo "FAIL: lost: $(grep lost "$TESTDIR/record.err")" >&2; rc=1; }
stat1=$(grep '^cpu' /proc/stat)
OFFCPU_TEST_STOLEN_NS=$(stolen_since "$(head -1 <<<"$stat0")")
# The hypervisor's steal during the run, at most: each CPU's whole ticks of
# it (field 9) between the two reads, plus the tick those leave out.
# The stall books 20 ms to a thread switched in, and steal inside that time
# is "asleep" to waitmix (see perfcheck's per-function band).
OFFCPU_TEST_STEAL_NS=$(printf '%s\n%s\n' "$stat0" "$stat1" | awk -v hz="$(getconf CLK_TCK)" '
	$1 ~ /^cpu[0-9]/ { if ($1 in s) t += $9 - s[$1] + 1; else s[$1] = $9 }
	END { print int(t * 1e9 / hz) }')
measure "steal during the run, all CPUs, at most: $((OFFCPU_TEST_STEAL_NS / 1000000)) ms"
export OFFCPU_TEST_STOLEN_NS OFFCPU_TEST_STEAL_NS
CHECK once "$TESTDIR/d.data" "$TESTDIR/d.json" || rc=1
# (not the spin thread's CPU samples: cpu-clock cannot sample a CPU held
# with interrupts off)
CHECK waitmix "$TESTDIR/d.data" "$TESTDIR/d.json" 500 nospin || rc=1

measure "--- the stop: OFFCPU_TEST_STALL=20 record --off-cpu-thresh 0 -p NAPPER -d 1"
"$WORKLOADS/napper" 6 20 &
napper=$!
trap 'kill $napper 2>/dev/null; [ -n "${KEEP_TESTDIR:-}" ] || rm -rf "$TESTDIR"; [ "$DISK" = "$TESTDIR" ] || rm -rf "$DISK"' EXIT
sleep 0.2
OFFCPU_TEST_STALL=20 record -v -o "$TESTDIR/s.data" --off-cpu-thresh 0 -p "$napper" -d 1 ||
	fail "offcpu record -p napper exited $?"
kill "$napper"
wait "$napper" 2>/dev/null
grep -q 'nothing lost' "$TESTDIR/record.err" || { echo "FAIL: lost: $(grep lost "$TESTDIR/record.err")" >&2; rc=1; }
CHECK stopdup "$TESTDIR/s.data" || rc=1
exit $rc
