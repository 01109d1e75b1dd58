#!/bin/bash
# Wait chains: `offcpu record --chains`, `report --chains` (tree, --folded,
# --pprof), `flamegraph --chains`, `script --chains`, on workloads built
# -O2 -fomit-frame-pointer whose threads measure what they did
# (tests/workloads/chainmix.c; checks: chains_check.py):
#  1. three threads: cm-a's wait on a condition variable, signalled by
#     cm-b after its pipe read, written by cm-c after 200 ms spinning in
#     cm_spin and 100 ms asleep in cm_nap: on CPU in cm_spin and asleep in
#     cm_nap [timer], through cm-b, within 8 % of what cm-c measured;
#  2. loopback TCP: cm-client's recv woken by cm-server's send is booked
#     to cm_tcp_send by `report --wakeups`, not to [irq]; and its waits go
#     to the server's spin;
#  3. two processes: a client's wait on a unix socket goes to the other
#     process's worker's spin (8 %) and to its fsync [io];
#  4. conservation: over the recording of the demo workload (waitmix)
#     and chainmix, every analysed wait's segments tile it, their sum
#     equal to the wait within 1 us (script --chains --chain-min 0); and
#     one chain through futex, condition variable, pipe, unix and TCP
#     sockets, eventfd, waitpid of an exiting child and an fsync (D) to
#     the child's spin, eight hops away, within 8 %;
#  5. a cycle: `perf bench sched pipe`, two threads waking each other
#     40 000 times: report --chains --chain-min 0 ends, its time and
#     memory bounded, every wait tiled;
#  5b. the same, the two threads free to run on both CPUs: a waking on one
#     CPU often comes before the sleeper's switch-out on the other is
#     traced (chain.woken_before_switch_out); the sleep keeps that waker:
#     at most 1 in 1000 of their sleeps without one ([wakeup unseen]);
#  6. wakeups the kernel hid (OFFCPU_TEST_HIDE_WAKING=1: every
#     sched_waking, as an interrupt's is hidden while the VM agent's
#     thread is current): cm-a's wait ends [wakeup unseen], no waker
#     invented, the header counts such sleeps, script --chains marks them.
# The files are read by Debian's perf 6.1 (perf report), the flame graph
# by xmllint, the pprof profile by go tool pprof.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu
require_workload chainmix-nofp
require_workload waitmix-nofp
CHAINS() { "$PY" "$HERE/chains_check.py" "$@"; }

rc=0
disk_dir # fsync does nothing on tmpfs
f=$TESTDIR/chains.data
record -q --chains -o "$f" -- sh -c "'$WORKLOADS/waitmix-nofp' -q -d '$DISK' &&
	'$WORKLOADS/chainmix-nofp' -j '$TESTDIR/cm.json' -d '$DISK' cond tcp unix relay" ||
	fail "offcpu record --chains -- waitmix, chainmix exited $?"
measure "record --chains: $(stat -c %s "$f") bytes"
CHAINS known "$OFFCPU" "$f" "$TESTDIR/cm.json" || rc=1
CHAINS tiles "$OFFCPU" "$f" 100 wm- cm- || rc=1

# the tree reads as an answer: cm-a's wait, through cm-b, to cm-c's spin and sleep
"$OFFCPU" report -i "$f" --chains --comm cm-a >"$TESTDIR/tree.txt" || fail "report --chains exited $?"
grep -q "^cm-a .* in cm_cond_wait" "$TESTDIR/tree.txt" || fail "report --chains: no cm-a group: $(head -20 "$TESTDIR/tree.txt")"
grep -q "<- cm-c  on CPU in cm_spin" "$TESTDIR/tree.txt" || fail "report --chains: cm-c's spin missing"
# [wakeup unseen]: the timer's wakeup hidden from tracing (chains_check.py)
grep -q "<- cm-c  asleep in .*do_nanosleep \[\(timer\|wakeup unseen\)\]" "$TESTDIR/tree.txt" ||
	fail "report --chains: cm-c's [timer] missing"

# other readers
perf report -i "$f" --stdio --sort comm >"$TESTDIR/perf.txt" 2>"$TESTDIR/perf.err" ||
	{ cat "$TESTDIR/perf.err"; fail "perf report cannot read a --chains recording"; }
