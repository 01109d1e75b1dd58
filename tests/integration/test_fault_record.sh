#!/bin/bash
# issue 6: faults around a recording, and what each leaves.
#  - the recorded command fails (exit 3) or is killed by a signal (SIGKILL,
#    SIGSEGV): record exits with its status (128+N for a signal) and the file
#    is complete: feature sections written, offcpu report reads it without a
#    warning, perf report and perf script read it;
#  - offcpu record itself is SIGKILLed mid-run: offcpu report reads what was
#    written, with a warning, and finds samples of the target in it; its
#    header says what was lost is unknown, never "nothing lost";
#  - a complete file cut in the middle of its data: read with a warning,
#    "lost: unknown"; cut by its last 100 bytes (its data whole, its
#    feature sections cut): read with a warning, every sample of the whole
#    file, and the loss counters (ahead of the cut) still say what was lost;
#  - the output file system fills up (a 1 MiB tmpfs): record stops with one
#    clear line naming the error, exit 1, within seconds; what was written
#    stays readable (offcpu report, with a warning).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu

cd "$TESTDIR"
nfail=0
bad() { echo "FAIL: $*" >&2; nfail=$((nfail + 1)); }

# complete FILE WHAT: finished file, read without warning by offcpu, read by perf.
complete() {
	"$OFFCPU" report -i "$1" --header --no-children -g none >"$1.rep" 2>"$1.err"
	local rc=$?
	[ "$rc" = 0 ] || { bad "$2: offcpu report exit $rc: $(head -2 "$1.err")"; return; }
	! grep -qi warning "$1.err" || bad "$2: offcpu report warns: $(head -1 "$1.err")"
	grep -q '^# offcpu samples.offcpu' "$1.rep" || bad "$2: no offcpu feature section (file not finished)"
	grep -Eq '^# (nothing lost|lost: [a-z.]+ [0-9])' "$1.rep" || bad "$2: no loss line from the counters: $(grep '^# .*lost' "$1.rep")"
	CHECK readable "$1" || bad "$2: perf cannot read $1 or it holds no sample"
}

# cut FILE: copies of a complete file cut in the middle of its data and by
# its last 100 bytes, read as the header above says.
cut() {
	local size whole half tail n mid
	size=$(stat -c %s "$1")
	whole=$("$OFFCPU" report -i "$1" --no-children -g none 2>/dev/null | grep -c '^# Samples:')
	# the header's data section: offset and size at bytes 40 and 48
	mid=$("$PY" -c 'import struct, sys; o, s = struct.unpack_from("<QQ", open(sys.argv[1], "rb").read(56), 40); print(o + s // 2)' "$1")
	head -c "$mid" "$1" >half.data
	head -c $((size - 100)) "$1" >tail.data
	# (its header: what is left of a small file may hold no sample, and a report of nothing is an error)
	"$OFFCPU" report -i half.data --header-only >half.rep 2>half.err || bad "half file: offcpu report --header-only exit $?: $(head -2 half.err)"
	grep -q warning half.err || bad "half file: no warning"
	half=$(grep -E '^# (nothing lost|lost: )' half.rep)
	[[ $half == "# lost: unknown: "* ]] || bad "half file: the header says '$half'"
	"$OFFCPU" report -i tail.data --no-children -g none >tail.rep 2>tail.err || bad "file without its last 100 bytes: offcpu report exit $?: $(head -2 tail.err)"
	grep -q 'warning: .*past the end of the file' tail.err || bad "file without its last 100 bytes: no warning: $(head -2 tail.err)"
	tail=$(grep -E '^# (nothing lost|lost: )' tail.rep)
	[ "$tail" = "$(grep -E '^# (nothing lost|lost: )' "$1.rep")" ] || bad "file without its last 100 bytes: the header says '$tail'"
	n=$(grep -c '^# Samples:' tail.rep)
	diff <(grep '^# Samples:' "$1.rep") <(grep '^# Samples:' tail.rep) >/dev/null ||
		bad "file without its last 100 bytes: not every sample of the whole file"
	measure "cut in the middle of its data: '${half#\# }'; without its last 100 bytes: $n sections as the whole file's $whole, '${tail#\# }', features cut $(grep -o 'from feature [0-9]* on' tail.err)"
}

