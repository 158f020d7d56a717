#!/bin/bash
# trim_hole.sh - an OSD that comes back with a map older than the oldest
# epoch the monitors keep gets a full map, cannot see the intervals the
# trimmed epochs made, and must not go active on that history with a hole
# (doc/quorum.md, "Trimming the map history").
#
# Three OSDs, a pool of size 2 / min_size 1.  OSD A is killed and marked
# out: its PGs move to B and C, become clean, and objects are rewritten
# there.  Map changes follow until the history is trimmed past A's map.
# Then B and C are killed, A is marked in and started alone: it must log
# the hole, its PGs must be `down` (never active: with min_size 1 they
# would otherwise serve A's stale copies), and a read must not be answered.
# When B and C come back the PGs go active with the rewritten objects.
set -euo pipefail
. "$(dirname "$0")/../cluster/lib.sh"

cluster_up --osds 3 --hosts 3 --no-mds --no-nbd --pool '' \
	--set mon_min_map_history=10 --set mon_trim_batch=5
wait_health HEALTH_OK
atoll pool create th --size 2 --min-size 1 --pg 4 >/dev/null || fail "pool create"
# health warns of min_size 1 (POOL_NO_REDUNDANCY): wait for the PGs
wait_clean() {
	local i
	for i in $(seq 300); do
		atoll --format json pg ls th 2>/dev/null |
			pyjson "len(j) == 4 and all(p['state'] == 'active+clean' and $1 not in p['acting'] for p in j)" \
			2>/dev/null && return 0
		sleep 0.2
	done
	atoll pg ls th >&2 || true
	fail "the PGs of th are not all active+clean"
}
wait_clean -1
head -c 65536 /dev/urandom >"$tmp/old"
head -c 65536 /dev/urandom >"$tmp/new"
for i in 1 2 3 4 5 6 7 8; do
	atoll put th "o$i" "$tmp/old" || fail "write o$i"
done
ok "pool th (size 2, min_size 1), 8 objects written"

first_kept() { atoll --format json quorum status | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["first_epoch"]))'; }
osd_field() {
	atoll --format json osd dump | python3 -c '
import json, sys
for o in json.load(sys.stdin)["osds"]:
    if o["id"] == int(sys.argv[1]):
        print(o[sys.argv[2]])' "$1" "$2"
}

a=0 b=1 c=2
# killed, so that its last map still shows it up and acting: without the
# hole it would take its own copies as the PGs' latest
"$cluster_bin" osd kill $a --dir "$cdir" >/dev/null || fail "kill osd.$a"
for i in $(seq 100); do
	[ "$(osd_field $a up)" = False ] && break
	sleep 0.2
done
down_at=$(osd_field $a down_at)
atoll osd out $a >/dev/null || fail "osd out"
wait_clean $a
for i in 1 2 3 4 5 6 7 8; do
	atoll put th "o$i" "$tmp/new" || fail "rewrite o$i"
done
ok "osd.$a killed (down at $down_at) and out; the objects rewritten on osd.$b and osd.$c"

for i in $(seq 30); do
	if [ $((i % 2)) = 1 ]; then
		atoll osd set noout >/dev/null || fail "osd set noout"
	else
		atoll osd unset noout >/dev/null || fail "osd unset noout"
	fi
done
for i in $(seq 100); do
	f=$(first_kept)
	[ "$f" -gt $((down_at + 1)) ] && break
	sleep 0.2
done
[ "$f" -gt $((down_at + 1)) ] || fail "the history was not trimmed past osd.$a's map (kept from $f)"
ok "history trimmed past osd.$a's map: kept from epoch $f (osd.$a holds at most $down_at)"

# osd.$b first, so that osd.$c serves alone for an interval osd.$b never saw
"$cluster_bin" osd kill $b --dir "$cdir" >/dev/null || fail "kill osd.$b"
for i in $(seq 150); do
	[ "$(osd_field $b up)" = False ] && break
	sleep 0.2
