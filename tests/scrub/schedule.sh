#!/bin/bash
# schedule.sh - shallow scrub, osd scrub, the scrub schedule, PG_DAMAGED
# naming the object and the OSD, and the operator's PG commands
# (doc/scrub.md, doc/admin.md):
# 3 OSDs with osd_scrub_interval=1s and osd_deep_scrub_interval=3s;
# `atoll pg scrub` and `atoll osd scrub 0` find everything consistent,
# `pg stat`, `pg ls --state` and `pg query` answer; with osd.1 stopped, one
# object's copy is removed from its store and one byte of another object
# (in another PG) is flipped on its disk: a shallow scrub (no data read)
# names the missing copy and finds the flipped one's PG consistent; the
# schedule alone (no scrub command) finds the flipped byte, health turns
# HEALTH_ERR naming the object and osd.1, `pg ls --state inconsistent`
# and `pg query` show it; `pg repair` brings HEALTH_OK back.
set -euo pipefail
. "$(dirname "$0")/../cluster/lib.sh"

store_rm_bin=${1:?usage: $0 ATOLL-CLUSTER ATOLL SCRUB-STORE-RM}
[ -x "$store_rm_bin" ] || skip "scrub-store-rm is missing ($store_rm_bin)"

cluster_up --osds 3 --pg 8 --no-mds --no-nbd \
	--set osd_scrub_interval=1s --set osd_deep_scrub_interval=3s
wait_health HEALTH_OK
for i in $(seq 0 11); do
	head -c $(( 8192 + i * 100 )) /dev/urandom >"$tmp/o$i"
	atoll put default "o$i" "$tmp/o$i"
done
atoll pg scrub default >"$tmp/scrub0" || { cat "$tmp/scrub0"; fail "pg scrub"; }
[ "$(grep -c ': consistent$' "$tmp/scrub0")" = 8 ] || { cat "$tmp/scrub0"; fail "8 consistent PGs"; }
want=$(atoll --format json pg ls | python3 -c 'import json,sys; print(sum(p["primary"] == 0 for p in json.load(sys.stdin)))')
atoll osd scrub 0 --deep >"$tmp/osd0" || { cat "$tmp/osd0"; fail "osd scrub 0"; }
[ "$(grep -c ': consistent$' "$tmp/osd0")" = "$want" ] || { cat "$tmp/osd0"; fail "osd scrub 0: $want PGs"; }
expect 3 "osd.7 does not exist" atoll osd scrub 7
ok "pg scrub: 8 PGs consistent; osd scrub 0 --deep: the $want PGs osd.0 is primary of"

atoll pg stat | grep >/dev/null "^8 pgs: 8 active+clean; .* 0 of .* object copies degraded" ||
	{ atoll pg stat; fail "pg stat"; }
atoll --format json pg stat | pyjson "j['pgs'] == 8 and j['recovery']['degraded'] == 0"
atoll --format json pg ls --state active | pyjson "len(j) == 8"
atoll --format json pg ls default --state degraded,inactive | pyjson "len(j) == 0"
expect 1 "unknown PG state 'sad'" atoll pg ls --state sad
atoll --format json pg query 1.0 | pyjson "(j['state'] == 'active+clean' and len(j['acting']) == 3 and
    j['log_head']['seq'] >= 0 and j['scrub']['last_deep_scrub'] > 0 and j['last_epoch_started'] > 0)"
atoll pg query 1.0 | grep >/dev/null "^  last deep scrub: 20" || { atoll pg query 1.0; fail "pg query text"; }
expect 3 "there is no PG '1.99'" atoll pg query 1.99
ok "pg stat, pg ls --state, pg query (text and json)"

