#!/bin/bash
# rebalance.sh - data moves when the cluster changes (doc/recovery.md,
# "Backfill"): four OSDs on four hosts, pool size 3.  osd.3 is marked out
# while objects are written, overwritten and deleted: its PGs move to the
# others by backfill behind temporary acting sets, HEALTH_OK; a fifth OSD
# on a fifth host joins: the PGs placement gives it move there, HEALTH_OK.
# After each step every object must read back right, and at the end the
# stopped OSDs' stores, inspected offline, must hold every object on
# exactly the OSDs `atoll osd map` names (no copy left behind on osd.3,
# none missing on osd.4) and no deleted one anywhere.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# a short log: the moved PGs hold more writes than it, so they go by backfill
cluster_up --osds 4 --hosts 4 --no-mds --no-nbd --set osd_pg_log_max=5
wait_health HEALTH_OK
ok "4 OSDs on 4 hosts, pool default size 3"

rc phase1 || fail "phase 1 (60 objects)"
ok "60 objects written"

start=$(date +%s)
atoll osd out 3 >/dev/null || fail "atoll osd out 3"
rc phase2 || fail "phase 2 while osd.3's PGs move"
wait_placed
ok "osd.3 out, written to meanwhile: HEALTH_OK, PGs active+clean on their new OSDs, in $(( $(date +%s) - start )) s"
grep -q "is backfilled" "$cdir"/log/osd.*.log || fail "no OSD log says it backfilled a PG"
[ "$(wc -l <"$tmp/want")" = 69 ] || fail "verify listed $(wc -l <"$tmp/want") objects, not 69"
! awk '{print $3}' "$tmp/place" | tr , '\n' | grep -x >/dev/null 3 || fail "placement still names osd.3"
ok "every object reads back right; the deleted ones are gone"

start=$(date +%s)
"$cluster_bin" osd add --dir "$cdir" --host 4 --size 1G >"$tmp/add.out" 2>&1 ||
	{ cat "$tmp/add.out" >&2; fail "atoll-cluster osd add"; }
for i in $(seq 150); do
	atoll --format json osd dump 2>/dev/null |
		pyjson "any(o['id'] == 4 and o['up'] and o['in'] for o in j['osds'])" 2>/dev/null &&
		break
	sleep 0.2
done
atoll --format json osd dump |
	pyjson "any(o['id'] == 4 and o['up'] and o['in'] for o in j['osds'])" ||
	fail "osd.4 is not up and in"
cp "$tmp/want" "$tmp/want1"
wait_placed
awk '{print $3}' "$tmp/place" | tr , '\n' | grep -x >/dev/null 4 || fail "no PG moved to osd.4"
ok "osd.4 added on a fifth host: HEALTH_OK, PGs active+clean, some on osd.4, in $(( $(date +%s) - start )) s"
cmp -s "$tmp/want1" "$tmp/want" || fail "verify lists other objects after osd.4 joined"
ok "every object reads back right"

# the stores offline against where placement puts each object
awk '{print $1, $3}' "$tmp/place" >"$tmp/map"
"$cluster_bin" down --dir "$cdir" >/dev/null || fail "atoll-cluster down"
python3 "$check" "$storetool_bin" "$cdir" "$tmp/want" "$tmp/map" ||
	fail "the stores do not hold what placement says"
ok "offline: every object on exactly the 3 OSDs placement names, no stray or deleted copy"
echo "all $n checks passed"
