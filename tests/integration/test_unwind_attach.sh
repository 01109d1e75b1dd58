#!/bin/bash
# Attaching to a stuck process built without frame pointers: the waits in
# progress when the recording starts are unwound from .eh_frame like any
# other stack. tests/workloads/stuck.c built -O2 -fomit-frame-pointer
# (stuck-nofp) has one thread blocked reading a pipe nobody writes
# (wl_pipe_block), one in a 30 s sleep (wl_long_sleep), one reading a FIFO
# (wl_wake_once, woken once by the test mid-window) and one on a mutex the
# main thread holds (wl_mutex_wait), all blocked before the recorder starts.
# `offcpu record -p PID -d 2`: each thread has 2 s +- 5 % off-CPU in its own
# function, with its callers up to start_thread, on its own tid, in Debian's
# perf script and in offcpu report (inprogress_check.py: the in-progress
# flags and --threads too); the stacks were unwound in user space.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu
require_workload stuck-nofp

cd "$TESTDIR"
mkfifo fifo || fail "mkfifo"
"$WORKLOADS/stuck-nofp" tids fifo &
wl=$!
trap 'kill $wl 2>/dev/null; [ -n "${KEEP_TESTDIR:-}" ] || rm -rf "$TESTDIR"' EXIT
for _ in $(seq 100); do [ "$(wc -l <tids 2>/dev/null)" = 4 ] && break; sleep 0.05; done
[ "$(wc -l <tids 2>/dev/null)" = 4 ] || fail "stuck-nofp did not write its thread ids"
sleep 0.3 # every thread blocked well before the recording starts
exec 3>fifo

"$OFFCPU" record -o p.data -p "$wl" -d 2 2>record.err &
rp=$!
wait_recording "$rp" || { cat record.err; fail "offcpu record did not start"; }
sleep 0.7
echo x >&3
wait "$rp" || { cat record.err; fail "offcpu record -p exited $?"; }
sed 's/^/  record: /' record.err
rc=0
"$PY" "$HERE/inprogress_check.py" "$OFFCPU" p.data tids 2 pipe-block,long-sleep,wake-once,mutex-wait || rc=1
"$PY" "$HERE/unwindcheck.py" attach "$OFFCPU" p.data tids 2 || rc=1
exit $rc
