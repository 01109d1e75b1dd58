#!/bin/bash
# Off-CPU time from what perf users already record: `perf record -e
# sched:sched_switch -g`, read by offcpu report, --threads, --folded and
# flamegraph (switch_check.py says what is checked):
#  1. exact ends: perf 6.1 records the whole machine's switches to and from
#     waitmix's threads (a tracepoint filter on prev_comm and next_comm)
#     while `offcpu record --sched-delay` records the same run of waitmix:
#     the derived time within 5 % of offcpu's own in total, and per thread
#     no less, and no more than the time it ran besides (a switch-in the
#     kernel does not trace, as from an idle CPU on this VM, ends a wait at
#     the thread's next event);
#  2. a recording of the command alone (its switch-outs, few switch-ins):
#     the derived time is an upper bound of what each thread measured
#     asleep, the total within 5 %.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu
require_workload waitmix

disk_dir
cd "$TESTDIR"
# 1. the same run of waitmix in both recordings
filter='prev_comm ~ "wm-*" || next_comm ~ "wm-*" || prev_comm == "waitmix" || next_comm == "waitmix"'
perf record -q -a -g -e sched:sched_switch --filter "$filter" -o sw-a.data -- \
	"$OFFCPU" record -q --sched-delay -o own.data -- "$WORKLOADS/waitmix" -q -d "$DISK" -j a.json \
	>perf-a.log 2>&1 || { cat perf-a.log; fail "perf record -a -e sched:sched_switch around offcpu record failed"; }
"$PY" "$HERE/switch_check.py" exact "$OFFCPU" sw-a.data own.data a.json || fail "switch_check.py exact"
# 2. the command alone
perf record -q -g -e sched:sched_switch -o sw.data -- "$WORKLOADS/waitmix" -q -d "$DISK" -j b.json \
	>perf.log 2>&1 || { cat perf.log; fail "perf record -e sched:sched_switch -- waitmix failed"; }
"$PY" "$HERE/switch_check.py" bound "$OFFCPU" sw.data b.json || fail "switch_check.py bound"
exit 0
