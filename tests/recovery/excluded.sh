#!/bin/bash
# excluded.sh - writes that go on while a member is recovered
# (doc/recovery.md, "Client ops while recovering") must not be lost when
# the members that took them die before it is complete.
#
# Three OSDs on three hosts, a pool of one PG, size 3 / min_size 1, with
# recovery slowed down (one object at a time, resting 1 s after each).
# C, a replica, is killed; objects are written; C comes back and is
# recovered while writes go on without it: W is written, acknowledged by
# the primary A and the replica B.  B dies: A goes on alone, still without
# C, and acknowledges W2.  A dies and B comes back before C is complete:
# B and C are enough for min_size and both were members of W2's interval,
# but neither has W2: the PG must be `down` (C recorded that it lacks the
# writes of that interval, so it is no witness of it), health must name
# A, and a read of W2 must not be answered.  A comes back: W and W2 read
# back whole.  (Without the record the PG goes active on B's log, and W2
# is lost.)
set -euo pipefail
. "$(dirname "$0")/../cluster/lib.sh"

cluster_up --osds 3 --hosts 3 --no-mds --no-nbd --pool '' \
	--set osd_recovery_sleep_ms=1000 --set osd_recovery_max_active=1
wait_health HEALTH_OK
atoll pool create px --size 3 --min-size 1 --pg 1 >/dev/null || fail "pool create"
atoll osd set noout >/dev/null || fail "atoll osd set noout"

wait_pg1 px 'active+clean'
ok "3 OSDs on 3 hosts, pool px: one PG, size 3, min_size 1, recovery slowed"

read -r a b c < <(atoll --format json osd map px x | python3 -c '
import json, sys
j = json.load(sys.stdin)
print(*j["acting"])')
"$cluster_bin" osd kill "$c" --dir "$cdir" >/dev/null || fail "kill osd.$c"
wait_pg1 px '*degraded*'
head -c 200000 /dev/urandom >"$tmp/o"
for i in $(seq 12); do
	atoll put px "o$i" "$tmp/o" || fail "writing o$i"
done
ok "osd.$c (a replica of primary osd.$a) killed; 12 objects written without it"

"$cluster_bin" osd start "$c" --dir "$cdir" >/dev/null || fail "start osd.$c"
wait_log "$cdir/log/osd.$a.log" 1 "writes go on without osd.$c"
head -c 1000000 /dev/urandom >"$tmp/w"
atoll put px w "$tmp/w" || fail "writing W"
# (the PG stats come with the primary's beacons: its log says it at once)
! grep -q "osd.$c is up to date" "$cdir/log/osd.$a.log" ||
	fail "the recovery of osd.$c ended before the test could kill the others"
ok "osd.$c back and being recovered; W acknowledged by osd.$a and osd.$b only"

# B dies: the PG goes on with A alone taking writes (min_size 1), still
# without C
"$cluster_bin" osd kill "$b" --dir "$cdir" >/dev/null || fail "kill osd.$b"
wait_log "$cdir/log/osd.$a.log" 2 "writes go on without osd.$c"
head -c 1000000 /dev/urandom >"$tmp/w2"
atoll put px w2 "$tmp/w2" || fail "writing W2"
! grep -q "osd.$c is up to date" "$cdir/log/osd.$a.log" ||
	fail "the recovery of osd.$c ended before the test could kill osd.$a"
ok "osd.$b killed; W2 acknowledged by osd.$a alone, osd.$c still recovering"

"$cluster_bin" osd kill "$a" --dir "$cdir" >/dev/null || fail "kill osd.$a"
"$cluster_bin" osd start "$b" --dir "$cdir" >/dev/null || fail "start osd.$b"
# osd.b has W, osd.c neither W nor W2: only osd.a has W2
sleep 6		# osd.a is marked down by its missing beacons
wait_pg1 px '*down*'
ok "osd.$a killed, osd.$b back: the PG is '$state' (osd.$c is no witness of W2's interval)"

atoll health detail >"$tmp/health" || true
grep "pg [0-9a-f.]* is down" "$tmp/health" | grep >/dev/null "osd.$a" ||
	{ cat "$tmp/health" >&2; fail "health does not name osd.$a"; }
ok "health names osd.$a as the OSD to bring back"

read_waits px w2
ok "a read of W2 waits (neither old data nor 'no such object')"

"$cluster_bin" osd start "$a" --dir "$cdir" >/dev/null || fail "start osd.$a"
wait_pg1 px 'active*'
atoll get px w "$tmp/r2" || fail "reading W"
cmp -s "$tmp/w" "$tmp/r2" || fail "W read back differs"
atoll get px w2 "$tmp/r2" || fail "reading W2"
cmp -s "$tmp/w2" "$tmp/r2" || fail "W2 read back differs"
for i in $(seq 12); do
	atoll get px "o$i" "$tmp/r3" || fail "reading o$i"
	cmp -s "$tmp/o" "$tmp/r3" || fail "o$i read back differs"
done
ok "osd.$a back: the PG is $state; W, W2 and the 12 objects read back whole"

atoll osd unset noout >/dev/null || fail "atoll osd unset noout"
# (min_size 1 itself is a health warning)
atoll pool set px min_size 2 >/dev/null || fail "atoll pool set px min_size 2"
wait_health HEALTH_OK 120
ok "HEALTH_OK"
echo "all $n checks passed"
