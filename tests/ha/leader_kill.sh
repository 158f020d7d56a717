#!/bin/bash
# tests/ha/leader_kill.sh ATOLL_MON ATOLL_CLI - three monitors on a Raft
# log; the leader is killed with SIGKILL and restarted, three times in a
# row, while map changes (pool create, osd set/unset noout) are made.
# Checks: every change that was answered is in the map afterwards; every
# member ends at the same epoch with the same state digest (quorum
# status); snapshots were taken and a restarted member caught up.
# Prints the time from each kill to the next committed change.
#
# The monitors run alone (no OSD): the map changes need none.  Each one
# is sent to the members in turn until one answers (a follower answers
# with a MONMAP, which a client that does not follow it takes as an
# error), so the test does not depend on the client's hunting.
set -u
. "$(dirname "$0")/monlib.sh"
monlib_init "$1" "$2" leader
monlib_mkfs
start() { monlib_start "$1" --set mon_snapshot_threshold=32; }
for n in "${names[@]}"; do start "$n"; done

leader >/dev/null || fail "no leader elected"
answered=()
changes=0
change() {
	local p=p$changes
	changes=$((changes + 1))
	if ! cmd pool create "$p" --pg 4 >/dev/null; then
		# an attempt cut off after the change was applied: it is there
		cmd pool ls | grep -qx "$p" || return 1
	fi
	answered+=("$p")
}
for k in 1 2 3 4 5; do change || fail "pool create before any kill"; done

kills=0
for round in 1 2 3; do
	l=$(leader) || fail "no leader before kill $round"
	[ -n "$l" ] || fail "quorum status names no leader"
	kill -9 "${pid[$l]}"
	wait "${pid[$l]}" 2>/dev/null
	t0=$(now_ms)
	pid[$l]=
	kills=$((kills + 1))
	change || fail "no change committed after killing leader mon.$l"
	t1=$(now_ms)
	# when the new leader started to serve, from its log
	served=$(python3 - "$t0" "$dir"/*.log <<'PY'
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
print(best - t0 if best is not None else "?")
PY
)
	echo "kill $round: leader mon.$l killed; a new leader served after $served ms;" \
		"the next change (a client trying the members in turn) committed after" \
		"$((t1 - t0)) ms"
	for k in $(seq 1 12); do
		change || fail "pool create after kill $round"
		if [ $((k % 4)) = 0 ]; then
			cmd osd set noout >/dev/null || fail "osd set noout"
			cmd osd unset noout >/dev/null || fail "osd unset noout"
		fi
	done
	start "$l"
	# the next kill once it caught up (a kill of a member per restart)
	deadline=$(( $(now_ms) + 15000 ))
	until cmd --format json quorum status | python3 -c '
import json, sys
s = json.load(sys.stdin)
m = [m for m in s["members"] if m["name"] == sys.argv[1]][0]
sys.exit(0 if m["epoch"] == s["epoch"] and m["status_age_ms"] < 1000 else 1)' "$l"; do
		[ "$(now_ms)" -lt "$deadline" ] || fail "restarted mon.$l did not catch up"
		sleep 0.2
	done
done

# every member at the leader's epoch with the same digest
monlib_wait_agree 20

pools=$(cmd pool ls) || fail "pool ls"
for p in "${answered[@]}"; do
	grep -qx "$p" <<<"$pools" || fail "pool '$p' was answered but is not in the map"
done
echo "all ${#answered[@]} answered pool creations are in the map"

grep -q "snapshot of the state taken" "$dir"/*.log || fail "no snapshot was taken"
echo "PASS: $kills leader kills, ${#answered[@]} changes, digests equal"
