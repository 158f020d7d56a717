#!/bin/bash
# bench/fuse-ceiling.sh - what dd reaches through FUSE alone on this machine:
# bench/fuse-null (one file, reads give zeros, writes are dropped; the same
# FUSE settings as atoll-fuse) mounted in a temporary folder, then per round
# fsbench.sh's dd of 1 GiB with conv=fsync and, after drop_caches, its read.
# No disk, no network, no copy beyond the kernel's to and from /dev/fuse: an
# upper bound for atoll-fuse's dd figures (doc/benchmarks.md, "File system").
#
#   bench/fuse-ceiling.sh [--rounds N] [BUILD_DIR]
#     --rounds N   rounds (default 3); prints each and the medians
#   BUILD_DIR defaults to $ATOLL_BUILD, else build-release.  Root (drop_caches).
set -u
rounds=3
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=$2; shift 2 ;;
	-h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "fuse-ceiling.sh: unknown option '$1'; see --help" >&2; exit 2 ;;
	*) break ;;
	esac
done
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-${ATOLL_BUILD:-$root/build-release}}
bin=$build/bench/fuse-null
[ -x "$bin" ] || { echo "fuse-ceiling.sh: no '$bin'; build it with: ninja -C $build bench/fuse-null" >&2; exit 2; }
mnt=$(mktemp -d "${TMPDIR:-/tmp}/fuse-ceiling.XXXXXX")
cleanup() {
	mountpoint -q "$mnt" && fusermount3 -u "$mnt"
	rmdir "$mnt"
}
trap cleanup EXIT
"$bin" "$mnt" || { echo "fuse-ceiling.sh: cannot mount '$mnt'" >&2; exit 1; }
rate() { echo "1024 / ($2 - $1)" | bc -l; }
w=() r=()
for i in $(seq "$rounds"); do
	t0=$(date +%s.%N)
	dd if=/dev/zero of="$mnt/data" bs=1M count=1024 conv=fsync status=none || exit 1
	t1=$(date +%s.%N)
	sync
	echo 3 >/proc/sys/vm/drop_caches
	t2=$(date +%s.%N)
	dd if="$mnt/data" of=/dev/null bs=1M status=none || exit 1
	t3=$(date +%s.%N)
	w+=("$(rate "$t0" "$t1")") r+=("$(rate "$t2" "$t3")")
	printf 'round %d\twrite %.0f MB/s\tread %.0f MB/s\tload %s\n' "$i" "${w[-1]}" "${r[-1]}" \
		"$(cut -d' ' -f1 /proc/loadavg)"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf 'median\twrite %.0f MB/s\tread %.0f MB/s\n' "$(median "${w[@]}")" "$(median "${r[@]}")"
