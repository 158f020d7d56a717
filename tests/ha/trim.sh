#!/bin/bash
# trim.sh - trimming the monitors' map history (doc/quorum.md, "Trimming
# the map history") never strands an OSD that is down but in, and an OSD
# never goes active on a history with holes.
#
# Three monitors, three OSDs on three hosts, a pool of size 3 / min_size 2,
# a short kept history (mon_min_map_history 20, mon_trim_batch 5).  OSD A
# is stopped and stays in (noout); 2N map changes are made with a write
# between each; the history is trimmed (the first kept epoch moves) but
# never past A's down epoch.  Then B and C are killed and A restarted
# alone: A catches up by incrementals, sees the intervals B and C served
# without it, and its PGs are `down` (never active) while health names B
# and C.  Usage: trim.sh ATOLL-CLUSTER ATOLL [N]
set -euo pipefail
. "$(dirname "$0")/../cluster/lib.sh"
nchanges=${1:-20}

cluster_up --osds 3 --hosts 3 --no-mds --no-nbd --pool '' \
	--set mon_min_map_history=20 --set mon_trim_batch=5
wait_health HEALTH_OK
atoll pool create tp --size 3 --min-size 2 --pg 4 >/dev/null || fail "pool create"
wait_health HEALTH_OK
ok "3 monitors, 3 OSDs, pool tp: 4 PGs, size 3, min_size 2"

first_kept() { atoll --format json quorum status | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["first_epoch"]))'; }
epoch() { atoll --format json quorum status | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["epoch"]))'; }
osd_field() {
	atoll --format json osd dump | python3 -c '
import json, sys
for o in json.load(sys.stdin)["osds"]:
    if o["id"] == int(sys.argv[1]):
        print(o[sys.argv[2]])' "$1" "$2"
}

a=0 b=1 c=2
atoll osd set noout >/dev/null || fail "osd set noout"
"$cluster_bin" osd stop $a --dir "$cdir" >/dev/null || fail "stop osd.$a"
for i in $(seq 100); do
	[ "$(osd_field $a up)" = False ] && break
	sleep 0.2
done
[ "$(osd_field $a up)" = False ] || fail "osd.$a is not marked down"
down_at=$(osd_field $a down_at)
[ "$(osd_field $a in)" = True ] || fail "osd.$a went out"
first0=$(first_kept)
ok "osd.$a stopped: down at epoch $down_at, still in; history kept from epoch $first0"

head -c 65536 /dev/urandom >"$tmp/obj"
for i in $(seq $((2 * nchanges))); do
	if [ $((i % 2)) = 1 ]; then
		atoll osd unset noout >/dev/null || fail "osd unset noout"
	else
		atoll osd set noout >/dev/null || fail "osd set noout"
	fi
	atoll put tp "o$i" "$tmp/obj" || fail "write o$i"
done
atoll osd set noout >/dev/null || fail "osd set noout"
last=$(epoch)
ok "$((2 * nchanges)) map changes with writes on osd.$b and osd.$c: now at epoch $last"

# the leader trims on its tick once the PGs have reported
for i in $(seq 100); do
	f=$(first_kept)
	[ "$f" -gt "$first0" ] && break
	sleep 0.2
done
[ "$f" -gt "$first0" ] || fail "the history was not trimmed (kept from $f, now at $last)"
[ "$f" -le "$down_at" ] || fail "the history was trimmed to $f, past osd.$a's down epoch $down_at"
grep -h "map history trimmed below epoch" "$cdir"/log/mon.*.log >/dev/null ||
	fail "no monitor logged a trim"
# every member applied the same trim entry
for m in a b c; do
	grep -q "map history kept: epochs $f\.\." "$cdir/log/mon.$m.log" ||
		fail "mon.$m did not apply the trim to epoch $f"
done
ok "history trimmed: kept from epoch $f (was $first0), not past osd.$a's down epoch $down_at"

# a member restarted on its trimmed store replays its log and catches up
"$cluster_bin" mon kill --dir "$cdir" >/dev/null || fail "mon kill (the leader)"
"$cluster_bin" mon start --dir "$cdir" >/dev/null || fail "mon start"
atoll osd unset noout >/dev/null || fail "osd unset noout after the restart"
atoll osd set noout >/dev/null || fail "osd set noout after the restart"
for i in $(seq 100); do
	atoll --format json quorum status 2>/dev/null | pyjson \
		"len(j['members']) == 3 and all(m['epoch'] == j['epoch'] for m in j['members']) and len(set(m['digest'] for m in j['members'])) == 1" \
		2>/dev/null && break
	sleep 0.2
done
atoll --format json quorum status | pyjson \
	"all(m['epoch'] == j['epoch'] for m in j['members']) and len(set(m['digest'] for m in j['members'])) == 1" ||
	fail "the members do not agree after the leader restarted on a trimmed store"
ok "the leader killed and restarted on its trimmed store: all members at epoch $(epoch), same digest"

"$cluster_bin" osd kill $b --dir "$cdir" >/dev/null || fail "kill osd.$b"
"$cluster_bin" osd kill $c --dir "$cdir" >/dev/null || fail "kill osd.$c"
"$cluster_bin" osd start $a --dir "$cdir" >/dev/null || fail "start osd.$a"
for i in $(seq 150); do
	[ "$(osd_field $b up)" = False ] && [ "$(osd_field $c up)" = False ] &&
		[ "$(osd_field $a up)" = True ] && break
	sleep 0.2
done
[ "$(osd_field $a up)" = True ] || fail "osd.$a did not come back up"
[ "$(osd_field $b up)$(osd_field $c up)" = FalseFalse ] || fail "osd.$b and osd.$c not marked down"
ok "osd.$b and osd.$c killed, osd.$a restarted alone"

# every PG of tp must be down on osd.$a, and none ever active meanwhile
pgs_state() {
	# the states osd.$a reports (a dead primary's last report is "stale")
	atoll --format json pg ls tp 2>/dev/null | python3 -c '
import json, sys
pgs = [p for p in json.load(sys.stdin) if "stale" not in p["state"]]
print(" ".join(sorted(set(p["state"] for p in pgs))))' 2>/dev/null || true
}
alldown=0
for i in $(seq 75); do
	s=$(pgs_state)
	case " $s " in *" active"*) fail "a PG of tp went active on osd.$a alone: $s" ;; esac
	if [ -n "$s" ] && [ "$(printf '%s\n' $s | grep -vc down || true)" = 0 ] &&
		atoll --format json pg ls tp | pyjson "all(p['acting'] == [$a] for p in j)" 2>/dev/null; then
		alldown=$((alldown + 1))
		[ $alldown -ge 10 ] && break
	fi
	sleep 0.2
done
[ $alldown -ge 10 ] || { atoll pg ls tp >&2; fail "the PGs of tp are not all down on osd.$a: $s"; }
grep -q "is down: no OSD of interval" "$cdir/log/osd.$a.log" ||
	fail "osd.$a did not log why its PGs are down"
ok "osd.$a caught up by incrementals: every PG of tp is '$s', never active"

atoll health detail >"$tmp/health" || true
grep "pg [0-9a-f.]* is down" "$tmp/health" | grep "osd.$b" | grep >/dev/null "osd.$c" ||
	{ cat "$tmp/health" >&2; fail "health does not name osd.$b and osd.$c"; }
ok "health names osd.$b and osd.$c as the OSDs to bring back"
echo "all $n checks passed"
