#!/bin/bash
# `make demo`: record the bundled workload (tests/workloads/waitmix.c: threads
# that sleep, read a pipe, wait for a mutex, fsync, and one that spins) and
# show where its time went: the off-CPU report, the CPU report, the folded
# stacks, and a flame graph of both kinds of time (SVG; its path is printed).
set -eu
cd "$(dirname "$0")/.."
OUT=build/demo
mkdir -p "$OUT"
if [ "$(id -u)" != 0 ]; then
	echo "demo: offcpu record loads BPF programs: run 'sudo make demo'" >&2
	exit 1
fi
echo "== offcpu record -o $OUT/perf.data -- build/workloads/waitmix -c"
build/offcpu record -o "$OUT/perf.data" -- build/workloads/waitmix -c -d "$OUT"
echo
echo "== offcpu report --no-children --sort comm -g caller (per thread: where it waited, and ran)"
build/offcpu report -i "$OUT/perf.data" --no-children --sort comm -g caller --percent-limit 5
echo
echo "== offcpu report --folded --event offcpu-time (flame graph input, ns per stack)"
build/offcpu report -i "$OUT/perf.data" --folded --event offcpu-time > "$OUT/offcpu.folded"
sort -t' ' -k2 -n -r "$OUT/offcpu.folded" | head -8 | cut -c1-200
echo "   ... $(wc -l < "$OUT/offcpu.folded") stacks in $OUT/offcpu.folded"
echo
echo "== offcpu flamegraph -o $OUT/flamegraph.svg (on-CPU warm, off-CPU cool; open it in a browser)"
build/offcpu flamegraph -i "$OUT/perf.data" -o "$OUT/flamegraph.svg" --title "waitmix: on-CPU and off-CPU time"
echo
echo "Linux perf reads the same file: perf report -i $OUT/perf.data --stdio"
echo "Flame graph: $PWD/$OUT/flamegraph.svg"
