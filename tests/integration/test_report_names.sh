#!/bin/bash
# Frames perf names that symbolizers tend to leave as addresses: the vDSO
# (named from the recording machine's image: perf's build-id cache for
# perf's recordings, the copy offcpu record writes into its own) and PLT
# stubs ("memset@plt"). The stubs workload spends its time in both; it is
# recorded by perf record -g and by offcpu record, and every [vdso] and
# @plt frame of offcpu script must read as in perf script (address, name,
# offset, DSO). perf and offcpu share the test's own build-id cache
# (PERF_BUILDID_DIR, lib.sh): the one perf's recording made, nothing else.
# The workload's stubs are memset@plt and st_id@plt (a function of its own
# library, libstublib.so, as short as the stub: its stub has samples in
# every run, where memset's alone had none in 1 of 5).
# The @plt frames compared are the workload's own: Debian's perf (6.1) names
# the stubs of a library with IFUNCs of its own (libc: a sample in its lazy
# binding path) by relocation order, which is wrong there; offcpu names
# them by GOT slot as objdump and perf 6.2+ do (test_symbolizer checks
# libc's against objdump).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu
require_workload stubs

stubs() { # perf script-like output on stdin -> "count line" of [vdso] and the workload's @plt frames
	grep -E '^\s+[0-9a-f]+ .*(@plt\+0x[0-9a-f]+ \(.*/stubs\)$|\(\[vdso\]\))' | sort | uniq -c
}

rc=0
perf record -q -g -F 4999 -o "$TESTDIR/perf.data" "$WORKLOADS/stubs" 0.5 >/dev/null 2>&1 ||
	fail "perf record failed"
record -F 4999 -o "$TESTDIR/ours.data" -- "$WORKLOADS/stubs" 0.5 || fail "offcpu record failed"
# offcpu's recording carries the vDSO image (feature bit 251)
"$PY" -c 'import sys; h = open(sys.argv[1], "rb").read(104); sys.exit(not h[72 + 251 // 8] >> (251 % 8) & 1)' \
	"$TESTDIR/ours.data" || { echo "FAIL: offcpu's recording has no vDSO image"; rc=1; }
for f in perf ours; do
	perf script -i "$TESTDIR/$f.data" 2>/dev/null | stubs >"$TESTDIR/$f.perf"
	"$OFFCPU" script -i "$TESTDIR/$f.data" 2>"$TESTDIR/$f.err" | stubs >"$TESTDIR/$f.ours"
	vdso=$(grep -c '\[vdso\]' "$TESTDIR/$f.perf")
	plt=$(grep -c '@plt' "$TESTDIR/$f.perf")
	named=$(grep -c '__vdso_' "$TESTDIR/$f.perf")
	if ! diff "$TESTDIR/$f.perf" "$TESTDIR/$f.ours" >"$TESTDIR/$f.diff"; then
		echo "FAIL: $f.data: [vdso] and @plt frames differ from perf script's (< perf, > offcpu):"
		head -20 "$TESTDIR/$f.diff"
		rc=1
	fi
	[ "$named" -gt 0 ] || { echo "FAIL: $f.data: no named [vdso] frame in perf script"; rc=1; }
	[ "$plt" -gt 0 ] || { echo "FAIL: $f.data: no @plt frame in perf script"; rc=1; }
	measure "$f.data: $vdso distinct [vdso] frame lines ($named named __vdso_*), $plt @plt lines: offcpu script names them as perf script does"
done
exit $rc
