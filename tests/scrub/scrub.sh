#!/bin/bash
# scrub.sh - deep scrub and repair (doc/scrub.md):
# 3 OSDs, 24 objects; osd.1 is stopped and one byte of two objects' data
# is flipped in its block file (one it is primary for, one it holds a
# replica of); started again, `atoll pg deep-scrub` names both copies as
# unreadable, health says PG_DAMAGED, `atoll pg repair` replaces them, a
# second scrub finds every PG consistent, the objects read back right, and
# with the cluster stopped every copy of every object is the same.
set -euo pipefail
. "$(dirname "$0")/../cluster/lib.sh"

storetool_bin=${1:?usage: $0 ATOLL-CLUSTER ATOLL STORE-TOOL}
[ -x "$storetool_bin" ] || skip "atoll-store-tool is missing ($storetool_bin)"

cluster_up --osds 3 --pg 8 --no-mds --no-nbd
wait_health HEALTH_OK
for i in $(seq 0 23); do
	head -c $(( (i + 1) * 9000 )) /dev/urandom >"$tmp/o$i"
	atoll put default "o$i" "$tmp/o$i"
done
atoll pg deep-scrub default >"$tmp/scrub0" || { cat "$tmp/scrub0"; fail "first scrub"; }
[ "$(grep -c ': consistent$' "$tmp/scrub0")" = 8 ] || { cat "$tmp/scrub0"; fail "8 consistent PGs"; }
ok "24 objects; a deep scrub of the pool finds its 8 PGs consistent"

# one object osd.1 is primary of, one it holds a replica of
prim= repl=
for i in $(seq 0 23); do
	act=$(atoll --format json osd map default "o$i" | python3 -c 'import json,sys; print(" ".join(map(str, json.load(sys.stdin)["acting"])))')
	case " $act " in
	" 1 "*) [ -n "$prim" ] || prim=o$i ;;
	*" 1 "*) [ -n "$repl" ] || repl=o$i ;;
	esac
done
[ -n "$prim" ] && [ -n "$repl" ] || fail "no object with osd.1 as primary and as replica"
"$cluster_bin" osd stop 1 --dir "$cdir" >/dev/null || fail "osd stop 1"
python3 - "$cdir/osd.1/block" "$tmp/$prim" "$tmp/$repl" <<'PY' || fail "flipping bytes"
import mmap, sys
f = open(sys.argv[1], "r+b")
m = mmap.mmap(f.fileno(), 0)
# every copy: a small write's bytes stay in the store's log region too
# (dead there once the stopped OSD's store checkpointed its log)
for src in sys.argv[2:]:
    marker = open(src, "rb").read()[4096:4096 + 256]
    i, n = m.find(marker), 0
    while i >= 0:
        m[i + 100] ^= 0x5a
        n += 1
        i = m.find(marker, i + 1)
    assert 1 <= n <= 2, "marker of %s found %d times" % (src, n)
m.flush()
PY
"$cluster_bin" osd start 1 --dir "$cdir" >/dev/null || fail "osd start 1"
wait_health HEALTH_OK
ok "one byte of $prim (osd.1 primary) and of $repl (osd.1 replica) flipped on osd.1's disk"

rc=0
atoll pg deep-scrub default >"$tmp/scrub1" || rc=$?
cat "$tmp/scrub1"
[ $rc = 1 ] || fail "deep-scrub exited $rc, not 1"
grep -q "'$prim' on osd.1: read error$" "$tmp/scrub1" || fail "$prim not reported"
grep -q "'$repl' on osd.1: read error$" "$tmp/scrub1" || fail "$repl not reported"
[ "$(grep -c "' on osd" "$tmp/scrub1")" = 2 ] || fail "more than the two bad copies reported"
for i in $(seq 100); do atoll health detail | grep >/dev/null 'PG_DAMAGED: 2 pgs' && break; sleep 0.2; done
atoll health detail | grep >/dev/null 'PG_DAMAGED: 2 pgs inconsistent' || { atoll health detail; fail "no PG_DAMAGED"; }
for i in $(seq 100); do
	atoll --format json pg ls default |
		pyjson "sum('inconsistent' in p['state'] for p in j) == 2" 2>/dev/null && break
	sleep 0.2
done
atoll --format json pg ls default | pyjson "sum('inconsistent' in p['state'] for p in j) == 2"
ok "deep scrub names both bad copies; health PG_DAMAGED, 2 PGs inconsistent"

atoll --format json pg repair default >"$tmp/repair" || { cat "$tmp/repair"; fail "repair"; }
pyjson "sum(len(p['inconsistent']) for p in j) == 2 and all(e['repaired'] for p in j for e in p['inconsistent'])" <"$tmp/repair"
atoll pg deep-scrub default >"$tmp/scrub2" || { cat "$tmp/scrub2"; fail "scrub after repair"; }
[ "$(grep -c ': consistent$' "$tmp/scrub2")" = 8 ] || { cat "$tmp/scrub2"; fail "8 consistent PGs after repair"; }
for i in $(seq 100); do atoll health | grep >/dev/null PG_DAMAGED || break; sleep 0.2; done
atoll health | grep >/dev/null PG_DAMAGED && fail "PG_DAMAGED after the repair"
for o in "$prim" "$repl"; do
	atoll get default "$o" "$tmp/$o.back"
	cmp -s "$tmp/$o" "$tmp/$o.back" || fail "$o reads back wrong after repair"
done
ok "repair fixed both; a second scrub finds all consistent; both read back right"

"$cluster_bin" down --dir "$cdir" >/dev/null || fail "atoll-cluster down"
python3 - "$cdir" "$storetool_bin" "$tmp" <<'PY' || fail "copies differ offline"
import hashlib, json, os, subprocess, sys
cdir, tool, tmp = sys.argv[1:4]
copies = {}
for o in range(3):
    d = os.path.join(cdir, "osd.%d" % o)
    colls = json.loads(subprocess.run([tool, "--data", d, "--format", "json", "colls"],
                                      capture_output=True, check=True).stdout)
    for c in colls:
        ls = json.loads(subprocess.run([tool, "--data", d, "--format", "json", "ls", c["coll"]],
                                       capture_output=True, check=True).stdout)
        for oid in ls["objects"]:
            if oid.startswith("o"):
                data = subprocess.run([tool, "--data", d, "get", c["coll"], oid],
                                      capture_output=True, check=True).stdout
                want = open(os.path.join(tmp, oid), "rb").read()
                copies.setdefault(oid, []).append(data == want)
bad = [o for o, v in copies.items() if len(v) != 3 or not all(v)]
print("offline: %d objects, %d copies, bad: %s" % (len(copies), sum(map(len, copies.values())), bad))
sys.exit(1 if bad or len(copies) != 24 else 0)
PY
ok "offline: 3 equal, correct copies of each of the 24 objects"
echo "all $n checks passed"
