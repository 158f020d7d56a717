#!/bin/bash
# hunt.sh - every client of the monitors hunts among mon_host (lib/monc.h).
#
#   hunt.sh ATOLL-CLUSTER ATOLL THRASH-CLIENT HA-REDIRECT ATOLL-NBD
#
# mon_host lists a dead address first (nothing listens on 127.0.0.1:1)
# and the real monitor second.  With that list: ha-redirect (a fake
# follower: monc and the library follow the leader it names); `atoll
# status`, again and again (the first monitor tried is random); atoll-nbd
# serving an image to nbdinfo and nbdcopy; a ledger workload through the
# library with 16 ops in flight across a monitor restart (`atoll-cluster
# mon stop` / `start`) and a map change after it: every acknowledged write
# reads back, no op fails, and the longest op stall is printed; last, a
# new OSD made (OSD_NEW) and started (boot, beacons) by hand through a fake
# follower, stopped, and started again with only the dead address: it
# finds the monitor in the monitor map it saved.
set -euo pipefail
. "$(dirname "$0")/../cluster/lib.sh"
. "$(dirname "$0")/ledger.sh"

client_bin=${1:?usage: $0 ATOLL-CLUSTER ATOLL THRASH-CLIENT HA-REDIRECT ATOLL-NBD}
redirect_bin=${2:?}
nbd_bin=${3:?}
[ -x "$client_bin" ] || skip "thrash-client is missing ($client_bin)"
[ -x "$redirect_bin" ] || skip "ha-redirect is missing ($redirect_bin)"
[ -x "$nbd_bin" ] || skip "atoll-nbd is missing ($nbd_bin)"
osd_bin=$bindir/osd/atoll-osd

# auth=none: ha-redirect's fake monitor has no key (doc/security.md); the
# hunt for the leader is the same with authentication on
cluster_up --osds 3 --hosts 3 --no-mds --no-nbd --set client_op_timeout=60s --set auth=none
wait_health HEALTH_OK
all=$(sed -n 's/^mon_host *= *//p' "$ATOLL_CONF")
[ -n "$all" ] || fail "no mon_host in $ATOLL_CONF"
# the leader's address: what the fake followers below name
leader_addr() {
	atoll quorum status --format json | python3 -c 'import json, sys
d = json.load(sys.stdin)
print([m["addr"] for m in d["members"] if m["name"] == d["leader"]][0])'
}
real=$(leader_addr) || fail "no leader in atoll quorum status"
dead=127.0.0.1:1
list="$dead, $all"
sed -i "s|^mon_host *=.*|mon_host = $list|" "$ATOLL_CONF"
ok "a cluster; mon_host = $list"

pids=()
stop_helpers() {
	local p
	ledger_kill
	for p in "${pids[@]}"; do
		kill -9 "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
}
cleanup_hook=stop_helpers

# ---- the redirect path, against a fake follower
"$redirect_bin" "$ATOLL_CONF" "$real" | sed 's/^/  redirect: /'
[ "${PIPESTATUS[0]}" = 0 ] || fail "ha-redirect"
ok "ha-redirect: monc and the library follow a fake follower's MONMAPs"

# ---- the CLI: whichever monitor it tries first, it gets an answer soon
for i in 1 2 3 4 5 6; do
	t0=$(date +%s%N)
	atoll status >/dev/null || fail "atoll status with mon_host = $list"
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	[ $ms -lt 5000 ] || fail "atoll status took $ms ms"
done
atoll -m "$dead,$real" health >/dev/null || fail "atoll -m $dead,$real health"
expect 2 "entry 2 ('nonsense')" atoll -m "$real,nonsense" status
ok "atoll status, six times (each under 5 s), and -m with a list; a bad entry is named"

# ---- atoll-nbd
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
atoll image create default hunt --size 8M >/dev/null || fail "image create"
"$nbd_bin" --conf "$ATOLL_CONF" --addr "127.0.0.1:$port" --pool default \
	>"$tmp/nbd.log" 2>&1 &
pids+=($!)
for i in $(seq 100); do
	nbdinfo --size "nbd://127.0.0.1:$port/hunt" >"$tmp/nbd.size" 2>/dev/null && break
	sleep 0.1
