#!/bin/bash
# issue 2: how a recording ends and what it leaves.
#  - the command's exit status passes through (exit 7; killed by SIGTERM
#    gives 128+15);
#  - -d SECS ends a recording of -p PID after SECS, the target lives on;
#  - SIGINT (Ctrl-C) and SIGTERM to record finish the file cleanly:
#    perf report and perf script read it, and it holds samples;
#  - an existing output file is renamed FILE.old; the default output is
#    perf.data (then perf.data.old); the file has mode 0600 whatever the umask.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu

cd "$TESTDIR"
nfail=0
bad() { echo "FAIL: $*" >&2; nfail=$((nfail + 1)); }
readable() { # file, what
	CHECK readable "$1" || bad "$2: perf cannot read $1, or it holds no sample"
}

# Exit status of the command.
record -o s7.data -- sh -c 'sleep 0.2; exit 7'
rc=$?
measure "-- sh -c 'exit 7': record exit $rc"
[ "$rc" = 7 ] || bad "exit status of the command: $rc, expected 7"
readable s7.data "exit 7"
record -o sterm.data -- sh -c 'sleep 0.2; kill -TERM $$'
rc=$?
measure "-- sh -c 'kill -TERM \$\$': record exit $rc"
[ "$rc" = 143 ] || bad "command killed by SIGTERM: record exit $rc, expected 143"

# A target that wakes up every 0.1 s, so that it has off-CPU samples.
bash -c 'while :; do sleep 0.1; done' &
target=$!
trap 'kill $target 2>/dev/null; rm -rf "$TESTDIR"' EXIT

# -d ends the recording.
t0=$(mono_ns)
record -o d.data -p "$target" -d 1.5
rc=$?
t1=$(mono_ns)
measure "-p PID -d 1.5: exit $rc after $(( (t1 - t0) / 1000000 )) ms"
[ "$rc" = 0 ] || bad "-d 1.5: exit $rc"
[ $((t1 - t0)) -ge 1500000000 ] || bad "-d 1.5 ended after $(( (t1 - t0) / 1000000 )) ms"
[ $((t1 - t0)) -le 10000000000 ] || bad "-d 1.5 took $(( (t1 - t0) / 1000000 )) ms"
kill -0 "$target" 2>/dev/null || bad "-d: the -p target did not survive the recording"
readable d.data "-d 1.5"

# SIGINT and SIGTERM to record.
for sig in INT TERM; do
	"$OFFCPU" record -o "sig$sig.data" -p "$target" 2>"sig$sig.err" &
	rpid=$!
	wait_recording "$rpid" || { cat "sig$sig.err"; bad "record -p did not start"; continue; }
	sleep 1
	kill -"$sig" "$rpid"
	wait "$rpid"
	rc=$?
	measure "SIG$sig to record -p: exit $rc; $(tail -1 "sig$sig.err")"
	[ "$rc" = 0 ] || bad "SIG$sig: record exit $rc, expected 0 (a clean end)"
	readable "sig$sig.data" "SIG$sig"
done

# -o FILE over an existing one, mode 0600.
echo old >o.data
chmod 644 o.data
(umask 000 && "$OFFCPU" record -o o.data -- sleep 0.1 2>o.err) || bad "-o o.data: exit $?"
[ "$(cat o.data.old 2>/dev/null)" = old ] || bad "-o: the existing o.data was not renamed o.data.old"
mode=$(stat -c %a o.data)
measure "-o over an existing file (umask 000): o.data mode $mode, o.data.old holds the old file"
[ "$mode" = 600 ] || bad "o.data has mode $mode, expected 600"
readable o.data "-o"

# Default output name.
mkdir def && cd def || exit 1
"$OFFCPU" record -- sleep 0.1 2>/dev/null || bad "default output: exit $?"
"$OFFCPU" record -- sleep 0.1 2>/dev/null || bad "default output (2nd): exit $?"
measure "default output: $(ls | tr '\n' ' ')"
[ -f perf.data ] && [ -f perf.data.old ] || bad "no perf.data and perf.data.old after two recordings"
[ "$(stat -c %a perf.data 2>/dev/null)" = 600 ] || bad "perf.data mode is not 600"
cd ..

[ "$nfail" = 0 ] || fail "$nfail checks failed"
exit 0
