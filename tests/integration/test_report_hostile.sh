#!/bin/bash
# issue 6: offcpu report on hostile files.
#  - 300 byte-mutated copies of real recordings (bit flips, truncations,
#    extreme values in header, attr, feature and record fields: mutate.py,
#    fixed seeds): 150 of an offcpu recording made here (of a perf recording,
#    tests/data/fp.data, when BPF is not available) and 150 of
#    tests/data/fp-nobuildid.data, made by Linux perf. On each, offcpu report
#    exits 0 with a report or non-zero with a message: never by a signal and
#    never after 10 s. The sanitized build (ASan+UBSan, leaks checked) runs on
#    every third copy too, and offcpu script on every tenth. The two sets
#    run side by side, one a CPU.
#  - it writes nowhere but its output: under strace, no open for writing,
#    no creat/rename/unlink/mkdir/link/truncate, writes only to fds 1 and 2
#    (a sample of 20 copies and the FIFO case below);
#  - a FIFO planted where a recorded binary was (it would block a reader
#    that opened it) is skipped with a warning, without hanging.
# sanitizers: skip (it runs the sanitized build on its copies itself)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_offcpu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$TESTDIR"
nfail=0
bad() { echo "FAIL: $*" >&2; nfail=$((nfail + 1)); }
SAN=${OFFCPU_SAN:-}
[ -x "$SAN" ] || SAN=
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1

own=
if [ "$(id -u)" = 0 ] && [ -r /sys/kernel/btf/vmlinux ] && [ -x "$WORKLOADS/waitmix" ]; then
	mkdir bin
	cp "$WORKLOADS/waitmix" bin/waitmix
	record -o own.data -F 300 --off-cpu-thresh 20 -- bin/waitmix -s 0.1 -q -d "$TESTDIR" &&
		own=own.data
fi
[ -n "$own" ] || own=$ROOT/tests/data/fp.data
mkdir m1 m2
"$PY" "$HERE/mutate.py" "$own" m1 150 1 >kinds1.txt || fail "mutate.py failed"
"$PY" "$HERE/mutate.py" "$ROOT/tests/data/fp-nobuildid.data" m2 150 2 >kinds2.txt || fail "mutate.py failed"

# The two sets run side by side (one a CPU), each in a directory of its
# own: a failure is a line of its fails file, an outcome one of its
# outcomes file ("label ok|err").
# run BIN ARGS...: its exit status, or 124/137 when it ran past 10 s
run() { timeout -s KILL 10 "$@" >out.txt 2>err.txt; }
check_one() { # file, kind line, binary name, binary, subcommand
	local f=$1 what=$2 label=$3 bin=$4 cmd=$5 rc
	run "$bin" "$cmd" -i "$f"
	rc=$?
	if [ $rc -ge 124 ]; then
		echo "$label $cmd $what: exit $rc ($([ $rc = 137 ] && echo 'past 10 s' || echo "signal $((rc - 128))")): $(grep -m3 -E 'ERROR|runtime error|SUMMARY' err.txt)" >>fails
	elif [ $rc = 0 ]; then
		[ -s out.txt ] || echo "$label $cmd $what: exit 0 without output" >>fails
		echo "$label ok" >>outcomes
	else
		[ -s err.txt ] || echo "$label $cmd $what: exit $rc without a message" >>fails
		echo "$label err" >>outcomes
	fi
}
run_set() { # set: the copies of m$set, from r$set/
	local n=0 name kind detail f
	mkdir "r$1" && cd "r$1" || return
	: >fails; : >outcomes
	while read -r name kind detail; do
		f=../m$1/$name
		check_one "$f" "m$1/$name ($kind $detail)" plain "$OFFCPU" report
		[ -n "$SAN" ] && [ $((n % 3)) = 0 ] && check_one "$f" "m$1/$name ($kind $detail)" san "$SAN" report
		[ $((n % 10)) = 0 ] && check_one "$f" "m$1/$name ($kind $detail)" script "$OFFCPU" script
		n=$((n + 1))
	done <"../kinds$1.txt"
}
t0=$(mono_ns)
run_set 1 &
run_set 2 &
wait
while IFS= read -r l; do bad "$l"; done < <(cat r1/fails r2/fails)
n=$(cat kinds1.txt kinds2.txt | wc -l)
count() { cat r1/outcomes r2/outcomes | grep -c "^$1\$"; }
measure "$n mutated copies ($(basename "$own"), fp-nobuildid.data) in $(( ($(mono_ns) - t0) / 1000000 )) ms, two at a time: report $(count 'plain ok') reports, $(count 'plain err') errors; sanitized $(count 'san ok') reports, $(count 'san err') errors; script $(count 'script ok')/$(count 'script err')"
[ $(( $(count 'plain ok') + $(count 'plain err') )) = "$n" ] || bad "$n copies, $(count 'plain ok') + $(count 'plain err') outcomes of report"
[ -n "$SAN" ] || measure "sanitized build not given (OFFCPU_SAN): plain binary only"

# Writes nowhere: strace every file-changing call.
if command -v strace >/dev/null; then
	writes() { # strace log: the calls that change the file system or write elsewhere
		grep -E 'open(at)?\(.*O_(WRONLY|RDWR|CREAT|TRUNC)|creat\(|rename|unlink|mkdir|rmdir|link(at)?\(|symlink|truncate|chmod|chown|mknod' "$1"
		grep -E '^[0-9]+ +(write|pwrite64|writev)\(' "$1" | grep -vE '\((1|2), '
	}
	nw=0
	for f in $(ls m1/*.data | head -10) $(ls m2/*.data | head -10); do
		timeout -s KILL 20 strace -f -qq -o st.log -e trace=%file,%desc "$OFFCPU" report -i "$f" >/dev/null 2>&1
		if writes st.log >st.bad; then
			bad "report -i $f writes outside its output: $(head -3 st.bad)"
		fi
		nw=$((nw + 1))
	done
	measure "strace: $nw reports of mutated copies made no file-system change and wrote only to stdout/stderr"
else
	measure "strace not installed: writes not checked"
fi

# A FIFO where the recorded binary was.
if [ "$own" = own.data ]; then
	rm bin/waitmix
	mkfifo bin/waitmix
	t0=$(mono_ns)
	if command -v strace >/dev/null; then
		timeout -s KILL 10 strace -f -qq -o st.log -e trace=%file,%desc "$OFFCPU" report -i own.data >fifo.out 2>fifo.err
	else
		timeout -s KILL 10 "$OFFCPU" report -i own.data >fifo.out 2>fifo.err
	fi
	rc=$?
	measure "FIFO at the recorded binary's path: report exit $rc after $(( ($(mono_ns) - t0) / 1000000 )) ms; $(grep -m1 waitmix fifo.err)"
	[ "$rc" = 0 ] || bad "FIFO at bin/waitmix: report exit $rc (137: hung past 10 s)"
	grep -q "warning: .*bin/waitmix" fifo.err || bad "FIFO at bin/waitmix: no warning about it"
	[ -f st.log ] && writes st.log >st.bad && bad "FIFO case: writes outside its output: $(head -3 st.bad)"
fi

[ "$nfail" = 0 ] || fail "$nfail hostile-file checks failed"
exit 0
