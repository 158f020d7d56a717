#!/bin/bash
# scripts/start.sh - builds atoll and starts its main job.
#
# Until the cluster exists (atoll-cluster up, a later issue), atoll's main
# job is its OSD store engine: this builds the release binaries and runs
# the store benchmark, atoll-storebench, on a temporary store under
# $TMPDIR (default /var/tmp), removed at the end.  Arguments go to
# atoll-storebench, e.g.
#   scripts/start.sh --quick            a short run (seconds, a tiny store)
#   scripts/start.sh write read         two of the tests
#   scripts/start.sh --dir /srv/bench   a store that is kept and reused
# See doc/benchmarks.md; bench/store-bench.sh compares it with the disk.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

echo "start.sh: building atoll (build-release)..." >&2
"$root/scripts/build.sh" osd/atoll-storebench osd/atoll-store-tool
exec "$root/build-release/osd/atoll-storebench" "$@"
