#!/bin/bash
# bench/nbd-bench.sh - atoll-nbd performance against atoll's own objects of
# the same run, and the disk's limits beside (doc/benchmarks.md, "Block
# images through NBD").
#
#   bench/nbd-bench.sh [OPTIONS] [BUILD_DIR]
#     --size SZ      each OSD's store (default 6G; the image is 1 GiB, size 3)
#     --seconds N    seconds per fio and atoll bench run (default 30)
#     --rounds N     rounds (default 3; medians are over the rounds)
#     --out DIR      where the cluster and the raw outputs go (default a new
#                    folder under /var/tmp: the same disk as the repository)
#     --quick        1 round of 5 s, a 256 MiB dd: checks the pipeline only
#     --no-ext4      skip the ext4-on-nbdfuse dd
#   BUILD_DIR defaults to $ATOLL_BUILD, else build-release.
#
# Starts a default cluster (3 OSDs on 3 hosts, pool 'default' of size 3,
# atoll-nbd started by atoll-cluster), writes a 1 GiB image in full (so
# reads never hit holes), then runs N rounds of, one after the other and
# never at the same time:
#   ref   bench/disklimit.sh on the cluster's folder (cluster idle)
#   fio   --ioengine=nbd against atoll-nbd: 4K randwrite QD32, 4K randread
#         QD32, 1M sequential write QD16, 1M sequential read QD16
#   bench atoll bench on pool 'default', the objects' figures the NBD ones
#         are held to (issue 36): write -b 4K -t 32; write -b 4M -t 16
#         (objects kept), then seq -t 16 and rand -b 4K -t 32 over them,
#         then they are removed
#   ext4  ext4 made on a 4 GiB image through nbdfuse + loop: dd 1 GiB of
#         zeroes with conv=fsync, timed here (MiB/s)
# Prints every run, then the medians over the rounds, each target's ratio
# (median of the per-round ratios too: the reference moves when the machine
# is shared) and the load of the machine.  Always stops the cluster, removes
# its stores and undoes the mount and nbdfuse, on failure too; the outputs
# stay in the --out folder.
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
build=${ATOLL_BUILD:-$here/build-release}
size=6G secs=30 rounds=3 out="" quick=0 ext4=1 ddmib=1024
while [ $# -gt 0 ]; do
	case $1 in
	--size) size=$2; shift 2 ;;
	--seconds) secs=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--quick) quick=1; shift ;;
	--no-ext4) ext4=0; shift ;;
	-h|--help) sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "unknown option '$1'; see: bench/nbd-bench.sh --help" >&2; exit 2 ;;
	*) build=$1; shift ;;
	esac
done
if [ "$quick" = 1 ]; then
	secs=5 rounds=1 ddmib=256
fi
build=$(cd "$build" && pwd)
for t in fio nbdfuse fusermount3 mkfs.ext4 python3; do
	command -v "$t" >/dev/null ||
		{ echo "$t is missing; install it with: scripts/deps.sh" >&2; exit 1; }
done
fio --enghelp 2>/dev/null | grep -qw nbd ||
	{ echo "this fio has no nbd engine; install Debian's fio (with libnbd)" >&2; exit 1; }
[ -n "$out" ] || out=$(mktemp -d /var/tmp/atoll-nbd-bench.XXXXXX)
mkdir -p "$out"
out=$(cd "$out" && pwd)
cdir=$out/cluster
disklimit=${DISKLIMIT:-$here/bench/disklimit.sh}
cluster=$build/tools/atoll-cluster
atoll=$build/tools/atoll
tool=$build/tests/nbd/nbd-image-tool
fusedir=$out/nf
mnt=$out/mnt
fusepid=""
[ ! -e "$cdir" ] || { echo "'$cdir' exists; give another --out" >&2; exit 1; }
for b in "$cluster" "$atoll" "$tool" "$build/blockdev/nbd/atoll-nbd"; do
	[ -x "$b" ] || { echo "'$b' is not built; run: ninja -C $build" >&2; exit 1; }
done

