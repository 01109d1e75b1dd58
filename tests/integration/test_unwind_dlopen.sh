#!/bin/bash
# issue 11, check 4: a library dlopened once recording runs (unwindmix
# dlopen, libunwlib.so, both built -O2 -fomit-frame-pointer) waits 10 times
# 30 ms: its table is built when the first stack needs it, so every wait
# after that has the library's frames and its caller's (ul_block_inner,
# ul_block_outer, um_call_lib, main), at most two without, and those are
# counted (unwind.no_mapping).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu
require_workload unwindmix-nofp
require_workload libunwlib.so

cd "$TESTDIR"
record -o dl.data --off-cpu-thresh 10 -- "$WORKLOADS/unwindmix-nofp" dlopen "$WORKLOADS/libunwlib.so" 10 30 \
	>ids.txt || fail "offcpu record -- unwindmix-nofp dlopen exited $?"
measure "$(grep 'DWARF tables' record.err | sed 's/^\[ offcpu record: //; s/ \]$//')"
read -r pid tid <ids.txt
"$PY" "$HERE/unwindcheck.py" dlopen "$OFFCPU" dl.data "$tid" 10 30
