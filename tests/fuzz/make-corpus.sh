#!/bin/bash
# Regenerate the seed corpora of tests/fuzz/corpus from real recordings and
# real files of this machine (run as root, after `make`). Each target's
# directory gets small seeds; regression inputs (crash-*, timeout-*) found
# by fuzzing are kept beside them and are not touched here.
#
#   fuzz_perf_reader, fuzz_report:
#     offcpu record --no-cpu --off-cpu-thresh 1 -- sh -c 'sleep 0.01; sleep 0.01'
#     offcpu record -F 500 --off-cpu-thresh 5 -- waitmix -s 0.05 -q -c
#     offcpu record --wakeups --sched-delay --no-cpu -- sh -c "sleep 0.01; sleep 0.01; echo x | cat"
#     perf record -g -F 999 --no-buildid --no-bpf-event -- waitmix -s 0.02 -q
#     perf record -g --no-bpf-event -e cpu-clock,task-clock -F 999 -- waitmix -s 0.02 -q
#   fuzz_kallsyms, fuzz_procfs: lines of /proc/kallsyms (core and module),
#     /proc/self/maps, /proc/self/status, the online CPU list
#   fuzz_perfmap: a perf-PID.map as JITs write it
#   fuzz_elf: tests/fuzz/seed/elf_seed.cc built with -g, stripped, and with
#     a .gnu_debuglink
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
C=$ROOT/tests/fuzz/corpus
OFFCPU=$ROOT/build/offcpu
WL=$ROOT/build/workloads/waitmix
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$C"/fuzz_{perf_reader,report,kallsyms,procfs,perfmap,elf}
cd "$TMP"

"$OFFCPU" record -q -o own-sleep.data --no-cpu --off-cpu-thresh 1 -- sh -c 'sleep 0.01; sleep 0.01'
"$OFFCPU" record -q -o own-waitmix.data -F 500 --off-cpu-thresh 5 -- "$WL" -s 0.05 -q -c -d /var/tmp
"$OFFCPU" record -q -o own-wakeups.data --wakeups --sched-delay --no-cpu -- sh -c 'sleep 0.01; sleep 0.01; echo x | cat >/dev/null'
perf record -q -g -F 999 --no-buildid --no-bpf-event -o perf-fp.data -- "$WL" -s 0.02 -q -d /var/tmp 2>/dev/null
perf record -q -g -F 999 --no-bpf-event -e cpu-clock,task-clock -o perf-two.data -- "$WL" -s 0.02 -q -d /var/tmp 2>/dev/null
for f in own-sleep own-waitmix own-wakeups perf-fp perf-two; do
	cp "$f.data" "$C/fuzz_perf_reader/seed-$f"
	cp "$f.data" "$C/fuzz_report/seed-$f"
done

grep -m 40 ' [tTwW] ' /proc/kallsyms >"$C/fuzz_kallsyms/seed-core"
{ grep -m 5 -E ' (_text|_stext)$' /proc/kallsyms; grep -m 20 -A3 ' __schedule$' /proc/kallsyms
  grep -m 30 '\[' /proc/kallsyms || true; } >"$C/fuzz_kallsyms/seed-modules"
cat /proc/self/maps >"$C/fuzz_procfs/seed-maps"
cat /proc/self/status >"$C/fuzz_procfs/seed-status"
cp "$C/fuzz_kallsyms/seed-modules" "$C/fuzz_procfs/seed-kallsyms"
cat /sys/devices/system/cpu/online >"$C/fuzz_procfs/seed-cpus"

printf '%s\n' '7f3a10000000 40 stub_interp' '0x7f3a10000040 120 LazyCompile:~main /app.js:1' \
	'7f3a10000040 120 LazyCompile:*main /app.js:1' '7f3a10000200 1000 Builtin:ArgumentsAdaptorTrampoline' \
	'7f3a10000100 0 zero-size' >"$C/fuzz_perfmap/seed-jit"

g++ -O1 -g -fno-omit-frame-pointer -Wl,-z,noseparate-code -Wl,--build-id \
	-o elf-debug "$ROOT/tests/fuzz/seed/elf_seed.cc"
strip -o elf-stripped elf-debug
objcopy --only-keep-debug elf-debug elf.debug
objcopy --strip-debug --add-gnu-debuglink=elf.debug elf-debug elf-link
cp elf-debug "$C/fuzz_elf/seed-debug"
cp elf-stripped "$C/fuzz_elf/seed-stripped"
cp elf-link "$C/fuzz_elf/seed-debuglink"
du -sh "$C"/*
