#!/bin/bash
# bench/disklimit.sh - what the disk under a folder gives by itself, with fio.
#
# usage: bench/disklimit.sh DIR [SECONDS]
#   DIR      a folder on the disk to measure (not a tmpfs: the jobs use
#            O_DIRECT); a 2 GiB scratch file is made there and removed
#   SECONDS  how long each workload runs (default 15)
#
# This is the reference atoll's benchmarks are held against: the bench
# scripts run it on the folder their cluster or store lives in, in the same
# session, and divide their own figures by its.  Each workload is one fio
# job on the scratch file, direct I/O through libaio:
#   seq_write_4M_MBps               4 MiB writes, 8 in flight
#   seq_read_4M_MBps                4 MiB reads, 8 in flight
#   randwrite_4K_QD32_IOPS          4 KiB random writes, 32 in flight
#   randread_4K_QD32_IOPS           4 KiB random reads, 32 in flight
#   durable_randwrite_4K_3x16_IOPS  3 writers of 4 KiB random writes, 16 in
#                                   flight each, an fdatasync every 16 writes,
#                                   over the first 600 MiB
# and two limits for a pool of size 3 whose three replicas share this one
# disk (each client byte is written three times):
#   replicated3_seq_write_limit_MBps   the 4 MiB writes again, last (the
#                                      disk after the other workloads),
#                                      divided by 3
#   replicated3_durable_4K_limit_IOPS  durable_randwrite_4K_3x16_IOPS / 3
# Output: one "disk<TAB>key<TAB>value<TAB>unit" line per figure, in the order
# above; MB/s are MiB/s (fio's KiB/s / 1024), both rounded down.
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; }
case ${1:-} in
-h|--help) usage; exit 0 ;;
'') usage >&2; exit 2 ;;
esac
dir=$1 seconds=${2:-15}
case $seconds in ''|*[!0-9]*|0) echo "disklimit.sh: SECONDS '$seconds' is not a positive number" >&2; exit 2 ;; esac
[ -d "$dir" ] || { echo "disklimit.sh: '$dir' is not a folder" >&2; exit 2; }
for t in fio python3; do
	command -v "$t" >/dev/null ||
		{ echo "disklimit.sh: $t is missing; install it with scripts/deps.sh" >&2; exit 1; }
done

scratch=$dir/.disklimit-$$.dat
trap 'rm -f "$scratch"' EXIT

# job SIDE FIO-ARGS...: run one fio job on the scratch file and print the
# bandwidth in KiB/s and the IOPS of SIDE (read or write), summed over jobs.
job() {
	local side=$1; shift
	fio --name=disklimit --filename="$scratch" --size=2g --direct=1 \
		--ioengine=libaio --time_based --runtime="$seconds" \
		--group_reporting --output-format=json "$@" 2>/dev/null |
		python3 -c '
import json, sys
side = sys.argv[1]
r = json.load(sys.stdin)["jobs"][0][side]
print(int(r["bw"]), int(r["iops"]))' "$side"
}
put() { printf 'disk\t%s\t%s\t%s\n' "$1" "$2" "$3"; }

read -r wbw _ < <(job write --rw=write --bs=4m --iodepth=8)
put seq_write_4M_MBps $((wbw / 1024)) MB/s
read -r rbw _ < <(job read --rw=read --bs=4m --iodepth=8)
put seq_read_4M_MBps $((rbw / 1024)) MB/s
read -r _ wio < <(job write --rw=randwrite --bs=4k --iodepth=32)
put randwrite_4K_QD32_IOPS "$wio" IOPS
read -r _ rio < <(job read --rw=randread --bs=4k --iodepth=32)
put randread_4K_QD32_IOPS "$rio" IOPS
read -r _ dio < <(job write --rw=randwrite --bs=4k --iodepth=16 --numjobs=3 \
	--fdatasync=16 --size=600m)
put durable_randwrite_4K_3x16_IOPS "$dio" IOPS
read -r lbw _ < <(job write --rw=write --bs=4m --iodepth=8)
put replicated3_seq_write_limit_MBps $((lbw / 1024 / 3)) MB/s
put replicated3_durable_4K_limit_IOPS $((dio / 3)) IOPS
