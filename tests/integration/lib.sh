# Shared helpers for integration tests. Source it first:
#   . "$(dirname "$0")/lib.sh"
# A test exits 0 on success, 77 to skip (with a reason on its last line),
# anything else on failure. Lines starting with '#' are measurements that the
# runner shows under the test's name.
set -u
: "${OFFCPU:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/offcpu}"
: "${WORKLOADS:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/workloads}"
TESTDIR=$(mktemp -d /tmp/offcpu-test.XXXXXX)
trap '[ -n "${KEEP_TESTDIR:-}" ] || rm -rf "$TESTDIR"' EXIT
# perf's build-id cache, which perf record fills and perf and offcpu read: the
# test's own, so that no test depends on (or adds to) what ~/.debug holds.
# offcpu takes it from PERF_BUILDID_DIR, perf from its config (PERF_CONFIG:
# this file replaces ~/.perfconfig and /etc/perfconfig).
export PERF_BUILDID_DIR=$TESTDIR/buildid-cache
printf '[buildid]\n\tdir = %s\n' "$PERF_BUILDID_DIR" >"$TESTDIR/perfconfig"
export PERF_CONFIG=$TESTDIR/perfconfig

skip() { echo "skipped: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
measure() { echo "# $*"; }

# Tests that load BPF programs need root (or CAP_BPF+CAP_PERFMON) and BTF.
require_bpf() {
	[ "$(id -u)" = 0 ] || skip "needs root to load BPF programs"
	[ -r /sys/kernel/btf/vmlinux ] || skip "kernel has no BTF"
}
require_perf() {
	command -v perf >/dev/null || skip "Linux perf (linux-perf) not installed"
}

# A perf that reads offcpu-time's payload as its own embedded off-CPU sample
# (6.14 and newer): $PERF_NEW, else ../shared/tools/perf-7.3/perf beside the
# repository, else /work/shared/tools/perf-7.3/perf. Sets PERF_NEW or skips.
require_perf_new() {
	local root c v
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	for c in "${PERF_NEW:-}" "$root/../shared/tools/perf-7.3/perf" /work/shared/tools/perf-7.3/perf; do
		[ -n "$c" ] && [ -x "$c" ] || continue
		v=$("$c" --version 2>&1) ||
			skip "$c does not run ($v): its runtime libraries are listed in its README (scripts/deps.sh installs them)"
		v=$(echo "$v" | sed -n 's/^perf version \([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
		# shellcheck disable=SC2086
		set -- $v
		if [ $# -eq 2 ] && { [ "$1" -gt 6 ] || { [ "$1" -eq 6 ] && [ "$2" -ge 14 ]; }; }; then
			PERF_NEW=$c
			return 0
		fi
		[ -n "${PERF_NEW:-}" ] && [ "$c" = "$PERF_NEW" ] && skip "PERF_NEW=$c is not perf 6.14 or newer"
	done
	skip "no perf 6.14 or newer: set PERF_NEW, or provide ../shared/tools/perf-7.3/perf or /work/shared/tools/perf-7.3/perf"
}

# Debian's chromium and the node modules of tests/browser (playwright-core,
# speedscope) from the committed lock file, installed into the build tree
# once per lock file: sets NODE_DIR, or skips.
require_browser() {
	local root
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	[ -x /usr/bin/chromium ] || skip "/usr/bin/chromium not installed (scripts/deps.sh installs it)"
	command -v node >/dev/null && command -v npm >/dev/null ||
		skip "node/npm not installed (scripts/deps.sh installs them)"
	NODE_DIR=$root/build/browser
	if ! cmp -s "$root/tests/browser/package-lock.json" "$NODE_DIR/package-lock.json" ||
		[ ! -d "$NODE_DIR/node_modules/playwright-core" ] || [ ! -d "$NODE_DIR/node_modules/speedscope" ]; then
		mkdir -p "$NODE_DIR"
		cp "$root/tests/browser/package.json" "$root/tests/browser/package-lock.json" "$NODE_DIR/"
		(cd "$NODE_DIR" && npm ci --no-audit --no-fund --loglevel=error) >"$TESTDIR/npm.log" 2>&1 || {
			tail -5 "$TESTDIR/npm.log"
			rm -f "$NODE_DIR/package-lock.json"
			skip "npm ci of tests/browser/package-lock.json failed (no npm registry?)"
		}
	fi
}
