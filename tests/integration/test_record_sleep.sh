#!/bin/bash
# issue 2, check 1: `offcpu record -- sleep 1` read back by Linux perf:
# perf report shows offcpu-time for comm sleep totalling 1 s +- 2 %, and
# perf script prints the sample with a libc symbol (the clock_nanosleep
# wrapper in which sleep blocks).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu

cd "$TESTDIR"
record -o t.data -- sleep 1 || fail "offcpu record -- sleep 1 exited $?"
[ -s t.data ] || fail "no t.data"
CHECK sleep t.data 1000000000
