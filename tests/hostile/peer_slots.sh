#!/bin/bash
# peer_slots.sh ATOLL-CLUSTER ATOLL ATOLL-FLOOD - the slots an OSD keeps
# for the cluster's daemons cannot be taken without a key (issue 35 with
# the security issue: "reserved for authenticated cluster peers").
# osd.0 with small limits (ms_max_conns 96, ms_max_handshakes 48) is
# flooded by atoll-flood --as osd: 400 connections from 8 addresses whose
# hellos declare osd.0 with a valid auth section and never prove it.  They
# must stay handshaking connections (the oldest closed for a new one), so
# that meanwhile osd.1, stopped and started again, gets back in (its
# peers' connections are accepted: HEALTH_OK) and a client writes through
# osd.0.  Were they admitted by the class they declare, they would fill
# ms_max_conns and osd.0 would refuse everyone.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

cluster_up --mons 1 --no-mds --no-nbd --set ms_max_conns=96 --set ms_max_handshakes=48 \
	--set ms_peer_reserved_conns=32
ok "cluster up (auth on, small connection limits)"
grep -q "^auth = ticket" "$ATOLL_CONF" || skip "auth is off: nothing to prove"

addr="$(daemon_field osd.0 ip):$(daemon_field osd.0 port)"
flood_start "$tmp/flood.out" 30 "$addr" --as osd --conns 400 --halfopen 0 --big 0
sleep 4
kill -0 "$flood_pid" 2>/dev/null || fail "atoll-flood stopped: $(cat "$tmp/flood.out.err")"
"$cluster_bin" osd stop --dir "$cdir" 1 >/dev/null
"$cluster_bin" osd start --dir "$cdir" 1 >/dev/null || fail "osd.1 did not start"
wait_health HEALTH_OK 60 || fail "not HEALTH_OK with osd.0 flooded: $(atoll health detail)"
ok "osd.1 restarted gets back in while osd.0 is flooded by unproved osd hellos"
# a new client writes an object whose primary is osd.0
obj=
for i in $(seq 1 200); do
	if [ "$(atoll --format json osd map default "p$i" |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["primary"])')" = 0 ]; then
		obj=p$i
		break
	fi
done
[ -n "$obj" ] || fail "no object of the first 200 names has osd.0 as its primary"
echo "on osd.0" | timeout 20 "$atoll_bin" put default "$obj" - || fail "a new client cannot write through osd.0"
[ "$(atoll get default "$obj" -)" = "on osd.0" ] || fail "read back $obj"
ok "a new client writes through osd.0 while it is flooded"
if grep -q "too many connections (ms_max_conns)" "$cdir/log/osd.0.log"; then
	fail "osd.0 refused connections for want of slots: the unproved hellos took them"
fi
ok "osd.0 never ran out of connection slots"
grep -q "the oldest goes for a new one" "$cdir/log/osd.0.log" ||
	fail "osd.0 never closed an unproved handshake for a new one: $(tail -5 "$cdir/log/osd.0.log")"
ok "osd.0 closed the oldest unproved handshakes for new ones"
kill "$flood_pid" 2>/dev/null || true
wait "$flood_pid" 2>/dev/null || true
[ -d "/proc/$(daemon_field osd.0 pid)" ] || fail "osd.0 died"
ok "osd.0 still runs"
