#!/bin/bash
# JIT code named through /tmp/perf-PID.map: node --perf-basic-prof (and
# --interpreted-frames-native-stack, so that interpreted functions have
# frames of their own) blocks in two named JavaScript functions
# (tests/workloads/nodewait.js): jsTimerWait on a timer, jsChildWait on a
# child process, 300 ms each. Their names are in the off-CPU stacks, with
# (nearly) all of the time, in Debian's perf script and in offcpu report.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu
command -v node >/dev/null || skip "no node (Debian's nodejs)"

cd "$TESTDIR"
trap '[ -n "${pid:-}" ] && rm -f "/tmp/perf-$pid.map"; [ -n "${KEEP_TESTDIR:-}" ] || rm -rf "$TESTDIR"' EXIT
record -o node.data -- node --perf-basic-prof --interpreted-frames-native-stack \
	"$HERE/../workloads/nodewait.js" 300 >pid.txt || fail "offcpu record -- node exited $?"
pid=$(cat pid.txt)
[ -s "/tmp/perf-$pid.map" ] || fail "node wrote no /tmp/perf-$pid.map"
measure "node $(node --version), /tmp/perf-$pid.map: $(wc -l <"/tmp/perf-$pid.map") functions"
"$PY" "$HERE/unwindcheck.py" node "$OFFCPU" node.data "$pid" 300
