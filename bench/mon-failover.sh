#!/bin/bash
# bench/mon-failover.sh - what a monitor leader's death costs (issue 33):
# the latency of a map change issued 100 ms after a `kill -9` of the
# leader, the time until a new leader serves, and the longest stall of a
# client's ops around the kill.
#
# Starts a local cluster (atoll-cluster up: 3 monitors, 3 OSDs on 3
# hosts, no NBD or MDS) and, each round: kills the leader with SIGKILL
# (atoll-cluster mon kill), waits 100 ms, times `atoll osd out 0` (sent
# through the library, which follows the monitors' MONMAPs to the new
# leader), puts osd.0 back in, restarts the killed monitor and waits until
# it caught up.  The new leader's "serving" log line gives the election
# time.  All along, a client (tests/thrash's thrash-client, through the
# library) writes and reads back a ledger of objects with 16 ops in
# flight; its longest op in each round is the stall.  Prints each round,
# the medians and the monitors' resident memory.
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
client=$build/tests/thrash/thrash-client
[ -x "$cl" ] && [ -x "$cli" ] && [ -x "$client" ] ||
	{ echo "build first: scripts/build.sh" >&2; exit 1; }
[ -n "$dir" ] || dir=$root/scratch/mon-failover-$(date +%Y%m%d-%H%M%S)

"$cl" up --dir "$dir" --mons 3 --osds 3 --no-nbd --no-mds >/dev/null
export ATOLL_CONF=$dir/atoll.conf
now_ms() { date +%s%3N; }

# the client: commands on a fifo, its answers in a file
mkfifo "$dir/client.cmd"
"$client" "$ATOLL_CONF" default 7 "$dir/client.ledger" 16 <"$dir/client.cmd" \
	>"$dir/client.out" 2>"$dir/client.err" &
client_pid=$!
exec 9>"$dir/client.cmd"
trap 'kill -9 $client_pid 2>/dev/null || true; rm -f "$dir"/client.*; "$cl" down --purge --dir "$dir" >/dev/null 2>&1 || true' EXIT
for _ in $(seq 1 150); do grep -q running "$dir/client.out" && break; sleep 0.1; done
sleep 2
# the longest op since the previous call
stall() {
	local n
	n=$(grep -c '^stall:' "$dir/client.out" || true)
	echo stall >&9
	for _ in $(seq 1 100); do
		[ "$(grep -c '^stall:' "$dir/client.out" || true)" -gt "$n" ] && break
		sleep 0.05
	done
	grep '^stall:' "$dir/client.out" | tail -n 1 | awk '{ print $4 }'
}

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

lat=() elect=() stalls=()
for r in $(seq 1 "$runs"); do
	stall >/dev/null
	t0=$(now_ms)
	name=$("$cl" mon kill --dir "$dir")
	sleep 0.1
	t1=$(now_ms)
	"$cli" osd out 0 >/dev/null 2>&1
	t2=$(now_ms)
	e=$(served_after "$t0")
	sleep 2
	st=$(stall)
	lat+=($((t2 - t1)))
	elect+=("$e")
	stalls+=("$st")
	echo "round $r: killed $name; new leader served after $e ms; osd out issued 100 ms" \
		"after the kill answered in $((t2 - t1)) ms; longest client op $st ms"
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
	"a map change issued 100 ms after the kill answered in $(median "${lat[@]}") ms;" \
	"longest client op $(median "${stalls[@]}") ms"
echo stop >&9
for _ in $(seq 1 300); do grep -q '^stopped' "$dir/client.out" && break; sleep 0.1; done
echo verify >&9
exec 9>&-
rc=0
wait "$client_pid" || rc=$?
grep '^final' "$dir/client.out" || true
[ $rc -eq 0 ] || echo "mon-failover.sh: the client found lost or stale data or failed ops" >&2
ps -o rss=,args= -C atoll-mon | awk -v d="$dir" 'index($0, d) {
	printf "monitor resident memory: %.1f MB (%s)\n", $1 / 1024, $4 }'
exit $rc
