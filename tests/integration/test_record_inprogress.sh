#!/bin/bash
# Waits in progress when a recording starts and stops (issue 12, check 1).
# tests/workloads/stuck.c has one thread blocked reading a pipe nobody
# writes (wl_pipe_block), one in a 30 s sleep (wl_long_sleep), and one
# (wl_wake_once) that the test wakes once in the middle of the window by
# writing a byte to its FIFO. All three are blocked before the recorder
# starts. `offcpu record -p PID -d 2` (and again with --sched-delay), then
# `-t TID,TID -d 2` of the first two: each thread has 2 s +- 5 % off-CPU in
# its own function on its own tid, in Debian's perf script and in
# `offcpu report --threads`, flagged in progress at the start and the stop;
# the woken thread's two parts are both there and add up to no more than
# the window (see inprogress_check.py).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu
require_workload stuck

cd "$TESTDIR"
mkfifo fifo || fail "mkfifo"
"$WORKLOADS/stuck" tids fifo &
wl=$!
trap 'kill $wl 2>/dev/null; [ -n "${KEEP_TESTDIR:-}" ] || rm -rf "$TESTDIR"' EXIT
for _ in $(seq 100); do [ "$(wc -l <tids 2>/dev/null)" = 4 ] && break; sleep 0.05; done
[ "$(wc -l <tids 2>/dev/null)" = 4 ] || fail "stuck did not write its thread ids"
sleep 0.3 # every thread blocked well before the recording starts
exec 3>fifo # the workload holds it open for reading: no wait here

rc=0
for opts in "" "--sched-delay"; do
	measure "--- record -p (stuck) -d 2 $opts, wake-once woken after 1 s"
	# shellcheck disable=SC2086
	"$OFFCPU" record -o p.data -p "$wl" -d 2 $opts 2>record.err &
	rp=$!
	wait_recording "$rp" || { cat record.err; fail "offcpu record did not start"; }
	sleep 0.7
	echo x >&3
	wait "$rp" || { cat record.err; fail "offcpu record -p exited $?"; }
	sed 's/^/  record: /' record.err
	"$PY" "$HERE/inprogress_check.py" "$OFFCPU" p.data tids 2 pipe-block,long-sleep,wake-once || rc=1
done

t1=$(awk '$1 == "pipe-block" {print $2}' tids)
t2=$(awk '$1 == "long-sleep" {print $2}' tids)
measure "--- record -t $t1,$t2 -d 2"
record -o t.data -t "$t1,$t2" -d 2 || fail "offcpu record -t exited $?"
"$PY" "$HERE/inprogress_check.py" "$OFFCPU" t.data tids 2 pipe-block,long-sleep || rc=1
CHECK select t.data "tids=$t1,$t2" || rc=1
exit $rc
