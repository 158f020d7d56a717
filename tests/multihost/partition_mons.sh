#!/bin/bash
# tests/multihost/partition_mons.sh - a minority partition with three
# monitors (issue 33): the leader cut off together with a primary OSD that
# has a reader on its side, then the same with a follower.
#
# Four network namespaces: hosts 0-2 each run a monitor (a, b, c, made as
# doc/admin.md says) and one OSD; host 3 runs the writer and the CLI.  A
# pool of size 3 / min_size 2, failure domain host.  Each phase cuts the
# cable of one monitor's host (first the leader's, then a follower's) for
# 14 s, while a writer on host 3 writes one object with ever larger
# numbers and two readers on the cut host read from its primary, the OSD
# of the cut host: one the written object, one a quiet object with the
# same primary that the majority side overwrites once during the cut
# (reads of the written object queue behind a write the cut left waiting
# for its replicas; the quiet one shows how long the cut-off primary
# serves).  Checks (the clock is shared by every namespace):
#   - no read (of either object) issued after number N was acknowledged
#     returned less than N;
#   - the cut-off primary stopped serving when its lease ran out: within
#     osd_lease of the cut when a follower is cut off (the leader, on the
#     majority side, renews nothing), within osd_lease + 1 election
#     timeout when the leader is: the cut-off leader stops granting
#     leases once it has not heard from a majority for an election
#     timeout (doc/quorum.md, "Leases across a leader change");
#   - the majority side acknowledged writes during the cut, the first one
#     after the cut-off primary's last read;
#   - the majority has a leader during the cut (not the cut-off monitor)
#     and makes a map change (a pool create);
#   - the cut-off monitor changes nothing: an `osd out` sent to it from
#     its side is not answered, and after healing that OSD is still in;
#   - after healing, the three monitors agree on one epoch and digest and
#     the cluster is HEALTH_OK.
# Needs root and iproute2; skipped (77) otherwise.
#
# usage: partition_mons.sh BUILD_DIR PARTITION_CLIENT
set -euo pipefail

. "$(dirname "$0")/lib.sh"
mh_init "${1:?usage: partition_mons.sh BUILD_DIR PARTITION_CLIENT}" 4
client=${2:?usage: partition_mons.sh BUILD_DIR PARTITION_CLIENT}
lease_ms=2000
election_ms=1000	# mon_election_timeout's default
cut_s=14
names=(a b c)

mh_mons 3
mh_conf "osd_heartbeat_interval = 500ms" "osd_heartbeat_grace = 4s" \
	"osd_lease = ${lease_ms}ms" "client_op_timeout = 3s" \
	"mon_osd_down_out_interval = 600s"
mh_mons_start 3
declare -A osd_on		# host -> OSD id
for h in 0 1 2; do
	mh_osd $h 1G
	osd_on[$h]=$(grep -o '[0-9]\+' "$tmp/osd-$h-$((h + 1)).id" | tail -n 1)
done
# the CLI on host 3, the majority's side in every phase
cli() { in_ns 3 "$build/tools/atoll" --conf "$conf" "$@"; }
mh_wait_up 3
cli pool create pt --size 3 --min-size 2 --pg 8 --failure-domain host >/dev/null
for _ in $(seq 300); do
	[ "$(cli health 2>/dev/null | head -n 1)" = HEALTH_OK ] && break
	sleep 0.2
done

# agree: the three monitors at one epoch with one digest (prints "EPOCH DIGEST")
agree() {
	local q=""
	for _ in $(seq 150); do
		q=$(cli --format json quorum status 2>/dev/null | python3 -c '
import json, sys
j = json.load(sys.stdin); ms = j["members"]
same = len(ms) == 3 and all(m["epoch"] == j["epoch"] for m in ms) and len({m["digest"] for m in ms}) == 1
print("same" if same else "differ", j["epoch"], ms[0]["digest"], j["leader"])' 2>/dev/null || echo none)
		[ "${q%% *}" = same ] && { echo "${q#same }"; return 0; }
		sleep 0.2
	done
	echo "FAIL: the monitors do not agree: $q" >&2
	exit 1
}
leader_name() { cli --format json quorum status 2>/dev/null |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["leader"])' 2>/dev/null || true; }
primary_of() {
	cli osd map pt "$1" --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["primary"])'
}
osd_in() {	# ID: whether the map has it in
	cli --format json osd dump | python3 -c '
import json, sys
j = json.load(sys.stdin)
osds = j["osds"] if isinstance(j, dict) else j
sys.exit(0 if any(o["id"] == int(sys.argv[1]) and o.get("in", 1) for o in osds) else 1)' "$1"
}

