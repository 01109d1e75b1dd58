#!/bin/bash
# BPF map memory of a recording (the kernel's own figure: bpftool's
# bytes_memlock, which is each map's actual use for the maps that grow
# with their entries), read near the end of it, summed over the recorder's
# maps, and the maps of the DWARF unwinder (unw_*) apart. Rows:
#   python   offcpu record OPTS -- python3 blocking in a loop (3 s), while
#            the workloads run too (waitmix, schedmix, unwindmix: their
#            files' tables are not in this recording)
#   all      offcpu record OPTS -a -d 5, while python3 and the workloads
#            run (and whatever else the machine runs)
# each with the default (--call-graph dwarf) and with --call-graph fp, and
# the recorder's own account of its unwind tables (files, rows).
#
#   bench/map-memory.sh [ROW...]   default: python all
#   env: OFFCPU (default build/offcpu), WORKLOADS (default build/workloads)
set -u
cd "$(dirname "$0")/.."
OFFCPU=${OFFCPU:-$PWD/build/offcpu}
WORKLOADS=${WORKLOADS:-$PWD/build/workloads}
OUT=$(mktemp -d /tmp/offcpu-mapmem.XXXXXX)
bg=()
trap 'kill "${bg[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$OUT"' EXIT

[ "$(id -u)" = 0 ] || { echo "map-memory.sh: needs root" >&2; exit 1; }
command -v bpftool >/dev/null || { echo "map-memory.sh: needs bpftool" >&2; exit 1; }
for w in waitmix schedmix unwindmix; do
	[ -x "$WORKLOADS/$w" ] || { echo "map-memory.sh: $WORKLOADS/$w not built (make workloads)" >&2; exit 1; }
done

PYLOOP='import time
def deep(n):
    if n:
        return deep(n - 1)
    end = time.monotonic() + 3
    while time.monotonic() < end:
        time.sleep(0.001)
deep(20)'

# The workloads, in a loop until killed, in the background.
workloads() {
	while :; do "$WORKLOADS/waitmix" -q >/dev/null 2>&1; done &
	bg+=($!)
	while :; do "$WORKLOADS/schedmix" pipe >/dev/null 2>&1; done &
	bg+=($!)
	while :; do "$WORKLOADS/unwindmix" plain 20 50 >/dev/null 2>&1; done &
	bg+=($!)
	while :; do python3 -c "$PYLOOP"; done &
	bg+=($!)
}

# offcpu record ARGS...; prints "total_MB unw_MB" of the maps it created,
# read 2.5 s into the recording, and keeps its stderr in $OUT/err.
measure() {
	local maxid rp
	maxid=$(bpftool map show --json | python3 -c 'import json,sys; print(max([m["id"] for m in json.load(sys.stdin)] + [0]))')
	"$OFFCPU" record -o "$OUT/x" "$@" >/dev/null 2>"$OUT/err" &
	rp=$!
	sleep 2.5
	bpftool map show --json >"$OUT/m.json"
	wait "$rp" || { cat "$OUT/err" >&2; return 1; }
	rm -f "$OUT/x" "$OUT/x.old"
	python3 - "$OUT/m.json" "$maxid" <<'PY'
import json, sys
maxid = int(sys.argv[2])
ms = [m for m in json.load(open(sys.argv[1])) if m["id"] > maxid]
tot = sum(m.get("bytes_memlock", 0) for m in ms)
unw = sum(m.get("bytes_memlock", 0) for m in ms if m.get("name", "").startswith("unw_"))
big = sorted(ms, key=lambda m: -m.get("bytes_memlock", 0))[:4]
print("%.1f %.1f %s" % (tot / 2**20, unw / 2**20,
      ", ".join("%s %.1f" % (m.get("name", "?"), m.get("bytes_memlock", 0) / 2**20) for m in big)))
PY
}

tables() { # the recorder's own account of its tables
	grep -o 'tables of [0-9]* files, [0-9]* rows at most' "$OUT/err" || echo "-"
}

rows=("$@")
[ ${#rows[@]} -gt 0 ] || rows=(python all)
workloads
sleep 1
echo "BPF map memory of \`offcpu record\`, $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| recording | call graph | BPF maps (MB) | of them unw_* (MB) | largest maps (MB) | unwind tables |"
echo "|---|---|---|---|---|---|"
for r in "${rows[@]}"; do
	for cg in dwarf fp; do
		case $r in
		python) label="\`-- python3\` (+ workloads running)"; args=(--call-graph "$cg" -- python3 -c "$PYLOOP") ;;
		all) label="\`-a -d 5\` (python3 + workloads + the machine)"; args=(--call-graph "$cg" -a -d 5) ;;
		*) echo "map-memory.sh: unknown row $r" >&2; exit 2 ;;
		esac
		read -r tot unw big < <(measure "${args[@]}") || exit 1
		echo "| $label | $cg | $tot | $unw | $big | $( [ "$cg" = dwarf ] && tables || echo -) |"
	done
done
