#!/bin/bash
# bench/fs-meta-ab.sh - the metadata workloads of bench/fsbench.sh
# through atoll-fuse, several atoll-fuse builds (or mount options)
# alternately on one running cluster: an A/B of the client's metadata path
# in one window (doc/benchmarks.md, "The file system").
#
#   bench/fs-meta-ab.sh CLUSTER_DIR LABEL=ATOLL_FUSE[,OPTS] [LABEL=... ...]
#
# CLUSTER_DIR: a cluster made by `atoll-cluster up --dir CLUSTER_DIR` (with
# its MDS).  Each LABEL=BINARY is one run, in the order given (repeat them
# for rounds); ",OPTS" after the binary adds mount options (-o).  A run
# mounts CLUSTER_DIR/mnt, then in a new folder W: `seq 1 10000 | xargs
# touch` in W/ls; drop the page caches (root) and `ls -l W/ls` (cold);
# `rm -rf W/ls`; `seq 1 1000 | xargs mkdir` in W/dirs, `seq 1 1000 | xargs
# rmdir`; unmounts.  Prints one line a run: the seconds of each, the MDS
# requests of the run (`atoll fs status`), the CPU seconds atoll-fuse and
# atoll-mds used over the five workloads (user + system; on a loaded
# machine less noisy than the wall time), the load before and after.
# Copy the "before" binary out of its build dir first: a rebuild replaces it.
set -u
[ $# -ge 2 ] || { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
cdir=$1
shift
mnt=$cdir/mnt
atoll=${ATOLL:-atoll}	# the CLI (ATOLL=PATH)
mkdir -p "$mnt"
now() { date +%s.%N; }
secs() { printf '%.3f' "$(echo "$2 - $1" | bc -l)"; }
cpu() {	# cpu PID: user + system seconds so far
	awk '{ printf "%.2f", ($14 + $15) / 100 }' "/proc/$1/stat" 2>/dev/null || echo 0
}
mds_pid=$(pgrep -f "atoll-mds --conf $cdir/atoll.conf" | head -1)
served() { ATOLL_CONF=$cdir/atoll.conf "$atoll" fs status --format json 2>/dev/null |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"]["total"])' 2>/dev/null || echo 0; }
for spec in "$@"; do
	label=${spec%%=*} rest=${spec#*=}
	bin=${rest%%,*} opts=
	[ "$bin" != "$rest" ] && opts=,${rest#*,}
	"$bin" "$mnt" -o "conf=$cdir/atoll.conf$opts" || { echo "cannot mount with $bin" >&2; exit 1; }
	for _ in $(seq 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
	mountpoint -q "$mnt" || { echo "$bin did not mount $mnt" >&2; exit 1; }
	fuse_pid=$(pgrep -nf -- "$bin $mnt -o")
	w=$mnt/meta.$$.$RANDOM
	mkdir -p "$w/ls" "$w/dirs"
	l1=$(cut -d' ' -f1 /proc/loadavg)
	r0=$(served)
	c0=$(echo "$(cpu "$fuse_pid") + $(cpu "$mds_pid")" | bc)
	t0=$(now)
	(cd "$w/ls" && seq 1 10000 | xargs touch)
	t1=$(now)
	sync
	echo 3 >/proc/sys/vm/drop_caches
	t2=$(now)
	ls -l "$w/ls" >/dev/null
	t3=$(now)
	rm -rf "$w/ls"
	t4=$(now)
	(cd "$w/dirs" && seq 1 1000 | xargs mkdir)
	t5=$(now)
	(cd "$w/dirs" && seq 1 1000 | xargs rmdir)
	t6=$(now)
	r1=$(served)
	c1=$(echo "$(cpu "$fuse_pid") + $(cpu "$mds_pid")" | bc)
	l2=$(cut -d' ' -f1 /proc/loadavg)
	rm -rf "$w"
	printf '%s\t%s\ttouch %s\tls-l-cold %s\trm-rf %s\tmkdir %s\trmdir %s\treq %s\tcpu %s\tload %s..%s\n' \
		"$(date -u +%H:%M:%S)" "$label" "$(secs "$t0" "$t1")" "$(secs "$t2" "$t3")" \
		"$(secs "$t3" "$t4")" "$(secs "$t4" "$t5")" "$(secs "$t5" "$t6")" \
		"$((r1 - r0))" "$(secs "$c0" "$c1")" "$l1" "$l2"
	fusermount3 -u "$mnt" || fusermount3 -uz "$mnt"
	sleep 1
done
