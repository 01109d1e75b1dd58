#!/bin/bash
# offcpu timeline, on a workload whose threads have a known order
# (tests/workloads/tlorder.c, built without frame pointers: a thread naps,
# runs, blocks on a pipe, is woken by a writer's write, waits for its CPU,
# held by a SCHED_FIFO spinner, and runs again; each thread times itself):
#   1. recorded with every wait timed (--off-cpu-thresh 0 --sched-delay
#      --wakeups): the Perfetto trace, decoded by protoc with Perfetto's
#      own schema (../shared/tools/perfetto/perfetto_trace.proto), checked
#      by timeline_check.py: the sleeper's slices in order, each within 2 %
#      of what it measured, the stack of its pipe wait naming tl_wait_pipe,
#      the flow from tl-writer's wakeup (its stack in tl_write_pipe) to the
#      run-queue wait, the spinner on CPU through its hold, CPU samples in
#      tl_run_after; and the trace's form (no field unknown to the schema,
#      interned ids defined, slices paired and not overlapping);
#      Recorded with --chains too: the critical path of the pipe wait on a
#      track beside the sleeper's, its pieces tiling the wait, the
#      spinner's 80 ms sleep (two hops back: writer, then spinner) and the
#      writer's 100 ms one (one hop) among them, each ended by a timer
#      ([wakeup unseen] where the recording marks the wakeup hidden);
#   2. recorded with --off-cpu-thresh 100 and no --sched-delay: the pipe
#      wait placed at the switch-in and said so, the naps summed as
#      instants beside the thread, the stretches between waits named for
#      what they may hold;
#   3. filters: --pid of the process writes the same bytes as no filter;
#      --tid and --time keep the sleeper alone, cut to the window;
#      --comm picks the speedscope profiles; -o into a FIFO goes through it;
#   4. --format speedscope opened in speedscope (npm package speedscope,
#      its offline page) in Debian's chromium (playwright-core):
#      tests/browser/speedscope_check.js; screenshots in build/artifacts;
#   5. the sanitized build writes the same bytes as the plain one.
# sanitizers: skip (step 5 runs the sanitized build on this test's own recordings; recording twice more would double the test's time for the same check)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ARTIFACTS=${ARTIFACTS:-$ROOT/build/artifacts}
require_bpf
require_offcpu
require_workload tlorder-nofp
[ "$(nproc)" -ge 2 ] || skip "needs two CPUs (tlorder's writer runs beside the sleeper's CPU)"
command -v protoc >/dev/null || skip "protoc not installed (protobuf-compiler; scripts/deps.sh installs it)"
PROTO_DIR=""
for d in "${PERFETTO_PROTO_DIR:-}" "$ROOT/../shared/tools/perfetto" /work/shared/tools/perfetto; do
	[ -n "$d" ] && [ -r "$d/perfetto_trace.proto" ] && { PROTO_DIR=$d; break; }
done
[ -n "$PROTO_DIR" ] || skip "Perfetto's schema not found: set PERFETTO_PROTO_DIR, or provide ../shared/tools/perfetto/perfetto_trace.proto beside the repository"
require_browser

decode() { # trace, text
	protoc --proto_path="$PROTO_DIR" --decode=perfetto.protos.Trace perfetto_trace.proto \
		<"$1" >"$2" 2>"$TESTDIR/protoc.err" || { cat "$TESTDIR/protoc.err"; fail "protoc cannot decode $1"; }
}
timeline() { # output, options...
	local out=$1; shift
	"$OFFCPU" timeline -o "$out" "$@" 2>"$TESTDIR/timeline.err" ||
		{ cat "$TESTDIR/timeline.err"; fail "offcpu timeline $* exited $?"; }
}
TLCHECK() { "$PY" "$HERE/timeline_check.py" "$@"; }

# 1. every wait timed
record -q -o "$TESTDIR/x.data" --off-cpu-thresh 0 --sched-delay --wakeups -- \
	"$WORKLOADS/tlorder-nofp" -j "$TESTDIR/x.json" || fail "offcpu record (every wait) exited $?"
timeline "$TESTDIR/x.pftrace" -i "$TESTDIR/x.data"
measure "$(tail -1 "$TESTDIR/timeline.err")"
decode "$TESTDIR/x.pftrace" "$TESTDIR/x.txt"
TLCHECK exact "$TESTDIR/x.txt" "$TESTDIR/x.json" || fail "timeline_check.py exact"

# 1b. recorded with --chains: each wait followed through its wakers
record -q -o "$TESTDIR/c.data" --chains -- \
	"$WORKLOADS/tlorder-nofp" -j "$TESTDIR/c.json" || fail "offcpu record --chains exited $?"
timeline "$TESTDIR/c.pftrace" -i "$TESTDIR/c.data"
decode "$TESTDIR/c.pftrace" "$TESTDIR/c.txt"
# the threads with a sleep whose wakeup the kernel hid (script marks it)
"$OFFCPU" script -i "$TESTDIR/c.data" | awk '/offcpu-switch: [SD] .* wake-unseen/ { print $2 }' |
	sort -u >"$TESTDIR/c.unseen" || fail "offcpu script --chains exited $?"
