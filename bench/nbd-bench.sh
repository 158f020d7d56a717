#!/bin/bash
# bench/nbd-bench.sh - atoll-nbd performance against the disk's own limits
# (issue 5, recorded in doc/benchmarks.md).
#
#   bench/nbd-bench.sh BUILD_DIR [OUT_DIR]
#
# Starts a default cluster (3 OSDs, size 3) with atoll-cluster in OUT_DIR
# (default: a temporary folder on the same disk as /tmp), then, one after
# the other and never at the same time:
#   1. ../shared/bench/disklimit.sh on the OSDs' folder (the reference);
#   2. fio --ioengine=nbd against the cluster's atoll-nbd, 3 runs each:
#      4K randwrite QD32, 4K randread QD32 (the image written in full first,
#      so reads are not served as holes), 1M sequential write and read;
#   3. atoll bench 4K write at concurrency 32 (the object-level ceiling);
#   4. ext4 made on an image through nbdfuse + loop: dd 1 GiB conv=fsync.
# Prints every run and the median of 3, with the ratio to the reference.
# Always stops the cluster and undoes the mounts.
set -eu

build=${1:?usage: bench/nbd-bench.sh BUILD_DIR [OUT_DIR]}
build=$(cd "$build" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
out=${2:-$(mktemp -d /tmp/atoll-nbd-bench.XXXXXX)}
mkdir -p "$out"
cdir=$out/cluster
secs=${NBD_BENCH_SECONDS:-30}
disklimit=$here/../shared/bench/disklimit.sh
cluster=$build/tools/atoll-cluster
tool=$build/tests/nbd/nbd-image-tool
fusedir=$out/nf
mnt=$out/mnt

cleanup() {
	mountpoint -q "$mnt" 2>/dev/null && umount "$mnt" || true
	[ -d "$fusedir" ] && fusermount3 -u "$fusedir" 2>/dev/null || true
	"$cluster" down --dir "$cdir" >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

echo "== reference: disklimit.sh on $cdir's disk"
mkdir -p "$cdir"
if [ -x "$disklimit" ]; then
	"$disklimit" "$cdir" | tee "$out/disklimit.txt"
else
	echo "(no $disklimit)"
fi

echo "== cluster"
"$cluster" up --dir "$cdir" --size 20G | tee "$out/up.txt" | grep -E "HEALTH|nbd://"
conf=$cdir/atoll.conf
port=$(awk '$1=="daemon" && $3=="nbd" {print $7}' "$cdir/cluster.state")
ip=$(awk '$1=="daemon" && $3=="nbd" {print $6}' "$cdir/cluster.state")
[ -n "$port" ] || { echo "atoll-cluster started no atoll-nbd" >&2; exit 1; }
uri() { echo "nbd://$ip:$port/$1"; }

# fio_run NAME IMAGE RW BS QD -> prints IOPS and MiB/s of one run
fio_run() {
	fio --name="$1" --ioengine=nbd --uri="$(uri "$2")" --rw="$3" --bs="$4" \
		--iodepth="$5" --time_based --runtime="$secs" --ramp_time=2 \
		--size=1G --output-format=json 2>/dev/null |
	python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"][0]
side = j["write"] if j["write"]["io_bytes"] else j["read"]
print("%.0f %.1f" % (side["iops"], side["bw"] / 1024.0))'
}

"$tool" "$conf" default create bench 1073741824
echo "== filling the image (reads must not hit holes)"
fio --name=fill --ioengine=nbd --uri="$(uri bench)" --rw=write --bs=1M --iodepth=8 \
	--size=1G >/dev/null

for w in "randwrite 4k 32" "randread 4k 32" "write 1M 8" "read 1M 8"; do
	set -- $w
	: > "$out/fio-$1-$2.txt"
	for i in 1 2 3; do
		r=$(fio_run "$1" bench "$1" "$2" "$3")
		echo "$r" >> "$out/fio-$1-$2.txt"
		echo "fio $1 $2 QD$3 run $i: $r (IOPS MiB/s)"
	done
	echo "fio $1 $2 QD$3 median: $(cut -d' ' -f1 "$out/fio-$1-$2.txt" | median) IOPS," \
		"$(cut -d' ' -f2 "$out/fio-$1-$2.txt" | median) MiB/s"
done

echo "== atoll bench 4K write, 32 in flight (object-level ceiling)"
for i in 1 2 3; do
	ATOLL_CONF=$conf "$build/tools/atoll" bench default "$secs" write -b 4K -t 32 |
		awk '/Average IOPS/ {print $3}'
done | tee "$out/atoll-bench.txt" | sed 's/^/run: /'
echo "atoll bench 4K median: $(median < "$out/atoll-bench.txt") IOPS"

echo "== ext4 on nbdfuse + loop: dd 1 GiB conv=fsync"
"$tool" "$conf" default create ext4img 4294967296
mkdir -p "$fusedir" "$mnt"
nbdfuse -P "$out/nbdfuse.pid" "$fusedir/disk" "$(uri ext4img)" &
for _ in $(seq 100); do [ -e "$fusedir/disk" ] && break; sleep 0.1; done
mkfs.ext4 -q -F "$fusedir/disk"
mount -o loop "$fusedir/disk" "$mnt"
for i in 1 2 3; do
	dd if=/dev/zero of="$mnt/f$i" bs=1M count=1024 conv=fsync 2>&1 |
		awk '/copied/ {print $(NF-1), $NF}'
	rm -f "$mnt/f$i"
done | tee "$out/dd.txt" | sed 's/^/dd run: /'
echo "dd median: $(awk '{print $1}' "$out/dd.txt" | median) $(awk 'NR==1 {print $2}' "$out/dd.txt")"
umount "$mnt"
fusermount3 -u "$fusedir"
echo "results in $out"
