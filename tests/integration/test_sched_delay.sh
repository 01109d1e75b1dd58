#!/bin/bash
# issue 5, check 3: `offcpu record --sched-delay` on the schedmix workload
# in rq mode: two CPU-bound threads and a sleeper pinned to one CPU.
#  - each thread's sched-delay (summed from perf script) within 5 % of the
#    run-queue wait its own schedstat shows at its end;
#  - each `offcpu report --threads` row: on-CPU + off-CPU S + D + run-queue
#    within 2 % of the row's wall time (FORK to EXIT), which covers the
#    thread's own first-to-last-instruction span.
# The spinners take turns every millisecond or so: at the default 999 Hz a
# thread's cpu-clock total is only known to a few %, so this records at
# 9999 Hz (the on-CPU column is sampled; the other three are measured).
# The reference is the kernel's own accounting, so other load on the CPU
# moves both sides alike.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu
require_workload schedmix

# the last online CPU: benchmarks (bench/overhead.sh) pin to CPU 0
cpu=$(tr ',-' '\n\n' < /sys/devices/system/cpu/online | tail -1)
f=$TESTDIR/rq.data
record -q --sched-delay -F 9999 -o "$f" -- "$WORKLOADS/schedmix" -c "$cpu" -j "$TESTDIR/rq.json" rq ||
	fail "offcpu record --sched-delay -- schedmix rq exited $?"
"$PY" "$HERE/schedcheck.py" rq "$OFFCPU" "$f" "$TESTDIR/rq.json" || exit 1
CHECK readable "$f"
