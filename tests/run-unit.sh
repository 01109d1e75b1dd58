#!/bin/sh
# Run every cmocka unit test binary in BUILD/tests. Prints one line per
# binary; exits non-zero if any failed.
BUILD=${1:-build}
fail=0
for t in "$BUILD"/tests/test_*; do
	[ -x "$t" ] || continue
	if out=$("$t" 2>&1); then
		echo "  unit  ok    $(basename "$t") ($BUILD)"
	else
		echo "  unit  FAIL  $(basename "$t") ($BUILD)"
		echo "$out" | tail -40
		fail=1
	fi
done
exit $fail
