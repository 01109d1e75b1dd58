#!/bin/sh
# Regenerate the perf.data fixtures of tests/data with Debian's perf
# (linux-perf 6.1). Run as root from anywhere; the workload is built from
# tests/data/src/fixture_work.c with frame pointers. Exact commands:
#
#   cc -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -fno-inline \
#      -pthread -o /tmp/offcpu-fixture/fixture_work tests/data/src/fixture_work.c
#   perf record -g                      -o fp.data          fixture_work 0.3
#   perf record --call-graph fp --no-buildid -o fp-nobuildid.data fixture_work 0.2
#   perf record -g -e cpu-clock,task-clock -o two-events.data fixture_work 0.2
#   perf record -a -g -F 499            -o system.data      -- fixture_work 0.2
#
# The binary lives under /tmp/offcpu-fixture so that the recorded paths do
# not depend on where the repository is checked out.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=/tmp/offcpu-fixture
mkdir -p "$dir"
cc -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -fno-inline -pthread \
	-o "$dir/fixture_work" "$here/src/fixture_work.c"
cd "$here"
perf record -q -g -o fp.data "$dir/fixture_work" 0.3
perf record -q --call-graph fp --no-buildid -o fp-nobuildid.data "$dir/fixture_work" 0.2
perf record -q -g -e cpu-clock,task-clock -o two-events.data "$dir/fixture_work" 0.2
perf record -q -a -g -F 499 -o system.data -- "$dir/fixture_work" 0.2
rm -f ./*.data.old
ls -l ./*.data
