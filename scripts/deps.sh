#!/bin/sh
# Install the Debian packages offcpu needs, only those missing:
#   scripts/deps.sh demo   to build offcpu and run `make demo` (the default)
#   scripts/deps.sh test   and everything `make test` reads our files with
set -e
# Building: the BPF programs (clang, bpftool, libbpf), the reader (libelf,
# libdw, zlib; the C++ demangler from libsupc++.a, which g++ brings) and the
# workloads.
PKGS="clang libbpf-dev bpftool libelf-dev libdw-dev zlib1g-dev pkg-config make gcc g++"
if [ "${1:-demo}" = test ]; then
	# Unit tests (cmocka), fuzz targets (libFuzzer: clang's runtime), the
	# recorded files read back by Linux perf, the workloads' helpers.
	PKGS="$PKGS llvm libcmocka-dev libclang-rt-14-dev linux-perf python3 strace sqlite3"
	# Readers of the flame graph and pprof tests: a browser, go tool pprof, xmllint,
	# and node for playwright-core (npm comes with nodesource's nodejs, else Debian's).
	PKGS="$PKGS chromium golang-go libxml2-utils nodejs"
	# protoc reads the Perfetto traces of offcpu timeline (test_timeline.sh)
	PKGS="$PKGS protobuf-compiler"
	# Other readers of our files: hotspot's perfparser, and the runtime libraries
	# of the newer perf the interoperability tests use when present
	# (../shared/tools/perf-7.3/perf, see its README), GNU time for bench/.
	PKGS="$PKGS hotspot libtraceevent1 libslang2 libllvm14 libcapstone4 libpfm4 libnuma1"
	PKGS="$PKGS libdebuginfod1 libunwind8 libbabeltrace1 time"
	command -v npm >/dev/null || PKGS="$PKGS npm"
elif [ "$1" != demo ]; then
	echo "usage: scripts/deps.sh [demo|test]" >&2
	exit 2
fi
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "offcpu deps: installing$missing" >&2
if [ "$(id -u)" != 0 ]; then
	echo "offcpu deps: missing packages:$missing (run as root or install them)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# One install at a time: parallel builds (or a second checkout) would
# otherwise race for dpkg's lock.
exec 9>/var/lock/offcpu-deps.lock
flock 9
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing >/dev/null
