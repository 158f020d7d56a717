#!/bin/bash
# bench/fs-bench.sh - the file system (atoll-mds + atoll-fuse) against a
# local folder on the same disk (doc/benchmarks.md, "The file system").
#
#   bench/fs-bench.sh [OPTIONS] [BUILD_DIR]
#     --size SZ      each OSD's store (default 4G)
#     --rounds N     rounds (default 1; medians are over the rounds)
#     --out DIR      where the cluster and the raw outputs go (default a new
#                    folder under /var/tmp: the same disk as the repository)
#     --quick        fsbench.sh's quick mode (fewer files, 256 MiB dd) and
#                    a 5 s disklimit: checks the pipeline only
#     --no-disk      skip bench/disklimit.sh
#     --fuse-opts O  more atoll-fuse -o options, e.g. nolease (an A/B of
#                    the leases: the kernel then caches metadata for 1 s)
#   BUILD_DIR defaults to $ATOLL_BUILD, else build-release.
#
# Starts a default cluster (3 OSDs on 3 hosts; fs_meta and fs_data of size
# 3; atoll-mds), mounts it with atoll-fuse, then per round, one after the
# other: disklimit.sh on the cluster's folder (cluster idle; first round
# only), bench/fsbench.sh on the mount (label atoll) and on a
# local folder beside it (label local), the cluster's own objects in
# fs_data (`atoll bench fs_data`: 1 GiB of 4 MiB objects written 16 in
# flight, then read with seq -t 16 for 10 s; removed after) and the
# metadata workloads through FUSE alone (bench/fuse-ceiling.sh --meta).
# Prints a table: each workload's median on atoll and local, atoll/local,
# and the best peer's figure from the issue with atoll/peer; then issue
# 36's targets: dd write >= 80% and dd read >= 60% of the objects' 4 MiB
# figures of the same round, the metadata workloads within 1.3x the FUSE
# ceiling.  Always unmounts and stops the cluster (its stores are
# removed), on failure too; raw outputs stay in --out.
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
build=${ATOLL_BUILD:-$here/build-release}
size=4G rounds=1 out="" quick="" disk=1 fopts=""
while [ $# -gt 0 ]; do
	case $1 in
	--size) size=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--quick) quick=quick; shift ;;
	--no-disk) disk=0; shift ;;
	--fuse-opts) fopts=,$2; shift 2 ;;
	-h|--help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "unknown option '$1'; see: bench/fs-bench.sh --help" >&2; exit 2 ;;
	*) build=$1; shift ;;
	esac
done
build=$(cd "$build" && pwd)
fsbench=${FSBENCH:-$here/bench/fsbench.sh}
disklimit=${DISKLIMIT:-$here/bench/disklimit.sh}
for t in python3 bc fusermount3; do
	command -v "$t" >/dev/null || { echo "$t is missing; install it with: scripts/deps.sh" >&2; exit 1; }
done
command -v postmark >/dev/null || echo "postmark is missing: fsbench.sh skips it (apt-get install postmark)" >&2
[ -f "$fsbench" ] || { echo "'$fsbench' is missing" >&2; exit 1; }
cluster=$build/tools/atoll-cluster
fuse=$build/posixfs/atoll-fuse
atoll=$build/tools/atoll
for b in "$cluster" "$fuse" "$atoll" "$build/posixfs/atoll-mds" "$build/bench/fuse-null"; do
	[ -x "$b" ] || { echo "'$b' is not built; run: ninja -C $build" >&2; exit 1; }
done
[ -n "$out" ] || out=$(mktemp -d /var/tmp/atoll-fs-bench.XXXXXX)
mkdir -p "$out"
out=$(cd "$out" && pwd)
cdir=$out/cluster mnt=$out/mnt local=$out/local
[ ! -e "$cdir" ] || { echo "'$cdir' exists; give another --out" >&2; exit 1; }

