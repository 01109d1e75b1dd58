#!/bin/bash
# Cost of offcpu's BPF programs per run, from the kernel's own BPF run-time
# statistics (kernel.bpf_stats_enabled=1): `offcpu record` of a workload
# with each option set given, reading run_time_ns / run_cnt of the
# recorder's programs (bpftool) just before it ends. Unlike overhead.sh's
# ratios, the figure hardly moves with the machine's other load.
# Workloads (WORKLOAD):
#   pipe    taskset -c 0 perf bench sched pipe -l LOOPS (default)
#   python  Debian's python3 (/usr/bin/python3: `python3` on PATH may be
#           another build) blocking in a loop: LOOPS sleeps of 0.1 ms from a
#           function 20 Python calls deep (a python3 stack of 15-20 C
#           frames, built without frame pointers; 23 Python frames, with
#           them: compare "" and "--python=no")
#
#   bench/bpf-cost.sh [OPTS...]   each OPTS one quoted option set;
#                                 default: "" "--stacks user" "--stacks kernel"
#                                          "--wakeups" "--sched-delay"
#   env: OFFCPU (default build/offcpu), LOOPS (40000), WORKLOAD (pipe)
set -u
cd "$(dirname "$0")/.."
OFFCPU=${OFFCPU:-$PWD/build/offcpu}
LOOPS=${LOOPS:-40000}
OUT=$(mktemp -d /tmp/offcpu-bpfcost.XXXXXX)
trap 'rm -rf "$OUT"; sysctl -qw kernel.bpf_stats_enabled="$was"' EXIT

[ "$(id -u)" = 0 ] || { echo "bpf-cost.sh: needs root" >&2; exit 1; }
command -v bpftool >/dev/null && command -v perf >/dev/null || { echo "bpf-cost.sh: needs bpftool and perf" >&2; exit 1; }
was=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -qw kernel.bpf_stats_enabled=1

case ${WORKLOAD:-pipe} in
pipe) CMD=(taskset -c 0 perf bench sched pipe -l "$LOOPS") ;;
python) CMD=(/usr/bin/python3 -c "import time
def deep(n):
    if n:
        return deep(n - 1)
    for i in range($LOOPS):
        time.sleep(0.0001)
deep(20)") ;;
*) echo "bpf-cost.sh: WORKLOAD is pipe or python" >&2; exit 2 ;;
esac

sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=("" "--stacks user" "--stacks kernel" "--wakeups" "--sched-delay")

DESC="${CMD[*]}"
[ "${WORKLOAD:-pipe}" = python ] && DESC="python3 -c '...' ($LOOPS sleeps of 0.1 ms, 20 Python calls deep)"
echo "\`offcpu record OPTS -- $DESC\`, $(nproc) CPUs, $(uname -r)"
echo
echo "| options | program | runs | ns per run |"
echo "|---|---|---|---|"
for set in "${sets[@]}"; do
	maxid=$(bpftool prog show --json | python3 -c 'import json,sys; print(max([p["id"] for p in json.load(sys.stdin)] + [0]))')
	# The workload, then half a second of sleep: the figures are read
	# every 0.2 s while the programs are loaded, and the last read must
	# come after the workload's end (without it, under load the last one
	# came mid-run, with the startup's uncached stacks weighing double).
	# shellcheck disable=SC2086
	"$OFFCPU" record -q -o "$OUT/x" $set -- sh -c '"$@"; s=$?; sleep 0.5; exit $s' sh "${CMD[@]}" >/dev/null 2>"$OUT/err" &
	rp=$!
	while kill -0 "$rp" 2>/dev/null; do
		bpftool prog show --json >"$OUT/p.tmp" 2>/dev/null && grep -q offcpu_switch "$OUT/p.tmp" &&
			mv "$OUT/p.tmp" "$OUT/p.json"
		sleep 0.2
	done
	wait "$rp" || { cat "$OUT/err" >&2; exit 1; }
	# Programs loaded after the start: this recorder's (another recorder
	# started meanwhile would be counted too: run on a quiet machine).
	python3 - "$OUT/p.json" "$maxid" "${set:-defaults}" <<'PY'
import json, sys
maxid, label = int(sys.argv[2]), sys.argv[3]
for p in json.load(open(sys.argv[1])):
    if p["id"] <= maxid or not p.get("name", "").startswith("offcpu") or not p.get("run_cnt"):
        continue
    print("| %s | %s | %d | %.0f |" % (label, p["name"], p["run_cnt"], p["run_time_ns"] / p["run_cnt"]))
PY
	rm -f "$OUT"/x "$OUT"/x.old "$OUT/p.json"
done
