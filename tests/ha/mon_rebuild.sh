#!/bin/bash
# tests/ha/mon_rebuild.sh ATOLL-CLUSTER ATOLL - disaster recovery from one
# survivor (doc/admin.md): three monitors and three OSDs; mon.a and mon.b
# are killed for good; --rebuild refuses without its flag, then makes
# mon.c a one-member quorum of incarnation 2 with the map epoch bumped
# once; the OSDs and a client carry on (writes and reads, the OSDs save
# the new incarnation); two new members are added with `atoll mon add`;
# the old mon.a started on its old store is ignored by OSDs and clients
# and cannot disturb the new quorum (same leader, no new term).
. "$(dirname "$0")/../cluster/lib.sh"
mon_bin=$bindir/mon/atoll-mon

declare -A npid
stop_new() {
	local n
	for n in "${!npid[@]}"; do
		kill -9 "${npid[$n]}" 2>/dev/null
		wait "${npid[$n]}" 2>/dev/null
	done
	return 0
}
cleanup_hook=stop_new

cluster_up --mons 3 --osds 3 --hosts 3 --mds 0 --no-nbd --set mon_snapshot_threshold=16
printf 'before the disaster\n' >"$tmp/o1"
atoll put default o1 "$tmp/o1" || fail "put o1"
qs() { atoll --format json quorum status 2>/dev/null; }
field() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
e1=$(atoll --format json osd dump | field epoch)

# ---- mon.a and mon.b are lost for good
"$cluster_bin" mon kill a --dir "$cdir" >/dev/null 2>&1 || fail "mon kill a"
"$cluster_bin" mon kill b --dir "$cdir" >/dev/null 2>&1 || fail "mon kill b"
"$cluster_bin" mon stop c --dir "$cdir" >/dev/null 2>&1 || fail "mon stop c"
caddr=$(state_addr mon.c)
ok "mon.a and mon.b killed, mon.c stopped (epoch $e1)"

if "$mon_bin" --rebuild --data "$cdir/mon.c" >"$tmp/rb.out" 2>"$tmp/rb.err"; then
	fail "--rebuild ran without --yes-i-lost-the-majority"
fi
grep -q "only when the majority of" "$tmp/rb.err" && grep -q -- "--yes-i-lost-the-majority" "$tmp/rb.err" || fail "--rebuild said: $(cat "$tmp/rb.err")"
ok "--rebuild without the flag is refused: $(head -n 1 "$tmp/rb.err")"
"$mon_bin" --rebuild --data "$cdir/mon.c" --yes-i-lost-the-majority >"$tmp/rb.out" \
	2>"$tmp/rb.err" || fail "--rebuild: $(cat "$tmp/rb.err")"
grep -q "incarnation 2" "$tmp/rb.out" || fail "--rebuild said: $(cat "$tmp/rb.out")"
"$cluster_bin" mon start c --dir "$cdir" >/dev/null 2>"$tmp/start.err" ||
	fail "mon start c: $(cat "$tmp/start.err")"
for i in $(seq 150); do
	s=$(qs) && [ "$(printf '%s' "$s" | field incarnation)" = 2 ] &&
		[ "$(printf '%s' "$s" | field leader)" = c ] && break
	sleep 0.2
done
printf '%s' "$s" | pyjson "j['leader'] == 'c' and j['incarnation'] == 2 and len(j['members']) == 1" ||
	fail "quorum status after the rebuild"
e2=$(atoll --format json osd dump | field epoch)
[ "$e2" -gt "$e1" ] || fail "the epoch did not move ($e1 -> $e2)"
ok "mon.c leads alone, incarnation 2, epoch $e1 -> $e2"

# ---- OSDs and a client carry on
atoll put default o2 "$tmp/o1" || fail "put o2 after the rebuild"
atoll get default o1 "$tmp/g1" && cmp -s "$tmp/o1" "$tmp/g1" || fail "get o1 after the rebuild"
for id in 0 1 2; do
	for i in $(seq 100); do
		inc=$(python3 -c "
import struct
b = open('$cdir/osd.$id/monmap', 'rb').read()
print(struct.unpack('<Q', b[30:38])[0])" 2>/dev/null)
		[ "$inc" = 2 ] && break
		sleep 0.2
	done
	[ "$inc" = 2 ] || fail "osd.$id saved incarnation '$inc', not 2"
done
ok "writes and reads go on; the OSDs saved incarnation 2"

# ---- two new members on wiped folders
fsid=$(awk '$1 == "fsid" { print $3 }' "$cdir/atoll.conf")
. "$(dirname "$0")/ports.sh"
base=$(ha_port_base 2) || fail "no free ports"
declare -A naddr
for m in d e; do
	case $m in d) a=127.0.0.2:$base ;; e) a=127.0.0.3:$((base + 1)) ;; esac
	naddr[$m]=$a
	"$mon_bin" --mkfs --join --data "$tmp/mon.$m" --name "$m" --fsid "$fsid" \
		--addr "$a" >/dev/null 2>"$tmp/mkfs.err" || fail "mkfs --join $m: $(cat "$tmp/mkfs.err")"
	"$mon_bin" --data "$tmp/mon.$m" --conf "$cdir/atoll.conf" --log "$tmp/mon.$m.log" &
	npid[$m]=$!
	atoll mon add "$m" "$a" >/dev/null 2>"$tmp/add.err" || fail "mon add $m: $(cat "$tmp/add.err")"
