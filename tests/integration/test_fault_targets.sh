#!/bin/bash
# issue 6: -p targets that exit.
#  - a target exits mid-recording: with -p A,B the recording ends when the
#    last of them exits (as perf record -p does), not at -d; it exits 0 and
#    the file is complete, with samples of both and A's EXIT record (perf
#    script --show-task-events);
#  - -p names a process that has exited before recording starts: a zombie
#    (exited, not yet reaped) is refused with "no such process: PID (it has
#    exited)", exit 1, no file; a process that exits while record starts
#    (10 tries, racing) either gets that error or a recording that ends at
#    once, complete: never one that runs on to -d.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu

cd "$TESTDIR"
nfail=0
bad() { echo "FAIL: $*" >&2; nfail=$((nfail + 1)); }
now_ms() { echo $(( $(mono_ns) / 1000000 )); }

# 1. A exits after ~3 s, B after ~5 s (a recorder with the DWARF unwinder
# takes up to 2 s to start: the verifier); -d 20 would be the other end.
# Each notes when its loop ended (wall clock, ms): 250 forks of sleep take
# 5 s on a quiet machine and once took 12 s on a busy one, so the recorder's
# end is compared with B's, not with 5 s.
bash -c 'for i in $(seq 150); do sleep 0.02; done; date +%s%3N > a.end' &
a=$!
bash -c 'for i in $(seq 250); do sleep 0.02; done; date +%s%3N > b.end' &
b=$!
trap 'kill $a $b 2>/dev/null; rm -rf "$TESTDIR"' EXIT
sleep 0.2
t0=$(date +%s%3N)
record -o ab.data -p "$a,$b" -d 20 --flush-interval 100
rc=$?
t1=$(date +%s%3N)
dur=$((t1 - t0))
wait $a $b 2>/dev/null
bend=$(cat b.end 2>/dev/null || echo 0)
measure "-p A,B (A exits after ~3 s, B after ~5 s) -d 20: record exit $rc after $dur ms, $((t1 - bend)) ms after B's loop ended ($((bend - t0)) ms in)"
[ "$rc" = 0 ] || bad "-p A,B: record exit $rc"
[ "$bend" -gt 0 ] || bad "-p A,B: B did not note its end"
[ "$t1" -ge "$bend" ] || bad "-p A,B: ended $((bend - t1)) ms before B's loop ended"
[ "$((t1 - bend))" -lt 3000 ] || bad "-p A,B: ran $((t1 - bend)) ms after B's loop ended, on towards -d 20 after its targets exited"
"$OFFCPU" report -i ab.data --no-children -g none -s pid >ab.rep 2>ab.err || bad "-p A,B: offcpu report failed: $(cat ab.err)"
! grep -qi warning ab.err || bad "-p A,B: file not complete: $(cat ab.err)"
for p in $a $b; do
	grep -qE "^ +[0-9.]+%.* $p\$" ab.rep || bad "-p A,B: no sample of $p in the report"
done
perf script -i ab.data --show-task-events -F comm,pid,tid,time 2>/dev/null | grep -q "PERF_RECORD_EXIT($a:$a)" ||
	bad "-p A,B: perf script shows no PERF_RECORD_EXIT of A ($a)"

# 2a. A zombie: it has exited, its parent has not reaped it.
# (a shell may reap its background job before it execs: Python never does.)
"$PY" -c 'import os, sys, time
pid = os.fork()
if pid == 0:
    os._exit(0)
open("zpid", "w").write("%d\n" % pid)
time.sleep(5)' &
parent=$!
for i in $(seq 50); do [ -s zpid ] && break; sleep 0.02; done
z=$(cat zpid)
sleep 0.1
state=$(awk '{print $3}' /proc/"$z"/stat 2>/dev/null)
"$OFFCPU" record -o z.data -p "$z" -d 5 >z.out 2>z.err
rc=$?
measure "-p ZOMBIE ($z, state $state): exit $rc, \"$(head -1 z.err)\""
[ "$rc" = 1 ] || bad "-p zombie: exit $rc, expected 1"
grep -q "^offcpu record: no such process: $z (it has exited)" z.err || bad "-p zombie: message '$(head -1 z.err)'"
[ ! -e z.data ] || bad "-p zombie: z.data left behind"
kill $parent 2>/dev/null

# 2b. Racing: the target exits 0-50 ms after record is started.
errs=0 ends=0
for i in $(seq 10); do
	sleep 0.0$((i % 5)) &
	p=$!
	t0=$(now_ms)
	"$OFFCPU" record -q -o race.data -p "$p" -d 8 >race.out 2>race.err
	rc=$?
	dur=$(( $(now_ms) - t0 ))
	if [ "$rc" = 1 ] && grep -q "^offcpu record: no such process: $p" race.err; then
		errs=$((errs + 1))
		[ ! -e race.data ] || bad "race $i: error, yet race.data left behind"
	elif [ "$rc" = 0 ]; then
		ends=$((ends + 1))
		[ "$dur" -lt 5000 ] || bad "race $i: the recording ran $dur ms after its target exited"
		# complete: its header read without a warning (a recording of no
		# sample has no report beyond it: report says "no samples", exit 1)
		"$OFFCPU" report -i race.data --header-only >race.rep 2>race.rerr ||
			bad "race $i: report --header-only failed: $(cat race.rerr)"
		! grep -qi warning race.rerr || bad "race $i: file not complete: $(cat race.rerr)"
		! grep -q '^# lost: unknown' race.rep || bad "race $i: the header says $(grep '^# lost' race.rep)"
	else
		bad "race $i: record exit $rc: $(cat race.err)"
	fi
	rm -f race.data
	wait $p 2>/dev/null
done
measure "-p PID exiting as record starts, 10 tries: $errs refused (no such process), $ends ended at once with a complete file"

[ "$nfail" = 0 ] || fail "$nfail target checks failed"
exit 0
