#!/bin/bash
# bench/fs-dd-ab.sh - dd 1 GiB write (conv=fsync) and read through atoll-fuse,
# several atoll-fuse builds alternately on one running cluster: an A/B of the
# client's data path in one window (doc/benchmarks.md, "The file system").
#
#   bench/fs-dd-ab.sh CLUSTER_DIR LABEL=ATOLL_FUSE [LABEL=ATOLL_FUSE ...]
#
# CLUSTER_DIR: a cluster made by `atoll-cluster up --dir CLUSTER_DIR` (with
# its MDS).  Each LABEL=BINARY is one run, in the order given (repeat them
# for rounds): mount CLUSTER_DIR/mnt with that binary, dd of 1 GiB of zeros
# with conv=fsync (fsbench.sh's dd_write), drop the page caches (root), dd
# the file to /dev/null (dd_read), remove it, unmount.  Prints one line a
# run: time, label, MB/s written, MB/s read, the load before and after.
# Copy the "before" binary out of its build dir first: a rebuild replaces it.
set -u
[ $# -ge 2 ] || { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
cdir=$1
shift
mnt=$cdir/mnt
mkdir -p "$mnt"
rate() { echo "1024 / ($2 - $1)" | bc -l; }
for spec in "$@"; do
	label=${spec%%=*} bin=${spec#*=}
	"$bin" "$mnt" -o "conf=$cdir/atoll.conf" || { echo "cannot mount with $bin" >&2; exit 1; }
	for _ in $(seq 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
	mountpoint -q "$mnt" || { echo "$bin did not mount $mnt" >&2; exit 1; }
	d=$mnt/dd.$$
	mkdir -p "$d"
	l1=$(cut -d' ' -f1 /proc/loadavg)
	t0=$(date +%s.%N)
	dd if=/dev/zero of="$d/dd" bs=1M count=1024 conv=fsync status=none || echo "$label: dd write failed" >&2
	t1=$(date +%s.%N)
	sync
	echo 3 >/proc/sys/vm/drop_caches
	t2=$(date +%s.%N)
	dd if="$d/dd" of=/dev/null bs=1M status=none || echo "$label: dd read failed" >&2
	t3=$(date +%s.%N)
	l2=$(cut -d' ' -f1 /proc/loadavg)
	rm -rf "$d"
	printf '%s\t%s\twrite %.0f MB/s\tread %.0f MB/s\tload %s..%s\n' "$(date -u +%H:%M:%S)" \
		"$label" "$(rate "$t0" "$t1")" "$(rate "$t2" "$t3")" "$l1" "$l2"
	fusermount3 -u "$mnt" || fusermount3 -uz "$mnt"
	sleep 1
done
