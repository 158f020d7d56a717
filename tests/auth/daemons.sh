#!/bin/bash
# daemons.sh ATOLL-CLUSTER ATOLL - the daemons' clocks and users, on one
# cluster with auth on.
#
# Clock skew (doc/security.md, "Clock skew"): osd.2 restarted with
# its clock 120 s behind (the test-only debug_clock_offset) gives
# CLOCK_SKEW naming it, with how far and what to do; it refuses the
# tickets of clients and says why in its log; a client's op to it fails
# with -EKEYREJECTED at client_op_timeout ("key was rejected"), never a
# silent hang; restarted without the offset, health is OK again and the
# op works.  The grace is long so that osd.2 stays up (its peers' pings
# are refused too) while the client tries it.
#
# Least privilege (doc/admin.md, "Least privilege"): osd.1 started as root
# with `user = nobody` runs as nobody (/proc/PID/status), its data folder
# is nobody's, and it serves; atoll-nbd with --user nobody runs as nobody
# and serves; an unknown user stops the daemon with a clear error; the
# monitor restarted with `user = nobody` runs as nobody and serves.
set -euo pipefail
. "$(dirname "$0")/../cluster/lib.sh"

cluster_up --mons 1 --no-mds --no-nbd --set osd_heartbeat_grace=60s
ok "cluster up"

"$cluster_bin" osd stop 2 --dir "$cdir" >/dev/null
printf '[osd.2]\ndebug_clock_offset = -120\n' >>"$ATOLL_CONF"
"$cluster_bin" osd start 2 --dir "$cdir" >/dev/null
# the CLOCK_SKEW check of health detail, as text (empty while there is none)
skew_check() {
	atoll --format json health detail 2>/dev/null | python3 -c '
import json, sys
for c in json.load(sys.stdin)["checks"]:
    if c["code"] == "CLOCK_SKEW":
        print(c["summary"]); print(c["fix"]); print("\n".join(c["detail"]))'
}
i=0
until skew_check >"$tmp/h" && [ -s "$tmp/h" ]; do
	i=$((i + 1))
	[ $i -lt 150 ] || { atoll health detail >&2; fail "no CLOCK_SKEW within 30 s"; }
	sleep 0.2
done
grep -q "osd\.2: its clock is 1[12][0-9]\.[0-9] s behind" "$tmp/h" ||
	fail "CLOCK_SKEW does not say how far osd.2 is: $(cat "$tmp/h")"
grep -q "auth_clock_skew" "$tmp/h" || fail "CLOCK_SKEW does not name the bound"
grep -q "NTP" "$tmp/h" || fail "CLOCK_SKEW says nothing to do"
! grep -q "osd\.[01]" "$tmp/h" || fail "CLOCK_SKEW names a good OSD: $(cat "$tmp/h")"
ok "CLOCK_SKEW names osd.2, how far behind it is and what to do"

# an object whose primary is osd.2
obj=
for k in $(seq 1 200); do
	if atoll --format json osd map default "o$k" |
		python3 -c 'import json, sys; sys.exit(json.load(sys.stdin)["primary"] != 2)'; then
		obj=o$k
		break
	fi
done
[ -n "$obj" ] || fail "no object maps to osd.2"
cp "$ATOLL_CONF" "$tmp/short.conf"
printf '[client]\nclient_op_timeout = 5s\n' >>"$tmp/short.conf"
rc=0
echo skewed | ATOLL_CONF=$tmp/short.conf timeout 60 "$atoll_bin" put default "$obj" - \
	>"$tmp/out" 2>&1 || rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "put to osd.2 ($rc): $(cat "$tmp/out")"
grep -qi "rejected" "$tmp/out" || fail "the client was not told of the refusal: $(cat "$tmp/out")"
grep -q "is this host's clock off" "$cdir/log/osd.2.log" ||
	fail "osd.2 did not log why it refused the ticket"
ok "a client's op to osd.2 fails with 'key was rejected'; osd.2 logs that its clock is off"

"$cluster_bin" osd stop 2 --dir "$cdir" >/dev/null
sed -i '/^\[osd\.2\]$/d; /^debug_clock_offset/d' "$ATOLL_CONF"
"$cluster_bin" osd start 2 --dir "$cdir" >/dev/null
wait_health HEALTH_OK 60
echo fixed | atoll put default "$obj" -
[ "$(atoll get default "$obj" -)" = fixed ] || fail "round trip through osd.2"
ok "restarted with a right clock: HEALTH_OK and osd.2 serves"

