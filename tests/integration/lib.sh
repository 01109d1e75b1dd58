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
