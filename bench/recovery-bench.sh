#!/bin/bash
# bench/recovery-bench.sh - failure detection, healing time and recovery
# speed of a local cluster (issue 4), against the disk.
#
# Starts the default cluster (atoll-cluster up: 1 monitor, 3 OSDs on 3
# hosts, pool 'default' of size 3, default settings) in a folder on the
# repo's disk and measures, each round:
#   ref        bench/disklimit.sh on the same folder (cluster idle)
#   healthy    atoll bench default S write -b 4M -t 16 (the client's
#              throughput on a healthy cluster)
#   detect     kill -9 osd.1: seconds until the map says it is down
#   idle       with osd.1 down, DATA GiB of 4 MiB objects are written; osd.1
#              starts: seconds until HEALTH_OK, and the recovery speed
#              (DATA / that time) with no client load, against
#              replicated3_seq_write_limit_MBps (target >= 25%)
#   loaded     the same again, but the healthy workload runs from the
#              moment osd.1 starts: its throughput against `healthy`
#              (target >= 50%), and how much of it recovery lasted
# The objects written for a round are removed after it.
#
# usage: bench/recovery-bench.sh [OPTIONS]
#   --dir DIR         folder for the cluster and the reference's file
#                     (default: a new folder under the repo's scratch/)
#   --runs N          rounds (default 1)
#   --seconds N       seconds of each client workload and of the
#                     reference's workloads (default 15)
#   --data-gib N      GiB written while osd.1 is down (default 2)
#   --size SZ         each OSD's store (default 10G)
#   --disklimit PATH  the reference script (default bench/disklimit.sh,
#                     or $DISKLIMIT)
#   --out DIR         raw outputs (default scratch/recovery-bench-DATE/)
#   --quick           1 run, 3 s, 256 MiB, 4G stores: checks the pipeline
#   -h, --help
# environment: ATOLL_BUILD=DIR uses the binaries of that build folder
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; }

root=$(cd "$(dirname "$0")/.." && pwd)
runs=1 seconds=15 data=2 size=10G dir= out= data_mib=
disklimit=${DISKLIMIT:-$root/bench/disklimit.sh}
while [ $# -gt 0 ]; do
	case $1 in
	--dir) dir=${2:?--dir needs a folder}; shift 2 ;;
	--runs) runs=${2:?--runs needs a number}; shift 2 ;;
	--seconds) seconds=${2:?--seconds needs a number}; shift 2 ;;
	--data-gib) data=${2:?--data-gib needs a number}; shift 2 ;;
	--size) size=${2:?--size needs a size}; shift 2 ;;
	--disklimit) disklimit=${2:?--disklimit needs a path}; shift 2 ;;
	--out) out=${2:?--out needs a folder}; shift 2 ;;
	--quick) runs=1 seconds=3 size=4G data_mib=256; shift ;;
	-h|--help) usage; exit 0 ;;
	*) echo "recovery-bench.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
	esac
done
for v in runs seconds data; do
	case ${!v} in ''|*[!0-9]*|0) echo "recovery-bench.sh: --$v '${!v}' is not a positive number" >&2; exit 2 ;; esac
done
[ -n "$data_mib" ] || data_mib=$((data * 1024))
[ -f "$disklimit" ] ||
	{ echo "recovery-bench.sh: the reference script '$disklimit' is missing; give it with --disklimit PATH" >&2; exit 1; }

if [ -n "${ATOLL_BUILD:-}" ]; then
	bin=$(cd "$ATOLL_BUILD" && pwd)
	ninja -C "$bin" tools/atoll tools/atoll-cluster mon/atoll-mon osd/atoll-osd >/dev/null
else
	"$root/scripts/build.sh" tools/atoll tools/atoll-cluster mon/atoll-mon osd/atoll-osd
	bin=$root/build-release
fi
cd "$root"
atoll=$bin/tools/atoll
acl=$bin/tools/atoll-cluster

stamp=$(date +%Y%m%d-%H%M%S)
[ -n "$out" ] || out=$root/scratch/recovery-bench-$stamp
mkdir -p "$out"
made_dir=0
if [ -z "$dir" ]; then
	mkdir -p "$root/scratch"
	dir=$(mktemp -d "$root/scratch/recovery-bench-dir.XXXXXX")
	made_dir=1
fi
mkdir -p "$dir"
cdir=$dir/cluster
export ATOLL_CONF=$cdir/atoll.conf
cleanup() {
	[ -f "$cdir/cluster.state" ] && "$acl" down --dir "$cdir" >&2 || true
	if [ $made_dir -eq 1 ]; then rm -rf "$dir"; fi
}
trap cleanup EXIT

{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo none)"
	echo "folder: $dir ($(df -hT "$dir" | awk 'NR==2 {print $1, $2}'))"
	echo "kernel: $(uname -r); cpus: $(nproc); load: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "runs: $runs; seconds: $seconds; written while down: $data_mib MiB; OSD stores: $size"
} | tee "$out/info.txt" >&2

"$acl" up --dir "$cdir" --size "$size" --timeout 300 --no-nbd --no-mds >&2

