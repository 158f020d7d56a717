#!/bin/bash
# placement.sh - placement checked offline: 6 OSDs on 3 hosts, pool size 3
# (failure domain host), 120 objects written (their names obj-0..119 land
# in every one of the 16 PGs: the test prints it); the monitor says where each
# belongs (`osd map`); the cluster is stopped and every OSD's store is
# listed with atoll-store-tool: each object is on exactly the 3 OSDs that
# `osd map` named, with its size, and on no other.  Before that, what-if:
# `atoll osd map --what-if` for 'out 5', 'in 5' and 'add host=host3' (a
# seventh OSD), each change then made: exactly the PGs it named move, to
# the sets it named.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

faults_up --osds 6 --hosts 3
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

# ---- what-if: the prediction equals what moves when the change is made ----
# pg_moves PREDICTION BEFORE AFTER: every PG the prediction remaps now has
# its "to" set as acting set, in order; every other PG kept its set.
pg_moves() {
	python3 - "$@" <<'PY'
import json, sys
pred = json.load(open(sys.argv[1]))
before = {p["pgid"]: p["acting"] for p in json.load(open(sys.argv[2]))}
after = {p["pgid"]: p["acting"] for p in json.load(open(sys.argv[3]))}
moved = {p["pgid"]: p for p in pred["pgs"]}
bad = 0
for pgid, acting in after.items():
    want = moved[pgid]["to"] if pgid in moved else before[pgid]
    if acting != want:
        print("pg %s: acting %s, what-if said %s" % (pgid, acting, want)); bad += 1
    if pgid in moved and moved[pgid]["from"] != before[pgid]:
        print("pg %s: what-if's from %s, was %s" % (pgid, moved[pgid]["from"], before[pgid])); bad += 1
print("%d of %d PGs remapped as predicted, %d problems" % (len(moved), len(after), bad))
sys.exit(1 if bad or not moved else 0)
PY
}
# settle PREDICTION BEFORE: waits (60 s at most) until every PG is
# active+clean with the acting sets the prediction says (the OSDs take a
# moment to hear of the change); on timeout, fails with the differences.
settle() {
	local i
	for i in $(seq 1 300); do
		atoll pg ls default --format json >"$tmp/after.json" 2>/dev/null &&
			python3 -c 'import json,sys; sys.exit(0 if all(p["state"] == "active+clean" for p in json.load(open(sys.argv[1]))) else 1)' "$tmp/after.json" &&
			pg_moves "$1" "$2" "$tmp/after.json" >"$tmp/moves.out" && return 0
		sleep 0.2
	done
	cat "$tmp/moves.out" >&2
	return 1
}
atoll pg ls default --format json >"$tmp/before.json"
atoll --format json osd map --what-if 'out 5' >"$tmp/pred.json"
pyjson "j['pgs_remapped'] > 0 and j['pgs_total'] == 16 and j['added'] == [] and any(o['osd'] == 5 and o['lose'] > 0 for o in j['osds'])" <"$tmp/pred.json"
atoll osd tree --format json | pyjson "all(o['in'] for h in j['hosts'] for o in h['osds'])"
atoll osd out 5
settle "$tmp/pred.json" "$tmp/before.json" || fail "osd out 5 did not move what --what-if 'out 5' said"
cat "$tmp/moves.out"
cp "$tmp/after.json" "$tmp/out5.json"
atoll --format json osd map --what-if 'in 5' >"$tmp/pred.json"
atoll osd in 5
settle "$tmp/pred.json" "$tmp/out5.json" || fail "osd in 5 did not move what --what-if 'in 5' said"
python3 -c 'import json,sys; a={p["pgid"]: p["acting"] for p in json.load(open(sys.argv[1]))}; b={p["pgid"]: p["acting"] for p in json.load(open(sys.argv[2]))}; sys.exit(a != b)' "$tmp/before.json" "$tmp/after.json" || fail "out then in did not bring every PG back to its set"
ok "what-if 'out 5' then 'in 5' predict exactly the PGs that move and where"
atoll pg ls default --format json >"$tmp/before.json"
atoll --format json osd map --what-if 'add host=host3' >"$tmp/pred.json"
pyjson "j['added'] == [6] and j['pgs_remapped'] > 0 and all(6 in p['to'] for p in j['pgs'])" <"$tmp/pred.json"
"$cluster_bin" osd add --dir "$cdir" --host 3 >/dev/null || fail "atoll-cluster osd add"
settle "$tmp/pred.json" "$tmp/before.json" || fail "a new OSD on host3 did not move what --what-if said"
cat "$tmp/moves.out"
ok "what-if 'add host=host3' predicts the new OSD's id and exactly the PGs it takes"
out=$(atoll osd map --what-if 'out 1' --what-if 'in 1')
echo "$out" | grep -q "^0 of 16 PGs would be remapped" || fail "out then in moves nothing: $out"
expect 1 "unknown change" atoll osd map --what-if 'explode 3'
expect 3 "does not exist" atoll osd map --what-if 'out 42'
expect 1 "needs host=NAME" atoll osd map --what-if 'add weight=1'
expect 2 "needs a change" atoll osd map --what-if
ok "what-if: changes in order, plain text, and its errors"

