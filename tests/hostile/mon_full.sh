#!/bin/bash
# mon_full.sh ATOLL-CLUSTER ATOLL - the monitor's own disk full
# (doc/limits.md, "Monitor"): its data folder moved onto a 48 MiB tmpfs,
# mon_data_min_free 16M, the tmpfs filled to 8 MiB free.  A command that
# adds to the cluster (pool create) is refused with a sentence naming the
# disk and the limit, health says MON_DISK_LOW, a delete (pool rm) still
# works, the monitor stays up and nothing acknowledged is lost; once there
# is room again, writes work and everything survives a monitor restart.
# The tmpfs is always unmounted (cleanup_hook, after the cluster stops).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../cluster/lib.sh"
[ "$(id -u)" = 0 ] || skip "mounting a tmpfs needs root"

monfs=$tmp/monfs
unmount_monfs() {
	"$cluster_bin" down --dir "$cdir" >/dev/null 2>&1 || true
	if mountpoint -q "$monfs"; then umount "$monfs"; fi
}
cleanup_hook=unmount_monfs
# wait_mon: until the monitor answers (one OSD: health stays HEALTH_WARN,
# the default pool has size 1)
wait_mon() {
	local i
	for i in $(seq 150); do
		atoll pool ls >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	fail "the monitor does not answer after 30 s"
}

cluster_up --mons 1 --osds 1 --hosts 1 --no-nbd --no-mds --set mon_data_min_free=16M
"$cluster_bin" mon stop --dir "$cdir" a >/dev/null
mkdir -p "$monfs"
mount -t tmpfs -o size=48m tmpfs "$monfs" || skip "cannot mount a tmpfs here"
cp -a "$cdir/mon.a/." "$monfs/"
mv "$cdir/mon.a" "$tmp/mon.a.orig"
ln -s "$monfs" "$cdir/mon.a"
"$cluster_bin" mon start --dir "$cdir" a >/dev/null
wait_mon
atoll pool create keep >/dev/null
atoll pool create doomed >/dev/null
head -c 65536 /dev/urandom >"$tmp/in"
atoll put default obj1 "$tmp/in"
ok "a monitor whose data folder is on a 48 MiB tmpfs, mon_data_min_free 16M"

avail_kb=$(df -k --output=avail "$monfs" | tail -n 1)
dd if=/dev/zero of="$monfs/filler" bs=1K count=$((avail_kb - 8192)) status=none
rc=0
atoll pool create more >"$tmp/out" 2>"$tmp/err" || rc=$?
[ $rc -ne 0 ] || fail "pool create went through with 8 MiB free"
grep -q "monitor's disk is full" "$tmp/err" && grep -q mon_data_min_free "$tmp/err" ||
	fail "pool create did not say why: $(cat "$tmp/err")"
ok "a command that writes is refused: $(head -c 120 "$tmp/err")..."
atoll health detail >"$tmp/health" || true
grep -q MON_DISK_LOW "$tmp/health" || fail "health: $(cat "$tmp/health")"
ok "health says MON_DISK_LOW"
atoll pool rm doomed doomed --yes-i-really-mean-it >/dev/null ||
	fail "pool rm on the full monitor disk"
ok "a delete (pool rm) still works"
kill -0 "$(state_pid mon.a)" || fail "the monitor died"
atoll get default obj1 "$tmp/outfile" && cmp "$tmp/in" "$tmp/outfile" ||
	fail "the object is not readable as written"
ok "the monitor stays up and the cluster serves"

rm -f "$monfs/filler"
atoll pool create more >/dev/null || fail "pool create after space came back"
"$cluster_bin" mon stop --dir "$cdir" a >/dev/null
"$cluster_bin" mon start --dir "$cdir" a >/dev/null
wait_mon
atoll pool ls >"$tmp/pools"
grep -qx keep "$tmp/pools" && grep -qx more "$tmp/pools" ||
	fail "pools after a restart: $(tr '\n' ' ' <"$tmp/pools")"
! grep -qx doomed "$tmp/pools" || fail "the deleted pool came back"
ok "with room again writes work; after a monitor restart every pool is there, the deleted one not"
