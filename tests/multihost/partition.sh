#!/bin/bash
# tests/multihost/partition.sh - a primary cut off by a partition stops
# serving when its lease runs out, and no client reads data older than a
# write acknowledged on the other side (issue 4; doc/osd.md, "Leases").
#
# Four network namespaces: the monitor and a writer on host 0, one OSD on
# each of hosts 1-3, a pool of size 3 / min_size 2.  The writer writes one
# object with ever larger numbers; two readers run on the host of that
# object's primary, where they keep talking to the primary when its cable
# is pulled at the switch: one reads the written object, one an object
# with the same primary that nobody writes.  After 12 s the cable goes
# back.  Then, from the logs (the machine's clock is shared by every
# namespace):
#   - no read issued after number N was acknowledged returned less than N;
#   - the cut-off primary served reads for a while (its lease; shown by the
#     quiet object, as reads of the written one may queue behind a write
#     left waiting for its replicas), then none issued after osd_lease had
#     passed, until the cable came back;
#   - the other side acknowledged writes during the partition (and one
#     overwrite of the quiet object, 6 s after the cut);
#   - after the cable is back, the reader gets the newest numbers again
#     and the cluster returns to HEALTH_OK.
# Needs root and iproute2; skipped (77) otherwise.
#
# usage: partition.sh BUILD_DIR PARTITION_CLIENT
set -euo pipefail

. "$(dirname "$0")/lib.sh"
mh_init "${1:?usage: partition.sh BUILD_DIR PARTITION_CLIENT}" 4
client=${2:?usage: partition.sh BUILD_DIR PARTITION_CLIENT}
lease_ms=2000
cut_s=12

mh_conf "osd_heartbeat_interval = 500ms" "osd_heartbeat_grace = 4s" \
	"osd_lease = ${lease_ms}ms" "client_op_timeout = 3s"
mh_mon
declare -A host_of
for h in 1 2 3; do
	mh_osd $h 1G
	id=$(grep -o '[0-9]\+' "$tmp/osd-$h-$h.id" | tail -n 1)
	host_of[$id]=$h
done
mh_wait_up 3
mh_cli pool create pt --size 3 --min-size 2 --pg 8 --failure-domain host >/dev/null
mh_wait_health

primary_of() {
	mh_cli osd map pt "$1" --format json |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["primary"])'
}
primary=$(primary_of pobj)
ph=${host_of[$primary]:?no host for osd.$primary}
echo "the object's primary is osd.$primary on host $ph"
# A second object with the same primary that nobody writes: reads of pobj
# may queue behind a write the cut left waiting for its replicas, so this
# one shows that the primary serves during its lease, and stops after it.
quiet=
for i in $(seq 40); do
	[ "$(primary_of "pquiet$i")" = "$primary" ] && { quiet=pquiet$i; break; }
done
[ -n "$quiet" ] || { echo "FAIL: no object name with primary osd.$primary"; exit 1; }
printf '%020d' 1 > "$tmp/one"
mh_cli put pt "$quiet" "$tmp/one" >/dev/null
echo "ack 1 $(date +%s%N)" > "$tmp/quiet-writer.out"

mh_bg 0 "$client" "$conf" pt pobj write $((cut_s + 20)) > "$tmp/writer.out" 2> "$tmp/writer.log"
for _ in $(seq 100); do grep -q '^ack' "$tmp/writer.out" && break; sleep 0.1; done
grep -q '^ack' "$tmp/writer.out" || { echo "FAIL: the writer got no acknowledgement"; exit 1; }
mh_bg "$ph" "$client" "$conf" pt pobj read $((cut_s + 18)) > "$tmp/reader.out" 2> "$tmp/reader.log"
mh_bg "$ph" "$client" "$conf" pt "$quiet" read $((cut_s + 18)) > "$tmp/quiet.out" 2> "$tmp/quiet.log"
sleep 3

t_cut=$(date +%s%N)
mh_cut "$ph"
echo "host $ph cut off"
# the other side overwrites the quiet object once, when it has taken over
sleep 6
printf '%020d' 2 > "$tmp/two"
mh_cli put pt "$quiet" "$tmp/two" >/dev/null
echo "ack 2 $(date +%s%N)" >> "$tmp/quiet-writer.out"
sleep $((cut_s - 6))
t_heal=$(date +%s%N)
mh_heal "$ph"
echo "host $ph back"
for p in "${bg_pids[@]}"; do wait "$p" || { echo "FAIL: a client failed"; exit 1; }; done
bg_pids=()

python3 - "$tmp/writer.out" "$tmp/reader.out" "$tmp/quiet-writer.out" "$tmp/quiet.out" \
	"$t_cut" "$t_heal" "$lease_ms" <<'PY'
import bisect, sys
wpath, rpath, qwpath, qpath, t_cut, t_heal, lease_ms = sys.argv[1:8]
t_cut, t_heal, lease = int(t_cut), int(t_heal), int(lease_ms) * 10**6

def load_acks(path):
    acks = []                               # (time, n), in time order
    for l in open(path):
        f = l.split()
        if f[0] == 'ack':
            acks.append((int(f[2]), int(f[1])))
    acks.sort()
    best, m = [], 0                         # newest number acknowledged by then
    for t, n in acks:
        m = max(m, n)
        best.append(m)
    return acks, [a[0] for a in acks], best

def reads(path, wpath):
    acks, ack_t, best = load_acks(wpath)
    c = dict(reads=0, errs=0, stale=0, served_cut=0, late=0, after_heal=0)
    for l in open(path):
        f = l.split()
        t0, t1 = int(f[1]), int(f[2])
        if f[0] == 'err':
            c['errs'] += 1
            continue
        c['reads'] += 1
        n = int(f[3])
        i = bisect.bisect_left(ack_t, t0)   # acks strictly before t0
        need = best[i - 1] if i else 0
        if n < need:
            c['stale'] += 1
            if c['stale'] <= 5:
                print(f"STALE: read issued {(t0 - t_cut) / 1e9:+.3f}s after the cut returned "
                      f"{n}, but {need} was acknowledged before it")
        if t_cut < t0 and t1 < t_heal:
            c['served_cut'] += 1
            if t0 > t_cut + lease + 100 * 10**6:
                c['late'] += 1
        if t0 > t_heal:
            c['after_heal'] += 1
    return c

r = reads(rpath, wpath)
q = reads(qpath, qwpath)
acks = load_acks(wpath)[0]
acked_cut = sum(1 for t, n in acks if t_cut < t < t_heal)
print(f"acknowledged writes: {len(acks)} ({acked_cut} during the partition)")
for name, c in (("written object", r), ("quiet object", q)):
    print(f"{name}: {c['reads']} reads ({c['served_cut']} served by the cut-off primary, "
          f"{c['late']} of them issued after its lease, {c['after_heal']} after the cable came "
          f"back), {c['errs']} failed, {c['stale']} stale")
ok = (r['stale'] == 0 and q['stale'] == 0 and r['late'] == 0 and q['late'] == 0 and
      q['served_cut'] > 0 and
      acked_cut > 0 and r['after_heal'] > 0)
sys.exit(0 if ok else 1)
PY
mh_wait_health
echo "PASS: the cut-off primary stopped serving when its lease ran out; no stale read"
