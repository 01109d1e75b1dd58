#!/bin/bash
# The whole test suite, as run by `make test` and CI:
#   1. build offcpu, the workloads and the unit tests;
#   2. unit tests, then the same unit tests built with ASan+UBSan;
#   3. the fuzz targets (tests/fuzz), a short fixed run each;
#   4. every tests/integration/test_*.sh (exit 0 pass, 77 skip, else fail),
#      then again with the ASan+UBSan build of offcpu (LeakSanitizer on):
#      any sanitizer report fails the test. A test whose header says
#      "# sanitizers: skip (why)" runs once.
# Ends with one summary line "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
JOBS=$(nproc)
pass=0; failn=0; skip=0; failed=(); reasons=()
suite_start=$(date +%s)
echo "make test: build, unit tests, fuzz targets, then every integration test twice" \
	"(plain, then ASan+UBSan): about 20 minutes on 2 vCPUs"

note() { printf '%s\n' "$*"; }

run_step() { # name, command...
	local name=$1; shift
	local log; log=$(mktemp)
	if "$@" >"$log" 2>&1; then
		note "PASS  $name"; pass=$((pass + 1))
	else
		note "FAIL  $name"; tail -60 "$log"; failn=$((failn + 1)); failed+=("$name")
	fi
	rm -f "$log"
}

run_step "build" make -j"$JOBS" all
run_step "build unit tests" make -j"$JOBS" $(ls tests/unit/test_*.c 2>/dev/null | sed 's,tests/unit/,build/tests/,;s,\.c$,,')
for t in build/tests/test_*; do
	[ -x "$t" ] && run_step "unit $(basename "$t")" "$t"
done
# Sanitized copies of every unit test (and of offcpu, used by the
# integration tests that run under sanitizers).
run_step "build unit tests (asan+ubsan)" make -j"$JOBS" BUILD=build-san SAN=1 build-san/offcpu \
	$(ls tests/unit/test_*.c 2>/dev/null | sed 's,tests/unit/,build-san/tests/,;s,\.c$,,')
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for t in build-san/tests/test_*; do
	[ -x "$t" ] && run_step "unit $(basename "$t") (asan+ubsan)" "$t"
done
unset ASAN_OPTIONS UBSAN_OPTIONS

run_step "build fuzz targets" make -j"$JOBS" fuzz-build
for f in tests/fuzz/fuzz_*.c; do
	f=$(basename "$f" .c)
	run_step "fuzz $f (${FUZZ_RUNS:-3000} runs)" tests/fuzz/run.sh "$f"
done

export OFFCPU_SAN="$ROOT/build-san/offcpu" WORKLOADS="$ROOT/build/workloads"
SANLOG=$(mktemp -d)
tests=()
for t in tests/integration/test_*.sh; do
	[ -f "$t" ] || continue
	tests+=("$t:plain")
	grep -q '^# sanitizers: skip' "$t" || tests+=("$t:san")
done
# plain runs first, then the sanitized ones
for mode in plain san; do
for ts in "${tests[@]}"; do
	t=${ts%:*}
	[ "${ts##*:}" = "$mode" ] || continue
	name=$(basename "$t" .sh)
	log=$(mktemp)
	start=$(date +%s)
	if [ "$mode" = san ]; then
		name="$name (asan+ubsan)"
		rm -f "$SANLOG"/*
		OFFCPU="$ROOT/build-san/offcpu" \
		ASAN_OPTIONS=detect_leaks=1:log_path="$SANLOG/asan" \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:log_path="$SANLOG/ubsan" \
			bash "$t" >"$log" 2>&1; rc=$?
		# reports land in $SANLOG, or on stderr (UBSan under ASan): either fails
		grep -E '^(.*: )?(.*runtime error: |==[0-9]+==ERROR: (Address|Leak)Sanitizer)' "$log" >>"$SANLOG/stderr"
		[ -s "$SANLOG/stderr" ] || rm -f "$SANLOG/stderr"
		if [ -n "$(ls "$SANLOG")" ]; then
			# a sanitizer report is a failure whatever the test concluded
			{ echo "FAIL: sanitizer reports:"; head -40 "$SANLOG"/*; } >>"$log"
			rc=1
		fi
	else
		OFFCPU="$ROOT/build/offcpu" bash "$t" >"$log" 2>&1; rc=$?
	fi
	dur=$(( $(date +%s) - start ))
	case $rc in
	0) note "PASS  $name (${dur}s)"; grep '^#' "$log" | sed 's/^/      /'; pass=$((pass + 1)) ;;
	77) note "SKIP  $name: $(tail -1 "$log")"; skip=$((skip + 1)) ;;
	*) note "FAIL  $name (${dur}s, exit $rc)"
	   # The failed checks first, then the log's end: a cut CI log still shows why.
	   grep -E '^(FAIL|fail)' "$log" | head -20 | sed 's/^/    ! /'
	   tail -80 "$log" | sed 's/^/      /'
	   reasons+=("$name: $(grep -E '^(FAIL|fail)' "$log" | head -3 | tr '\n' ' ')")
	   failn=$((failn + 1)); failed+=("$name") ;;
	esac
	rm -f "$log"
done
done
rm -rf "$SANLOG"

[ ${#failed[@]} -eq 0 ] || note "failed: ${failed[*]}"
for r in "${reasons[@]}"; do note "  $r"; done
took=$(($(date +%s) - suite_start))
echo "$pass passed, $failn failed, $skip skipped in $((took / 60)) min $((took % 60)) s"
[ "$failn" -eq 0 ]
