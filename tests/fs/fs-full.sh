#!/bin/bash
# tests/fs/fs-full.sh - the file system on a cluster that fills up: three
# OSDs with 512 MiB stores, full ratio 0.9 (below where the OSDs' space
# grants stop the data, so that the monitor flags them full), one mount.
#  - 800 MiB written with dd conv=fsync: the fsync fails with ENOSPC (the
#    OSDs' space grants refuse the data, doc/osd.md "Space"), the MDS keeps
#    serving (its journal may use the reserve kept above the failsafe
#    ratio: before, it exited on a full cluster and the mount hung), and
#    no OSD's store refused a write it was sent;
#  - once health says OSD_FULL (every write without the reserve flag is
#    refused), mkdir and an empty file still work, and the file is
#    deleted; the space comes back (statfs) and 50 MiB written
#    then read back after dropping the page cache are equal.
# Usage: fs-full.sh ATOLL-CLUSTER ATOLL-FUSE ATOLL
set -u
cluster_bin=${1:?usage: $0 ATOLL-CLUSTER ATOLL-FUSE ATOLL}
fuse_bin=${2:?}
atoll_cli=${3:?}
. "$(dirname "$0")/lib.sh"
fs_prepare
step "cluster: three OSDs of 512 MiB and the MDS"
"$cluster_bin" up --dir "$cdir" --size 512M --pg 16 --no-nbd --mds 1 --set osd_mkfs_prefill=false \
	--set mon_osd_nearfull_ratio=0.8 --set mon_osd_backfillfull_ratio=0.85 \
	--set mon_osd_full_ratio=0.9 \
	>"$tmp/up.log" 2>&1 || { cat "$tmp/up.log"; fail "atoll-cluster up"; }
mnt=$tmp/m
mount_fs "$mnt" "$tmp/fuse.log"

mds_pid=$(awk '$1 == "daemon" && $2 == "mds.a" { print $8 }' "$cdir/cluster.state")
[ -n "$mds_pid" ] || fail "no MDS in $cdir/cluster.state"

step "800 MiB into 3 x 512 MiB stores"
if timeout 300 dd if=/dev/urandom of="$mnt/big" bs=4M count=200 conv=fsync 2>"$tmp/dd.err"; then
	fail "dd of 800 MiB onto three 512 MiB OSDs succeeded"
fi
grep -q 'No space left on device' "$tmp/dd.err" || fail "dd failed otherwise: $(cat "$tmp/dd.err")"
kill -0 "$mds_pid" 2>/dev/null || fail "the MDS exited on the full cluster: $(tail -n 3 "$cdir/log/mds.a.log")"
if grep -h -E 'a write failed in the store|applying (a replicated write|recovered data) failed' \
	"$cdir"/log/osd.*.log >&2; then
	fail "a store refused a write: see above"
fi
echo "ok - dd's fsync fails with ENOSPC; the MDS serves on; no store refused a write"

step "metadata and deletes on the full cluster"
for _ in $(seq 1 50); do
	"$atoll_cli" health detail 2>/dev/null | grep -q OSD_FULL && break
	sleep 0.2
done
"$atoll_cli" health detail | grep -q OSD_FULL || fail "no OSD_FULL after the fill: $("$atoll_cli" health detail)"
# (bounded: a dead MDS would leave them waiting)
timeout 30 mkdir "$mnt/d" || fail "mkdir on the full cluster"
timeout 30 touch "$mnt/d/empty" || fail "an empty file on the full cluster"
timeout 30 rm "$mnt/big" || fail "rm on the full cluster"
kill -0 "$mds_pid" 2>/dev/null || fail "the MDS exited on the full cluster: $(tail -n 3 "$cdir/log/mds.a.log")"
avail=0
for _ in $(seq 1 60); do
	avail=$(df -B1M --output=avail "$mnt" | tail -n 1 | tr -d ' ')
	[ "$avail" -gt 400 ] && break
	sleep 0.5
done
[ "$avail" -gt 400 ] || fail "the space did not come back after rm: ${avail} MiB available"
echo "ok - mkdir, an empty file and rm work on the full cluster; ${avail} MiB available again"

step "writes work again"
head -c 50M /dev/urandom >"$tmp/src"
dd if="$tmp/src" of="$mnt/d/again" bs=1M conv=fsync 2>"$tmp/dd2.err" || fail "a write after rm: $(cat "$tmp/dd2.err")"
echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
cmp "$tmp/src" "$mnt/d/again" || fail "the file written after rm reads back different"
echo "ok - 50 MiB written and read back after the space came back"
