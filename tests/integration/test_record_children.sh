#!/bin/bash
# -p follows the children its processes fork during the recording, as perf
# record -p does (inherit); -t stays one thread. `spawner tree` waits for a
# byte, then forks two children (no exec) that sleep 300 ms each, the first
# of them forking a grandchild that sleeps 300 ms too:
#  - record -p PARENT: each child's and the grandchild's sleep is in the
#    file, in its own process and function, 300 ms (perf script reads it);
#    the recording ends by itself when PARENT exits;
#  - record -t PARENT: only the parent's thread.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu
require_workload spawner

cd "$TESTDIR"
nfail=0
bad() { echo "FAIL: $*" >&2; nfail=$((nfail + 1)); }

# tree OPTION FILE: a tree recorded with OPTION (-p or -t) of its parent
tree() {
	local opt=$1 out=$2 rec parent
	rm -f fifo list
	mkfifo fifo
	exec 3<>fifo
	"$WORKLOADS/spawner" tree "$TESTDIR/list.$opt" <&3 &
	parent=$!
	"$OFFCPU" record -o "$out" "$opt" "$parent" -d 10 2>"record$opt.err" &
	rec=$!
	wait_recording "$rec" || bad "$opt: the recorder did not start"
	echo go >&3
	wait "$parent" || bad "$opt: spawner tree exited $?"
	# -p, -t: the recording ends when its targets have exited
	wait "$rec" || bad "record $opt exited $?"
	exec 3>&-
	sed "s/^/  record $opt: /" "record$opt.err" >&2
}

tree -p p.data
CHECK tree p.data list.-p inherit || bad "-p: the children's waits"
grep -q 'child process not followed' record-p.err && bad "-p: a child was not followed"
tree -t t.data
CHECK tree t.data list.-t thread || bad "-t: one thread"

[ "$nfail" = 0 ] || fail "$nfail checks failed"
