#!/bin/bash
# issue 4, checks 1 and 3: `offcpu flamegraph` of a recording of the record
# issue's workload (tests/workloads/waitmix.c, as in test_report_own.sh).
#   * xmllint: every graph is well-formed XML (all options, filters);
#   * flamegraph_svg.py: structure, the kinds of time, the split under each
#     comm, --per-thread, and the filters shared with offcpu report;
#   * tests/browser/flamegraph_check.js in headless Chromium (Debian's,
#     through playwright-core, installed from package-lock.json into
#     build/browser): widths of the workload's functions at the graph's
#     scale (root width / the total Linux perf reads from the file) against
#     the times waitmix measured (5 % off-CPU, 10 % wl_spin's sampled CPU
#     time), colours, click zoom through the DOM, Ctrl-F search, icicle;
#   * the same browser check, on a recording of tests/workloads/deepstack.c
#     (a 127-frame stack of ~1 % of the time beside a wide 6-frame tower):
#     opened in a 1400x900 window, the tower is on the first screen (flame
#     graph, icicle, --per-thread), the controls work from there.
#     Screenshots stay in build/artifacts.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ARTIFACTS=${ARTIFACTS:-$ROOT/build/artifacts}
require_bpf
require_perf
require_offcpu
require_workload waitmix
require_workload deepstack
command -v xmllint >/dev/null || skip "xmllint not installed (libxml2-utils; scripts/deps.sh installs it)"
require_browser

disk_dir
record -o "$TESTDIR/w.data" -- "$WORKLOADS/waitmix" -q -c -d "$DISK" -j "$TESTDIR/w.json" ||
	fail "offcpu record -- waitmix exited $?"
w_stolen=$OFFCPU_TEST_STOLEN_NS # that run's IRQ + steal time, for the browser check

