#!/bin/bash
# issue 11, check 3: Debian's own python3 (built without frame pointers)
# sleeping 300 ms: the off-CPU sample's user stack runs from
# clock_nanosleep through the interpreter to _start (or
# __libc_start_main), at least 6 frames, in perf script and in offcpu
# report --folded.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu
[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3 (Debian's python3)"

cd "$TESTDIR"
record -o py.data -- /usr/bin/python3 -c 'import os, time; print(os.getpid(), flush=True); time.sleep(0.3)' \
	>pid.txt || fail "offcpu record -- python3 exited $?"
measure "$(grep 'DWARF tables' record.err | sed 's/^\[ offcpu record: //; s/ \]$//')"
"$PY" "$HERE/unwindcheck.py" python "$OFFCPU" py.data "$(cat pid.txt)"
