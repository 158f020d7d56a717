#!/bin/bash
# launcher.sh ATOLL-CLUSTER ATOLL - atoll-cluster itself: status (JSON),
# refusing a second `up`, osd stop/start/kill/add with the monitor seeing
# each change, down then up again with the data kept, down --purge, usage
# errors, and a failed `up` (an OSD that cannot start) leaving no process
# behind, and `up --no-mds` starting no MDS.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

alive() { [ -d /proc/$1 ] && ! grep -q '^State:.*Z' /proc/$1/status 2>/dev/null; }

# ---- usage ----------------------------------------------------------------
expect 2 "'0' is not a positive number" "$cluster_bin" up --dir "$cdir" --osds 0
expect 2 "every host needs an OSD" "$cluster_bin" up --dir "$cdir" --osds 2 --hosts 3
expect 2 "unknown command" "$cluster_bin" sideways
expect 1 "no cluster in" "$cluster_bin" down --dir "$tmp/none"
"$cluster_bin" --help | grep >/dev/null "usage: atoll-cluster" || fail "--help"
ok "usage errors"

# With the MDS: its pools hold data when `osd add` below gives PGs to the
# new OSD, which joins them by backfill (doc/recovery.md) before the
# down/up; tests/fs/fs.sh covers mds kill/start.
cluster_up
ok "cluster up"
"$cluster_bin" status --dir "$cdir" --format json |
	pyjson "[d['name'] for d in j['daemons'] if d['type'] == 'osd'] == ['osd.0', 'osd.1', 'osd.2'] and [d['name'] for d in j['daemons'] if d['type'] == 'mon'] == ['mon.' + chr(97 + i) for i in range(len([d for d in j['daemons'] if d['type'] == 'mon']))] and len([d for d in j['daemons'] if d['type'] == 'mon']) % 2 == 1 and any(d['type'] == 'mds' for d in j['daemons']) and j['running'] == len(j['daemons']) and all(d['running'] for d in j['daemons'])"
"$cluster_bin" status --dir "$cdir" | grep >/dev/null "HEALTH_OK" || fail "plain status has no HEALTH_OK"
ok "status (JSON and plain)"
expect 1 "already running" "$cluster_bin" up --dir "$cdir"
ok "a second up on a running cluster is refused"

# ---- osd stop / start / kill / add ------------------------------------------
p1=$(state_pid osd.1)
"$cluster_bin" osd stop 1 --dir "$cdir"
! alive "$p1" || fail "osd.1 (pid $p1) still runs after osd stop"
[ "$(state_pid osd.1)" = 0 ] || fail "the state still has a pid for osd.1"
wait_health HEALTH_WARN 20
atoll health --format json | pyjson "any(c['code'] == 'OSD_DOWN' for c in j['checks'])"
ok "osd stop: the process is gone and the monitor reports OSD_DOWN"
"$cluster_bin" osd start 1 --dir "$cdir"
wait_health HEALTH_OK
ok "osd start: back to HEALTH_OK"
p2=$(state_pid osd.2)
"$cluster_bin" osd kill 2 --dir "$cdir"
! alive "$p2" || fail "osd.2 still runs after osd kill"
wait_health HEALTH_WARN 30
ok "osd kill: the monitor notices a crashed OSD by itself"
"$cluster_bin" osd start 2 --dir "$cdir"
wait_health HEALTH_OK
ok "osd start after a kill"
"$cluster_bin" osd add --dir "$cdir" >"$tmp/out" || fail "osd add"
grep -q "osd.3" "$tmp/out" || fail "osd add did not name osd.3: $(cat "$tmp/out")"
atoll osd tree --format json | pyjson "sum(len(h['osds']) for h in j['hosts']) == 4"
grep -q "^\[osd.3\]" "$ATOLL_CONF" || fail "atoll.conf has no [osd.3]"
wait_health HEALTH_OK
ok "osd add: a fourth OSD joins"
expect 1 "no osd.9" "$cluster_bin" osd stop 9 --dir "$cdir"
expect 2 "needs an OSD id" "$cluster_bin" osd stop --dir "$cdir"
ok "osd commands refuse a missing id"

# ---- down, up again with the data kept, purge ---------------------------------
echo "kept across restarts" | atoll put default keep -
pids=$(awk '$1 == "daemon" { print $8 }' "$cdir/cluster.state")
"$cluster_bin" down --dir "$cdir"
for p in $pids; do ! alive "$p" || fail "pid $p still runs after down"; done
"$cluster_bin" status --dir "$cdir" --format json | pyjson "j['running'] == 0"
ok "down stops every daemon; status shows them stopped"
"$cluster_bin" up --dir "$cdir" --timeout "$timeout_s" >/dev/null 2>"$tmp/err" ||
	fail "up on a stopped cluster: $(cat "$tmp/err")"
[ "$(atoll get default keep -)" = "kept across restarts" ] || fail "data lost across down/up"
ok "up starts a stopped cluster again, with its data"
"$cluster_bin" down --purge --dir "$cdir"
[ ! -e "$cdir" ] || fail "down --purge left $cdir"
ok "down --purge removes the folder"

# ---- --no-mds: no MDS, no mds_addr ---------------------------------------------
"$cluster_bin" up --dir "$cdir" --size 1G --osds 1 --pool '' --no-mds --no-nbd \
	--timeout "$timeout_s" >/dev/null 2>"$tmp/err" || fail "up --no-mds: $(cat "$tmp/err")"
! grep -q "^mds_addr" "$ATOLL_CONF" || fail "--no-mds still wrote mds_addr"
expect 1 "has no MDS" "$cluster_bin" mds start --dir "$cdir"
expect 2 "no MDS address" atoll fs status
ok "up --no-mds starts no MDS; mds start and fs status say so"
"$cluster_bin" down --purge --dir "$cdir" >/dev/null

# ---- a failing up leaves nothing running ---------------------------------------
fake=$tmp/fakebin
mkdir -p "$fake"
mon_real=$(cd "$(dirname "$cluster_bin")/../mon" && pwd)/atoll-mon
ln -s "$mon_real" "$fake/atoll-mon"
printf '#!/bin/sh\necho "atoll-osd: this OSD is broken on purpose" >&2\nexit 1\n' >"$fake/atoll-osd"
chmod +x "$fake/atoll-osd"
rc=0
ATOLL_BIN_DIR=$fake "$cluster_bin" up --dir "$tmp/bad" --size 1G --timeout 20 >"$tmp/out" 2>"$tmp/err" || rc=$?
[ $rc -eq 1 ] || fail "up with a broken atoll-osd exited $rc, not 1"
grep -q "broken on purpose" "$tmp/err" || fail "up did not show the OSD's error: $(cat "$tmp/err")"
grep -q "stopped every daemon" "$tmp/err" || fail "up did not say it stopped its daemons: $(cat "$tmp/err")"
mp=$(awk '$1 == "daemon" && $2 == "mon.a" { print $8 }' "$tmp/bad/cluster.state")
[ "$mp" = 0 ] || ! alive "$mp" || fail "the monitor (pid $mp) still runs after a failed up"
ok "a failed up stops what it started and shows why"