# The graphs: every option and filter once.
read -r CHILD NANOSLEEP START END < <("$PY" -c '
import json, sys
w = json.load(open(sys.argv[1]))
t = {x["func"]: x for x in w["threads"]}
print(t["wl_child_sleep"]["pid"], t["wl_nanosleep_loop"]["tid"], w["start_ns"] / 1e9 - 1, w["end_ns"] / 1e9 + 2)' "$TESTDIR/w.json")
fg() { # name, options...
	local name=$1; shift
	"$OFFCPU" flamegraph -i "$TESTDIR/w.data" -o "$TESTDIR/$name.svg" "$@" 2>"$TESTDIR/fg.err" ||
		{ cat "$TESTDIR/fg.err"; fail "offcpu flamegraph $* exited $?"; }
	xmllint --noout "$TESTDIR/$name.svg" || fail "xmllint: $name.svg ($*) is not well-formed"
}
fg all
fg inverted --inverted --title "waitmix <icicle> & co"
fg off --off-cpu-only
fg cpu --cpu-only
fg thread --per-thread --width 1600 --min-width 0.5
fg comm --comm wm-spin,wm-child
fg pid --pid "$CHILD"
fg tid --tid "$NANOSLEEP"
fg time-all --time "$START,$END"
# a window after the run: nothing to draw is an error, and no file
if "$OFFCPU" flamegraph -i "$TESTDIR/w.data" -o "$TESTDIR/time-none.svg" \
	--time "$(awk -v e="$END" 'BEGIN { printf "%.3f", e + 100 }')," 2>"$TESTDIR/fg.err"; then
	fail "flamegraph --time after the run exited 0"
fi
[ ! -e "$TESTDIR/time-none.svg" ] || fail "flamegraph --time after the run wrote a graph of nothing"
grep -q 'nothing drawn' "$TESTDIR/fg.err" || fail "flamegraph --time after the run said: $(cat "$TESTDIR/fg.err")"
measure "--time after the run: $(cat "$TESTDIR/fg.err")"
# The deep graph of the browser's first-screen check. The spin at the bottom
# is 300 us a cycle (3 % of the time, still narrow): at the workload's default
# of 100 us a cycle its ~15 CPU samples at 999 Hz were once 3 in the
# sanitized pass, none of them in wl_deep, on a machine busy with builds (the
# spin is timed on the wall clock: a preempted spin is shorter on the CPU).
record -o "$TESTDIR/d.data" -- "$WORKLOADS/deepstack" -d 1.5 -s 300 >"$TESTDIR/deepstack.out" ||
	fail "offcpu record -- deepstack exited $?"
measure "$(cat "$TESTDIR/deepstack.out")"
DEEP=$("$OFFCPU" script -i "$TESTDIR/d.data" 2>/dev/null | grep -c 'wl_deep' || true)
measure "deepstack: $DEEP stack lines in wl_deep in offcpu script"
[ "$DEEP" -ge 127 ] || fail "deepstack: $DEEP stack lines in wl_deep, not one sample as deep as a sample holds"
dfg() { # name, options...
	local name=$1; shift
	"$OFFCPU" flamegraph -i "$TESTDIR/d.data" -o "$TESTDIR/$name.svg" "$@" 2>"$TESTDIR/fg.err" ||
		{ cat "$TESTDIR/fg.err"; fail "offcpu flamegraph $* (deepstack) exited $?"; }
	xmllint --noout "$TESTDIR/$name.svg" || fail "xmllint: $name.svg ($*) is not well-formed"
}
dfg deep
dfg deep-inverted --inverted
dfg deep-thread --per-thread
# The sanitized build on the same file: no report, and the same bytes.
if [ -x "${OFFCPU_SAN:-}" ]; then
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1 "$OFFCPU_SAN" flamegraph \
		-i "$TESTDIR/w.data" -o "$TESTDIR/san.svg" --per-thread --width 1600 --min-width 0.5 2>/dev/null ||
		fail "offcpu flamegraph under ASan+UBSan exited $?"
	cmp -s "$TESTDIR/san.svg" "$TESTDIR/thread.svg" || fail "the sanitized build drew another graph"
	measure "ASan+UBSan build: the same --per-thread graph, byte for byte"
fi
measure "xmllint: 12 graphs well-formed ($(stat -c %s "$TESTDIR/all.svg") bytes for the default one)"
"$PY" "$HERE/flamegraph_svg.py" "$TESTDIR" "$TESTDIR/w.json" || fail "flamegraph_svg.py"

# Linux perf's total of the two events, the scale the browser check uses.
PERF_TOTAL=$("$PY" -c '
import sys
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[1])
import perfcheck
samples, _ = perfcheck.script_samples(sys.argv[2])
print(sum(s.period for s in samples if s.event in ("cpu-clock", "offcpu-time")))' "$HERE" "$TESTDIR/w.data") ||
	fail "perf script of the recording"
mkdir -p "$ARTIFACTS"
OFFCPU_TEST_STOLEN_NS=$w_stolen NODE_PATH=$NODE_DIR/node_modules timeout 120 node "$ROOT/tests/browser/flamegraph_check.js" \
	"$TESTDIR/all.svg" "$TESTDIR/inverted.svg" "$TESTDIR/w.json" "$PERF_TOTAL" "$ARTIFACTS" \
	"$TESTDIR/deep.svg" "$TESTDIR/deep-inverted.svg" "$TESTDIR/deep-thread.svg" ||
	fail "browser check (flamegraph_check.js)"
cp "$TESTDIR/all.svg" "$ARTIFACTS/flamegraph-waitmix.svg"
cp "$TESTDIR/deep.svg" "$ARTIFACTS/flamegraph-deep.svg"
measure "artifacts: $ARTIFACTS/flamegraph-waitmix.{svg,png} (and -zoom, -search, -icicle .png)," \
	"flamegraph-deep.svg, flamegraph-deep-{flame,icicle,thread,zoom}.png"
