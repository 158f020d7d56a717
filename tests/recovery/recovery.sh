#!/bin/bash
# recovery.sh - log recovery and backfill (doc/recovery.md): 3 OSDs, pool
# size 3 min_size 2.  RECOVERY_MODE=backfill keeps 2 PG log entries
# (osd_pg_log_max), so that most PGs take more writes than their log holds
# while osd.1 is down and it comes back by backfill.  Objects are written;
# osd.1 is killed (kill -9) as they are overwritten, appended to, deleted,
# re-created and created (backfill: right before), which must all
# succeed, the PGs going on
# active+degraded; osd.1 is started again: the cluster must reach
# HEALTH_OK (every PG active+clean) within a bound, every object must read
# back right (recovery-client verify), and osd.1's store, inspected
# offline after the cluster is stopped, must hold exactly the objects that
# exist, with their sizes, and none of the deleted ones.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

mode=${RECOVERY_MODE:-log}
extra=()
[ "$mode" = backfill ] && extra=(--set osd_pg_log_max=2)
cluster_up --osds 3 --no-mds --no-nbd "${extra[@]}"
wait_health HEALTH_OK
ok "3 OSDs are up, pool default size 3 min_size 2"

rc phase1 || fail "phase 1 (60 objects)"
ok "60 objects written with xattrs and omap"

# kill -9 osd.1 as phase 2 starts: ops in flight to it are resent by the
# client to the new acting set, and none may fail.  Backfill needs osd.1
# to miss more than the 2 entries a PG's log keeps here, which a kill
# landing late in phase 2 did not give on a fast machine (phase 2 is ~50
# ops): there osd.1 dies first and all of phase 2 runs without it.
if [ "$mode" = backfill ]; then
	"$cluster_bin" osd kill 1 --dir "$cdir" >/dev/null || fail "atoll-cluster osd kill 1"
	rc phase2 || fail "phase 2 while osd.1 was down"
	during="before"
else
	rc phase2 &
	phase2=$!
	sleep 0.05
	kill -0 $phase2 2>/dev/null || echo "note: phase 2 ended before the kill (a fast machine)"
	"$cluster_bin" osd kill 1 --dir "$cdir" >/dev/null || fail "atoll-cluster osd kill 1"
	wait $phase2 || fail "phase 2 while osd.1 was killed"
	during="during"
fi
# the PG stats come with the primaries' beacons: give them a moment
for i in $(seq 50); do
	atoll --format json pg ls default 2>/dev/null |
		pyjson "all('active' in p['state'] and 1 not in p['acting'] for p in j)" \
		2>/dev/null && break
	sleep 0.2
done
atoll --format json pg ls default |
	pyjson "all('active' in p['state'] and 1 not in p['acting'] for p in j)"
ok "osd.1 killed (-9) $during overwrites, appends, deletes and creates: no client error; PGs active without it"

start=$(date +%s)
"$cluster_bin" osd start 1 --dir "$cdir" >/dev/null || fail "atoll-cluster osd start 1"
wait_health HEALTH_OK "${ATOLL_RECOVERY_BOUND:-60}"
for i in $(seq 50); do
	atoll --format json pg ls default 2>/dev/null |
		pyjson "all(p['state'] == 'active+clean' and 1 in p['acting'] for p in j)" \
		2>/dev/null && break
	sleep 0.2
done
atoll --format json pg ls default |
	pyjson "all(p['state'] == 'active+clean' and 1 in p['acting'] for p in j)"
ok "osd.1 back: HEALTH_OK, every PG active+clean, in $(( $(date +%s) - start )) s"
if [ "$mode" = backfill ]; then
	grep -q "osd.1 is backfilled" "$cdir"/log/osd.*.log ||
		fail "no OSD log says it backfilled osd.1"
	ok "osd.1 came back by backfill ($(grep -c "osd.1 is backfilled" \
		"$cdir"/log/osd.*.log | awk -F: '{s += $2} END {print s}') PGs)"
else
	grep -q "recovered\|up to date" "$cdir"/log/osd.*.log ||
		fail "no OSD log says it recovered anything"
fi

rc verify >"$tmp/want" || fail "reading back after recovery"
[ "$(wc -l <"$tmp/want")" = 69 ] || fail "verify listed $(wc -l <"$tmp/want") objects, not 69"
ok "every object reads back right; the 11 deleted ones are gone"

"$cluster_bin" down --dir "$cdir" >/dev/null || fail "atoll-cluster down"

# osd.1's store, offline: exactly the objects that exist, with their sizes
d=$cdir/osd.1
"$storetool_bin" --data "$d" --format json colls >"$tmp/colls" || fail "atoll-store-tool colls"
python3 - "$tmp" "$d" "$storetool_bin" <<'PY' || fail "osd.1's store does not hold what it should"
import json, os, subprocess, sys
tmp, d, tool = sys.argv[1:4]
want = {}
for line in open(os.path.join(tmp, "want")):
    oid, size = line.split()
    want[oid] = int(size)
have = {}
for c in json.load(open(os.path.join(tmp, "colls"))):
    coll = c["coll"]
    out = subprocess.run([tool, "--data", d, "--format", "json", "ls", coll],
                         capture_output=True, text=True, check=True)
    for oid in json.loads(out.stdout)["objects"]:
        if oid[:1] in ("o", "n") and oid[1:].isdigit():
            have[oid] = coll
bad = 0
for oid in sorted(set(want) - set(have)):
    print("missing on osd.1: %s" % oid); bad += 1
for oid in sorted(set(have) - set(want)):
    print("on osd.1 but deleted: %s" % oid); bad += 1
for oid in sorted(set(want) & set(have)):
    out = subprocess.run([tool, "--data", d, "--format", "json", "stat", have[oid], oid],
                         capture_output=True, text=True)
    if out.returncode:
        print("stat %s: %s" % (oid, out.stderr.strip())); bad += 1; continue
    size = json.loads(out.stdout)["size"]
    if size != want[oid]:
        print("%s: %d bytes on osd.1, want %d" % (oid, size, want[oid])); bad += 1
print("osd.1 holds %d objects, %d wanted, %d problems" % (len(have), len(want), bad))
sys.exit(1 if bad else 0)
PY
ok "osd.1's store offline: the 69 objects with their sizes, no deleted one"
echo "all $n checks passed"
