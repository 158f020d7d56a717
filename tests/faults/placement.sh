#!/bin/bash
# placement.sh - placement checked offline: 6 OSDs on 3 hosts, pool size 3
# (failure domain host), 300 objects written; the monitor says where each
# belongs (`osd map`); the cluster is stopped and every OSD's store is
# listed with atoll-store-tool: each object is on exactly the 3 OSDs that
# `osd map` named, with its size, and on no other.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

cluster_up --osds 6 --hosts 3
wait_health HEALTH_OK
ok "6 OSDs on 3 hosts are up"


# the CLI: plain text and JSON
out=$(atoll osd map default some-object)
echo "$out" | grep -Eq "^osdmap e[0-9]+ pool 'default' \([0-9]+\) object 'some-object' -> pg [0-9]+\.[0-9]+ -> up \[[0-9]+,[0-9]+,[0-9]+\] p[0-9]+ acting \[[0-9]+,[0-9]+,[0-9]+\] p[0-9]+$" ||
	fail "atoll osd map prints: $out"
atoll --format json osd map default some-object |
	pyjson "j['pool'] == 'default' and j['object'] == 'some-object' and len(j['acting']) == 3 and j['primary'] == j['acting'][0] and j['pgid'] == '%d.%x' % (j['pool_id'], j['pg']) and j['up'] == j['acting']"
expect 3 "does not exist" atoll osd map nopool x
expect 2 "give a pool name and an object name" atoll osd map default
ok "atoll osd map, plain and JSON, and its errors"

fc populate default 300 >"$tmp/map.jsonl" || fail "populate"
[ "$(wc -l <"$tmp/map.jsonl")" = 300 ] || fail "populate printed $(wc -l <"$tmp/map.jsonl") lines"
ok "300 objects written, osd map asked for each"

"$cluster_bin" down --dir "$cdir" >/dev/null || fail "atoll-cluster down"

# every OSD's store, offline: collection -> objects -> sizes, for the
# collections of this pool only (a collection id is pool << 32 | pg; other
# pools, such as the file system's, are not this test's)
pool_id=$(head -n 1 "$tmp/map.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pool_id"])')
for d in "$cdir"/osd.*; do
	id=${d##*.}
	"$storetool_bin" --data "$d" --format json colls >"$tmp/colls.$id" ||
		fail "atoll-store-tool colls on $d"
	for coll in $(python3 -c 'import json,sys; print(" ".join(c["coll"] for c in json.load(open(sys.argv[1])) if int(c["coll"], 0) >> 32 == int(sys.argv[2])))' "$tmp/colls.$id" "$pool_id"); do
		"$storetool_bin" --data "$d" --format json ls "$coll" >"$tmp/ls.$id.$coll" ||
			fail "atoll-store-tool ls $coll on $d"
	done
done
python3 - "$tmp" "$cdir" "$storetool_bin" <<'PY' || fail "the stores do not hold what osd map says"
import glob, json, os, subprocess, sys
tmp, cdir, tool = sys.argv[1:4]
want = {}
for line in open(os.path.join(tmp, "map.jsonl")):
    j = json.loads(line)
    want[j["object"]] = (sorted(j["acting"]), j["size"])
have = {}
where = {}
for f in glob.glob(os.path.join(tmp, "ls.*")):
    _, osd, coll = os.path.basename(f).split(".", 2)
    for oid in json.load(open(f))["objects"]:
        have.setdefault(oid, []).append(int(osd))
        where.setdefault(int(osd), []).append((coll, oid))
bad = 0
for oid, (acting, size) in want.items():
    got = sorted(have.get(oid, []))
    if got != acting:
        print("%s: on OSDs %s, osd map says %s" % (oid, got, acting)); bad += 1
extra = set(have) - set(want)
if extra:
    print("objects nobody wrote: %s" % sorted(extra)[:10]); bad += 1
# sizes: one read-only `stat` per copy (900); each open mostly waits, so
# they run 16 at a time
from concurrent.futures import ThreadPoolExecutor
def stat(job):
    osd, coll, oid = job
    return job, subprocess.run([tool, "--data", "%s/osd.%d" % (cdir, osd), "--format", "json",
                                "stat", coll, oid], capture_output=True, text=True)
jobs = [(osd, coll, oid) for osd, objs in where.items() for coll, oid in objs if oid in want]
checked = 0
with ThreadPoolExecutor(16) as ex:
    for (osd, coll, oid), out in ex.map(stat, jobs):
        if out.returncode:
            print("stat %s on osd.%d: %s" % (oid, osd, out.stderr.strip())); bad += 1; continue
        size = json.loads(out.stdout)["size"]
        if size != want[oid][1]:
            print("%s on osd.%d has %d bytes, not %d" % (oid, osd, size, want[oid][1])); bad += 1
        checked += 1
print("checked %d objects, %d copies, %d problems" % (len(want), checked, bad))
sys.exit(1 if bad else 0)
PY
ok "each object is on exactly the 3 OSDs osd map named, with its size, and on no other"