# ---- least privilege ------------------------------------------------------
[ "$(id -u)" = 0 ] || { echo "not root: the user checks are skipped"; exit 0; }
nobody_uid=$(id -u nobody 2>/dev/null) || { echo "no user nobody: skipped"; exit 0; }
chmod o+x "$tmp" "$cdir"	# nobody reaches its folder by its path
"$cluster_bin" osd stop 1 --dir "$cdir" >/dev/null
printf '[osd.1]\nuser = nobody\n' >>"$ATOLL_CONF"
"$cluster_bin" osd start 1 --dir "$cdir" >/dev/null
pid=$(awk '$1 == "daemon" && $2 == "osd.1" { print $8 }' "$cdir/cluster.state")
[ -n "$pid" ] && [ -d "/proc/$pid" ] || fail "osd.1 does not run"
awk '$1 == "Uid:" { if ($2 != u || $3 != u || $4 != u || $5 != u) exit 1 }' u="$nobody_uid" \
	"/proc/$pid/status" || fail "osd.1 runs as $(grep Uid: "/proc/$pid/status")"
[ "$(stat -c %U "$cdir/osd.1")" = nobody ] || fail "osd.1's folder is $(stat -c %U "$cdir/osd.1")'s"
[ -z "$(find "$cdir/osd.1" ! -user nobody | head -n 1)" ] || fail "files of osd.1 not nobody's"
grep -q "running as user 'nobody'" "$cdir/log/osd.1.log" || fail "osd.1 did not log its user"
wait_health HEALTH_OK 60
for k in $(seq 1 200); do
	if atoll --format json osd map default "p$k" |
		python3 -c 'import json, sys; sys.exit(json.load(sys.stdin)["primary"] != 1)'; then
		echo "as nobody" | atoll put default "p$k" -
		[ "$(atoll get default "p$k" -)" = "as nobody" ] || fail "round trip via osd.1"
		break
	fi
done
ok "osd.1 started as root with user = nobody runs as nobody, owns its folder, serves"

nbd_bin=$bindir/blockdev/nbd/atoll-nbd
if [ -x "$nbd_bin" ]; then
	. "$(dirname "$0")/../ha/ports.sh"
	port=$(ha_port_base 1)
	if "$nbd_bin" --conf "$ATOLL_CONF" --addr "127.0.0.2:$port" --user atoll-no-such-user \
		>"$tmp/nbd.out" 2>&1; then
		fail "atoll-nbd ran with an unknown user"
	fi
	grep -q "user 'atoll-no-such-user' does not exist; create it with" "$tmp/nbd.out" ||
		fail "no clear error for an unknown user: $(cat "$tmp/nbd.out")"
	"$nbd_bin" --conf "$ATOLL_CONF" --addr "127.0.0.2:$port" --user nobody \
		--log "$tmp/nbd.log" &
	nbd_pid=$!
	stop_nbd() { kill "$nbd_pid" 2>/dev/null; wait "$nbd_pid" 2>/dev/null || true; }
	cleanup_hook=stop_nbd
	for i in $(seq 1 100); do
		grep -q "serving pool" "$tmp/nbd.log" 2>/dev/null && break
		sleep 0.1
	done
	grep -q "serving pool" "$tmp/nbd.log" || fail "atoll-nbd did not start: $(cat "$tmp/nbd.log")"
	awk '$1 == "Uid:" { if ($2 != u || $5 != u) exit 1 }' u="$nobody_uid" \
		"/proc/$nbd_pid/status" || fail "atoll-nbd runs as $(grep Uid: "/proc/$nbd_pid/status")"
	atoll image create default privimg --size 4M >/dev/null
	python3 - "$port" <<'PY' || fail "atoll-nbd as nobody does not negotiate"
import socket, struct, sys
s = socket.create_connection(("127.0.0.2", int(sys.argv[1])), timeout=10)
hello = s.recv(18)
assert hello[:8] == b"NBDMAGIC" and hello[8:16] == b"IHAVEOPT", hello
PY
	stop_nbd
	cleanup_hook=
	ok "atoll-nbd --user nobody runs as nobody and answers; an unknown user is a clear error"
fi

"$cluster_bin" mon stop a --dir "$cdir" >/dev/null
printf '[mon]\nuser = nobody\n' >>"$ATOLL_CONF"
"$cluster_bin" mon start a --dir "$cdir" >/dev/null
pid=$(awk '$1 == "daemon" && $2 == "mon.a" { print $8 }' "$cdir/cluster.state")
[ -n "$pid" ] && [ -d "/proc/$pid" ] || fail "mon.a does not run"
awk '$1 == "Uid:" { if ($2 != u || $5 != u) exit 1 }' u="$nobody_uid" "/proc/$pid/status" ||
	fail "mon.a runs as $(grep Uid: "/proc/$pid/status")"
[ "$(stat -c %U "$cdir/mon.a")" = nobody ] || fail "mon.a's folder is not nobody's"
wait_health HEALTH_OK 60
echo "mon as nobody" | atoll put default m1 -
[ "$(atoll get default m1 -)" = "mon as nobody" ] || fail "round trip with the monitor as nobody"
ok "the monitor restarted as root with user = nobody runs as nobody and serves"
