#!/bin/bash
# tests/ha/mon_crash.sh ATOLL_MON ATOLL_CLI [KILLS] - crash safety of the
# monitors' log and snapshots: three monitors with a snapshot every 16
# entries; a writer makes map changes (pool create) all along while one
# member at a time, picked at random (the leader or not), is killed with
# SIGKILL at a random moment and restarted.  Checks: every change that was
# answered is in the map; every member ends at the same epoch with the
# same digest; snapshots were taken, and some member caught up from one
# (restored at start or installed from the leader).  KILLS defaults to 12,
# 30 with ATOLL_TEST_FULL=1 (.ci/run --full).
set -u
. "$(dirname "$0")/monlib.sh"
monlib_init "$1" "$2" crash
kills=${3:-12}
[ "${ATOLL_TEST_FULL:-0}" = 1 ] && [ "$kills" -lt 30 ] && kills=30
monlib_mkfs
start() { monlib_start "$1" --set mon_snapshot_threshold=16; }
for n in "${names[@]}"; do start "$n"; done
cmd_timeout_ms=20000

cmd osd ls >/dev/null || fail "no leader elected"

# the writer: pool creations until told to stop; answered ones to a file
(
	k=0
	while [ ! -e "$dir/stop" ]; do
		p=w$k
		k=$((k + 1))
		if cmd pool create "$p" --pg 2 >/dev/null; then
			echo "$p" >>"$dir/answered"
		fi
	done
) &
writer=$!
monlib_extra_pids=$writer

for k in $(seq 1 "$kills"); do
	sleep "0.$((RANDOM % 9 + 1))"
	n=${names[$((RANDOM % 3))]}
	kill -9 "${pid[$n]}"
	wait "${pid[$n]}" 2>/dev/null
	echo "kill $k: mon.$n"
	sleep "0.$((RANDOM % 9 + 1))"
	start "$n"
	# the next kill once a leader serves again (never two down at once)
	cmd osd ls >/dev/null || fail "no leader after restarting mon.$n"
done
touch "$dir/stop"
wait "$writer"
writer=
monlib_extra_pids=

monlib_wait_agree 30

pools=$(cmd pool ls) || fail "pool ls"
n=0
while read -r p; do
	grep -qx "$p" <<<"$pools" || fail "pool '$p' was answered but is not in the map"
	n=$((n + 1))
done <"$dir/answered"
[ "$n" -gt 0 ] || fail "no change was answered"
echo "all $n answered pool creations are in the map"

snaps=$(cat "$dir"/*.log | grep -c "snapshot of the state taken")
restored=$(cat "$dir"/*.log | grep -c "state restored from a snapshot")
[ "$snaps" -gt 0 ] || fail "no snapshot was taken"
[ "$restored" -gt 0 ] || fail "no member restored a snapshot"
echo "PASS: $kills kills, $n changes, $snaps snapshots taken, $restored restored"
