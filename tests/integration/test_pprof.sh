#!/bin/bash
# issue 4, check 2: `offcpu report --pprof` of a recording of the record
# issue's workload (tests/workloads/waitmix.c) read by go tool pprof
# (Debian's golang-go): off_cpu per waiting function against the workload's
# own measurement (5 %), cpu for wl_spin (10 %), totals equal to Linux perf
# script's, labels, build ids as perf buildid-list reads them, and the
# --comm filter. Checks: pprof_check.py.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu
require_workload waitmix
command -v go >/dev/null || skip "go not installed (golang-go; scripts/deps.sh installs it)"

disk_dir
record -o "$TESTDIR/w.data" -- "$WORKLOADS/waitmix" -q -c -d "$DISK" -j "$TESTDIR/w.json" ||
	fail "offcpu record -- waitmix exited $?"
"$OFFCPU" report -i "$TESTDIR/w.data" --pprof "$TESTDIR/w.pb.gz" || fail "offcpu report --pprof exited $?"
"$OFFCPU" report -i "$TESTDIR/w.data" --pprof "$TESTDIR/spin.pb.gz" --comm wm-spin ||
	fail "offcpu report --pprof --comm wm-spin exited $?"
gzip -t "$TESTDIR/w.pb.gz" || fail "the pprof file is not gzip"
if [ -x "${OFFCPU_SAN:-}" ]; then
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1 "$OFFCPU_SAN" report \
		-i "$TESTDIR/w.data" --pprof "$TESTDIR/san.pb.gz" 2>/dev/null ||
		fail "offcpu report --pprof under ASan+UBSan exited $?"
	cmp -s "$TESTDIR/san.pb.gz" "$TESTDIR/w.pb.gz" || fail "the sanitized build wrote another profile"
	measure "ASan+UBSan build: the same profile, byte for byte"
fi
[ ! -e "$TESTDIR/w.pb.gz.tmp" ] || fail "w.pb.gz.tmp left behind"
measure "pprof: $(stat -c %s "$TESTDIR/w.pb.gz") bytes gzipped"
# go tool pprof keeps nothing, but wants a home for its settings
HOME=$TESTDIR "$PY" "$HERE/pprof_check.py" "$TESTDIR/w.data" "$TESTDIR/w.pb.gz" "$TESTDIR/spin.pb.gz" \
	"$TESTDIR/w.json" || fail "pprof_check.py"
