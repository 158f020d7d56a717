#!/bin/bash
# leader_primary.sh - the leader monitor and a primary OSD killed at the
# same moment, under a ledger workload (issue 33, suite `ha`).
#
#   leader_primary.sh ATOLL-CLUSTER ATOLL THRASH-CLIENT
#
# Three monitors, four OSDs on four hosts, pool `default` of size 3 /
# min_size 2.  thrash-client (tests/thrash) writes and reads a ledger of
# 96 objects with 16 ops in flight.  Each round (3, or 5 with
# ATOLL_TEST_FULL=1) picks the next OSD that is the primary of some PGs,
# kill -9's it and the leader monitor in the same instant (one `kill`),
# and 100 ms later issues `atoll osd out` of another OSD.  It prints:
#   pgs    the time from the kill to the first write issued after it and
#          acknowledged on an object whose PG had the killed OSD as primary
#          (per PG, through thrash-client's `mark LABEL OBJECT...`)
#   any    the same on any object
#   stall  the longest op the client saw from the kill until 2 s after
#          the killed OSD's PGs took writes again
#   out    how long `atoll osd out` issued 100 ms after the kill took to
#          be answered (the map change is committed by the new leader)
# Then the OSD is marked in, the monitor and the OSD are started again and
# the cluster must be HEALTH_OK before the next round.  At the end every
# acknowledged write reads back (0 lost, 0 wrong, 0 stale) and no op
# failed or timed out.
set -euo pipefail
. "$(dirname "$0")/../cluster/lib.sh"
. "$(dirname "$0")/ledger.sh"

client_bin=${1:?usage: $0 ATOLL-CLUSTER ATOLL THRASH-CLIENT}
[ -x "$client_bin" ] || skip "thrash-client is missing ($client_bin)"
rounds=3
[ "${ATOLL_TEST_FULL:-0}" = 1 ] && rounds=5
nosd=4
threads=16
nobj=$((threads * 6))

cluster_up --mons 3 --osds $nosd --hosts $nosd --no-mds --no-nbd \
	--set client_op_timeout=60s --set mon_osd_down_out_interval=600s
wait_health HEALTH_OK
ok "3 monitors, $nosd OSDs on $nosd hosts"

cleanup_hook=ledger_kill
ledger_start "$client_bin" 33 "$threads"

# which PG each object is in (placement does not change with up/down)
for i in $(seq 0 $((nobj - 1))); do
	atoll --format json osd map default "t$i"
	echo
done | python3 -c '
import json, sys
for line in sys.stdin:
    if line.strip():
        j = json.loads(line)
        print(j["object"], j["pgid"])' >"$tmp/obj_pg"
[ "$(wc -l <"$tmp/obj_pg")" = $nobj ] || fail "osd map of $nobj objects"
sleep 2

ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
# wait_line PATTERN SECONDS: until client.out has a line matching PATTERN
wait_line() {
	local i
	for i in $(seq $(($2 * 20))); do
		grep -q "$1" "$tmp/client.out" && return 0
		kill -0 "$client_pid" 2>/dev/null || { cat "$tmp/client.err" >&2; fail "thrash-client died"; }
		sleep 0.05
	done
	return 1
}
stalls=0
# stall_now: the client's longest op since the previous call, in $stall
# (not printed: a $(...) subshell would lose the count)
stall_now() {
	stalls=$((stalls + 1))
	echo stall >&9
	for i in $(seq 100); do
		[ "$(grep -c '^stall:' "$tmp/client.out")" -ge $stalls ] && break
		sleep 0.05
	done
	stall=$(grep '^stall:' "$tmp/client.out" | sed -n "${stalls}p" | awk '{ print $4 }')
}