done
s=$(qs)
printf '%s' "$s" | pyjson "len(j['members']) == 3 and all(m['voter'] for m in j['members'])" ||
	fail "quorum status after mon add"
term=$(printf '%s' "$s" | field term)
ok "mon.d and mon.e added: three voters again (term $term)"
atoll pool create after --pg 4 >/dev/null 2>&1 || fail "a map change with the new members"
for i in $(seq 100); do
	grep -q "incarnation 2" "$tmp/mon.d.log" && grep -q "incarnation 2" "$tmp/mon.e.log" && break
	sleep 0.2
done
grep -q "incarnation 2" "$tmp/mon.d.log" && grep -q "incarnation 2" "$tmp/mon.e.log" ||
	fail "mon.d or mon.e did not learn incarnation 2"
# the same replicated state (the digest covers the incarnation)
same=no
for i in $(seq 100); do
	qs | python3 -c "
import json, sys
j = json.load(sys.stdin)
sys.exit(0 if len({(m['epoch'], m['digest']) for m in j['members']}) == 1 else 1)" &&
		{ same=yes; break; }
	sleep 0.2
done
[ $same = yes ] || { qs; fail "the members' digests differ"; }
how=$(cat "$tmp/mon.d.log" "$tmp/mon.e.log" | grep -c "snapshot is of incarnation 2" || true)
ok "mon.d and mon.e have incarnation 2 and the same digest ($how from a snapshot)"
# as doc/admin.md says: mon_host names the new members from now on
sed -i "s/^mon_host = .*/mon_host = $caddr,${naddr[d]},${naddr[e]}/" "$cdir/atoll.conf"

# ---- the old mon.a on its old store
alog=$cdir/log/mon.a.log
before=$(wc -l <"$alog")
"$cluster_bin" mon start a --dir "$cdir" >/dev/null 2>&1 || true
sleep 5
apid=$(state_pid mon.a)
[ "$apid" != 0 ] && kill -0 "$apid" 2>/dev/null || fail "the old mon.a is not running"
s=$(qs) || fail "no quorum status with the old mon.a running"
printf '%s' "$s" | pyjson "j['leader'] == 'c' and j['term'] == $term and j['incarnation'] == 2" ||
	fail "the old mon.a disturbed the quorum"
if tail -n +"$before" "$alog" | grep -q "leader of term"; then
	fail "the old mon.a became a leader"
fi
atoll put default o3 "$tmp/o1" || fail "put o3 with the old mon.a running"
atoll get default o2 "$tmp/g2" && cmp -s "$tmp/o1" "$tmp/g2" || fail "get o2"
ok "the old mon.a is ignored: same leader and term, it never leads, I/O goes on"

# ---- the old majority comes back (mon.a and mon.b on their old stores)
blog=$cdir/log/mon.b.log
bbefore=$(wc -l <"$blog")
"$cluster_bin" mon start b --dir "$cdir" >/dev/null 2>&1 || true
for i in $(seq 100); do
	tail -n +"$bbefore" "$blog" | grep -q "leader of term\|leader is now" && break
	tail -n +"$before" "$alog" | grep -q "leader of term" && break
	sleep 0.2
done
ok "the old mon.a and mon.b are back on their old stores (an old quorum of incarnation 1)"
# a running client and the OSDs lose their monitor (mon.c restarts) and
# hunt among every address they know, the old ones included
atoll bench default 6 write -t 4 -b 4096 >"$tmp/bench.out" 2>&1 &
bpid=$!
sleep 2
"$cluster_bin" mon stop c --dir "$cdir" >/dev/null 2>&1 || fail "mon stop c"
sleep 1
"$cluster_bin" mon start c --dir "$cdir" >/dev/null 2>&1 || fail "mon start c"
wait $bpid || { cat "$tmp/bench.out"; fail "atoll bench failed across mon.c's restart"; }
ok "a client writing across mon.c's restart lost no op"
"$cluster_bin" osd stop 0 --dir "$cdir" >/dev/null 2>&1 || fail "osd stop 0"
"$cluster_bin" osd start 0 --dir "$cdir" >/dev/null 2>&1 || fail "osd start 0"
osd0_up() { atoll --format json osd dump 2>/dev/null | python3 -c "
import json, sys
print([o for o in json.load(sys.stdin)['osds'] if o['id'] == 0][0]['up'])" 2>/dev/null; }
for i in $(seq 150); do
	[ "$(osd0_up)" = True ] && break
	sleep 0.2
done
[ "$(osd0_up)" = True ] || fail "osd.0 did not come back up with the new quorum"
s=$(qs) || fail "no quorum status with the old majority running"
printf '%s' "$s" | pyjson "j['leader'] in ('c', 'd', 'e') and j['incarnation'] == 2 and len(j['members']) == 3" ||
	fail "the old majority disturbed the new quorum"
atoll put default o4 "$tmp/o1" || fail "put o4 with the old majority running"
atoll get default o3 "$tmp/g3" && cmp -s "$tmp/o1" "$tmp/g3" || fail "get o3"
refused=$(cat "$cdir"/log/osd.*.log | grep -c "ignoring a monitor map of incarnation 1" || true)
ok "the new quorum and I/O go on; osd.0 restarted joins it ($refused old MONMAPs refused by OSDs)"
echo "PASS"
