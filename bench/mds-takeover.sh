#!/bin/bash
# bench/mds-takeover.sh - how long a standby MDS takes to take over
# (issue 33): kill -9 of the active MDS to the first metadata operation
# answered by the new one on an existing mount, under two busy mounts.
#
# Runs tests/ha/mds-failover.sh (a one-OSD cluster, mds.a and mds.b, two
# mounts writing and renaming; see its header) with the daemons' default
# mds_beacon_grace (3s) and KILLS kills, and prints each takeover time and
# their median, and what each new active's replay read at its start (the
# standby followed the rest of the journal).  The fencing and
# hand-started-standby steps of the test run too (they are not timed).
#
# usage: bench/mds-takeover.sh [KILLS] [BUILD_DIR]
#   KILLS       kills of the active MDS (default 5)
#   BUILD_DIR   the build folder (default build-release)
#   environment: HA_MDS_GRACE=DURATION another mds_beacon_grace
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
kills=${1:-5}
build=${2:-$root/build-release}
case $kills in ''|*[!0-9]*) echo "mds-takeover.sh: KILLS '$kills' is not a number" >&2; exit 2 ;; esac
for b in tools/atoll-cluster posixfs/atoll-mds posixfs/atoll-fuse tools/atoll; do
	[ -x "$build/$b" ] || { echo "mds-takeover.sh: $build/$b is not built (scripts/build.sh)" >&2; exit 2; }
done
out=$(mktemp)
trap 'rm -f "$out"' EXIT
HA_MDS_KILLS=$kills HA_MDS_GRACE=${HA_MDS_GRACE:-3s} \
	"$root/tests/ha/mds-failover.sh" "$build/tools/atoll-cluster" "$build/posixfs/atoll-mds" \
	"$build/posixfs/atoll-fuse" "$build/tools/atoll" >"$out" 2>&1 ||
	{ tail -n 40 "$out"; echo "mds-takeover.sh: the run failed" >&2; exit 1; }
grep -E "^(takeover|replay of)" "$out"
