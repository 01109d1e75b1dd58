#!/bin/bash
# issue 6: 5000 short-lived processes during a recording. The command
# (tests/workloads/spawner.c) forks 5000 children, 4 at a time; each execs,
# names itself sl<index> and waits 2 ms in sl_wait. Every child that blocked
# in that wait (it says so by its exit status, from its own voluntary context
# switch count) must have an offcpu-time sample named sl<index> whose stack
# resolves sl_wait in the spawner binary, in `offcpu script` and in
# `perf script`; no sample of a child may carry another child's name or
# resolve sl_wait elsewhere. The drop counters are printed too.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu
require_workload spawner

cd "$TESTDIR"
N=${SHORTLIVED_N:-5000}
t0=$(mono_ns)
record -o sl.data -- "$WORKLOADS/spawner" spawn "$N" "$TESTDIR/list.txt" ||
	fail "record -- spawner spawn $N exited $?"
measure "$N children recorded in $(( ($(mono_ns) - t0) / 1000000 )) ms; $(grep -h 'lost' "$TESTDIR/record.err" | tr -d '\r' | tail -1)"
[ "$(wc -l <list.txt)" = "$N" ] || fail "spawner listed $(wc -l <list.txt) children, not $N"
"$OFFCPU" report -i sl.data --header -g none 2>/dev/null | grep -E '^# offcpu drop\.' | grep -v ': 0$' | sed 's/^# /# counter /'
"$PY" "$HERE/fault_check.py" shortlived "$OFFCPU" sl.data list.txt "$WORKLOADS/spawner"
