#!/bin/bash
# offcpu script against perf script, and --folded against both, on
# recordings by Debian's perf 6.1: the committed fixtures of tests/data and
# the per-process ones made afresh by the test (make-fixtures.sh's commands,
# its workload built in the test's directory, so that every binary they
# name exists: nothing outside the clone is read; not the system-wide one,
# which would hold whatever else the machine runs). script: every header
# line (comm, tid, [cpu], time, period, event) and every frame's address
# and DSO must be identical to perf's; a frame both name must have perf's
# name (aliases of one address included); frames only perf names (labels,
# PLT entries, DSOs rebuilt since the recording) are counted and shown.
# PLT stubs of a library with IRELATIVE relocations (libc: a sample in its
# lazy-binding path) are not compared by name: Debian's perf (6.1) names
# them by relocation order, which is wrong there ("@plt" where objdump says
# "__tunable_get_val@plt"); offcpu names them by GOT slot as objdump and
# perf 6.2+ do, which test_symbolizer checks against objdump on libc.
# folded: values add up to the report's event count, time in ns.
. "$(dirname "$0")/lib.sh"
require_perf
[ -x "$OFFCPU" ] || fail "$OFFCPU not built"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -le 0 ] ||
	skip "recording the fixtures afresh needs root or perf_event_paranoid <= 0"

# The fixtures afresh, as tests/data/make-fixtures.sh makes them, under a
# build id of their own: built from the same source in the same directory as
# the committed fixtures' binary, they had its build id, and perf record put
# this binary in the build-id cache under it, naming the committed
# recordings' frames that the check below wants unnamed (the binary gone).
cc -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -fno-inline -pthread \
	-Wl,--build-id=0x$(od -An -tx1 -N20 /dev/urandom | tr -d ' \n') \
	-o "$TESTDIR/fixture_work" "$ROOT/tests/data/src/fixture_work.c" || fail "cannot build fixture_work"
mkdir "$TESTDIR/fresh"
perf record -q -g -o "$TESTDIR/fresh/fp.data" "$TESTDIR/fixture_work" 0.3 >/dev/null 2>&1 &&
	perf record -q -g -e cpu-clock,task-clock -o "$TESTDIR/fresh/two-events.data" \
		"$TESTDIR/fixture_work" 0.2 >/dev/null 2>&1 || fail "perf record of the fixtures failed"

strip_syms() { # frame lines -> "address (dso)"; headers kept
	sed -E 's/^\t( *[0-9a-f]+) .* \((.*)\)$/\t\1 (\2)/'
}

