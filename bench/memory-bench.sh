#!/bin/bash
# bench/memory-bench.sh - the daemons' resident memory under `atoll bench`
# against their budgets (osd_memory_target, mon_memory_target:
# doc/limits.md).
#
# Starts a cluster (atoll-cluster up: 1 monitor, 3 OSDs on 3 hosts, pool
# 'default' of size 3) in a folder under the repo's scratch/, then runs
# one after the other:
#   atoll bench default S write -b 4M -t 16 --no-cleanup
#   atoll bench default S seq -t 16
#   atoll bench default S write -b 4K -t 16 --no-cleanup --run-name small
#   atoll bench default S rand -b 4K -t 16 --run-name small
# sampling every 0.5 s each daemon's RssAnon, RssFile and VmRSS
# (/proc/PID/status), and prints the most seen per daemon with the
# budget: the daemon's own (anonymous) memory, RssAnon, under
# osd_memory_target (150 MB) for an OSD and mon_memory_target (50 MB) for
# a monitor; MB are 10^6 bytes.  RssFile (the kv's mapped file pages:
# clean page cache the kernel takes back under pressure) and VmRSS are
# printed beside it (doc/limits.md says why they are not the budget).
# The cluster is stopped and its folder removed at the end.
#
# usage: bench/memory-bench.sh [--seconds S] [--size SZ]
#   (S per workload, default 15; SZ each OSD's store, default 4G)
# environment: ATOLL_BUILD=DIR uses that build folder (default
# build-release/, built by scripts/build.sh first)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=15 size=4G
while [ $# -gt 0 ]; do
	case $1 in
	--seconds) seconds=${2:?}; shift 2 ;;
	--size) size=${2:?}; shift 2 ;;
	-h|--help) sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "memory-bench.sh: unknown option '$1'" >&2; exit 2 ;;
	esac
done
build=${ATOLL_BUILD:-$root/build-release}
[ -n "${ATOLL_BUILD:-}" ] || "$root/scripts/build.sh"
mkdir -p "$root/scratch"
dir=$(mktemp -d "$root/scratch/memory-bench.XXXXXX")
sampler=
cleanup() {
	[ -z "$sampler" ] || kill "$sampler" 2>/dev/null || true
	[ -z "$sampler" ] || wait "$sampler" 2>/dev/null || true
	"$build/tools/atoll-cluster" down --dir "$dir/c" >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT
"$build/tools/atoll-cluster" up --dir "$dir/c" --mons 1 --size "$size" >"$dir/up.log" 2>&1 ||
	{ cat "$dir/up.log" >&2; exit 1; }
export ATOLL_CONF=$dir/c/atoll.conf
atoll() { "$build/tools/atoll" "$@"; }

# daemon name -> pid, from the cluster's state file
awk '$1 == "daemon" && $8 > 0 { print $2, $8 }' "$dir/c/cluster.state" |
	grep -E '^(osd|mon)\.' >"$dir/pids"
python3 - "$dir/pids" "$dir/peak.json" <<'PY' &
import json, signal, sys, time
pids = dict(l.split() for l in open(sys.argv[1]))
peak = {n: {"RssAnon": 0, "RssFile": 0, "VmRSS": 0} for n in pids}
stop = False
def on_term(*_):
    global stop
    stop = True
signal.signal(signal.SIGTERM, on_term)
while not stop:
    for n, p in pids.items():
        try:
            for line in open("/proc/%s/status" % p):
                k, _, v = line.partition(":")
                if k in peak[n]:
                    peak[n][k] = max(peak[n][k], int(v.split()[0]))
        except OSError:
            pass
    json.dump(peak, open(sys.argv[2], "w"))
    time.sleep(0.5)
PY
sampler=$!
run() { echo "== atoll bench $*"; atoll bench "$@" 2>/dev/null | tail -n 12; }
run default "$seconds" write -b 4M -t 16 --no-cleanup
run default "$seconds" seq -t 16
run default "$seconds" write -b 4K -t 16 --no-cleanup --run-name small
run default "$seconds" rand -b 4K -t 16 --run-name small
sleep 1
kill "$sampler"; wait "$sampler" || true; sampler=
python3 - "$dir/peak.json" <<'PY'
import json, sys
peak = json.load(open(sys.argv[1]))
print("most seen while the benchmarks ran (MB = 10^6 bytes):")
ok = True
for n in sorted(peak):
    v = {k: x * 1024 / 1e6 for k, x in peak[n].items()}
    if n.startswith("osd"):
        good = v["RssAnon"] < 150
        budget = "RssAnon < 150 (osd_memory_target)"
    else:
        good = v["RssAnon"] < 50
        budget = "RssAnon < 50 (mon_memory_target)"
    ok = ok and good
    print("  %-6s VmRSS %6.1f  RssAnon %6.1f  RssFile %6.1f   %s: %s" %
          (n, v["VmRSS"], v["RssAnon"], v["RssFile"], budget, "met" if good else "MISSED"))
sys.exit(0 if ok else 1)
PY
