#!/bin/bash
# Stacks deferred again and again while the unwinder's thread is held
# back (OFFCPU_TEST_UNWIND_LATE), so that the tables they need are late:
#  - unwindmix-nofp dlopens libunwlib.so and blocks 10 times 30 ms in it:
#    every stack is copied for user space (its loop counter is saved in
#    the frames above, so no two copies are the same), none is lost, and
#    the 300 ms have the library's frames and its caller's in Debian's
#    perf script and offcpu report (unwindcheck.py deferred);
#  - taskset -c 0 perf bench sched pipe (20 000 round trips: perf is
#    exec'd in the recording, its table comes late) blocks at the same two
#    places: a stack the same as one copied before (registers, frames,
#    512 bytes above them) takes its id without a copy. Before, every
#    switch copied 16 KiB and the ring lost them (138 of 804 on the cost
#    benchmark, 3442 of 4147 with the unwinder 300 ms late): now at least
#    90 % of the deferred stacks are reused and none is lost.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu
require_workload unwindmix-nofp
require_workload libunwlib.so

cd "$TESTDIR"
OFFCPU_TEST_UNWIND_LATE=1000 record -o dl.data --off-cpu-thresh 10 -- \
	"$WORKLOADS/unwindmix-nofp" dlopen "$WORKLOADS/libunwlib.so" 10 30 >ids.txt ||
	fail "offcpu record -- unwindmix-nofp dlopen exited $?"
read -r pid tid <ids.txt
"$OFFCPU" report --header-only -i dl.data >header.txt 2>&1 || fail "offcpu report --header-only exited $?"
counter() { sed -n "s/^# offcpu $1: //p" header.txt; }
measure "unwindmix: unwind.deferred $(counter unwind.deferred), unwind.deferred_reused $(counter unwind.deferred_reused), unwind.deferred_lost $(counter unwind.deferred_lost)"
[ "$(counter unwind.deferred_lost)" = 0 ] || fail "unwindmix: unwind.deferred_lost $(counter unwind.deferred_lost), not 0"
"$PY" "$HERE/unwindcheck.py" deferred "$OFFCPU" dl.data "$tid" 300 || exit

OFFCPU_TEST_UNWIND_LATE=300 record -o pipe.data -- taskset -c 0 perf bench sched pipe -l 20000 >/dev/null ||
	fail "offcpu record -- perf bench sched pipe exited $?"
"$OFFCPU" report --header-only -i pipe.data >header.txt 2>&1 || fail "offcpu report --header-only exited $?"
deferred=$(counter unwind.deferred)
reused=$(counter unwind.deferred_reused)
lost=$(counter unwind.deferred_lost)
measure "perf bench sched pipe: unwind.deferred $deferred, unwind.deferred_reused $reused, unwind.deferred_lost $lost"
[ "${lost:-x}" = 0 ] || fail "perf bench sched pipe: unwind.deferred_lost ${lost:-none}, not 0"
[ "${deferred:-0}" -gt 0 ] || fail "perf bench sched pipe: no stack deferred (the unwinder was not late?)"
[ $((${reused:-0} * 10)) -ge $((deferred * 9)) ] ||
	fail "perf bench sched pipe: $reused of $deferred deferred stacks reused, not >= 90 %"