now() { date +%s.%N; }
since() { python3 -c "import sys; print('%.3f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$1" "$(now)"; }
osd1_up() {
	"$atoll" --format json osd dump |
		python3 -c 'import json,sys; sys.exit(0 if [o for o in json.load(sys.stdin)["osds"] if o["id"] == 1][0]["up"] else 1)'
}
wait_ok() {
	for _ in $(seq 1 6000); do
		[ "$("$atoll" health 2>/dev/null | head -n 1)" = HEALTH_OK ] && return 0
		sleep 0.1
	done
	"$atoll" health detail >&2 || true
	echo "recovery-bench.sh: no HEALTH_OK after 600 s" >&2
	exit 1
}
# down_and_write NAME: kill -9 osd.1, time its detection, write the data
down_and_write() {
	local t0
	t0=$(now)
	"$acl" osd kill 1 --dir "$cdir" >&2
	while osd1_up; do sleep 0.05; done
	since "$t0" >"$out/$1.detect_s"
	"$atoll" bench default 3600 write -b 4M -t 16 --no-cleanup --max-ops $((data_mib / 4)) \
		--run-name "$1" --format json >"$out/$1.write.json"
}

for i in $(seq 1 "$runs"); do
	echo "== run $i/$runs: reference (disklimit.sh)" >&2
	bash "$disklimit" "$dir" "$seconds" >"$out/ref.$i.tsv"
	cat "$out/ref.$i.tsv" >&2

	echo "== run $i/$runs: healthy client workload" >&2
	"$atoll" bench default "$seconds" write -b 4M -t 16 --format json >"$out/healthy.$i.json"

	echo "== run $i/$runs: osd.1 killed, $data_mib MiB written, osd.1 back, no client load" >&2
	down_and_write "idle$i"
	t0=$(now)
	"$acl" osd start 1 --dir "$cdir" >&2
	wait_ok
	since "$t0" >"$out/idle$i.heal_s"
	"$atoll" bench default 0 cleanup --run-name "idle$i" --format json >/dev/null

	echo "== run $i/$runs: the same, with the client workload while it heals" >&2
	down_and_write "loaded$i"
	t0=$(now)
	"$acl" osd start 1 --dir "$cdir" >&2
	"$atoll" bench default "$seconds" write -b 4M -t 16 --format json >"$out/loaded$i.json" &
	bpid=$!
	wait_ok
	since "$t0" >"$out/loaded$i.heal_s"
	wait $bpid
	"$atoll" bench default 0 cleanup --run-name "loaded$i" --format json >/dev/null
	echo "run $i: detect $(cat "$out/idle$i.detect_s") s, heal $(cat "$out/idle$i.heal_s") s idle," \
		"$(cat "$out/loaded$i.heal_s") s under load" >&2
done

python3 - "$out" "$runs" "$data_mib" "$seconds" <<'EOF' | tee "$out/summary.txt"
import json, statistics, sys
out, runs, mib, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
med = statistics.median
rd = lambda p: float(open("%s/%s" % (out, p)).read())
js = lambda p: json.load(open("%s/%s" % (out, p)))
ref = []
for i in range(1, runs + 1):
    for line in open("%s/ref.%d.tsv" % (out, i)):
        f = line.rstrip("\n").split("\t")
        if len(f) == 4 and f[1] == "replicated3_seq_write_limit_MBps":
            ref.append(float(f[2]))
R = range(1, runs + 1)
healthy = med([js("healthy.%d.json" % i)["MBps"] for i in R])
loaded = med([js("loaded%d.json" % i)["MBps"] for i in R])
detect = med([rd("idle%d.detect_s" % i) for i in R] + [rd("loaded%d.detect_s" % i) for i in R])
heal = med([rd("idle%d.heal_s" % i) for i in R])
heal_loaded = med([rd("loaded%d.heal_s" % i) for i in R])
speed = mib / heal
lim = med(ref)
print("median of %d run%s; %d MiB written while osd.1 was down" % (runs, "" if runs == 1 else "s", mib))
print("%-44s %10s  %s" % ("", "value", "target"))
print("%-44s %10.2f  (Ceph 1 s)" % ("kill -9 -> marked down, s", detect))
print("%-44s %10.2f  (Ceph 149 s, GlusterFS 13.5 s)" % ("restart -> HEALTH_OK, no client load, s", heal))
print("%-44s %10.1f  >= 25%% of %.0f: %.0f%% %s" % ("recovery speed, no client load, MB/s", speed, lim,
      100 * speed / lim, "MET" if speed >= 0.25 * lim else "MISSED"))
print("%-44s %10.1f" % ("client 4M writes, healthy, MB/s", healthy))
print("%-44s %10.1f  >= 50%% of healthy: %.0f%% %s" % ("client 4M writes while recovering, MB/s", loaded,
      100 * loaded / healthy, "MET" if loaded >= 0.5 * healthy else "MISSED"))
print("%-44s %10.2f  (the workload ran %d s)" % ("restart -> HEALTH_OK under that load, s", heal_loaded, secs))
EOF
echo "raw outputs: $out" >&2
