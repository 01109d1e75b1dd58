#!/bin/bash
# hotspot (KDAB's GUI for perf recordings, Debian package hotspot) reads
# recordings through its hotspot-perfparser. On offcpu's recordings of
# waitmix (defaults; --wakeups --sched-delay) it must end with status 0,
# write its output, and print no warning that it does not also print for
# Debian perf's own `perf record -k CLOCK_MONOTONIC -g` of the same workload
# (it warns of every feature section it cannot read, and perf's files have
# several; -k: the clock offcpu records on, whose CLOCKID section it cannot
# read either).
# sanitizers: skip (hotspot-perfparser is not ours; the recordings are)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu
require_workload waitmix
HP=${HOTSPOT_PERFPARSER:-/usr/lib/x86_64-linux-gnu/libexec/hotspot-perfparser}
[ -x "$HP" ] || skip "hotspot-perfparser not found at $HP (Debian package hotspot; scripts/deps.sh installs it)"

perf record -q -k CLOCK_MONOTONIC -g -o "$TESTDIR/perf.data" -- "$WORKLOADS/waitmix" -q >/dev/null 2>&1 ||
	fail "perf record -k CLOCK_MONOTONIC -g -- waitmix failed"
record -o "$TESTDIR/ours.data" -- "$WORKLOADS/waitmix" -q || fail "offcpu record failed"
record -o "$TESTDIR/ours-wd.data" --wakeups --sched-delay -- "$WORKLOADS/waitmix" -q ||
	fail "offcpu record --wakeups --sched-delay failed"

# Its messages but the informational one on how it buffers events.
parse() { # file -> warnings in $TESTDIR/NAME.warn, output in NAME.out
	local name
	name=$(basename "$1" .data)
	"$HP" --input "$1" --output "$TESTDIR/$name.out" 2>"$TESTDIR/$name.err" ||
		{ cat "$TESTDIR/$name.err"; fail "hotspot-perfparser exited $? on $name.data"; }
	grep -v 'Switching to automatic buffering' "$TESTDIR/$name.err" | sort -u >"$TESTDIR/$name.warn"
	[ -s "$TESTDIR/$name.out" ] || fail "hotspot-perfparser wrote nothing for $name.data"
}
parse "$TESTDIR/perf.data"
measure "perf's own recording: $(wc -l <"$TESTDIR/perf.warn") distinct warnings: $(tr '\n' ';' <"$TESTDIR/perf.warn")"
rc=0
for f in ours ours-wd; do
	parse "$TESTDIR/$f.data"
	extra=$(comm -23 "$TESTDIR/$f.warn" "$TESTDIR/perf.warn")
	if [ -n "$extra" ]; then
		echo "FAIL: hotspot-perfparser warns on $f.data, not on perf's own: $extra"
		rc=1
	fi
	measure "$f.data ($(stat -c %s "$TESTDIR/$f.data") bytes): $(wc -l <"$TESTDIR/$f.warn") warnings, all also printed for perf's own ($(tr '\n' ';' <"$TESTDIR/$f.warn")); output $(stat -c %s "$TESTDIR/$f.out") bytes"
done
exit $rc
