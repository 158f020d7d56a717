#!/bin/bash
# bench/mon-failover.sh - what a monitor leader's death costs (issue 33):
# the latency of a map change issued 100 ms after a `kill -9` of the
# leader, and the time until a new leader serves.
#
# Starts a local cluster (atoll-cluster up: 3 monitors, 3 OSDs on 3
# hosts, no NBD or MDS) and, each round: kills the leader with SIGKILL
# (atoll-cluster mon kill), waits 100 ms, times `atoll osd out 0` (sent
# through the library, which follows the monitors' MONMAPs to the new
# leader), puts osd.0 back in, restarts the killed monitor and waits until
# it caught up.  The new leader's "serving" log line gives the election
# time.  Prints each round and the medians.
#
# usage: bench/mon-failover.sh [--runs N] [--dir DIR]
#   --runs N   rounds (default 5)
#   --dir DIR  folder for the cluster (default: a new folder under scratch/)
# environment: ATOLL_BUILD=DIR uses the binaries of that build folder
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
runs=5 dir=
while [ $# -gt 0 ]; do
	case $1 in
	--runs) runs=$2; shift 2 ;;
	--dir) dir=$2; shift 2 ;;
	-h|--help) sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "mon-failover.sh: unknown option '$1'" >&2; exit 2 ;;
	esac
done
build=${ATOLL_BUILD:-$root/build-release}
cl=$build/tools/atoll-cluster
cli=$build/tools/atoll
[ -x "$cl" ] && [ -x "$cli" ] || { echo "build first: scripts/build.sh" >&2; exit 1; }
[ -n "$dir" ] || dir=$root/scratch/mon-failover-$(date +%Y%m%d-%H%M%S)

"$cl" up --dir "$dir" --mons 3 --osds 3 --no-nbd --no-mds >/dev/null
trap '"$cl" down --purge --dir "$dir" >/dev/null 2>&1 || true' EXIT
export ATOLL_CONF=$dir/atoll.conf
now_ms() { date +%s%3N; }

# the first "serving" line at or after t0 (ms) in the monitors' logs
served_after() {
	python3 - "$1" "$dir"/log/mon.*.log <<'PY'
import sys, datetime
t0 = int(sys.argv[1])
best = None
for f in sys.argv[2:]:
    for line in open(f, errors="replace"):
        if "serving" not in line or not line[:4].isdigit():
            continue
        ts = datetime.datetime.strptime(line[:26], "%Y-%m-%dT%H:%M:%S.%f")
        ms = int(ts.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000)
        if ms >= t0 and (best is None or ms < best):
            best = ms
print(best - t0 if best is not None else -1)
PY
}

lat=() elect=()
for r in $(seq 1 "$runs"); do
	t0=$(now_ms)
	name=$("$cl" mon kill --dir "$dir")
	sleep 0.1
	t1=$(now_ms)
	"$cli" osd out 0 >/dev/null 2>&1
	t2=$(now_ms)
	e=$(served_after "$t0")
	lat+=($((t2 - t1)))
	elect+=("$e")
	echo "round $r: killed $name; new leader served after $e ms; osd out issued 100 ms" \
		"after the kill answered in $((t2 - t1)) ms"
	"$cli" osd in 0 >/dev/null 2>&1
	"$cl" mon start "${name#mon.}" --dir "$dir" >/dev/null
	# the next round once the restarted monitor caught up
	for _ in $(seq 1 100); do
		"$cli" --format json quorum status | python3 -c '
import json, sys
s = json.load(sys.stdin)
sys.exit(0 if all(m["epoch"] == s["epoch"] and m["status_age_ms"] < 1000 for m in s["members"]) else 1)' && break
		sleep 0.2
	done
done
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
echo "median over $runs rounds: new leader serves after $(median "${elect[@]}") ms;" \
	"a map change issued 100 ms after the kill answered in $(median "${lat[@]}") ms"
