#!/bin/bash
# issue 11, check 6: a binary stripped of .eh_frame (unwindmix-nocfi: built
# with frame pointers, its .eh_frame and .eh_frame_hdr removed) waits 5
# times 40 ms in um_plain_inner under um_plain_outer: the unwinder steps
# its frames by their frame pointers (libc's from its .eh_frame), every
# wait has the three named frames, and it is counted: unwind.fp_steps in
# the file (offcpu report's header) and in record's summary,
# unwind.files_no_cfi for the file.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu
require_workload unwindmix-nocfi

cd "$TESTDIR"
readelf -S "$WORKLOADS/unwindmix-nocfi" | grep -qE '\.(eh|debug)_frame' &&
	fail "unwindmix-nocfi still has call-frame information"
record -v -o nocfi.data --off-cpu-thresh 10 -- "$WORKLOADS/unwindmix-nocfi" plain 5 40 >ids.txt ||
	fail "offcpu record -- unwindmix-nocfi plain exited $?"
grep -q 'unwind.fp_steps [1-9]' record.err || fail "record's summary does not count unwind.fp_steps"
measure "record: $(grep -o 'unwind.fp_steps [0-9]*' record.err)"
read -r pid tid <ids.txt
"$PY" "$HERE/unwindcheck.py" nocfi "$OFFCPU" nocfi.data "$tid" 5 40
