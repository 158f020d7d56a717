#!/bin/bash
# osd_parked.sh ATOLL-CLUSTER ATOLL PARK-PROBE - ops naming a map epoch the
# OSD does not have wait for it within bounds (doc/limits.md, "OSD"):
# with osd_map_wait_max_per_conn 8, osd_map_wait_max_per_pg 12,
# osd_map_wait_max_ops 16 and osd_map_wait_timeout 3s, one connection
# sending 10 such ops has 2 refused at once (-EAGAIN) and 8 let go at the
# timeout (-EAGAIN); a second connection to the same PG then has 6 refused
# (the PG holds 12) and 4 let go; a third, to another PG, has 6 refused
# (the OSD holds 16) and 4 let go.  Nothing is left unanswered, the OSD
# stays up and serves an ordinary client, and its log says why it
# refused.  A cluster peer (a hello naming an OSD) past the same bound has
# its connection closed instead.  Last, a legitimate client ahead of the
# OSD: osd.0 restarted with every map held back 4.5 s (fault injection
# osd_map_delay_ms), a pool created, an object written to it at once: its
# op is let go at the timeout with -EAGAIN, the client library sends it
# again until the map is in, and the write succeeds.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
probe=${3:?usage: $0 ATOLL-CLUSTER ATOLL PARK-PROBE}
. "$here/../cluster/lib.sh"

# auth=none: park_probe declares itself a client or osd.99 without a key
# (doc/security.md); the budgets are the same with auth
cluster_up --mons 1 --osds 1 --hosts 1 --set auth=none \
	--set osd_map_wait_max_per_conn=8 --set osd_map_wait_max_per_pg=12 \
	--set osd_map_wait_max_ops=16 --set osd_map_wait_timeout=3s
addr=$(state_addr osd.0)
pid=$(state_pid osd.0)
[ -n "$addr" ] && [ "$pid" != 0 ] || fail "no osd.0 in $cdir/cluster.state"
ok "a cluster of one OSD with small osd_map_wait_* limits"

# field NAME FILE: the probe's count for NAME
field() { awk -v n="$1" '$1 == n { print $2 }' "$2"; }

"$probe" "$addr" 10 1000000 10 >"$tmp/a.out" &
apid=$!
sleep 0.5
"$probe" "$addr" 10 1000000 10 >"$tmp/b.out" &
bpid=$!
sleep 0.5
"$probe" "$addr" 10 1000000 10 1 >"$tmp/c.out" || fail "the third probe failed"
wait $apid || fail "the first probe failed"
wait $bpid || fail "the second probe failed"
cat "$tmp/a.out" "$tmp/b.out" "$tmp/c.out"
[ "$(field eagain_now "$tmp/a.out")" = 2 ] && [ "$(field eagain_late "$tmp/a.out")" = 8 ] ||
	fail "first connection: not 2 refused and 8 timed out: $(tr '\n' ' ' <"$tmp/a.out")"
ok "past osd_map_wait_max_per_conn: -EAGAIN at once; the parked ones -EAGAIN at the timeout"
[ "$(field eagain_now "$tmp/b.out")" = 6 ] && [ "$(field eagain_late "$tmp/b.out")" = 4 ] ||
	fail "second connection: not 6 refused and 4 timed out: $(tr '\n' ' ' <"$tmp/b.out")"
ok "past osd_map_wait_max_per_pg: -EAGAIN at once for the other connection too"
[ "$(field eagain_now "$tmp/c.out")" = 6 ] && [ "$(field eagain_late "$tmp/c.out")" = 4 ] ||
	fail "third connection: not 6 refused and 4 timed out: $(tr '\n' ' ' <"$tmp/c.out")"
ok "past osd_map_wait_max_ops: -EAGAIN at once for another PG too"
for f in a b c; do
	[ "$(field other "$tmp/$f.out")" = 0 ] && [ "$(field noreply "$tmp/$f.out")" = 0 ] ||
		fail "probe $f: an op got another answer or none: $(tr '\n' ' ' <"$tmp/$f.out")"
done
ok "every parked op was answered"

# a cluster peer past a bound: its connection is closed, its parked
# messages dropped (every op fails on the probe's side), the OSD says so
sleep 3.5	# the client probes' parked ops are gone (timeout 3s)
PARK_PROBE_AS=osd "$probe" "$addr" 10 1000000 10 >"$tmp/p.out" || fail "the peer probe failed"
cat "$tmp/p.out"
[ "$(field noreply "$tmp/p.out")" = 10 ] ||
	fail "a peer past osd_map_wait_max_per_conn kept its connection: $(tr '\n' ' ' <"$tmp/p.out")"
grep -q "closing the connection of osd.99" "$cdir"/log/osd.0.log ||
	fail "the OSD log does not say it closed the peer's connection"
ok "a cluster peer past a bound has its connection closed, not its ops refused one by one"

kill -0 "$pid" || fail "osd.0 died"
head -c 65536 /dev/urandom >"$tmp/in"
atoll put default obj1 "$tmp/in"
atoll get default obj1 "$tmp/outfile"
cmp "$tmp/in" "$tmp/outfile" || fail "the object read back differs"
ok "the OSD still serves an ordinary client"

grep -q "refusing messages with a future map epoch" "$cdir"/log/osd.0.log ||
	fail "the OSD log does not say why it refused"
ok "the OSD log says what it refused and which limit"

if "$bindir/posixfs/atoll-mds" --version 2>/dev/null | grep -q "fault injection: on"; then
	"$cluster_bin" osd stop --dir "$cdir" 0 >/dev/null
	ATOLL_FAULTS=osd_map_delay_ms=4500 "$cluster_bin" osd start --dir "$cdir" 0 >/dev/null
	for i in $(seq 300); do
		atoll put default obj2 "$tmp/in" 2>/dev/null && break
		[ "$i" -lt 300 ] || fail "osd.0 does not serve after its restart"
		sleep 0.2
	done
	atoll pool create lag --size 1 --pg 4 >/dev/null 2>&1
	t0=$(date +%s%N)
	atoll put lag obj3 "$tmp/in" || fail "a write to a pool the OSD does not know yet failed"
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	atoll get lag obj3 "$tmp/outfile" && cmp "$tmp/in" "$tmp/outfile" ||
		fail "the object written ahead of the OSD's map reads back wrong"
	# a parked op is let go after 3 s at most (checked above): a write
	# that took longer went through only because the client sent it again
	[ "$ms" -ge 3200 ] || fail "the write took $ms ms: it did not wait for the OSD's map"
	grep -q "waited past osd_map_wait_timeout" "$cdir/log/osd.0.log" ||
		fail "the OSD never let a parked op go at the timeout"
	ok "a client ahead of the OSD's map: -EAGAIN at the timeout, sent again, written in $ms ms"
else
	echo "skipped: a client ahead of the OSD's map: this build has no fault injection"
fi
