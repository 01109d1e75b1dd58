#!/bin/bash
# offcpu and a newer Linux perf (6.14 and later, which parse offcpu-time's
# payload as perf's own embedded off-CPU sample), both ways:
#  1. waitmix recorded by offcpu --wakeups --sched-delay, read by the newer
#     perf and by Debian's perf 6.1: each reads it without an error, every
#     offcpu-time, offcpu-wakeup and sched-delay sample is the same in both
#     (pid, tid, time, period, frames); the waitmix checks
#     (perfcheck.py waitmix: each wl_* function's off-CPU time within 3 % of
#     what its thread measured, on that thread's tid; thread totals against
#     schedstat) hold with each perf.
#  2. The newer perf's own `record --off-cpu -g --off-cpu-thresh 100` of
#     waitmix (embedded payloads, its direct samples with pid and tid
#     swapped), read by offcpu report --folded and offcpu script: the
#     off-CPU total equals that perf's own `perf script` sum within 0.1 %;
#     offcpu flamegraph's within the precision it prints.
# Skips, naming what is missing, when no perf 6.14 or newer is found
# (PERF_NEW=path, else ../shared/tools/perf-7.3/perf beside the repository,
# else /work/shared/tools/perf-7.3/perf).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_perf_new
require_offcpu
require_workload waitmix
measure "newer perf: $PERF_NEW ($("$PERF_NEW" --version))"

disk_dir
rc=0
# ---- 1. offcpu's recording, read by both perfs
record -o "$TESTDIR/wm.data" --wakeups --sched-delay -- \
	"$WORKLOADS/waitmix" -q -c -d "$DISK" -j "$TESTDIR/wm.json" ||
	fail "offcpu record -- waitmix exited $?"
CHECK perfs "$TESTDIR/wm.data" "$PERF_NEW" || rc=1
for perf in "$PERF_NEW" perf; do
	measure "--- waitmix checks read with $perf"
	PERFCHECK_PERF=$perf CHECK waitmix "$TESTDIR/wm.data" "$TESTDIR/wm.json" 500 || rc=1
done

# ---- 2. the newer perf's own recording, read by offcpu
measure "--- $PERF_NEW record --off-cpu -g --off-cpu-thresh 100 -- waitmix"
"$PERF_NEW" record -q --off-cpu -g --off-cpu-thresh 100 -o "$TESTDIR/perf.data" -- \
	"$WORKLOADS/waitmix" -q -d "$DISK" >"$TESTDIR/perf-record.log" 2>&1 ||
	{ cat "$TESTDIR/perf-record.log"; fail "$PERF_NEW record --off-cpu failed"; }
theirs=$(PERFCHECK_PERF=$PERF_NEW CHECK eventsum "$TESTDIR/perf.data" offcpu-time) ||
	fail "$PERF_NEW script cannot read its own recording: $theirs"
[ "${theirs:-0}" -gt 0 ] || fail "$PERF_NEW recorded no off-CPU time"
folded=$("$OFFCPU" report -i "$TESTDIR/perf.data" --folded -e offcpu-time) ||
	fail "offcpu report --folded failed on perf's recording"
ours=$(echo "$folded" | awk '{ s += $NF } END { printf "%.0f", s }')
script=$("$OFFCPU" script -i "$TESTDIR/perf.data" |
	awk '$NF == "offcpu-time:" { s += $(NF - 1) } END { printf "%.0f", s }')
"$OFFCPU" flamegraph -i "$TESTDIR/perf.data" --off-cpu-only -o "$TESTDIR/perf.svg" 2>"$TESTDIR/fg.err" ||
	{ cat "$TESTDIR/fg.err"; fail "offcpu flamegraph failed on perf's recording"; }
fg=$(sed -n 's/.*off-CPU \([0-9.]*\) \([a-z]*s\).*/\1 \2/p' "$TESTDIR/fg.err")
for what in "report --folded:$ours" "script:$script"; do
	v=${what##*:}
	awk -v a="$v" -v b="$theirs" 'BEGIN { d = (a - b) / b; exit !(d <= 0.001 && d >= -0.001) }' ||
		{ echo "FAIL: offcpu ${what%:*} sums off-CPU time to $v ns, perf script to $theirs ns"; rc=1; }
done
awk -v t="$theirs" -v f="$fg" 'BEGIN {
	split(f, a, " "); u = a[2] == "s" ? 1e9 : a[2] == "ms" ? 1e6 : a[2] == "us" ? 1e3 : 1
	n = split(a[1], d, "."); ulp = (n > 1 ? 10 ^ -length(d[2]) : 1) * u
	exit !(t - ulp / 2 <= a[1] * u + 1 && a[1] * u <= t + ulp / 2 + 1) }' ||
	{ echo "FAIL: offcpu flamegraph shows off-CPU $fg, perf script sums $theirs ns"; rc=1; }
measure "perf's recording: $PERF_NEW script sums offcpu-time to $theirs ns; offcpu report --folded $ours ns, offcpu script $script ns, offcpu flamegraph $fg"
# its direct samples' pid and tid put back: every waitmix function on a thread of waitmix
funcs=$(echo "$folded" | grep -c ';wl_') || true
[ "$funcs" -gt 0 ] || { echo "FAIL: no wl_* function named in offcpu's folded stacks"; rc=1; }
measure "offcpu report --folded: $(echo "$folded" | wc -l) stacks, $funcs through a wl_* function"
exit $rc
