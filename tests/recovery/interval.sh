#!/bin/bash
# interval.sh - the past-interval case of peering (doc/osd.md, "Peering"):
# a PG whose interval {A,B} acknowledged a write W must not go active
# without W when A and B die and C and D take the PG over.
#
# Four OSDs on four hosts, a pool of one PG, size 2 / min_size 2.  W is
# written while the PG lives on A and B; A and B are killed together and
# marked out, so
# placement gives the PG to C and D, which never held it.  The PG must be
# `down`, health must name A and B as the OSDs to bring back, and a read
# of W must not be answered (neither with old data nor "no such object").
# Then A alone comes back: the PG goes active and W reads back whole.
set -euo pipefail
. "$(dirname "$0")/../cluster/lib.sh"

cluster_up --osds 4 --hosts 4 --no-mds --no-nbd --pool ''
wait_health HEALTH_OK
atoll pool create pi --size 2 --min-size 2 --pg 1 >/dev/null || fail "pool create"
wait_health HEALTH_OK
ok "4 OSDs on 4 hosts, pool pi: one PG, size 2, min_size 2"

head -c 1000000 /dev/urandom >"$tmp/w"
atoll put pi w "$tmp/w" || fail "writing W"
read -r a b < <(atoll --format json osd map pi w | python3 -c '
import json, sys
j = json.load(sys.stdin)
print(*j["acting"])')
ok "W acknowledged by the PG's interval {osd.$a, osd.$b}"

"$cluster_bin" osd kill "$a" --dir "$cdir" >/dev/null || fail "kill osd.$a"
"$cluster_bin" osd kill "$b" --dir "$cdir" >/dev/null || fail "kill osd.$b"
# marked out (as the down-out timer would), the PG moves to the other two,
# which must find it down
atoll osd out "$a" "$b" >/dev/null || fail "atoll osd out"
wait_pg1 pi '*down*'
acting=$(atoll --format json pg ls pi | python3 -c 'import json,sys; print(*json.load(sys.stdin)[0]["acting"])')
for o in $acting; do
	[ "$o" != "$a" ] && [ "$o" != "$b" ] || fail "the down PG's acting set $acting holds osd.$o"
done
ok "osd.$a and osd.$b killed: the PG is '$state' on osd.${acting// /, osd.}"

atoll health detail >"$tmp/health" || true
grep "pg [0-9a-f.]* is down" "$tmp/health" | grep "osd.$a" | grep >/dev/null "osd.$b" ||
	{ cat "$tmp/health" >&2; fail "health does not name osd.$a and osd.$b"; }
ok "health names osd.$a and osd.$b as the OSDs to bring back"

# a read waits: no answer at all within 5 s, so neither stale data nor ENOENT
read_waits pi w
ok "a read of W waits while the PG is down"

"$cluster_bin" osd start "$a" --dir "$cdir" >/dev/null || fail "start osd.$a"
atoll osd in "$a" >/dev/null || fail "atoll osd in"
wait_pg1 pi 'active*'
atoll get pi w "$tmp/r2" || fail "reading W"
cmp -s "$tmp/w" "$tmp/r2" || fail "W read back differs"
ok "osd.$a back: the PG is $state and W reads back whole"
echo "all $n checks passed"
