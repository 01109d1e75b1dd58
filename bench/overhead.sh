#!/bin/bash
# Overhead of `offcpu record` on a context-switch-bound benchmark:
#   taskset -c 0 perf bench sched pipe -l LOOPS
# (two processes ping-ponging on one CPU: every message is two context
# switches, the worst case for a sched_switch program). The benchmark runs
# alone and under the recorder, alternating, PAIRS pairs per row; a row's
# figure is the median of the pairs' ratios of the benchmark's own reported
# time, with the lowest and highest pair beside it. Prints a markdown table.
#
#   bench/overhead.sh [ROW...]      rows: default fp nice0 wakeups sched-delay
#                                   no-cpu f99 user-stacks no-kstack-cache chains
#                                   perf perf-new
#                                   cpu-sampling (Debian perf sampling every
#                                   CPU at 999 Hz, no callchains: what the
#                                   sampling interrupts alone cost here)
#                                   bcc (libbpf-tools' offcputime, Debian
#                                   package libbpf-tools: bench/with-offcputime.sh)
#   env: OFFCPU (default build/offcpu), PAIRS (5), LOOPS (40000),
#        PERF_NEW (perf-new row: default /work/shared/tools/perf-7.3/perf)
set -u
cd "$(dirname "$0")/.."
OFFCPU=${OFFCPU:-$PWD/build/offcpu}
PERF_NEW=${PERF_NEW:-/work/shared/tools/perf-7.3/perf}
PAIRS=${PAIRS:-5}
LOOPS=${LOOPS:-40000}
OUT=$(mktemp -d /tmp/offcpu-bench.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
# The kernel's BPF run-time statistics (bpf-cost.sh turns them on; a run
# of it killed leaves them on) add two clock reads to every program run:
# about 160 ns a switch here. Off for the measurement, restored after.
stats=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo 0)
if [ "$stats" != 0 ]; then
	echo "overhead.sh: kernel.bpf_stats_enabled was $stats: off while measuring" >&2
	sysctl -qw kernel.bpf_stats_enabled=0
	trap 'rm -rf "$OUT"; sysctl -qw kernel.bpf_stats_enabled="$stats"' EXIT
fi

[ "$(id -u)" = 0 ] || { echo "overhead.sh: needs root (offcpu record loads BPF)" >&2; exit 1; }
command -v perf >/dev/null || { echo "overhead.sh: needs Linux perf" >&2; exit 1; }
[ -x "$OFFCPU" ] || { echo "overhead.sh: $OFFCPU not built" >&2; exit 1; }

BENCH=(taskset -c 0 perf bench sched pipe -l "$LOOPS")

# One run of the benchmark, optionally under a recorder (its argv before
# the benchmark's); prints the benchmark's own "Total time" in seconds.
run() {
	local out
	out=$("$@" "${BENCH[@]}" 2>"$OUT/err") || { cat "$OUT/err" >&2; return 1; }
	echo "$out" | awk '/Total time:/ {print $3; found=1} END {exit !found}'
}

median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }

row() { # label, recorder argv...
	local label=$1 i a r ratios=() alone=() under=()
	shift
	for i in $(seq "$PAIRS"); do
		a=$(run env) || return 1
		r=$(run "$@") || return 1
		rm -f "$OUT"/x "$OUT"/x.old
		alone+=("$a"); under+=("$r")
		ratios+=("$(awk -v a="$a" -v r="$r" 'BEGIN {printf "%.4f", r / a}')")
	done
	printf '| %s | %.3f | %.3f | %.2f× | %s |\n' "$label" \
		"$(printf '%s\n' "${alone[@]}" | median)" "$(printf '%s\n' "${under[@]}" | median)" \
		"$(printf '%s\n' "${ratios[@]}" | median)" \
		"$(printf '%s\n' "${ratios[@]}" | sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.2f-%.2f×", lo, hi}')"
}

rows=("$@")
[ ${#rows[@]} -gt 0 ] || rows=(default fp wakeups sched-delay no-cpu user-stacks perf)
run env >/dev/null || exit 1 # warm-up
echo "\`${BENCH[*]}\`, $PAIRS alternating pairs, $(nproc) CPUs, $(uname -r)"
echo
echo "| recorder | alone (s, median) | recorded (s, median) | ratio (median of pairs) | pairs' range |"
echo "|---|---|---|---|---|"
for r in "${rows[@]}"; do
	case $r in
	default) row "offcpu record (defaults: user stacks from DWARF tables + kernel stacks, cpu-clock 999 Hz)" "$OFFCPU" record -q -o "$OUT/x" -- ;;
	fp) row "offcpu record --call-graph fp (user stacks by frame pointers)" "$OFFCPU" record -q --call-graph fp -o "$OUT/x" -- ;;
	nice0) row "offcpu record --nice 0 (defaults, the recorder at the caller's priority)" "$OFFCPU" record -q --nice 0 -o "$OUT/x" -- ;;
	wakeups) row "offcpu record --wakeups (defaults + waker stacks at each wakeup)" "$OFFCPU" record -q --wakeups -o "$OUT/x" -- ;;
	sched-delay) row "offcpu record --sched-delay (defaults + run-queue delay)" "$OFFCPU" record -q --sched-delay -o "$OUT/x" -- ;;
	f99) row "offcpu record -F 99 (defaults, CPU sampling at 99 Hz)" "$OFFCPU" record -q -F 99 -o "$OUT/x" -- ;;
	no-cpu) row "offcpu record --no-cpu" "$OFFCPU" record -q --no-cpu -o "$OUT/x" -- ;;
	user-stacks) row "offcpu record --stacks user" "$OFFCPU" record -q --stacks user -o "$OUT/x" -- ;;
	no-kstack-cache) row "offcpu record --no-kstack-cache (every kernel stack walked)" "$OFFCPU" record -q --no-kstack-cache -o "$OUT/x" -- ;;
	chains) row "offcpu record --chains (defaults + every wait of every thread, with wakers)" "$OFFCPU" record -q --chains -o "$OUT/x" -- ;;
	perf-new) row "perf $("$PERF_NEW" version | awk '{print $3}') \`record --off-cpu -g\` (reference)" "$PERF_NEW" record -q --off-cpu -g -o "$OUT/x" -- ;;
	bcc) row "libbpf-tools offcputime (BCC's tool; user + kernel stacks at every switch, whole machine)" bench/with-offcputime.sh ;;
	cpu-sampling) row "perf record -a -F 999 (Debian perf $(perf version | awk '{print $3}'): cpu-clock on every CPU, no callchains; the sampling alone)" perf record -q -a -F 999 -o "$OUT/x" -- ;;
	perf) row "perf record -g (Debian perf $(perf version | awk '{print $3}'), cpu-clock 4000 Hz, reference)" perf record -q -g -o "$OUT/x" -- ;;
	*) echo "overhead.sh: unknown row $r" >&2; exit 2 ;;
	esac
done
