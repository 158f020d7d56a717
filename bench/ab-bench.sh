#!/bin/bash
# bench/ab-bench.sh - cluster configurations compared with each other,
# alternated: round 1 runs every variant once, then round 2, and so on,
# so that a drift of the machine (page cache, disk, other load) falls on
# every variant alike.  Each run is one bench/cluster-bench.sh --runs 1
# --no-reference on a fresh cluster with the variant's --set options.
#
# usage: bench/ab-bench.sh [OPTIONS] VARIANT...
#   VARIANT           NAME or NAME:K=V[,K=V...]: a label and the atoll.conf
#                     options of its cluster; the first is the baseline.
#                     NAME@DIR[:K=V...] runs the binaries of the build
#                     folder DIR (cluster-bench.sh's ATOLL_BUILD): builds
#                     compared with each other
#   --rounds N        rounds (default 2)
#   --seconds N       seconds per workload (default 10)
#   --prefill-gib N   GiB of 4 MiB objects for the reads (default 1)
#   --size SZ         each OSD's store (default 8G)
#   --out DIR         raw outputs (default scratch/ab-bench-DATE/)
#   --allow-noisy     passed to cluster-bench.sh (figures marked NOISY)
#   -h, --help
# Examples (issue 34):
#   bench/ab-bench.sh auth auth-none:auth=none
#   bench/ab-bench.sh crc secure:ms_client_mode=secure,ms_cluster_mode=secure
# A change against the commit before it (issue 36):
#   bench/ab-bench.sh before@../old/build-release after@build-release
# Prints, for each workload, every variant's median over the rounds
# (throughput and machine CPU per op) and its ratio to the baseline;
# summary.txt in DIR keeps it.
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; }

root=$(cd "$(dirname "$0")/.." && pwd)
rounds=2 seconds=10 prefill=1 size=8G out= extra=()
variants=()
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=${2:?--rounds needs a number}; shift 2 ;;
	--seconds) seconds=${2:?--seconds needs a number}; shift 2 ;;
	--prefill-gib) prefill=${2:?--prefill-gib needs a number}; shift 2 ;;
	--size) size=${2:?--size needs a size}; shift 2 ;;
	--out) out=${2:?--out needs a folder}; shift 2 ;;
	--allow-noisy) extra+=(--allow-noisy); shift ;;
	-h|--help) usage; exit 0 ;;
	-*) echo "ab-bench.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
	*) variants+=("$1"); shift ;;
	esac
done
[ ${#variants[@]} -ge 2 ] || { echo "ab-bench.sh: give at least two variants (see --help)" >&2; exit 2; }
case $rounds in ''|*[!0-9]*|0) echo "ab-bench.sh: --rounds '$rounds' is not a positive number" >&2; exit 2 ;; esac
names=()
for v in "${variants[@]}"; do
	n=${v%%:*}
	n=${n%%@*}
	case $n in ''|*[!A-Za-z0-9_-]*) echo "ab-bench.sh: variant name '$n' must be letters, digits, - or _" >&2; exit 2 ;; esac
	for m in "${names[@]}"; do
		[ "$m" != "$n" ] || { echo "ab-bench.sh: variant '$n' given twice" >&2; exit 2; }
	done
	names+=("$n")
done
[ -n "$out" ] || out=$root/scratch/ab-bench-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
echo "commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo none); rounds $rounds; seconds $seconds; variants: ${variants[*]}" |
	tee "$out/info.txt" >&2

for r in $(seq 1 "$rounds"); do
	for v in "${variants[@]}"; do
		n=${v%%:*} sets=() build=
		if [ "$v" != "$n" ]; then
			IFS=, read -r -a kv <<<"${v#*:}"
			for x in "${kv[@]}"; do sets+=(--set "$x"); done
		fi
		if [ "$n" != "${n%%@*}" ]; then
			build=$(cd "${n#*@}" && pwd)
			n=${n%%@*}
		fi
		echo "== round $r/$rounds: $n ${build:+(build $build) }${sets[*]}" >&2
		ATOLL_BUILD=$build bash "$root/bench/cluster-bench.sh" --runs 1 --no-reference \
			--seconds "$seconds" --prefill-gib "$prefill" --size "$size" \
			--out "$out/$n.$r" "${sets[@]}" "${extra[@]}" >/dev/null
	done
done

python3 - "$out" "$rounds" "${names[@]}" <<'PY' | tee "$out/summary.txt"
import json, statistics, sys
out, rounds, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
med = statistics.median
work = (("w4m", "MBps", "4M write MB/s"), ("w4k", "iops", "4K write IOPS"),
        ("r4m", "MBps", "4M read MB/s"), ("r4k", "iops", "4K read IOPS"))
def runs(n, w):
    return [json.load(open("%s/%s.%d/%s.1.json" % (out, n, r, w))) for r in range(1, rounds + 1)]
print("median of %d alternated rounds; ratio to %s" % (rounds, names[0]))
print("%-16s %-12s %12s %7s %14s %7s  %s" % ("workload", "variant", "value", "ratio",
      "CPU us/op", "ratio", "each round"))
for w, key, label in work:
    base = None
    for n in names:
        x = runs(n, w)
        v = med([y[key] for y in x])
        c = med([y["cpu_us_per_op"] for y in x])
        if base is None:
            base = (v, c)
        noisy = any(y["cpu"]["noisy"] for y in x)
        print("%-16s %-12s %12.1f %6.1f%% %14.1f %6.1f%%  %s%s" % (label, n, v,
              100.0 * v / base[0] if base[0] else 0, c, 100.0 * c / base[1] if base[1] else 0,
              " ".join("%.0f" % y[key] for y in x), "  (NOISY)" if noisy else ""))
PY
echo "raw outputs: $out" >&2
