#!/bin/bash
# tests/multihost/netns.sh - a real deployment across three "hosts".
#
# Three network namespaces, each with its own address on a private bridge
# (10.77.N.0/24, in a fourth namespace that plays the switch), and no
# launcher: three monitors, one in each, are bootstrapped with the plain
# commands of doc/admin.md (one fsid, one --initial list), two OSDs are
# added in each of the second and third, a pool of size 2 (failure domain
# host) is created from the first, objects round trip, no daemon binds or
# dials 127.0.0.1 (checked with ss in every namespace while the cluster
# runs), the three monitors agree (quorum status: one leader, one epoch,
# one digest), and with the leader killed (kill -9) objects still round
# trip through the two left, which elect a new leader.  Needs root and iproute2; skipped
# (77) otherwise.  Everything it creates is removed on every exit.
#
# usage: netns.sh BUILD_DIR
set -euo pipefail

. "$(dirname "$0")/lib.sh"
mh_init "${1:?usage: netns.sh BUILD_DIR}" 3
command -v ss >/dev/null || { echo "SKIP: ss missing"; exit 77; }
# (no ping on a minimal machine: the first OSD boot proves the path)

mh_mons 3			# mon.a, mon.b, mon.c on hosts 0, 1, 2
mh_conf "osd_heartbeat_interval = 500ms" "osd_heartbeat_grace = 6s"
mh_mons_start 3
for h in 1 2; do		# hosts 1 and 2: two OSDs each
	mh_osd $h 512M
	mh_osd $h 512M
done
cli() { mh_cli "$@"; }
mh_wait_up 4

cli pool create mh --size 2 --min-size 2 --failure-domain host
head -c 3000000 /dev/urandom > "$tmp/obj"
for i in $(seq 20); do cli put mh "o$i" "$tmp/obj"; done
for i in $(seq 20); do
	cli get mh "o$i" "$tmp/back"
	cmp -s "$tmp/obj" "$tmp/back" || { echo "FAIL: object o$i differs"; exit 1; }
done

# Every TCP socket of every namespace is on the namespace's own address.
for i in 0 1 2; do
	bad=$(in_ns $i ss -Htan | awk '{print $4" "$5}' | grep -E '127\.0\.0\.1|0\.0\.0\.0:[0-9]|\[::\]' || true)
	if [ -n "$bad" ]; then
		echo "FAIL: a socket on a loopback or wildcard address in ${hosts[$i]}:"
		echo "$bad"
		exit 1
	fi
done

mh_wait_health

# quorum status: members report their state about every 200 ms
quorum() {
	cli --format json quorum status 2>/dev/null | python3 -c '
import json, sys
j = json.load(sys.stdin); ms = j["members"]
same = len(ms) == 3 and all(m["epoch"] == j["epoch"] for m in ms) and len({m["digest"] for m in ms}) == 1
print("same" if same else "differ", j["leader"], j["epoch"], " ".join("%s:%d:%s" % (m["name"], m["epoch"], m["digest"]) for m in ms))' 2>/dev/null || echo "none"
}
agree() {
	local q
	for _ in $(seq 100); do
		q=$(quorum)
		[ "${q%% *}" = same ] && { echo "$q"; return 0; }
		sleep 0.2
	done
	echo "FAIL: the monitors do not agree: $q" >&2
	exit 1
}
q=$(agree)
leader=$(echo "$q" | cut -d' ' -f2)
echo "quorum: leader $leader, epoch $(echo "$q" | cut -d' ' -f3)"

# the leader dies: the other two elect one and the cluster goes on
li=$(( $(printf '%d' "'$leader") - 97 ))
kill -KILL "${mon_pids[$li]}"
wait "${mon_pids[$li]}" 2>/dev/null || true
for i in $(seq 5); do cli put mh "after$i" "$tmp/obj"; done
for i in $(seq 5); do
	cli get mh "after$i" "$tmp/back"
	cmp -s "$tmp/obj" "$tmp/back" || { echo "FAIL: object after$i differs"; exit 1; }
done
cli pool create mh2 --size 2 --min-size 1 --failure-domain host >/dev/null
q2=$(cli --format json quorum status | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["leader"])')
[ -n "$q2" ] && [ "$q2" != "$leader" ] || { echo "FAIL: no new leader (says '$q2')"; exit 1; }
echo "mon.$leader killed: mon.$q2 leads, objects and a pool create go on"

# mon.$leader back on its store: it rejoins and the three agree again
names=(a b c)
ip netns exec "${hosts[$li]}" "$build/mon/atoll-mon" --data "$tmp/mon.${names[$li]}" \
	--conf "$conf" >> "$tmp/mon.${names[$li]}.log" 2>&1 &
mon_pids[$li]=$!
q=$(agree)
echo "quorum after the restart: $q"
echo "PASS: 3 monitors and 4 OSDs on 3 hosts, objects round-trip, the leader's loss is survived"