for f in fp two-events system fresh/fp fresh/two-events; do
	[ -f "$TESTDIR/$f.data" ] || cp "$ROOT/tests/data/$f.data" "$TESTDIR/"
	perf script -i "$TESTDIR/$f.data" > "$TESTDIR/perf.txt" 2>/dev/null || fail "perf script failed on $f"
	"$OFFCPU" script -i "$TESTDIR/$f.data" > "$TESTDIR/ours.txt" || fail "offcpu script failed on $f"
	diff <(strip_syms < "$TESTDIR/perf.txt") <(strip_syms < "$TESTDIR/ours.txt") > "$TESTDIR/d" ||
		{ head -20 "$TESTDIR/d"; fail "$f: script layout, addresses or DSOs differ from perf script"; }
	lines=$(wc -l < "$TESTDIR/perf.txt")
	# The DSOs of PLT frames whose stubs perf 6.1 misnames (see the top).
	sed -nE 's/^\t *[0-9a-f]+ .*@plt(\+0x[0-9a-f]+)? \((.*)\)$/\2/p' "$TESTDIR/perf.txt" "$TESTDIR/ours.txt" |
		sort -u | while read -r dso; do
			readelf -rW "$dso" 2>/dev/null | grep -q IRELATIV && echo "$dso"
		done > "$TESTDIR/irelative"
	# Same layout, so line N of one is line N of the other.
	# perf demangles C++ names without their parameters (offcpu keeps them):
	# such a pair counts as the same name. System-wide recordings catch
	# whatever runs on the machine (compilers are C++).
	paste -d '\n' "$TESTDIR/perf.txt" "$TESTDIR/ours.txt" |
		awk -v cnt="$TESTDIR/params" -v irel="$TESTDIR/irelative" '
		BEGIN { while ((getline d < irel) > 0) irelative["(" d ")"] = 1 }
		NR % 2 { p = $0; next }
		p != $0 && $0 !~ /^\t *[0-9a-f]+ \[unknown\] / {
			pn = p; sub(/^\t *[0-9a-f]+ /, "", pn); sub(/\+0x[0-9a-f]+ \(.*$/, "", pn)
			if (pn != p && pn != "[unknown]" && index($0, pn "(")) { params++; next }
			dso = $0; sub(/^.* \(/, "(", dso)
			if ((pn ~ /@plt$/ || pn ~ /^\[unknown\] \(/) && $0 ~ /@plt(\+0x[0-9a-f]+)? \(/ && dso in irelative) { plt++; next }
			print "perf: " p; print "ours: " $0 }
		END { print params + 0, plt + 0 > cnt }' > "$TESTDIR/named"
	[ -s "$TESTDIR/named" ] && { head -20 "$TESTDIR/named"; fail "$f: frames named otherwise than by perf script"; }
	symdiff=$(diff "$TESTDIR/perf.txt" "$TESTDIR/ours.txt" | grep -c '^<')
	read -r params plt < "$TESTDIR/params"
	measure "$f: script identical to perf script over $lines lines, but for $symdiff frame lines only perf names, names without C++ parameters ($params of these) or stubs of a library with IRELATIVE relocations ($plt)"

	# folded: the sum of values is the event count of the (first) event
	"$OFFCPU" report -i "$TESTDIR/$f.data" --folded > "$TESTDIR/folded" 2>/dev/null || fail "folded failed"
	sum=$(awk '{ s += $NF } END { print s }' "$TESTDIR/folded")
	count=$("$OFFCPU" report -i "$TESTDIR/$f.data" --no-children -g none | sed -n 's/^# Event count (approx.): \([0-9]*\).*/\1/p' | head -1)
	[ "$sum" = "$count" ] || fail "$f: folded values sum to $sum, report says $count"
	grep -q '_\[k\]' "$TESTDIR/folded" || fail "$f: no kernel frame marked _[k]"
	awk '$1 !~ /;/ { exit 1 }' "$TESTDIR/folded" || fail "$f: folded line without frames"
	measure "$f: folded $(wc -l < "$TESTDIR/folded") stacks, sum $sum ns = event count"
done

# the folded stacks read back to the same per-function self totals as the report
# (the fresh recording: its binary is there to name work_heavy)
f=$TESTDIR/fresh/fp.data
"$OFFCPU" report -i "$f" --folded | awk '{ n = split($1, a, ";"); s[a[n]] += $NF } END { for (k in s) print k, s[k] }' |
	sort > "$TESTDIR/self_folded"
grep -q '^work_heavy ' "$TESTDIR/self_folded" || fail "work_heavy missing from folded"
heavy=$(awk '$1 == "work_heavy" { print $2 }' "$TESTDIR/self_folded")
total=$(awk '{ s += $2 } END { print s }' "$TESTDIR/self_folded")
pct=$("$OFFCPU" report -i "$f" --no-children --sort sym -g none | awk '$NF == "work_heavy" { sub("%", "", $1); print $1 }')
awk -v h="$heavy" -v t="$total" -v p="$pct" 'BEGIN { d = 100 * h / t - p; exit !(d < 0.01 && d > -0.01) }' ||
	fail "work_heavy: folded gives $heavy/$total, report says $pct%"
measure "fp: work_heavy self $pct% in report = $heavy of $total ns in folded"

# A frame without a symbol (the fixture's binary is gone) is named by its
# DSO: [fixture_work] in folded stacks, [fixture_work]+0xADDR in the report
"$OFFCPU" report -i "$TESTDIR/fp.data" --folded 2>/dev/null | grep -q ';\[fixture_work\];' ||
	fail "fp: folded does not name fixture_work's frames [fixture_work]"
n=$("$OFFCPU" report -i "$TESTDIR/fp.data" --sort sym -g none 2>/dev/null | grep -c '\[\.\] \[fixture_work\]+0x[0-9a-f]*$')
[ "$n" -gt 0 ] || fail "fp: the report does not name fixture_work's frames [fixture_work]+0x..."
measure "fp: $n report entries [fixture_work]+0x..., folded [fixture_work]"
