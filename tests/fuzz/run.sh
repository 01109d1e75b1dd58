#!/bin/bash
# Run the fuzz targets of build-fuzz/fuzz (built by `make fuzz-build`).
#   tests/fuzz/run.sh [TARGET...]        each for FUZZ_RUNS inputs (default 3000),
#                                        seed 1: the short run of `make test`
#   FUZZ_TIME=SECS tests/fuzz/run.sh     each for SECS seconds instead (long runs);
#                                        new inputs are kept in build-fuzz/corpus/TARGET
#   FUZZ_BIN=DIR                         the targets' directory (default build-fuzz/fuzz)
#   FUZZ_OUT=DIR                         where artifacts and kept inputs go (default build-fuzz)
# Every input of tests/fuzz/corpus/TARGET (seeds and regression inputs of bugs
# found) runs first. A crash, leak, sanitizer report or an input slower than
# 10 s fails the run; the input is saved as build-fuzz/artifacts/TARGET/crash-*
# (or timeout-*, leak-*), the log beside it.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${FUZZ_BIN:-$ROOT/build-fuzz/fuzz}
OUT=${FUZZ_OUT:-$ROOT/build-fuzz}
RUNS=${FUZZ_RUNS:-3000}
TIME=${FUZZ_TIME:-}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=($(cd "$ROOT/tests/fuzz" && ls fuzz_*.c | sed 's/\.c$//'))

max_len() {
	case $1 in
	fuzz_perf_reader | fuzz_report) echo 65536 ;;
	fuzz_elf) echo 32768 ;;
	*) echo 8192 ;;
	esac
}

rc=0
for t in "${targets[@]}"; do
	[ -x "$BIN/$t" ] || { echo "fuzz: $BIN/$t not built (make fuzz-build)"; rc=1; continue; }
	seeds=$ROOT/tests/fuzz/corpus/$t
	art=$OUT/artifacts/$t
	mkdir -p "$art"
	if [ -n "$TIME" ]; then
		work=$OUT/corpus/$t
		limit=(-max_total_time="$TIME" -print_final_stats=1)
	else
		work=$(mktemp -d)
		limit=(-runs="$RUNS" -seed=1)
	fi
	mkdir -p "$work"
	start=$(date +%s%N)
	# new inputs go to the first directory only: the committed seeds stay as they are
	ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
		"$BIN/$t" "${limit[@]}" -max_len="$(max_len "$t")" -timeout=10 -rss_limit_mb=2048 \
		-close_fd_mask=3 -artifact_prefix="$art/" "$work" "$seeds" >"$art/log" 2>&1
	st=$?
	ms=$(( ($(date +%s%N) - start) / 1000000 ))
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$art/log" | tail -1)
	[ -n "$execs" ] || execs=$(grep -oE '^#[0-9]+' "$art/log" | tail -1 | tr -d '#')
	printf 'fuzz %-18s %s: %s inputs in %d.%03d s\n' "$t" "$([ $st = 0 ] && echo ok || echo FAIL)" \
		"${execs:-?}" $((ms / 1000)) $((ms % 1000))
	if [ $st != 0 ]; then
		grep -E 'ERROR|SUMMARY|runtime error|Test unit written|==[0-9]+==' "$art/log" | head -20
		rc=1
	fi
	[ -n "$TIME" ] || rm -rf "$work"
done
exit $rc