cleanup() {
	mountpoint -q "$mnt" 2>/dev/null && { fusermount3 -u "$mnt" || fusermount3 -uz "$mnt"; }
	[ -d "$cdir" ] && "$cluster" down --dir "$cdir" --purge >/dev/null 2>&1 || true
	rm -rf "$local"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

median() { sort -g | awk '{a[NR]=$1} END {if (NR) print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
load() { echo "load $(cut -d' ' -f1-3 /proc/loadavg), $(grep -c ^processor /proc/cpuinfo) CPUs"; }

{
	echo "# fs-bench $(date -u '+%Y-%m-%d %H:%M UTC'), build $build"
	echo "# commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$here" status --porcelain 2>/dev/null | grep -q . && echo ' (uncommitted changes)')"
	echo "# $rounds round(s)${quick:+, quick}, stores $size${fopts:+, atoll-fuse -o ${fopts#,}}, $(load)"
} | tee "$out/summary.txt"

echo "== cluster (3 OSDs, stores $size)"
"$cluster" up --dir "$cdir" --size "$size" --no-nbd --timeout 120 >"$out/up.txt" 2>&1 ||
	{ tail -20 "$out/up.txt" >&2; echo "atoll-cluster up failed (see $out/up.txt)" >&2; exit 1; }
mkdir -p "$mnt" "$local"
"$fuse" "$mnt" -o "conf=$cdir/atoll.conf$fopts" >"$out/fuse.txt" 2>&1 ||
	{ cat "$out/fuse.txt" >&2; echo "atoll-fuse failed" >&2; exit 1; }
# atoll-fuse returns once it has daemonized: the mount comes a moment later
for _ in $(seq 1 300); do mountpoint -q "$mnt" && break; sleep 0.1; done
mountpoint -q "$mnt" || { echo "'$mnt' is not mounted (see $out/fuse.txt)" >&2; exit 1; }

for r in $(seq 1 "$rounds"); do
	if [ "$disk" = 1 ] && [ "$r" = 1 ]; then
		echo "== disklimit (round $r)"
		"$disklimit" "$out" ${quick:+5} | tee "$out/disk.tsv"
	fi
	echo "== fsbench atoll (round $r, $(load))"
	"$fsbench" "$mnt" atoll $quick | tee "$out/atoll.$r.tsv"
	echo "== fsbench local (round $r, $(load))"
	"$fsbench" "$local" local $quick | tee "$out/local.$r.tsv"
	echo "== objects of fs_data, 4 MiB, 16 in flight (round $r)"
	ATOLL_CONF=$cdir/atoll.conf "$atoll" bench fs_data 600 write -b 4M -t 16 --max-ops 256 \
		--no-cleanup --run-name fsbench --format json >"$out/objw.$r.json"
	ATOLL_CONF=$cdir/atoll.conf "$atoll" bench fs_data 10 seq -t 16 \
		--run-name fsbench --format json >"$out/objr.$r.json"
	ATOLL_CONF=$cdir/atoll.conf "$atoll" bench fs_data 0 cleanup --run-name fsbench >/dev/null
	python3 -c 'import json, sys
for f, m in ((sys.argv[1], "write"), (sys.argv[2], "read")):
    print("objects\tobj_%s_4M_MBps\t%.1f\tMB/s" % (m, json.load(open(f))["MBps"]))' \
		"$out/objw.$r.json" "$out/objr.$r.json" | tee "$out/objects.$r.tsv"
	echo "== FUSE alone, metadata (round $r)"
	"$here/bench/fuse-ceiling.sh" --meta --rounds 1 "$build" >"$out/ceiling.$r.txt"
	# "median<TAB>create_10000 1.390 s<TAB>..." -> fsbench.sh's names
	grep '^median' "$out/ceiling.$r.txt" | tr '\t' '\n' | tail -n +2 |
		awk '{ n = $1; sub(/^create_10000$/, "create_10000_empty_s", n)
		       sub(/^ls_l_/, "ls_l_10000_", n); sub(/^rm_rf$/, "rm_rf_10000", n)
		       if (n !~ /_s$/) n = n "_s"; printf "ceiling\t%s\t%s\ts\n", n, $2 }' |
		tee "$out/ceiling.$r.tsv"
done

# the best peer of the issue's table (s, or MB/s for dd, tx/s for postmark)
peer() {
	case $1 in
	files_total_s) echo 16.9 ;;
	create_*_empty_s) echo 5.2 ;;
	ls_l_*_cold_s) echo 2.1 ;;
	rm_rf_*_s) echo 2.1 ;;
	mkdir_1000_s) echo 0.30 ;;
	rmdir_1000_s) echo 0.17 ;;
	cp_rp_38MB_in_s) echo 0.72 ;;
	dd_write_MBps) echo 139 ;;
	dd_read_MBps) echo 302 ;;
	postmark_tx_per_s) echo 500 ;;
	*) echo - ;;
	esac
}
{
	echo
	printf '%-26s %10s %10s %12s %10s %12s\n' workload atoll local atoll/local best-peer atoll/peer
	for metric in $(cut -f2 "$out/atoll.1.tsv"); do
		a=$(cat "$out"/atoll.*.tsv | awk -F'\t' -v m="$metric" '$2 == m {print $3}' | median)
		l=$(cat "$out"/local.*.tsv | awk -F'\t' -v m="$metric" '$2 == m {print $3}' | median)
		p=$(peer "$metric")
		rl=$(awk -v a="$a" -v b="$l" 'BEGIN { if (b > 0) printf "%.1f", a / b; else print "-" }')
		rp=$( [ "$p" = - ] && echo - || awk -v a="$a" -v b="$p" 'BEGIN { printf "%.2f", a / b }')
		printf '%-26s %10.2f %10.2f %12s %10s %12s\n' "$metric" "$a" "$l" "$rl" "$p" "$rp"
	done
	echo
	echo "issue 36 (medians over the rounds; objects and FUSE alone measured in each round)"
	printf '%-26s %10s %14s %10s %s\n' workload atoll against ratio target
	med_of() { cat "$out"/$1.*.tsv | awk -F'\t' -v m="$2" '$2 == m {print $3}' | median; }
	target() {	# METRIC FILES REF-METRIC OP BOUND
		local a o ratio verdict
		a=$(med_of atoll "$1") o=$(med_of "$2" "$3")
		[ -n "$a" ] && [ -n "$o" ] || { printf '%-26s %10s %14s %10s %s\n' "$1" "${a:--}" - - "no figure"; return; }
		ratio=$(awk -v a="$a" -v b="$o" 'BEGIN { printf "%.2f", a / b }')
		verdict=$(awk -v r="$ratio" -v op="$4" -v b="$5" 'BEGIN {
			ok = (op == ">=") ? (r >= b) : (r <= b); print (ok ? "met" : "missed") }')
		printf '%-26s %10.2f %14s %10s %s\n' "$1" "$a" "$o ($2)" "$ratio" "$4 $5: $verdict"
	}
	target dd_write_MBps objects obj_write_4M_MBps ">=" 0.80
	target dd_read_MBps objects obj_read_4M_MBps ">=" 0.60
	for m in create_10000_empty_s ls_l_10000_cold_s rm_rf_10000_s mkdir_1000_s rmdir_1000_s; do
		target "$m" ceiling "$m" "<=" 1.3
	done
	[ -f "$out/disk.tsv" ] && { echo; cat "$out/disk.tsv"; }
	echo "# ended $(date -u '+%H:%M UTC'), $(load)"
} | tee -a "$out/summary.txt"
echo "outputs in $out"