TLCHECK chains "$TESTDIR/c.txt" "$TESTDIR/c.json" "$TESTDIR/c.unseen" || fail "timeline_check.py chains"

# 2. waits under 100 ms summed, run-queue waits not recorded
record -q -o "$TESTDIR/p.data" --off-cpu-thresh 100 -- \
	"$WORKLOADS/tlorder-nofp" -j "$TESTDIR/p.json" || fail "offcpu record (--off-cpu-thresh 100) exited $?"
timeline "$TESTDIR/p.pftrace" -i "$TESTDIR/p.data"
decode "$TESTDIR/p.pftrace" "$TESTDIR/p.txt"
TLCHECK partial "$TESTDIR/p.txt" "$TESTDIR/p.json" || fail "timeline_check.py partial"

# 3. filters
read -r PID SLEEPER START END < <("$PY" -c '
import json, sys
w = json.load(open(sys.argv[1]))
print(w["pid"], w["sleeper"], w["block"] - 20000000, (w["block"] + w["write"]) // 2)' "$TESTDIR/x.json")
timeline "$TESTDIR/pid.pftrace" -i "$TESTDIR/x.data" --pid "$PID"
cmp -s "$TESTDIR/pid.pftrace" "$TESTDIR/x.pftrace" || fail "--pid $PID (the recording's one process) changed the trace"
secs() { printf '%d.%09d' $(($1 / 1000000000)) $(($1 % 1000000000)); }
timeline "$TESTDIR/narrow.pftrace" -i "$TESTDIR/x.data" --tid "$SLEEPER" --time "$(secs "$START"),$(secs "$END")"
decode "$TESTDIR/narrow.pftrace" "$TESTDIR/narrow.txt"
TLCHECK narrow "$TESTDIR/narrow.txt" "$TESTDIR/x.json" "$START" "$END" || fail "timeline_check.py narrow"
timeline "$TESTDIR/comm.json" -i "$TESTDIR/x.data" --format speedscope --comm tl-writer,tl-spinner
names=$("$PY" -c '
import json, sys
print(",".join(sorted(p["name"].split()[0] for p in json.load(open(sys.argv[1]))["profiles"])))' "$TESTDIR/comm.json")
[ "$names" = "tl-spinner,tl-writer" ] || fail "--comm tl-writer,tl-spinner: speedscope profiles $names"
measure "filters: --pid the same bytes; --tid, --time the sleeper alone, cut; --comm: profiles $names"
# -o into a FIFO: written through it, not replaced by a file
mkfifo "$TESTDIR/fifo"
cat "$TESTDIR/fifo" >"$TESTDIR/fifo.out" &
timeline "$TESTDIR/fifo" -i "$TESTDIR/x.data"
wait $!
[ -p "$TESTDIR/fifo" ] && cmp -s "$TESTDIR/fifo.out" "$TESTDIR/x.pftrace" ||
	fail "-o FIFO: the trace did not go through it whole (or the FIFO was replaced)"

# 4. speedscope in the browser
timeline "$TESTDIR/x.speedscope.json" -i "$TESTDIR/x.data" --format speedscope
measure "$(tail -1 "$TESTDIR/timeline.err")"
mkdir -p "$ARTIFACTS"
NODE_PATH=$NODE_DIR/node_modules timeout 120 node "$ROOT/tests/browser/speedscope_check.js" \
	"$TESTDIR/x.speedscope.json" "$TESTDIR/x.json" "$NODE_DIR/node_modules/speedscope/dist/release/index.html" \
	"$ARTIFACTS" || fail "browser check (speedscope_check.js)"
cp "$TESTDIR/x.speedscope.json" "$ARTIFACTS/timeline-tlorder.speedscope.json"
cp "$TESTDIR/x.pftrace" "$ARTIFACTS/timeline-tlorder.pftrace"
measure "artifacts: $ARTIFACTS/timeline-tlorder.{pftrace,speedscope.json}, timeline-speedscope-{sleeper,sandwich}.png"

# 5. the sanitized build: no report, the same bytes
if [ -x "${OFFCPU_SAN:-}" ]; then
	for f in x.pftrace p.pftrace c.pftrace x.speedscope.json; do
		case $f in
		p.*) in=p.data ;;
		c.*) in=c.data ;;
		*) in=x.data ;;
		esac
		fmt=perfetto
		[ "${f%.json}" = "$f" ] || fmt=speedscope
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
			"$OFFCPU_SAN" timeline -i "$TESTDIR/$in" --format "$fmt" -o "$TESTDIR/san.$f" 2>"$TESTDIR/san.err" ||
			{ cat "$TESTDIR/san.err"; fail "offcpu timeline under ASan+UBSan exited $? ($f)"; }
		! grep -E 'runtime error|Sanitizer' "$TESTDIR/san.err" || fail "a sanitizer report ($f)"
		cmp -s "$TESTDIR/san.$f" "$TESTDIR/$f" || fail "the sanitized build wrote another $f"
	done
	measure "ASan+UBSan build: the same four files, byte for byte"
fi
