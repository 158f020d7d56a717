#!/bin/bash
# bench/fsbench.sh - file-system workloads, run the same way on any mount.
#
# usage: bench/fsbench.sh MOUNTPOINT LABEL [quick]
#
# The workloads of the published Ceph / GlusterFS / LizardFS comparisons,
# so that atoll's file system and a local folder (bench/fs-bench.sh runs
# both) are measured on the same work.  Everything happens in a new folder
# under MOUNTPOINT, removed at the end.  "quick" shrinks the counts (200
# files, 2,000 empty files, 256 MiB dd): it checks the pipeline only.
#   files_write_Nx1MB_s, files_read_Nx1MB_s, files_delete_N_s, files_total_s
#        N = 1,000 files of 1,000,000 bytes: written, read back, removed,
#        one file at a time (one process)
#   create_M_empty_s    M = 10,000 empty files by `xargs touch`
#   ls_l_M_cold_s       `ls -l` of that folder after dropping the caches
#   ls_l_M_warm_s       the same again
#   rm_rf_M_s           `rm -rf` of the folder
#   mkdir_1000_s, rmdir_1000_s   1,000 folders by `xargs mkdir`, `xargs rmdir`
#   cp_rp_38MB_in_s     `cp -rp` of a 38 MB tree (34 files, 1,483 B to
#                       5,482,568 B, in 3 folders) from a local scratch
#                       folder into the mount, then sync, cold caches
#   cp_rp_38MB_out_s    the same tree copied back out, cold caches
#   dd_write_MBps       dd 1 GiB of zeroes in 1 MiB blocks, conv=fsync
#   dd_read_MBps        dd that file back, cold caches
#   postmark_total_s, postmark_tx_per_s   postmark with its default
#                       settings (only when postmark is installed)
# Output: one "LABEL<TAB>metric<TAB>value<TAB>unit" line per figure.
# Dropping the caches needs root; without it the "cold" figures are warm.
# Needs python3 and bc (scripts/deps.sh); postmark is optional.
set -u

[ $# -ge 2 ] || { sed -n '2,/^set -u/p' "$0" | sed -e '/^set -u/d' -e 's/^# \{0,1\}//' >&2; exit 2; }
mnt=$1 label=$2 quick=${3:-}
for t in python3 bc; do
	command -v "$t" >/dev/null || { echo "fsbench.sh: $t is missing (scripts/deps.sh)" >&2; exit 1; }
done
work=$mnt/fsbench-$label-$$
tree=$(mktemp -d "${TMPDIR:-/var/tmp}/fsbench-tree.XXXXXX") || exit 1
mkdir "$work" || exit 1
trap 'rm -rf "$work" "$tree"' EXIT

emit() { printf '%s\t%s\t%s\t%s\n' "$label" "$1" "$2" "$3"; }
clock() { date +%s.%N; }
since() { printf '%.3f' "$(echo "$(clock) - $1" | bc -l)"; }	# seconds since a clock()
cold() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true; }

if [ -n "$quick" ]; then nfiles=200 nempty=2000 ddmib=256; else nfiles=1000 nempty=10000 ddmib=1024; fi

# 1. N files of 1 MB, one after the other: write, read, remove (timed in
# python so that the per-file cost is not a process start).
python3 - "$work/files" "$nfiles" <<'EOF' | while read -r phase secs; do
import os, sys, time
top, count = sys.argv[1], int(sys.argv[2])
os.mkdir(top)
blob = b"x" * 1_000_000
names = [os.path.join(top, "f%05d" % i) for i in range(count)]
marks = [time.monotonic()]
for n in names:
    with open(n, "wb") as f:
        f.write(blob)
marks.append(time.monotonic())
for n in names:
    with open(n, "rb") as f:
        if len(f.read()) != len(blob):
            sys.exit("short read of " + n)
marks.append(time.monotonic())
for n in names:
    os.unlink(n)
marks.append(time.monotonic())
for phase, a, b in (("write", 0, 1), ("read", 1, 2), ("delete", 2, 3), ("total", 0, 3)):
    print(phase, "%.3f" % (marks[b] - marks[a]))
EOF
	case $phase in
	write|read) emit "files_${phase}_${nfiles}x1MB_s" "$secs" s ;;
	delete) emit "files_delete_${nfiles}_s" "$secs" s ;;
	total) emit files_total_s "$secs" s ;;
	esac
done

# 2. A folder of many empty files: create, ls -l cold and warm, rm -rf.
mkdir "$work/many"
t=$(clock); (cd "$work/many" && seq 1 "$nempty" | xargs touch); emit "create_${nempty}_empty_s" "$(since "$t")" s
cold
t=$(clock); ls -l "$work/many" >/dev/null; emit "ls_l_${nempty}_cold_s" "$(since "$t")" s
t=$(clock); ls -l "$work/many" >/dev/null; emit "ls_l_${nempty}_warm_s" "$(since "$t")" s
t=$(clock); rm -rf "$work/many"; emit "rm_rf_${nempty}_s" "$(since "$t")" s

# 3. 1,000 folders made, then removed.
mkdir "$work/dirs"
t=$(clock); (cd "$work/dirs" && seq 1 1000 | xargs mkdir); emit mkdir_1000_s "$(since "$t")" s
t=$(clock); (cd "$work/dirs" && seq 1 1000 | xargs rmdir); emit rmdir_1000_s "$(since "$t")" s

# 4. cp -rp of a 38 MB tree in and out.  The smallest and largest files are
# fixed; the 32 others grow evenly between them, scaled to 38,000,000 bytes.
python3 - "$tree/src" <<'EOF'
import os, sys
top = sys.argv[1]
small, large, total = 1483, 5_482_568, 38_000_000
middle = [200_000 + i * 48_000 for i in range(32)]
k = (total - small - large) / sum(middle)
sizes = [small, large] + [int(s * k) for s in middle]
for sub in ("", "a", "b"):
    os.makedirs(os.path.join(top, sub), exist_ok=True)
for i, size in enumerate(sizes):
    with open(os.path.join(top, ("", "a", "b")[i % 3], "img%03d.jpg" % i), "wb") as f:
        f.write(os.urandom(size))
EOF
cold
t=$(clock); cp -rp "$tree/src" "$work/tree" && sync; emit cp_rp_38MB_in_s "$(since "$t")" s
cold
t=$(clock); cp -rp "$work/tree" "$tree/back"; emit cp_rp_38MB_out_s "$(since "$t")" s
rm -rf "$work/tree" "$tree/back"

# 5. Sequential dd write (flushed) and read (cold).
t=$(clock); dd if=/dev/zero of="$work/dd" bs=1M count="$ddmib" conv=fsync status=none
emit dd_write_MBps "$(printf '%.1f' "$(echo "$ddmib / $(since "$t")" | bc -l)")" MB/s
cold
t=$(clock); dd if="$work/dd" of=/dev/null bs=1M status=none
emit dd_read_MBps "$(printf '%.1f' "$(echo "$ddmib / $(since "$t")" | bc -l)")" MB/s
rm -f "$work/dd"

# 6. postmark, default settings.
if command -v postmark >/dev/null; then
	mkdir "$work/pm"
	report=$(printf 'set location %s\nrun\nquit\n' "$work/pm" | postmark 2>&1)
	emit postmark_total_s "$(sed -n 's/^[[:space:]]*\([0-9.][0-9.]*\) seconds total.*/\1/p' <<<"$report" | head -n1)" s
	emit postmark_tx_per_s "$(sed -n 's/.*seconds of transactions (\([0-9.][0-9.]*\) per second).*/\1/p' <<<"$report" | head -n1)" tx/s
fi
