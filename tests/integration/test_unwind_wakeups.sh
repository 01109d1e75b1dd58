#!/bin/bash
# issue 11, check 2: wakers unwound from .eh_frame too. schedmix built with
# -O2 -fomit-frame-pointer (schedmix-nofp), pipe mode: the reader blocks in
# read() called from sm_pipe_reader, the writer writes 250 ms later from
# sm_pipe_writer; `offcpu report --wakeups --folded` joins the two named
# functions across --, 250 ms +- 8 %, and perf script shows sm_pipe_writer
# in the waker's callchain (schedcheck.py pipe). Recorded with the default
# threshold (the wait summed in the kernel) and --off-cpu-thresh 100; then
# again with the loader of the unwind tables held back 300 ms
# (OFFCPU_TEST_UNWIND_LATE=300): every stack is taken before the process's
# table is written, and must be the same from the early table the BPF side
# makes itself (counted: unwind.early in offcpu report's header).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu
require_workload schedmix-nofp

rc=0
for run in 500 100 late; do
	thresh=$run late=
	[ "$run" = late ] && thresh=100 late=300
	measure "--- schedmix-nofp pipe, --off-cpu-thresh $thresh${late:+, OFFCPU_TEST_UNWIND_LATE=$late}"
	f=$TESTDIR/pipe$run.data
	OFFCPU_TEST_UNWIND_LATE=$late record -q --wakeups --off-cpu-thresh "$thresh" -o "$f" -- \
		"$WORKLOADS/schedmix-nofp" -j "$TESTDIR/pipe$run.json" pipe ||
		fail "offcpu record --wakeups -- schedmix-nofp pipe exited $?"
	"$PY" "$HERE/schedcheck.py" pipe "$OFFCPU" "$f" "$TESTDIR/pipe$run.json" || rc=1
	if [ -n "$late" ]; then
		hdr=$("$OFFCPU" report -i "$f" --stdio --header 2>/dev/null | grep -E '^# offcpu unwind\.(early|no_table|no_mapping):')
		measure "table 300 ms late: $(echo "$hdr" | sed 's/^# offcpu //' | tr '\n' ' ')"
		echo "$hdr" | grep -q 'unwind.early: [1-9]' ||
			{ echo "FAIL: with the table 300 ms late, no stack counted as unwind.early"; rc=1; }
	fi
done
exit $rc