results=()
next=0
for r in $(seq "$rounds"); do
	# the leader, and the next OSD (round robin) that is a primary
	leader=$(atoll --format json quorum status | python3 -c 'import json,sys; print(json.load(sys.stdin)["leader"])')
	[ -n "$leader" ] || fail "no leader before round $r"
	atoll --format json pg ls default >"$tmp/pgs.json"
	victim=
	for k in $(seq 0 $((nosd - 1))); do
		v=$(( (next + k) % nosd ))
		if python3 -c 'import json,sys; sys.exit(0 if any(p["primary"] == int(sys.argv[2]) for p in json.load(open(sys.argv[1]))) else 1)' \
			"$tmp/pgs.json" "$v"; then
			victim=$v
			break
		fi
	done
	[ -n "$victim" ] || fail "no OSD is a primary"
	next=$((victim + 1))
	other=$(( (victim + 1) % nosd ))
	objs=$(python3 - "$tmp/pgs.json" "$tmp/obj_pg" "$victim" <<'PY'
import json, sys
pgs = {p["pgid"] for p in json.load(open(sys.argv[1])) if p["primary"] == int(sys.argv[3])}
print(" ".join(o for o, pg in (l.split() for l in open(sys.argv[2])) if pg in pgs))
PY
)
	[ -n "$objs" ] || fail "no object of the workload is on osd.$victim's PGs"
	mon_pid=$(state_pid "mon.$leader")
	osd_pid=$(state_pid "osd.$victim")
	[ "${mon_pid:-0}" != 0 ] && [ "${osd_pid:-0}" != 0 ] || fail "no PID for mon.$leader or osd.$victim"

	stall_now		# a new window starts here
	t_kill=$(date +%s%N)
	kill -9 "$mon_pid" "$osd_pid"
	# the marks count writes issued after them, so after the kill
	echo "mark r$r-pgs $objs" >&9
	echo "mark r$r-any" >&9
	sleep 0.1
	t_out=$(date +%s%N)
	atoll osd out "$other" >/dev/null 2>"$tmp/out.err" || fail "osd out $other after the kill: $(cat "$tmp/out.err")"
	out_ms=$(ms_since "$t_out")
	wait_line "^mark r$r-pgs: first write" 60 ||
		fail "round $r: no write acknowledged on osd.$victim's PGs within 60 s of the kill"
	wait_line "^mark r$r-any: first write" 5 || fail "round $r: no write acknowledged"
	pgs_ms=$(sed -n "s/^mark r$r-pgs: first write acknowledged after \([0-9]*\) ms/\1/p" "$tmp/client.out")
	any_ms=$(sed -n "s/^mark r$r-any: first write acknowledged after \([0-9]*\) ms/\1/p" "$tmp/client.out")
	sleep 2
	stall_now
	stall_ms=$stall
	results+=("$r mon.$leader osd.$victim $(echo $objs | wc -w) $pgs_ms $any_ms $stall_ms $out_ms")
	echo "round $r: kill -9 mon.$leader (leader) + osd.$victim (primary): first write on its PGs" \
		"$pgs_ms ms, on any object $any_ms ms; longest op $stall_ms ms; osd out $other" \
		"issued 100 ms after: $out_ms ms"

	atoll osd in "$other" >/dev/null || fail "osd in $other"
	"$cluster_bin" mon start "mon.$leader" --dir "$cdir" >/dev/null || fail "mon start mon.$leader"
	"$cluster_bin" osd start "$victim" --dir "$cdir" >/dev/null || fail "osd start $victim"
	wait_health HEALTH_OK
	ok "round $r: mon.$leader and osd.$victim back, HEALTH_OK ($(ms_since "$t_kill") ms after the kill)"
done

ledger_stop
ledger_verify
ok "every acknowledged write reads back, no op failed ($threads in flight)"

echo "leader + primary kill -9 (times in ms from the kill; out = latency of osd out issued 100 ms after):"
printf '  %-5s %-7s %-6s %5s %7s %7s %7s %7s\n' round leader osd objs pgs any stall out
for l in "${results[@]}"; do
	# shellcheck disable=SC2086
	printf '  %-5s %-7s %-6s %5s %7s %7s %7s %7s\n' $l
done
printf '%s\n' "${results[@]}" | python3 -c '
import statistics, sys
rows = [l.split() for l in sys.stdin if l.strip()]
for name, col in (("pgs", 4), ("stall", 6), ("out", 7)):
    print("  median %-5s %6.0f ms" % (name, statistics.median(float(r[col]) for r in rows)))'
