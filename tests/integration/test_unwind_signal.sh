#!/bin/bash
# issue 11, check 5: a signal handler that waits (pause() in a SIGUSR1
# handler for 200 ms, unwindmix-nofp signal): the wait's user stack goes on
# through the signal frame (__restore_rt, read from the ucontext the
# kernel saved) into the function the signal interrupted
# (um_spin_interrupted) and on to main and _start.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu
require_workload unwindmix-nofp

cd "$TESTDIR"
record -o sig.data -- "$WORKLOADS/unwindmix-nofp" signal 200 >ids.txt ||
	fail "offcpu record -- unwindmix-nofp signal exited $?"
read -r pid tid <ids.txt
"$PY" "$HERE/unwindcheck.py" signal "$OFFCPU" sig.data "$tid" 200
