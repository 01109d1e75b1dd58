#!/bin/bash
# The whole test suite, as run by `make test` and CI:
#   1. build offcpu, the workloads and the unit tests;
#   2. unit tests, then the same unit tests built with ASan+UBSan;
#   3. every tests/integration/test_*.sh (exit 0 pass, 77 skip, else fail).
# Ends with one summary line "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
JOBS=$(nproc)
pass=0; failn=0; skip=0; failed=(); reasons=()

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

export OFFCPU="$ROOT/build/offcpu" OFFCPU_SAN="$ROOT/build-san/offcpu" WORKLOADS="$ROOT/build/workloads"
for t in tests/integration/test_*.sh; do
	[ -f "$t" ] || continue
	name=$(basename "$t" .sh)
	log=$(mktemp)
	start=$(date +%s)
	bash "$t" >"$log" 2>&1; rc=$?
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

[ ${#failed[@]} -eq 0 ] || note "failed: ${failed[*]}"
for r in "${reasons[@]}"; do note "  $r"; done
echo "$pass passed, $failn failed, $skip skipped"
[ "$failn" -eq 0 ]