# 1. The command fails or dies by a signal.
for c in "exit 3:3" "kill -KILL \$\$:137" "kill -SEGV \$\$:139"; do
	cmd=${c%:*} want=${c##*:}
	record -o cmd.data -- sh -c "sleep 0.3; $cmd"
	rc=$?
	measure "-- sh -c '$cmd': record exit $rc (want $want)"
	[ "$rc" = "$want" ] || bad "'$cmd': record exit $rc, expected $want"
	complete cmd.data "'$cmd'"
	[ "$want" != 3 ] || cut cmd.data
	rm -f cmd.data*
done

# 2. record is SIGKILLed while recording a target that sleeps 20 ms at a time.
bash -c 'while :; do sleep 0.02; done' &
target=$!
trap 'kill $target 2>/dev/null; rm -rf "$TESTDIR"' EXIT
sleep 0.3 # bash has started
"$OFFCPU" record -o killed.data -p "$target" --flush-interval 100 2>killed.err &
rpid=$!
if wait_recording "$rpid"; then
	sleep 2
	kill -KILL "$rpid"
	wait "$rpid" 2>/dev/null
	size=$(stat -c %s killed.data)
	"$OFFCPU" report -i killed.data --no-children -g none --pid "$target" >killed.rep 2>killed.rerr
	rc=$?
	n=$(sed -n "s/^# Samples: \([0-9]*\) of event 'offcpu-time'/\1/p" killed.rep)
	measure "record SIGKILLed after 2 s: $size bytes; offcpu report exit $rc, $n offcpu-time samples of the target; $(head -1 killed.rerr)"
	[ "$rc" = 0 ] || bad "killed recording: offcpu report exit $rc: $(head -2 killed.rerr)"
	grep -q 'warning.*did not finish' killed.rerr || bad "killed recording: no warning that the recording did not finish"
	lost=$(grep -E '^# (nothing lost|lost: )' killed.rep)
	measure "killed recording: '${lost#\# }'"
	[[ $lost == "# lost: unknown: "* ]] || bad "killed recording: the header says '$lost'"
	[ "${n:-0}" -gt 0 ] || bad "killed recording: no offcpu-time sample of the target"
	# the sanitized report too, when built (a damaged file is where a leak or overflow would hide)
	if [ -x "${OFFCPU_SAN:-}" ]; then
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
			"$OFFCPU_SAN" report -i killed.data >/dev/null 2>killed.san
		rc=$?
		[ "$rc" = 0 ] || bad "killed recording: sanitized offcpu report exit $rc: $(grep -m3 -E 'ERROR|runtime error' killed.san)"
	fi
else
	bad "record -p did not start: $(cat killed.err)"
fi
kill "$target" 2>/dev/null

# 3. The output file system fills up.
mkdir small
if mount -t tmpfs -o size=1m offcpu-test "$TESTDIR/small" 2>/dev/null; then
	trap 'umount "$TESTDIR/small" 2>/dev/null; rm -rf "$TESTDIR"' EXIT
	t0=$(mono_ns)
	# a spinning command sampled at 20 kHz writes ~1 MB in a few seconds
	"$OFFCPU" record -o small/full.data -F 20000 -- bash -c 'end=$((SECONDS + 30)); while [ $SECONDS -lt $end ]; do :; done' \
		>full.out 2>full.err
	rc=$?
	t1=$(mono_ns)
	msg=$(grep -v '^\[' full.err | tr -d '\r')
	measure "1 MiB file system: record exit $rc after $(( (t1 - t0) / 1000000 )) ms: $msg"
	[ "$rc" = 1 ] || bad "full file system: record exit $rc, expected 1"
	[ "$(echo "$msg" | grep -c .)" = 1 ] || bad "full file system: expected one message line, got: $msg"
	echo "$msg" | grep -q '^offcpu record: .*No space left on device' ||
		bad "full file system: the message does not start with 'offcpu record:' and name ENOSPC"
	[ $((t1 - t0)) -lt 25000000000 ] || bad "full file system: record did not stop at the error"
	"$OFFCPU" report -i small/full.data --no-children -g none >full.rep 2>full.rerr
	rc=$?
	n=$(sed -n "s/^# Samples: \([0-9]*\) of event 'cpu-clock'/\1/p" full.rep)
	measure "full file system: $(stat -c %s small/full.data) bytes written; offcpu report exit $rc, $n cpu-clock samples; $(head -1 full.rerr)"
	[ "$rc" = 0 ] || bad "full file system: offcpu report exit $rc: $(head -2 full.rerr)"
	grep -q warning full.rerr || bad "full file system: offcpu report gives no warning on an unfinished file"
	grep -q '^# lost: unknown: ' full.rep || bad "full file system: the header says '$(grep -E '^# (nothing lost|lost: )' full.rep)'"
	[ "${n:-0}" -gt 0 ] || bad "full file system: no cpu-clock sample readable"
	umount "$TESTDIR/small"
else
	measure "full file system: not checked (cannot mount a tmpfs here)"
fi

[ "$nfail" = 0 ] || fail "$nfail fault checks failed"
exit 0
