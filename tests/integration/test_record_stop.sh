#!/bin/bash
# The stop of a recording on a starved machine: OFFCPU_TEST_STOP_DELAY=300
# makes the recorder end the waits still open 300 ms after the stop, as a
# recorder waiting that long for a CPU would. Meanwhile the threads of
# napper (each wait a nanosleep of 0.5-3 ms) wake, run and wait again a
# hundred times, and the scheduler's accounting keeps only the last of
# those: the programs stay attached, start and end no wait, but note each
# waiting thread's wakeup when it next gets the CPU. Recorded with -p for
# 1 s, every interval a direct sample (napper's main thread, which joins
# the others, left out):
#  - nothing lost (a stop that detached first counted the open waits of
#    such threads lost: "interval end not seen");
#  - the waits the stop wrote (timed at the file's record.stop_ns) last at
#    most 50 ms: ended at the stop or at their wakeup before it, never at
#    the iterator's time 300 ms on; every thread not on a CPU at the stop
#    (nor preempted there: napper's threads run for microseconds at a
#    time) has one, at least THREADS - CPUs of them, counted by kind:
#    asleep at the stop (its wait in progress there, flagged), or woken
#    before it and on a run queue at it, waiting for a CPU (its wait
#    ended at its wakeup, not in progress: a machine as busy as the
#    suite's has such threads at the stop, 3 of 6 at times);
#  - none also ended before the stop (a wait of the same thread that
#    overlaps it), at most one a thread;
#  - the same with napper killed during those 300 ms: its threads exit
#    before the iterator sees them, and their exits end their waits.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu
require_workload napper

THREADS=6
min=$((THREADS - $(nproc)))
[ "$min" -ge 1 ] || min=1
rc=0
for kill in no yes; do
	measure "--- OFFCPU_TEST_STOP_DELAY=300 record --off-cpu-thresh 0 -p NAPPER -d 1$([ $kill = yes ] && echo ', napper killed during the stop')"
	"$WORKLOADS/napper" $THREADS 20 &
	napper=$!
	trap 'kill $napper 2>/dev/null; [ -n "${KEEP_TESTDIR:-}" ] || rm -rf "$TESTDIR"' EXIT
	sleep 0.2
	if [ $kill = yes ]; then
		# SIGINT ends the recording, whose stop then waits 300 ms: napper
		# is killed 150 ms into that
		OFFCPU_TEST_STOP_DELAY=300 "$OFFCPU" record -v -o "$TESTDIR/s.data" --call-graph fp \
			--off-cpu-thresh 0 -p "$napper" 2>"$TESTDIR/record.err" &
		rec=$!
		wait_recording "$rec" || fail "offcpu record -p napper did not start"
		sleep 1
		kill -INT "$rec"
		sleep 0.15
		kill -KILL "$napper"
		wait "$rec"
		r=$?
		sed 's/^/  record: /' "$TESTDIR/record.err" >&2
		[ $r = 0 ] || fail "offcpu record -p napper exited $r"
	else
		OFFCPU_TEST_STOP_DELAY=300 record -v -o "$TESTDIR/s.data" --call-graph fp \
			--off-cpu-thresh 0 -p "$napper" -d 1 || fail "offcpu record -p napper exited $?"
		kill "$napper"
	fi
	wait "$napper" 2>/dev/null
	grep -q 'nothing lost' "$TESTDIR/record.err" ||
		{ echo "FAIL: lost: $(grep lost "$TESTDIR/record.err")" >&2; rc=1; }
	CHECK stopwaits "$OFFCPU" "$TESTDIR/s.data" "$min" 50 || rc=1
	CHECK stopdup "$TESTDIR/s.data" || rc=1
done
exit $rc