grep -q "of event 'offcpu-switch'" "$TESTDIR/perf.txt" || fail "perf report shows no offcpu-switch event"
"$OFFCPU" flamegraph --chains -i "$f" -o "$TESTDIR/chains.svg" 2>/dev/null || fail "flamegraph --chains exited $?"
xmllint --noout "$TESTDIR/chains.svg" || fail "flamegraph --chains: not well-formed XML"
grep -q "\[woken by cm-c\]" "$TESTDIR/chains.svg" || fail "flamegraph --chains: no [woken by cm-c] frame"
"$OFFCPU" report -i "$f" --chains --pprof "$TESTDIR/chains.pb.gz" || fail "report --chains --pprof exited $?"
if command -v go >/dev/null; then
	HOME=$TESTDIR go tool pprof -top -sample_index=off_cpu "$TESTDIR/chains.pb.gz" >"$TESTDIR/pprof.txt" 2>&1 ||
		{ cat "$TESTDIR/pprof.txt"; fail "go tool pprof cannot read report --chains --pprof"; }
	grep -q "cm_spin" "$TESTDIR/pprof.txt" || fail "go tool pprof: no cm_spin in the chains' profile"
	measure "go tool pprof reads report --chains --pprof"
fi

# 5. a cycle: two threads waking each other
p=$TESTDIR/pipe.data
record -q --chains -o "$p" -- taskset -c 0 perf bench sched pipe -l 20000 >/dev/null ||
	fail "offcpu record --chains -- perf bench sched pipe exited $?"
CHAINS bounded "$OFFCPU" "$p" 30 400 || rc=1
CHAINS tiles "$OFFCPU" "$p" 10000 sched-pipe || rc=1

# 5b. wakings that come before the sleeper's switch-out is traced
q=$TESTDIR/pipe2.data
record -q --chains -o "$q" -- perf bench sched pipe -l 10000 >/dev/null ||
	fail "offcpu record --chains -- perf bench sched pipe (both CPUs) exited $?"
early=$("$OFFCPU" report --header -i "$q" | awk '/chain.woken_before_switch_out:/ { print $NF }')
read -r sleeps unseen < <("$OFFCPU" script -i "$q" |
	awk '$1 == "sched-pipe" && / offcpu-switch: S / { n++; if (/ wake-unseen/) u++ } END { print n + 0, u + 0 }')
measure "pipe on both CPUs: $sleeps sleeps, ${early:-no} woken before their switch-out was traced, $unseen without a waker"
# (a read finds its reply there, unslept, at times: 13 790 to 19 111 sleeps seen)
[ "$sleeps" -ge 1000 ] && [ $((unseen * 1000)) -le "$sleeps" ] ||
	{ echo "FAIL: pipe on both CPUs: $unseen of $sleeps sleeps without a waker" >&2; rc=1; }

# 6. wakeups hidden from tracing
h=$TESTDIR/hidden.data
OFFCPU_TEST_HIDE_WAKING=1 record -q --chains -o "$h" -- \
	"$WORKLOADS/chainmix-nofp" -j "$TESTDIR/cm-hidden.json" cond ||
	fail "OFFCPU_TEST_HIDE_WAKING=1 offcpu record --chains -- chainmix cond exited $?"
"$OFFCPU" report -i "$h" --chains --comm cm-a >"$TESTDIR/hidden.txt" || fail "report --chains exited $?"
unseen=$(sed -n 's/^# \([0-9]*\) sleeps whose wakeup the kernel hid.*/\1/p' "$TESTDIR/hidden.txt")
marked=$("$OFFCPU" script -i "$h" | grep -c ' wake-unseen')
measure "hidden wakings: report --chains counts ${unseen:-no} sleeps [wakeup unseen], script marks $marked"
grep -q "^cm-a .* in cm_cond_wait" "$TESTDIR/hidden.txt" || fail "hidden wakings: no cm-a group: $(head -20 "$TESTDIR/hidden.txt")"
grep -q "asleep in .*\[wakeup unseen\]" "$TESTDIR/hidden.txt" ||
	{ echo "FAIL: hidden wakings: cm-a's wait does not end [wakeup unseen]: $(head -20 "$TESTDIR/hidden.txt")" >&2; rc=1; }
# (its own line is "<- cm-a  asleep in ...": the wait itself, ended there)
grep -q "<- cm-[bc]" "$TESTDIR/hidden.txt" &&
	{ echo "FAIL: hidden wakings: a waker was named: $(grep -m1 "<- cm-[bc]" "$TESTDIR/hidden.txt")" >&2; rc=1; }
[ "${unseen:-0}" -gt 0 ] && [ "$marked" -ge "$unseen" ] ||
	{ echo "FAIL: hidden wakings: header ${unseen:-none}, script $marked" >&2; rc=1; }
exit $rc
