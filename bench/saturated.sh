#!/bin/bash
# A recorder on a machine whose CPUs are all busy: `record -a -d SECS`
# while `perf bench sched messaging -g 4` runs in a loop (160 processes
# passing messages, forked afresh every run: about 2 runs a second here),
# against the same window without a recorder. Per row and round:
#   wall   the recorder's time from its start to its exit (SECS is the
#          window it records: the rest is its start and its stop);
#   cpu    its own CPU time (user + system), which the workload pays
#          whenever the recorder runs;
#   lost   its summary's "lost:" line (nothing lost: -);
#   runs   benchmark runs completed in the WINDOW seconds around it (the
#          recorder starts 2 s in), against the same window alone.
# Prints a markdown table, one line per row, the rounds' figures side by side.
#
#   bench/saturated.sh [ROW...]   rows: nice=N (offcpu record --nice N; the
#                                 default rows: nice=-20 nice=0), perf-new
#                                 (perf 7.3 record --off-cpu -a -g)
#   env: OFFCPU (default build/offcpu), ROUNDS (3), SECS (5), WINDOW (22),
#        PERF_NEW (default /work/shared/tools/perf-7.3/perf)
set -u
cd "$(dirname "$0")/.."
OFFCPU=${OFFCPU:-$PWD/build/offcpu}
PERF_NEW=${PERF_NEW:-/work/shared/tools/perf-7.3/perf}
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-5}
WINDOW=${WINDOW:-22}
OUT=$(mktemp -d /tmp/offcpu-bench.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
[ "$(id -u)" = 0 ] || { echo "saturated.sh: needs root (offcpu record loads BPF)" >&2; exit 1; }
command -v perf >/dev/null || { echo "saturated.sh: needs Linux perf" >&2; exit 1; }
[ $# -gt 0 ] || set -- nice=-20 nice=0

# The load for WINDOW seconds; with a recorder (argv), started 2 s in.
# Prints "RUNS WALL_MS CPU_S LOST".
window() {
	local end load t0 t1 rc
	: >"$OUT/runs"
	end=$(($(date +%s%N) + WINDOW * 1000000000))
	(while [ "$(date +%s%N)" -lt "$end" ]; do
		perf bench sched messaging -g 4 >/dev/null 2>&1 && echo >>"$OUT/runs"
	done) &
	load=$!
	if [ $# -gt 0 ]; then
		sleep 2
		t0=$(date +%s%N)
		/usr/bin/time -f '%U %S' -o "$OUT/time" "$@" >/dev/null 2>"$OUT/err"
		rc=$?
		t1=$(date +%s%N)
		[ "$rc" = 0 ] || { echo "saturated.sh: $* exited $rc:" >&2; tail -3 "$OUT/err" >&2; }
	fi
	wait "$load"
	if [ $# -gt 0 ]; then
		printf '%s %d %s %s\n' "$(wc -l <"$OUT/runs")" $(((t1 - t0) / 1000000)) \
			"$(awk '{printf "%.2f", $1 + $2}' "$OUT/time")" \
			"$(grep -o 'lost: .*\]' "$OUT/err" | sed 's/;* \]$//; s/;/,/g; s/ /_/g' | head -1)"
	else
		echo "$(wc -l <"$OUT/runs") - - -"
	fi
}

declare -A res
rows=(alone "$@")
for r in $(seq "$ROUNDS"); do
	for row in "${rows[@]}"; do
		case $row in
		alone) line=$(window) ;;
		nice=*) line=$(window "$OFFCPU" record -a -d "$SECS" --nice "${row#nice=}" -o "$OUT/x.data") ;;
		perf-new) line=$(window "$PERF_NEW" record --off-cpu -a -g -o "$OUT/x.data" -- sleep "$SECS") ;;
		*) echo "saturated.sh: unknown row $row" >&2; exit 2 ;;
		esac
		rm -f "$OUT"/x.data "$OUT"/x.data.old
		res[$row]="${res[$row]:-}${res[$row]:+; }$line"
	done
done
echo "| recorder (record -a -d $SECS, ${ROUNDS} rounds) | wall ms | CPU s | lost | benchmark runs in ${WINDOW} s |"
echo "|---|---|---|---|---|"
for row in "${rows[@]}"; do
	echo "${res[$row]}" | tr ';' '\n' | awk -v row="$row" '
		{ runs = runs sep $1; wall = wall sep $2; cpu = cpu sep $3
		  l = $4; gsub(/_/, " ", l); if (l == "" || l == "-") l = "-"; lost = lost lsep l
		  sep = ", "; lsep = " / " }
		END { printf "| %s | %s | %s | %s | %s |\n", row, wall, cpu, lost, runs }'
done