phase() {
	local role=$1 leader h obj="" quiet="" osd t_cut t_heal i q rc
	leader=$(leader_name)
	[ -n "$leader" ] || { echo "FAIL: no leader before the $role phase"; exit 1; }
	if [ "$role" = leader ]; then
		h=$(( $(printf '%d' "'$leader") - 97 ))
	else
		h=$(( ( $(printf '%d' "'$leader") - 97 + 1) % 3 ))
	fi
	osd=${osd_on[$h]}
	for i in $(seq 60); do
		[ "$(primary_of "p$role$i")" = "$osd" ] && { obj=p$role$i; break; }
	done
	[ -n "$obj" ] || { echo "FAIL: no object name with primary osd.$osd"; exit 1; }
	for i in $(seq 60); do
		[ "$(primary_of "q$role$i")" = "$osd" ] && { quiet=q$role$i; break; }
	done
	[ -n "$quiet" ] || { echo "FAIL: no second object name with primary osd.$osd"; exit 1; }
	printf '%020d' 1 > "$tmp/one"
	cli put pt "$quiet" "$tmp/one" >/dev/null
	echo "ack 1 $(date +%s%N)" > "$tmp/$role.qwriter.out"
	echo "== $role phase: mon.${names[$h]} (leader: mon.$leader) and osd.$osd, the primary of $obj, on host $h"

	mh_bg 3 "$client" "$conf" pt "$obj" write $((cut_s + 20)) > "$tmp/$role.writer.out" 2> "$tmp/$role.writer.log"
	for _ in $(seq 100); do grep -q '^ack' "$tmp/$role.writer.out" && break; sleep 0.1; done
	grep -q '^ack' "$tmp/$role.writer.out" || { echo "FAIL: the writer got no acknowledgement"; exit 1; }
	mh_bg "$h" "$client" "$conf" pt "$obj" read $((cut_s + 16)) > "$tmp/$role.reader.out" 2> "$tmp/$role.reader.log"
	mh_bg "$h" "$client" "$conf" pt "$quiet" read $((cut_s + 16)) > "$tmp/$role.quiet.out" 2> "$tmp/$role.quiet.log"
	sleep 3

	t_cut=$(date +%s%N)
	mh_cut "$h"
	echo "host $h cut off"
	# on the cut side, an osd out sent to the cut-off monitor: not answered
	rc=0
	in_ns "$h" timeout 8 "$build/tools/atoll" --conf "$conf" -m "10.77.$net.$((h + 1)):6789" \
		osd out "$osd" > "$tmp/$role.out.log" 2>&1 || rc=$?
	[ $rc -ne 0 ] || { echo "FAIL: the cut-off mon.${names[$h]} answered osd out $osd"; exit 1; }
	# the majority: a leader that is not the cut-off monitor, and a map change
	q=$(leader_name)
	[ -n "$q" ] && [ "$q" != "${names[$h]}" ] ||
		{ echo "FAIL: the majority has no leader of its own during the cut (says '$q')"; exit 1; }
	cli pool create "pt$role" --pg 4 >/dev/null ||
		{ echo "FAIL: the majority made no map change during the cut"; exit 1; }
	echo "during the cut: mon.$q leads the majority; the cut-off monitor answered nothing (exit $rc)"
	# the quiet object overwritten from the majority side (each try may
	# time out, client_op_timeout, until the PG has a primary there)
	printf '%020d' 2 > "$tmp/two"
	for i in $(seq 10); do
		cli put pt "$quiet" "$tmp/two" >/dev/null 2>&1 && { echo "ack 2 $(date +%s%N)" >> "$tmp/$role.qwriter.out"; break; }
	done
	[ "$(wc -l < "$tmp/$role.qwriter.out")" = 2 ] || { echo "FAIL: the majority could not overwrite $quiet during the cut"; exit 1; }
	echo "$quiet overwritten on the majority side $(( ($(date +%s%N) - t_cut) / 1000000 )) ms after the cut"
	while [ $(( ($(date +%s%N) - t_cut) / 1000000000 )) -lt $cut_s ]; do sleep 0.2; done
	t_heal=$(date +%s%N)
	mh_heal "$h"
	echo "host $h back"
	for p in "${bg_pids[@]}"; do wait "$p" || { echo "FAIL: a client failed"; exit 1; }; done
	bg_pids=()

	local bound=$((lease_ms + 100))
	[ "$role" = leader ] && bound=$((lease_ms + election_ms + 400))
	python3 - "$tmp/$role.writer.out" "$tmp/$role.reader.out" "$tmp/$role.qwriter.out" \
		"$tmp/$role.quiet.out" "$t_cut" "$t_heal" "$lease_ms" "$bound" <<'PY'
import bisect, sys
wpath, rpath, qwpath, qpath, t_cut, t_heal, lease_ms, bound_ms = sys.argv[1:9]
t_cut, t_heal, bound = int(t_cut), int(t_heal), int(bound_ms) * 10**6

def check(wpath, rpath, name):
    acks = sorted((int(l.split()[2]), int(l.split()[1])) for l in open(wpath) if l.startswith("ack"))
    ack_t = [a[0] for a in acks]
    best, m = [], 0
    for t, n in acks:
        m = max(m, n)
        best.append(m)
    reads = errs = stale = served_cut = late = after_heal = 0
    last_served = t_cut
    for l in open(rpath):
        f = l.split()
        t0, t1 = int(f[1]), int(f[2])
        if f[0] == "err":
            errs += 1
            continue
        reads += 1
        n = int(f[3])
        i = bisect.bisect_left(ack_t, t0)
        need = best[i - 1] if i else 0
        if n < need:
            stale += 1
            if stale <= 5:
                print(f"STALE ({name}): read issued {(t0 - t_cut) / 1e9:+.3f}s after the cut "
                      f"returned {n}, but {need} was acknowledged before it")
        if t_cut < t0 and t1 < t_heal:
            served_cut += 1
            last_served = max(last_served, t1)
            if t0 > t_cut + bound:
                late += 1
        if t0 > t_heal:
            after_heal += 1
    # acks of writes issued after the cut (not those in flight at it)
    during = [t for t, n in acks if t_cut + 100 * 10**6 < t < t_heal]
    first = (during[0] - t_cut) / 1e6 if during else -1
    print(f"{name}: {len(during)} writes acknowledged during the cut, the first {first:.0f} ms "
          f"after it; reads on the cut side: {reads} ({served_cut} served during the cut, the "
          f"last answered {(last_served - t_cut) / 1e6:.0f} ms after it (lease {lease_ms} ms, "
          f"bound {bound_ms} ms), {late} issued after the bound, {after_heal} after healing), "
          f"{errs} failed, {stale} stale")
    return (stale == 0 and late == 0 and bool(during) and during[0] > last_served and
            after_heal > 0), served_cut

ok1, _ = check(wpath, rpath, "written object")
ok2, served = check(qwpath, qpath, "quiet object")
sys.exit(0 if ok1 and ok2 and served > 0 else 1)
PY
	osd_in "$osd" || { echo "FAIL: osd.$osd is out: the cut-off monitor's osd out took effect"; exit 1; }
	q=$(agree)
	echo "after healing: one epoch and digest: $q"
	for _ in $(seq 300); do
		[ "$(cli health 2>/dev/null | head -n 1)" = HEALTH_OK ] && break
		sleep 0.2
	done
	[ "$(cli health | head -n 1)" = HEALTH_OK ] || { cli health detail; echo "FAIL: not HEALTH_OK after the $role phase"; exit 1; }
}

agree >/dev/null
phase leader
phase follower
echo "PASS: the leader and a follower cut off with a primary: no stale read, the cut-off monitor changed nothing, the majority went on, one epoch and digest after healing"
