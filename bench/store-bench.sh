#!/bin/bash
# bench/store-bench.sh - the store engine against the disk it runs on.
#
# Runs bench/disklimit.sh (what the disk gives by itself, with
# fio) and atoll-storebench on the same folder, one after the other and
# never at the same time, interleaved: ref, store, ref, store, ref, store.
# Then takes the median of each figure over the runs and prints the ratio
# of the store to the reference beside the issue's target:
#   4 MiB writes           >= 80% of seq_write_4M_MBps
#   4 KiB durable writes   >= 60% of durable_randwrite_4K_3x16_IOPS
#   4 KiB random reads     >= 70% of randread_4K_QD32_IOPS
#   1M small objects       store_open < 5 s and RssAnon < 300 MB
# and, beside them, the 4 MiB writes against the same fio writes with a
# flush after every 8 (seq_write_4M_fdatasync8_MBps): what the disk gives
# a writer whose every write is durable.
#
# usage: bench/store-bench.sh [OPTIONS] [-- ATOLL-STOREBENCH-ARGS...]
#   --dir DIR         folder to measure in (default: a new folder under the
#                     repo's scratch/, i.e. the disk the repo is on; removed
#                     at the end unless --keep)
#   --runs N          rounds of ref + store (default 3)
#   --seconds N       seconds per workload, both sides (default 15)
#   --disklimit PATH  the reference script (default bench/disklimit.sh,
#                     or $DISKLIMIT)
#   --out DIR         where the raw outputs go (default scratch/store-bench-
#                     DATE/ in the repo)
#   --quick           a fast check of the whole pipeline: 1 run, 3 s, a
#                     tiny store (atoll-storebench --quick); its figures are
#                     not the benchmark's
#   --keep            keep the measuring folder (the store is reused by a
#                     later run with the same --dir)
#   -h, --help
# The method and the current figures are in doc/benchmarks.md.
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; }

root=$(cd "$(dirname "$0")/.." && pwd)
runs=3 seconds=15 quick=0 keep=0 dir= out= runs_given=0 seconds_given=0
disklimit=${DISKLIMIT:-$root/bench/disklimit.sh}
extra=()
while [ $# -gt 0 ]; do
	case $1 in
	--dir) dir=${2:?--dir needs a folder}; shift 2 ;;
	--runs) runs=${2:?--runs needs a number}; runs_given=1; shift 2 ;;
	--seconds) seconds=${2:?--seconds needs a number}; seconds_given=1; shift 2 ;;
	--disklimit) disklimit=${2:?--disklimit needs a path}; shift 2 ;;
	--out) out=${2:?--out needs a folder}; shift 2 ;;
	--quick) quick=1; shift ;;
	--keep) keep=1; shift ;;
	-h|--help) usage; exit 0 ;;
	--) shift; extra=("$@"); break ;;
	*) echo "store-bench.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
	esac
done
if [ $quick -eq 1 ]; then
	[ $runs_given -eq 1 ] || runs=1
	[ $seconds_given -eq 1 ] || seconds=3
fi
case $runs in ''|*[!0-9]*|0) echo "store-bench.sh: --runs '$runs' is not a positive number" >&2; exit 2 ;; esac
case $seconds in ''|*[!0-9]*|0) echo "store-bench.sh: --seconds '$seconds' is not a positive number" >&2; exit 2 ;; esac
[ -x "$disklimit" ] || [ -f "$disklimit" ] ||
	{ echo "store-bench.sh: the reference script '$disklimit' is missing; give it with --disklimit PATH" >&2; exit 1; }

"$root/scripts/build.sh" osd/atoll-storebench
cd "$root"
storebench=$root/build-release/osd/atoll-storebench

stamp=$(date +%Y%m%d-%H%M%S)
[ -n "$out" ] || out=$root/scratch/store-bench-$stamp
mkdir -p "$out"
made_dir=0
if [ -z "$dir" ]; then
	mkdir -p "$root/scratch"
	dir=$(mktemp -d "$root/scratch/bench-dir.XXXXXX")
	made_dir=1
fi
mkdir -p "$dir"
cleanup() {
	if [ $made_dir -eq 1 ] && [ $keep -eq 0 ]; then rm -rf "$dir"; fi
}
trap cleanup EXIT

sbargs=(--dir "$dir/store" --seconds "$seconds")
[ $quick -eq 1 ] && sbargs=(--quick "${sbargs[@]}")
sbargs+=("${extra[@]}")

{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo none)"
	echo "folder: $dir ($(df -hT "$dir" | awk 'NR==2 {print $1, $2}'))"
	echo "kernel: $(uname -r); cpus: $(nproc)"
	echo "runs: $runs; seconds: $seconds"
	echo "storebench: atoll-storebench ${sbargs[*]}"
	echo "reference: $disklimit $dir $seconds"
} | tee "$out/info.txt" >&2