cleanup() {
	mountpoint -q "$mnt" 2>/dev/null && umount "$mnt" || true
	if [ -n "$fusepid" ]; then
		fusermount3 -u "$fusedir" 2>/dev/null || true
		wait "$fusepid" 2>/dev/null || true
	fi
	# the stores (GiBs) are of no use afterwards; the outputs stay
	[ -d "$cdir" ] && "$cluster" down --dir "$cdir" --purge >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

median() { sort -g | awk '{a[NR]=$1} END {if (NR) print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
load() { echo "load $(cut -d' ' -f1-3 /proc/loadavg), $(grep -c ^processor /proc/cpuinfo) CPUs"; }

{
	echo "# nbd-bench $(date -u '+%Y-%m-%d %H:%M UTC'), build $build"
	echo "# commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$here" status --porcelain 2>/dev/null | grep -q . && echo ' (uncommitted changes)')"
	echo "# $secs s per run, $rounds round(s), stores $size, $(load)"
} | tee "$out/summary.txt"

echo "== cluster (stores $size)"
mkdir -p "$cdir"
"$cluster" up --dir "$cdir" --size "$size" --no-mds --timeout 120 > "$out/up.txt" 2>&1 ||
	{ tail -20 "$out/up.txt" >&2; echo "atoll-cluster up failed (see $out/up.txt)" >&2; exit 1; }
conf=$cdir/atoll.conf
port=$(awk '$1=="daemon" && $3=="nbd" {print $7}' "$cdir/cluster.state")
ip=$(awk '$1=="daemon" && $3=="nbd" {print $6}' "$cdir/cluster.state")
[ -n "$port" ] || { echo "atoll-cluster started no atoll-nbd (see $out/up.txt)" >&2; exit 1; }
uri() { echo "nbd://$ip:$port/$1"; }
echo "atoll-nbd at $(uri '')"

# fio_run RW BS QD -> "IOPS MiB/s" of one run on image 'bench'
fio_run() {
	fio --name="$1" --ioengine=nbd --uri="$(uri bench)" --rw="$1" --bs="$2" \
		--iodepth="$3" --time_based --runtime="$secs" --ramp_time=2 \
		--size=1G --output-format=json > "$out/fio.json" 2> "$out/fio.err" ||
		{ cat "$out/fio.err" >&2; return 1; }
	python3 -c '
import json, sys
text = open(sys.argv[1]).read()    # the nbd engine prints a line before the JSON
j = json.loads(text[text.index("{"):])["jobs"][0]
if j["error"]:
    sys.exit("fio reported error %d" % j["error"])
side = j["write"] if j["write"]["io_bytes"] else j["read"]
print("%.0f %.1f" % (side["iops"], side["bw"] / 1024.0))' "$out/fio.json"
}

"$tool" "$conf" default create bench 1073741824
echo "== filling the image 'bench' (1 GiB; reads must not hit holes)"
fio --name=fill --ioengine=nbd --uri="$(uri bench)" --rw=write --bs=1M --iodepth=8 \
	--size=1G > "$out/fill.txt" 2>&1
if [ "$ext4" = 1 ]; then
	"$tool" "$conf" default create ext4img 4294967296
	mkdir -p "$fusedir" "$mnt"
	nbdfuse -P "$out/nbdfuse.pid" "$fusedir/disk" "$(uri ext4img)" 2> "$out/nbdfuse.err" &
	fusepid=$!
	for _ in $(seq 200); do [ -s "$out/nbdfuse.pid" ] && [ -e "$fusedir/disk" ] && break; sleep 0.1; done
	mkfs.ext4 -q -F "$fusedir/disk"
	mount -o loop "$fusedir/disk" "$mnt"
fi

: > "$out/rounds.tsv"
rec() { printf '%s\t%s\t%s\n' "$round" "$1" "$2" >> "$out/rounds.tsv"; }
# obench KEY FIELD ARGS...: atoll bench default $secs ARGS (JSON), records
# FIELD (iops or MBps, which is MiB/s like fio's) as bench_KEY
obench() {
	local key=$1 field=$2 r
	shift 2
	r=$(ATOLL_CONF=$conf "$atoll" bench default "$secs" "$@" --format json 2>/dev/null |
		python3 -c 'import json, sys; print("%.1f" % json.loads(sys.stdin.read())[sys.argv[1]])' "$field") ||
		{ echo "atoll bench $* failed" >&2; return 1; }
	echo "atoll bench $*: $r $field"
	rec "bench_$key" "$r"
}
for round in $(seq "$rounds"); do
	echo "== round $round: $(load)"
	rec load "$(cut -d' ' -f1 /proc/loadavg)"
	if [ -x "$disklimit" ]; then
		"$disklimit" "$cdir" 15 | tee "$out/ref.$round.tsv" | sed 's/^/ref: /'
		while IFS=$'\t' read -r _ k v _; do rec "$k" "$v"; done < "$out/ref.$round.tsv"
	else
		echo "(no $disklimit: no reference)"
	fi
	for w in "randwrite 4k 32" "randread 4k 32" "write 1M 16" "read 1M 16"; do
		set -- $w
		r=$(fio_run "$1" "$2" "$3")
		echo "fio $1 $2 QD$3: $r (IOPS MiB/s)"
		rec "fio_${1}_${2}_iops" "${r% *}"
		rec "fio_${1}_${2}_mibps" "${r#* }"
	done
	# objects: 4K writes, 4M writes kept for the reads (at most 2 GiB: the
	# stores hold the image and the ext4 image too), 4M and 4K reads
	obench write_4K_iops iops write -b 4K -t 32
	obench write_4M_mibps MBps write -b 4M -t 16 --no-cleanup --run-name nbdb --max-ops 512
	obench read_4M_mibps MBps seq -t 16 --run-name nbdb
	obench read_4K_iops iops rand -b 4K -t 32 --run-name nbdb
	ATOLL_CONF=$conf "$atoll" bench default 0 cleanup --run-name nbdb >/dev/null 2>&1 || true
	if [ "$ext4" = 1 ]; then
		sync
		t0=$(date +%s.%N)
		dd if=/dev/zero of="$mnt/f" bs=1M count="$ddmib" conv=fsync status=none
		t1=$(date +%s.%N)
		r=$(echo "$t0 $t1" | awk -v m="$ddmib" '{printf "%.1f", m / ($2 - $1)}')
		rm -f "$mnt/f"
		sync
		fstrim "$mnt" 2>/dev/null || true
		echo "ext4 dd ${ddmib} MiB conv=fsync: $r MiB/s"
		rec ext4_dd_mibps "$r"
	fi
done

# Medians and ratios: value(key) is the median over the rounds; a ratio
# is given as the ratio of the medians and the median of per-round ratios.
python3 - "$out/rounds.tsv" <<'EOF' | tee -a "$out/summary.txt"
import statistics, sys
rounds = {}
for line in open(sys.argv[1]):
    r, k, v = line.rstrip("\n").split("\t")
    try:
        rounds.setdefault(int(r), {})[k] = float(v)
    except ValueError:
        pass
def med(k):
    vals = [d[k] for d in rounds.values() if k in d]
    return statistics.median(vals) if vals else None
def runs(k):
    return ", ".join("%g" % d[k] for d in rounds.values() if k in d)
print("\n%-40s %12s   %s" % ("median over %d round(s)" % len(rounds), "value", "runs"))
for k in sorted({k for d in rounds.values() for k in d}):
    print("%-40s %12g   %s" % (k, med(k), runs(k)))
# name, measured key, reference key, reference factor, target
targets = [
    ("4K randwrite QD32 / objects 4K write -t 32", "fio_randwrite_4k_iops", "bench_write_4K_iops", 1, 0.80),
    ("4K randread QD32 / objects 4K read -t 32", "fio_randread_4k_iops", "bench_read_4K_iops", 1, 0.70),
    ("1M write QD16 / objects 4M write -t 16", "fio_write_1M_mibps", "bench_write_4M_mibps", 1, 0.85),
    ("1M read QD16 / objects 4M read -t 16", "fio_read_1M_mibps", "bench_read_4M_mibps", 1, 0.70),
    # beside them, the disk (no target here: the objects' are in
    # bench/cluster-bench.sh)
    ("4K randwrite / replicated3_durable_4K", "fio_randwrite_4k_iops", "replicated3_durable_4K_limit_IOPS", 1, None),
    ("4K randread / randread_4K_QD32", "fio_randread_4k_iops", "randread_4K_QD32_IOPS", 1, None),
    ("1M write / replicated3_seq_write_limit", "fio_write_1M_mibps", "replicated3_seq_write_limit_MBps", 1, None),
    ("1M read / seq_read_4M", "fio_read_1M_mibps", "seq_read_4M_MBps", 1, None),
    ("ext4 dd / replicated3_seq_write_limit", "ext4_dd_mibps", "replicated3_seq_write_limit_MBps", 1, None),
]
print("\n%-45s %8s %8s %8s  %s" % ("target", "ratio", "per-rnd", "target", "verdict"))
for name, k, ref, f, tgt in targets:
    if med(k) is None or med(ref) is None or not med(ref):
        print("%-45s %8s" % (name, "n/a"))
        continue
    ratio = med(k) / (med(ref) * f)
    per = statistics.median([d[k] / (d[ref] * f) for d in rounds.values()
                             if k in d and ref in d and d[ref]])
    if tgt is None:
        print("%-45s %7.0f%% %7.0f%% %8s" % (name, 100 * ratio, 100 * per, "-"))
    else:
        print("%-45s %7.0f%% %7.0f%% %7.0f%%  %s" % (name, 100 * ratio, 100 * per, 100 * tgt,
                                                  "met" if ratio >= tgt else "missed"))
EOF
echo "# ended $(date -u '+%H:%M UTC'), $(load)" | tee -a "$out/summary.txt"
echo "results in $out (summary.txt, rounds.tsv, ref.N.tsv)"