# two objects in two PGs (3 OSDs, size 3: osd.1 holds a copy of each)
obj= pgid= gone= gpgid=
for i in $(seq 0 11); do
	p=$(atoll --format json osd map default "o$i" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pgid"])')
	if [ -z "$obj" ]; then
		obj=o$i pgid=$p
	elif [ "$p" != "$pgid" ]; then
		gone=o$i gpgid=$p
		break
	fi
done
[ -n "$gone" ] || fail "all 12 objects in one PG"
"$cluster_bin" osd stop 1 --dir "$cdir" >/dev/null || fail "osd stop 1"
"$store_rm_bin" "$cdir/osd.1" "$gpgid" "$gone" || fail "removing $gone from osd.1's store"
python3 - "$cdir/osd.1/block" "$tmp/$obj" <<'PY' || fail "flipping a byte"
import mmap, sys
f = open(sys.argv[1], "r+b")
m = mmap.mmap(f.fileno(), 0)
marker = open(sys.argv[2], "rb").read()[4096:4096 + 256]
# every copy: a small write's bytes stay in the store's log region too
i, n = m.find(marker), 0
while i >= 0:
    m[i + 100] ^= 0x5a
    n += 1
    i = m.find(marker, i + 1)
assert 1 <= n <= 2, "marker found %d times" % n
m.flush()
PY
"$cluster_bin" osd start 1 --dir "$cdir" >/dev/null || fail "osd start 1"
atoll pg scrub "$pgid" >"$tmp/shallow" || { cat "$tmp/shallow"; fail "shallow scrub of $pgid"; }
grep -q ': consistent$' "$tmp/shallow" || { cat "$tmp/shallow"; fail "shallow scrub read data"; }
rc=0
atoll pg scrub "$gpgid" >"$tmp/shallow2" || rc=$?
[ $rc = 1 ] && grep -q "^  '$gone' on osd.1: missing$" "$tmp/shallow2" ||
	{ cat "$tmp/shallow2"; fail "shallow scrub of $gpgid exited $rc, not naming $gone missing"; }
ok "osd.1: $gone (pg $gpgid) removed, a byte of $obj (pg $pgid) flipped; a shallow scrub names $gone missing, and reads no data: $pgid consistent"

# no scrub command from here: the schedule finds it
found=
for i in $(seq 150); do
	if atoll health detail >"$tmp/health" 2>/dev/null &&
	   grep -q "object '$obj' on osd.1: read error" "$tmp/health" &&
	   grep -q "object '$gone' on osd.1: missing" "$tmp/health"; then
		found=1
		break
	fi
	sleep 0.2
done
[ -n "$found" ] || { cat "$tmp/health"; fail "the schedule did not find $obj"; }
head -n 1 "$tmp/health" | grep >/dev/null HEALTH_ERR || { cat "$tmp/health"; fail "not HEALTH_ERR"; }
grep -q "^PG_DAMAGED: 2 pgs inconsistent: .* (first: object '.*' on osd.1 in pg " "$tmp/health" &&
grep -q "^    pg $pgid: object '$obj' on osd.1: read error; " "$tmp/health" &&
grep -q "^    pg $gpgid: object '$gone' on osd.1: missing; " "$tmp/health" ||
	{ cat "$tmp/health"; fail "PG_DAMAGED does not name both"; }
atoll --format json pg ls --state inconsistent | pyjson "sorted(p['pgid'] for p in j) == sorted(['$pgid', '$gpgid'])"
atoll --format json pg query "$pgid" |
	pyjson "j['scrub']['inconsistent'] == [{'object': '$obj', 'osd': 1, 'error': 'read error'}]"
ok "the schedule alone found the flipped byte: HEALTH_ERR, PG_DAMAGED names '$obj' and '$gone' on osd.1; pg ls, pg query show them"

atoll pg repair default >"$tmp/repair" || { cat "$tmp/repair"; fail "repair"; }
wait_health HEALTH_OK 30
for o in "$obj" "$gone"; do
	atoll get default "$o" "$tmp/back"
	cmp -s "$tmp/$o" "$tmp/back" || fail "$o reads back wrong after repair"
done
atoll pg scrub default >"$tmp/scrub1" || { cat "$tmp/scrub1"; fail "pg scrub after repair"; }
[ "$(grep -c ': consistent$' "$tmp/scrub1")" = 8 ] || { cat "$tmp/scrub1"; fail "8 consistent PGs after repair"; }
ok "pg repair default: HEALTH_OK again, both read back right, every copy's metadata agrees"
echo "all $n checks passed"