for i in $(seq 1 "$runs"); do
	echo "== run $i/$runs: reference (disklimit.sh)" >&2
	bash "$disklimit" "$dir" "$seconds" >"$out/ref.$i.tsv"
	# Not in disklimit.sh: the same 4 MiB writes with a flush after every
	# 8 (fio drains its queue, then fdatasync): the most a writer that
	# makes each write durable, 8 in flight, can get from this disk.
	fio --name=x --filename="$dir/flushref.$$" --size=2g --direct=1 --ioengine=libaio \
		--runtime="$seconds" --time_based --group_reporting --output-format=terse \
		--terse-version=3 --rw=write --bs=4m --iodepth=8 --fdatasync=8 2>/dev/null |
		awk -F';' '{printf "disk\tseq_write_4M_fdatasync8_MBps\t%d\tMB/s\n", $48 / 1024}' \
		>>"$out/ref.$i.tsv"
	rm -f "$dir/flushref.$$"
	cat "$out/ref.$i.tsv" >&2
	echo "== run $i/$runs: store (atoll-storebench)" >&2
	"$storebench" "${sbargs[@]}" >"$out/store.$i.tsv" 2>"$out/store.$i.log" ||
		{ cat "$out/store.$i.log" >&2; echo "store-bench.sh: atoll-storebench failed (run $i)" >&2; exit 1; }
	cat "$out/store.$i.log" >&2
done

# Medians and ratios.  MB/s on both sides are MiB/s (fio's KiB / 1024).
python3 - "$out" "$runs" <<'EOF' | tee "$out/summary.txt"
import statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])

def load(kind):
    vals = {}
    for i in range(1, runs + 1):
        for line in open("%s/%s.%d.tsv" % (out, kind, i)):
            f = line.rstrip("\n").split("\t")
            if len(f) == 4:
                try:
                    vals.setdefault(f[1], []).append(float(f[2]))
                except ValueError:
                    pass
    return {k: (statistics.median(v), v) for k, v in vals.items()}

ref, st = load("ref"), load("store")

def fmt(x):
    if x == int(x) or abs(x) >= 100:
        return "%.0f" % x
    return "%.2f" % x if abs(x) >= 1 else "%.3f" % x

print("median of %d run%s (each run: reference, then store)" % (runs, "" if runs == 1 else "s"))
print()
print("%-28s %10s  %-32s %10s  %7s  %7s  %s" %
      ("store metric", "store", "reference", "disk", "ratio", "target", "verdict"))
ok = True
for m, r, target in (("write_4M_MBps", "seq_write_4M_MBps", 0.80),
                     ("overwrite_4K_IOPS", "durable_randwrite_4K_3x16_IOPS", 0.60),
                     ("randread_4K_IOPS", "randread_4K_QD32_IOPS", 0.70)):
    if m not in st or r not in ref:
        print("%-28s %10s  %-32s %10s  %7s  %7s  %s" % (m, "-", r, "-", "-", ">=%d%%" % (target * 100), "NOT RUN"))
        continue
    s, d = st[m][0], ref[r][0]
    ratio = s / d if d else 0
    verdict = "MET" if ratio >= target else "MISSED"
    ok &= ratio >= target
    print("%-28s %10s  %-32s %10s  %6.0f%%  %7s  %s" %
          (m, fmt(s), r, fmt(d), ratio * 100, ">=%d%%" % (target * 100), verdict))
for m, limit, unit in (("small_open_s", 5, "s"), ("small_rss_anon_MB", 300, "MB")):
    if m not in st:
        print("%-28s %10s  %-32s %10s  %7s  %7s  %s" % (m, "-", "", "", "", "<%d %s" % (limit, unit), "NOT RUN"))
        continue
    s = st[m][0]
    verdict = "MET" if s < limit else "MISSED"
    ok &= s < limit
    print("%-28s %10s  %-32s %10s  %7s  %7s  %s" %
          (m, fmt(s), "", "", "", "<%d %s" % (limit, unit), verdict))
if "write_4M_MBps" in st and "seq_write_4M_fdatasync8_MBps" in ref:
    s, d = st["write_4M_MBps"][0], ref["seq_write_4M_fdatasync8_MBps"][0]
    print("%-28s %10s  %-32s %10s  %6.0f%%  %7s  %s" %
          ("write_4M_MBps", fmt(s), "seq_write_4M_fdatasync8_MBps", fmt(d),
           100 * s / d if d else 0, "", "(durable writes: what flushes leave)"))
print()
print("other figures (median; all runs in brackets):")
for m in sorted(st):
    print("  store %-34s %10s   %s" % (m, fmt(st[m][0]), " ".join(fmt(x) for x in st[m][1])))
for m in sorted(ref):
    print("  disk  %-34s %10s   %s" % (m, fmt(ref[m][0]), " ".join(fmt(x) for x in ref[m][1])))
print()
print("targets: %s" % ("all met" if ok else "not all met"))
EOF
echo "raw outputs: $out" >&2
