#!/bin/bash
# bench/durable-ceiling.sh DIR [SECONDS] - what the disk under DIR gives to
# durable large writes from three writers at once: the ceiling of a size-3
# pool's 4 MiB writes when its three OSDs share that one disk (each OSD
# writes every object; an acknowledged write must be on stable storage).
#
# fio (libaio, O_DIRECT) with three jobs, each writing 4 MiB blocks
# sequentially into its own 1 GiB file with 16 in flight (atoll bench's
# -t 16: every OSD holds all 16), in two ways:
#   dsync      every write O_DSYNC (durable when it completes; the kernel
#              merges the flushes of the writes in flight)
#   fdatasync  an fdatasync after every write (fio drains its queue first)
#   none       no flush at all (the disk's cache absorbs the writes; what
#              disklimit.sh's seq_write_4M measures, with one writer)
# Prints "disk<TAB>metric<TAB>value<TAB>unit" lines like disklimit.sh; the
# *_per_replica_MBps lines are the total over three (a client's ceiling).
set -eu
case ${1:-} in -h|--help|'') sed -n '2,/^set -eu/p' "$0" | sed -e '/^set -eu/d' -e 's/^# \{0,1\}//'; [ -n "${1:-}" ]; exit ;; esac
dir=$1 t=${2:-15}
command -v fio >/dev/null || { echo "fio is not installed (apt-get install fio)" >&2; exit 1; }
[ -d "$dir" ] || { echo "durable-ceiling.sh: '$dir' is not a folder" >&2; exit 1; }
d=$(mktemp -d "$dir/durable-ceiling.XXXXXX")
trap 'rm -rf "$d"' EXIT
run() {	# extra fio options; prints the total write KB/s
	fio --name=x --directory="$d" --size=1g --direct=1 --ioengine=libaio --rw=write --bs=4m \
		--iodepth=16 --numjobs=3 --runtime="$t" --time_based --group_reporting \
		--output-format=terse --terse-version=3 "$@" 2>/dev/null | awk -F';' '{print $48}'
}
for mode in dsync fdatasync none; do
	case $mode in
	dsync) kbs=$(run --sync=dsync) ;;
	fdatasync) kbs=$(run --fdatasync=1) ;;
	none) kbs=$(run) ;;
	esac
	printf 'disk\tseq_write_4M_3x16_%s_MBps\t%s\tMB/s\n' "$mode" "$((kbs / 1024))"
	printf 'disk\tseq_write_4M_3x16_%s_per_replica_MBps\t%s\tMB/s\n' "$mode" "$((kbs / 1024 / 3))"
done