nobj=120
fc populate default $nobj >"$tmp/map.jsonl" || fail "populate"
[ "$(wc -l <"$tmp/map.jsonl")" = $nobj ] || fail "populate printed $(wc -l <"$tmp/map.jsonl") lines"
python3 -c 'import json,sys; pgs={json.loads(l)["pg"] for l in open(sys.argv[1])}; print(len(pgs), "of 16 PGs hold objects")' "$tmp/map.jsonl"
ok "$nobj objects written, osd map asked for each"

"$cluster_bin" down --dir "$cdir" >/dev/null || fail "atoll-cluster down"

# every OSD's store, offline: collection -> objects -> sizes, for the
# collections of this pool only (a collection id is pool << 32 | pg; other
# pools are not this test's).  Each atoll-store-tool run mostly waits
# (opening the store), so they run 16 at a time.
python3 - "$tmp" "$cdir" "$storetool_bin" <<'PY' || fail "the stores do not hold what osd map says"
import glob, json, os, subprocess, sys
from concurrent.futures import ThreadPoolExecutor
tmp, cdir, tool = sys.argv[1:4]
ex = ThreadPoolExecutor(16)
def run(osd, *args):
    out = subprocess.run([tool, "--data", "%s/osd.%d" % (cdir, osd), "--format", "json"] + list(args),
                         capture_output=True, text=True)
    if out.returncode:
        sys.exit("atoll-store-tool %s on osd.%d: %s" % (" ".join(args), osd, out.stderr.strip()))
    return json.loads(out.stdout)
want = {}
for line in open(os.path.join(tmp, "map.jsonl")):
    j = json.loads(line)
    want[j["object"]] = (sorted(j["acting"]), j["size"])
pool_id = j["pool_id"]
osds = sorted(int(d.rsplit(".", 1)[1]) for d in glob.glob(os.path.join(cdir, "osd.*")))
colls = [(osd, c["coll"]) for osd, cs in zip(osds, ex.map(lambda o: run(o, "colls"), osds))
         for c in cs if int(c["coll"], 0) >> 32 == pool_id]
have = {}
where = {}
for (osd, coll), ls in zip(colls, ex.map(lambda oc: run(oc[0], "ls", oc[1]), colls)):
    for oid in ls["objects"]:
        have.setdefault(oid, []).append(osd)
        where.setdefault(osd, []).append((coll, oid))
bad = 0
for oid, (acting, size) in want.items():
    got = sorted(have.get(oid, []))
    if got != acting:
        print("%s: on OSDs %s, osd map says %s" % (oid, got, acting)); bad += 1
extra = set(have) - set(want)
if extra:
    print("objects nobody wrote: %s" % sorted(extra)[:10]); bad += 1
# sizes: one read-only `stat` per copy (360)
jobs = [(osd, coll, oid) for osd, objs in where.items() for coll, oid in objs if oid in want]
checked = 0
for (osd, coll, oid), st in zip(jobs, ex.map(lambda j: run(j[0], "stat", j[1], j[2]), jobs)):
    if st["size"] != want[oid][1]:
        print("%s on osd.%d has %d bytes, not %d" % (oid, osd, st["size"], want[oid][1])); bad += 1
    checked += 1
print("checked %d objects, %d copies, %d problems" % (len(want), checked, bad))
sys.exit(1 if bad else 0)
PY
ok "each object is on exactly the 3 OSDs osd map named, with its size, and on no other"
