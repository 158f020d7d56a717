#!/usr/bin/env python3
# storecheck.py - the offline placement check of tests/recovery: reads
# every stopped OSD's store with atoll-store-tool and checks that each
# object that must exist is on exactly the OSDs `atoll osd map` named,
# with its size, and that no other object (a deleted one, or a copy left
# on an OSD the object moved away from) is anywhere.
#
#   storecheck.py STORE-TOOL CLUSTER-DIR WANT MAP
#     WANT: lines "OID SIZE" (recovery-client verify)
#     MAP:  lines "OID OSD,OSD,..." (the acting sets)
# Only objects named like the workload's (o<N>, n<N>) count.
import json, os, subprocess, sys

tool, cdir, want_f, map_f = sys.argv[1:5]
want = {}
for line in open(want_f):
    oid, size = line.split()
    want[oid] = int(size)
where = {}
for line in open(map_f):
    oid, osds = line.split()
    where[oid] = sorted(int(x) for x in osds.split(","))

def run(*args):
    out = subprocess.run([tool, "--format", "json"] + list(args),
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)

have = {}          # oid -> {osd: size}
for name in sorted(os.listdir(cdir)):
    if not name.startswith("osd."):
        continue
    osd = int(name[4:])
    d = os.path.join(cdir, name)
    for c in run("--data", d, "colls"):
        for oid in run("--data", d, "ls", c["coll"])["objects"]:
            if oid[:1] in ("o", "n") and oid[1:].isdigit():
                st = run("--data", d, "stat", c["coll"], oid)
                have.setdefault(oid, {})[osd] = st["size"]
bad = 0
for oid in sorted(set(have) - set(want)):
    print("%s must not exist but is on %s" % (oid, sorted(have[oid])))
    bad += 1
for oid in sorted(want):
    on = have.get(oid, {})
    if sorted(on) != where[oid]:
        print("%s is on osds %s, placement says %s" % (oid, sorted(on), where[oid]))
        bad += 1
    for osd, size in sorted(on.items()):
        if size != want[oid]:
            print("%s: %d bytes on osd.%d, want %d" % (oid, size, osd, want[oid]))
            bad += 1
copies = sum(len(v) for v in have.values())
print("%d objects, %d copies, %d problems" % (len(want), copies, bad))
sys.exit(1 if bad else 0)
