#!/bin/bash
# tests/ha/mon_epoch_behind.sh ATOLL-CLUSTER ATOLL - a restore of an older
# monitor backup is refused by the OSDs, never a wedge: one monitor and
# three OSDs; a backup at epoch E1; 20 more epochs; the monitor restored
# from the old backup.  The running OSDs get no lease (they are ahead of
# the monitors' map) and stop serving; restarted OSDs are refused at boot
# with a sentence saying what happened and what to do (in their logs);
# `atoll health detail` says MON_EPOCH_BEHIND naming them; a read gets no
# answer (nothing is served from the older map); nothing crashes.
. "$(dirname "$0")/../cluster/lib.sh"

cluster_up --mons 1 --osds 3 --hosts 3 --mds 0 --no-nbd --set osd_lease=3s
printf 'before the backup\n' >"$tmp/o1"
atoll put default o1 "$tmp/o1" || fail "put o1"
atoll mon backup "$tmp/old.bk" 2>"$tmp/bk.err" || fail "mon backup: $(cat "$tmp/bk.err")"
e1=$(atoll --format json osd dump | python3 -c 'import json,sys; print(json.load(sys.stdin)["epoch"])')
for i in $(seq 10); do
	atoll osd set noout >/dev/null 2>&1 && atoll osd unset noout >/dev/null 2>&1 || fail "osd set/unset"
done
e2=$(atoll --format json osd dump | python3 -c 'import json,sys; print(json.load(sys.stdin)["epoch"])')
atoll put default o2 "$tmp/o1" || fail "put o2 at epoch $e2"
ok "backup at epoch $e1, the cluster moved on to epoch $e2"

# ---- the monitor restored from the old backup
addr=$(state_addr mon.a)
"$cluster_bin" mon stop a --dir "$cdir" >/dev/null 2>&1 || fail "mon stop a"
rm -rf "$cdir/mon.a"
"$bindir/mon/atoll-mon" --restore "$tmp/old.bk" --data "$cdir/mon.a" --name a \
	--addr "$addr" >/dev/null 2>"$tmp/restore.err" || fail "restore: $(cat "$tmp/restore.err")"
"$cluster_bin" mon start a --dir "$cdir" >/dev/null 2>"$tmp/start.err" ||
	fail "mon start a: $(cat "$tmp/start.err")"
ok "mon.a restored from the backup of epoch $e1"

# running OSDs are ahead: no lease, health names them
for i in $(seq 150); do
	atoll health detail >"$tmp/health" 2>/dev/null
	grep -q MON_EPOCH_BEHIND "$tmp/health" && grep -q "osd.0" "$tmp/health" &&
		grep -q "osd.1" "$tmp/health" && grep -q "osd.2" "$tmp/health" && break
	sleep 0.2
done
grep -q "MON_EPOCH_BEHIND" "$tmp/health" || { cat "$tmp/health"; fail "no MON_EPOCH_BEHIND"; }
grep -q "HEALTH_ERR" "$tmp/health" || fail "MON_EPOCH_BEHIND is not HEALTH_ERR"
ok "health detail says MON_EPOCH_BEHIND naming osd.0, osd.1, osd.2"
sleep 4	# > osd_lease: the leases the OSDs held have run out
read_waits default o1
ok "a read gets no answer while the monitors are behind"

# restarted OSDs are refused at boot with a clear sentence
for id in 0 1 2; do
	"$cluster_bin" osd stop "$id" --dir "$cdir" >/dev/null 2>&1 || fail "osd stop $id"
	"$cluster_bin" osd start "$id" --dir "$cdir" >/dev/null 2>&1 || true
done
for id in 0 1 2; do
	wait_log "$cdir/log/osd.$id.log" 1 "refused to boot osd.$id, which stays down.*has seen map epoch $e2.*older backup"
done
ok "restarted OSDs log the refusal: $(grep -h -m1 'refused to boot osd.0' "$cdir/log/osd.0.log" | cut -c29-)"
atoll health detail >"$tmp/health" 2>/dev/null
grep -q "osd.0 has seen epoch $e2" "$tmp/health" || { cat "$tmp/health"; fail "health detail"; }
read_waits default o2
ok "still no read answered"
for d in mon.a osd.0 osd.1 osd.2; do
	p=$(state_pid "$d")
	[ "$p" != 0 ] && kill -0 "$p" 2>/dev/null || fail "$d is not running"
done
ok "no daemon crashed"
echo "PASS"