done
[ "$(cat "$tmp/nbd.size" 2>/dev/null)" = 8388608 ] || { cat "$tmp/nbd.log" >&2; fail "nbdinfo"; }
head -c 8M /dev/urandom >"$tmp/img.in"
nbdcopy "$tmp/img.in" "nbd://127.0.0.1:$port/hunt" || fail "nbdcopy in"
nbdcopy "nbd://127.0.0.1:$port/hunt" "$tmp/img.out" || fail "nbdcopy out"
cmp "$tmp/img.in" "$tmp/img.out" || fail "the image read back differs"
kill "${pids[0]}"; wait "${pids[0]}" 2>/dev/null || true
pids=()
ok "atoll-nbd serves an image (nbdinfo, nbdcopy in and out)"

# ---- a library client across a monitor restart, 16 ops in flight
ledger_start "$client_bin" 33 16
sleep 3
echo stall >&9
echo "mark mon-stop" >&9
"$cluster_bin" mon stop --dir "$cdir" >/dev/null || fail "mon stop"
sleep 2
"$cluster_bin" mon start --dir "$cdir" >/dev/null || fail "mon start"
echo "mark mon-start" >&9
# a map change the client must hear of through its new session
sleep 1
atoll osd out 2 >/dev/null 2>&1 || fail "osd out 2 after the restart"
sleep 3
atoll osd in 2 >/dev/null 2>&1 || fail "osd in 2"
sleep 3
echo stall >&9
ledger_stop
wait_health HEALTH_OK
ledger_verify
grep -q '^mark mon-start: first write' "$tmp/client.out" || fail "no write after the restart"
ok "16 ops in flight across a monitor restart and a map change: no op lost or failed"

# ---- an OSD made and started with the list, and the monitor map it keeps
# A fake follower announces the real monitor as leader: the OSD follows it
# (mkfs's OSD_NEW, boot, beacons), saves the monitor map in DIR/monmap, and
# at its next start finds the real monitor with only a dead mon_host.
real=$(leader_addr) || fail "no leader in atoll quorum status"
"$redirect_bin" --serve announce "$ATOLL_CONF" "$real" >"$tmp/fake.out" 2>&1 &
pids+=($!)
for i in $(seq 50); do grep -q '^serving' "$tmp/fake.out" && break; sleep 0.1; done
fake=$(sed -n 's/^serving //p' "$tmp/fake.out")
[ -n "$fake" ] || fail "the fake monitor did not start: $(cat "$tmp/fake.out")"
mkdir -p "$tmp/osdx"
"$osd_bin" --mkfs --data "$tmp/osdx/d" --mon "$dead,$fake" --conf "$ATOLL_CONF" \
	>"$tmp/osdx/mkfs.out" 2>"$tmp/osdx/mkfs.err" || { cat "$tmp/osdx/mkfs.err" >&2; fail "osd --mkfs"; }
id=$(tail -n 1 "$tmp/osdx/mkfs.out")

osd_up() {	# MON-LIST: starts the OSD and waits until the map says it is up
	"$osd_bin" --data "$tmp/osdx/d" --addr 127.0.0.9 --host hostx --mon "$1" \
		--conf "$ATOLL_CONF" >>"$tmp/osdx/osd.log" 2>&1 &
	osd_pid=$!
	pids+=($osd_pid)
	for i in $(seq 150); do
		atoll osd tree --format json 2>/dev/null | python3 -c "import json,sys; j=json.load(sys.stdin); sys.exit(0 if any(o['id']==$id and o['status']=='up' for h in j['hosts'] for o in h['osds']) else 1)" &&
			return 0
		kill -0 "$osd_pid" 2>/dev/null || break
		sleep 0.2
	done
	tail -n 20 "$tmp/osdx/osd.log" >&2
	fail "osd.$id did not come up with mon_host $1"
}
osd_stop() {
	kill "$osd_pid"
	for i in $(seq 100); do kill -0 "$osd_pid" 2>/dev/null || break; sleep 0.1; done
	! kill -0 "$osd_pid" 2>/dev/null || fail "osd.$id did not stop within 10 s"
	wait "$osd_pid" 2>/dev/null || true
	local keep=() p
	for p in "${pids[@]}"; do [ "$p" = "$osd_pid" ] || keep+=("$p"); done
	pids=("${keep[@]}")
	atoll osd tree --format json | pyjson "any(o['id'] == $id and o['status'] == 'down' for h in j['hosts'] for o in h['osds'])"
}
osd_up "$dead,$fake"
[ -s "$tmp/osdx/d/monmap" ] || fail "osd.$id saved no monitor map"
osd_stop
ok "osd.$id made, booted and stopped through a follower that names the leader"
osd_up "$dead"
osd_stop
ok "osd.$id restarted with only a dead mon_host finds the monitor in its saved map"
