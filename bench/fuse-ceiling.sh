#!/bin/bash
# bench/fuse-ceiling.sh - what bench/fsbench.sh's workloads reach through FUSE alone on
# this machine: bench/fuse-null (one file whose reads give zeros and whose
# writes are dropped, and a namespace in memory; the same FUSE settings as
# atoll-fuse) mounted in a temporary folder.  Per round, by default,
# fsbench.sh's dd of 1 GiB with conv=fsync and, after drop_caches, its read;
# with --meta, its metadata workloads instead (touch of 10,000 files, ls -l
# cold and warm, rm -rf, mkdir and rmdir of 1,000), mounted with
# default_permissions as atoll-fuse is.  No disk, no network, no work beyond
# the kernel's FUSE requests: an upper bound for atoll-fuse's figures
# (doc/benchmarks.md, "The file system").
#
#   bench/fuse-ceiling.sh [--rounds N] [--meta] [BUILD_DIR]
#     --rounds N   rounds (default 3); prints each and the medians
#     --meta       the metadata workloads instead of dd
#   BUILD_DIR defaults to $ATOLL_BUILD, else build-release.  Root (drop_caches).
set -u
rounds=3 meta=
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=$2; shift 2 ;;
	--meta) meta=1; shift ;;
	-h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
"$bin" "$mnt" ${meta:+-o default_permissions} ||
	{ echo "fuse-ceiling.sh: cannot mount '$mnt'" >&2; exit 1; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
if [ -n "$meta" ]; then
	# fsbench.sh's metadata workloads, in its order, each timed
	el() { echo "$2 - $1" | bc -l; }
	names=(create_10000 ls_l_cold ls_l_warm rm_rf mkdir_1000 rmdir_1000)
	declare -A res
	for i in $(seq "$rounds"); do
		d=$mnt/r$i
		mkdir -p "$d/ls" "$d/dirs" || exit 1
		t=("$(date +%s.%N)")
		(cd "$d/ls" && seq 1 10000 | xargs touch) || exit 1
		t+=("$(date +%s.%N)")
		sync; echo 3 >/proc/sys/vm/drop_caches
		t+=("$(date +%s.%N)")
		ls -l "$d/ls" >/dev/null || exit 1
		t+=("$(date +%s.%N)" "$(date +%s.%N)")
		ls -l "$d/ls" >/dev/null || exit 1
		t+=("$(date +%s.%N)" "$(date +%s.%N)")
		rm -rf "$d/ls" || exit 1
		t+=("$(date +%s.%N)" "$(date +%s.%N)")
		(cd "$d/dirs" && seq 1 1000 | xargs mkdir) || exit 1
		t+=("$(date +%s.%N)" "$(date +%s.%N)")
		(cd "$d/dirs" && seq 1 1000 | xargs rmdir) || exit 1
		t+=("$(date +%s.%N)")
		line="round $i"
		for k in 0 1 2 3 4 5; do
			v=$(el "${t[2 * k]}" "${t[2 * k + 1]}")
			res[$k]="${res[$k]:-} $v"
			line+=$(printf '\t%s %.3f s' "${names[$k]}" "$v")
		done
		echo "$line"
	done
	line=median
	for k in 0 1 2 3 4 5; do
		# shellcheck disable=SC2086
		line+=$(printf '\t%s %.3f s' "${names[$k]}" "$(median ${res[$k]})")
	done
	echo "$line"
	exit 0
fi
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
printf 'median\twrite %.0f MB/s\tread %.0f MB/s\n' "$(median "${w[@]}")" "$(median "${r[@]}")"
