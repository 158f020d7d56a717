#!/bin/bash
# rep_flip.sh ATOLL-CLUSTER ATOLL - a byte flipped in a replicated write on
# its way to a replica (doc/osd.md, "Replication"): osd.0 is restarted
# with the fault osd_rep_flip=2, which damages the data of the second
# REP_OP it sends after its crc was taken, as a bad NIC or cable would.
# The replica's messenger refuses the frame before anything is applied
# (its log says "bad payload crc") and drops the connection; the primary
# sees the replica answer heartbeats again in the same interval and peers
# the PG again, so the write completes (without that it waited for a map
# change that never came) and recovery gives the replica the object.
# Every write succeeds, every object reads back, and a deep scrub finds
# the three copies of every object the same.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../cluster/lib.sh"

"$bindir/posixfs/atoll-mds" --version 2>/dev/null | grep -q "fault injection: on" ||
	skip "this build has no fault injection (-Dfault_injection=false)"

cluster_up --mons 1 --osds 3 --no-mds --no-nbd
"$cluster_bin" osd stop --dir "$cdir" 0 >/dev/null
ATOLL_FAULTS=osd_rep_flip=2 "$cluster_bin" osd start --dir "$cdir" 0 >/dev/null
wait_health HEALTH_OK
ok "osd.0 restarted with osd_rep_flip=2"

head -c 100000 /dev/urandom >"$tmp/in"
written=0
k=0
while [ "$written" -lt 6 ]; do
	k=$((k + 1))
	[ "$k" -lt 500 ] || fail "no 6 objects with osd.0 as primary among 500 names"
	atoll --format json osd map default "obj$k" | pyjson "j['primary'] == 0" 2>/dev/null || continue
	t0=$(date +%s%N)
	timeout 30 "$atoll_bin" put default "obj$k" "$tmp/in" ||
		fail "writing obj$k (primary osd.0) failed or hung for 30 s"
	echo "obj$k $(( ($(date +%s%N) - t0) / 1000000 ))" >>"$tmp/times"
	written=$((written + 1))
done
ok "6 writes with osd.0 as primary succeeded (ms: $(awk '{ printf "%s ", $2 }' "$tmp/times"))"

grep -q "fault osd_rep_flip: a byte of the write" "$cdir/log/osd.0.log" ||
	fail "osd.0 did not flip a byte (the fault did not fire)"
grep -hq "bad payload crc (message type 31," "$cdir"/log/osd.[12].log ||
	fail "no replica refused the damaged REP_OP: $(grep -h "crc" "$cdir"/log/osd.*.log | tail -n 3)"
grep -q "a replicated write was lost with its connection to a replica that is up; peering again" \
	"$cdir/log/osd.0.log" || fail "osd.0 did not peer again"
ok "the replica refused the damaged REP_OP; the primary peered the PG again"

wait_health HEALTH_OK
for o in $(awk '{ print $1 }' "$tmp/times"); do
	atoll get default "$o" "$tmp/out" && cmp -s "$tmp/in" "$tmp/out" || fail "$o does not read back"
done
atoll pg deep-scrub default >"$tmp/scrub" 2>&1 || fail "deep scrub: $(cat "$tmp/scrub")"
! grep -v ": consistent$" "$tmp/scrub" | grep -q . || fail "deep scrub: $(grep -v ': consistent$' "$tmp/scrub")"
ok "every object reads back; a deep scrub finds every PG's copies the same"
echo "rep-flip: $n tests passed"