done
"$cluster_bin" osd kill $c --dir "$cdir" >/dev/null || fail "kill osd.$c"
for i in $(seq 150); do
	[ "$(osd_field $b up)$(osd_field $c up)" = FalseFalse ] && break
	sleep 0.2
done
[ "$(osd_field $b up)$(osd_field $c up)" = FalseFalse ] || fail "osd.$b and osd.$c not marked down"
atoll osd in $a >/dev/null || fail "osd in"
"$cluster_bin" osd start $a --dir "$cdir" >/dev/null || fail "start osd.$a"
wait_log "$cdir/log/osd.$a.log" 1 "no longer keep epochs"
ok "osd.$b and osd.$c killed, osd.$a in and started alone: it logged the hole"

pgs_state() {
	# the states osd.$a reports (a dead primary's last report is "stale")
	atoll --format json pg ls th 2>/dev/null | python3 -c '
import json, sys
pgs = [p for p in json.load(sys.stdin) if "stale" not in p["state"]]
print(" ".join(sorted(set(p["state"] for p in pgs))))' 2>/dev/null || true
}
alldown=0
for i in $(seq 100); do
	s=$(pgs_state)
	case " $s " in *" active"*) fail "a PG of th went active on osd.$a's history with a hole: $s" ;; esac
	# a PG whose placement holds only B and C has no acting member (stale)
	if [ -n "$s" ] && [ "$(printf '%s\n' $s | grep -vc down || true)" = 0 ] &&
		atoll --format json pg ls th | pyjson "all(p['acting'] == [$a] for p in j if 'stale' not in p['state'])" 2>/dev/null; then
		alldown=$((alldown + 1))
		[ $alldown -ge 10 ] && break
	fi
	sleep 0.2
done
[ $alldown -ge 10 ] || { atoll pg ls th >&2; fail "the PGs of th are not all down on osd.$a: $s"; }
grep -q "skipped epochs .* (trimmed by the monitors)" "$cdir/log/osd.$a.log" || { grep peering "$cdir/log/osd.$a.log" | tail -20 >&2;
	fail "osd.$a did not log why its PGs are down"; }
# a read of an object whose PG osd.$a holds waits
obj=$(atoll --format json pg ls th | python3 -c '
import json, subprocess, sys
pgs = {p["pgid"] for p in json.load(sys.stdin) if "stale" not in p["state"]}
for i in range(1, 9):
    j = json.loads(subprocess.check_output([sys.argv[1], "--format", "json", "osd", "map", "th", "o%d" % i]))
    if j["pgid"] in pgs:
        print("o%d" % i)
        break' "$atoll_bin")
[ -n "$obj" ] || fail "no object is in a PG osd.$a holds"
read_waits th "$obj"
ok "every PG of th on osd.$a is '$s', never active; a read of $obj waits (no stale copy)"

# B and C back: they saw the skipped epochs, so the hole is accounted for;
# the PGs go active with the rewritten objects, never osd.$a's old ones
# one at a time: a PG that peers with osd.$b alone and stays down for an
# interval only osd.$c saw must peer again when osd.$c comes up
"$cluster_bin" osd start $b --dir "$cdir" >/dev/null || fail "start osd.$b"
for i in $(seq 100); do
	[ "$(osd_field $b up)" = True ] && break
	sleep 0.2
done
for i in $(seq 50); do
	case " $(pgs_state) " in *peering*) sleep 0.2 ;; *) break ;; esac
done
"$cluster_bin" osd start $c --dir "$cdir" >/dev/null || fail "start osd.$c"
wait_clean -1
for i in 1 2 3 4 5 6 7 8; do
	atoll get th "o$i" "$tmp/r" || fail "read o$i"
	cmp -s "$tmp/r" "$tmp/new" || fail "o$i read back is not the rewritten object"
done
ok "osd.$b and osd.$c back: every PG active+clean, the 8 objects read back rewritten"
echo "all $n checks passed"
