#!/bin/bash
# enable.sh ATOLL-CLUSTER ATOLL - turning authentication on for a running
# cluster that was started with auth = none, the procedure of
# doc/security.md ("Turning authentication on"), step by step while a
# writer stores objects without pause:
#   1. the keys exist (atoll-cluster wrote the keyring; a real cluster
#      writes one as the doc says);
#   2. [mon] auth = ticket + auth_allow_none = true, monitors restarted;
#   3. [osd] the same, OSDs restarted one at a time (HEALTH_OK between);
#   4. [client] auth = ticket: new clients authenticate;
#   5. auth = ticket everywhere, auth_allow_none removed, monitor and OSDs
#      restarted again one at a time.
# The writer never waits longer than a restart for a write, every
# acknowledged object reads back, and at the end a client without a key is
# refused while one with a key works.
set -euo pipefail
. "$(dirname "$0")/../cluster/lib.sh"

cluster_up --mons 1 --no-mds --no-nbd --set auth=none
grep -q "^auth = none" "$ATOLL_CONF" || fail "the cluster does not start with auth = none"
ok "cluster up with auth = none"

# the writer: a new `atoll put` process per object (each reads atoll.conf
# as it is then), a ledger of what was acknowledged, the longest wait
# between two acknowledged writes
printf '[client]\nclient_op_timeout = 10s\nclient_mount_timeout = 10s\n' >>"$ATOLL_CONF"
writer() {
	local i=0 last now gap max=0
	last=$(date +%s%N)
	while [ ! -e "$tmp/stop" ]; do
		if echo "value $i" | timeout 30 "$atoll_bin" put default "w$i" - \
			2>>"$tmp/writer.err"; then
			echo "w$i" >>"$tmp/ledger"
			i=$((i + 1))
			now=$(date +%s%N)
			gap=$(((now - last) / 1000000))
			[ $gap -le $max ] || max=$gap
			last=$now
			echo "$max" >"$tmp/maxgap"
		else
			sleep 0.1
		fi
	done
}
writer &
writer_pid=$!
stop_writer() {
	touch "$tmp/stop"
	wait "$writer_pid" 2>/dev/null || true
}
cleanup_hook=stop_writer
sleep 1

restart_osds() {
	local id
	for id in 0 1 2; do
		"$cluster_bin" osd stop "$id" --dir "$cdir" >/dev/null
		"$cluster_bin" osd start "$id" --dir "$cdir" >/dev/null
		wait_health HEALTH_OK 60
	done
}
restart_mon() {
	"$cluster_bin" mon stop a --dir "$cdir" >/dev/null
	"$cluster_bin" mon start a --dir "$cdir" >/dev/null
	wait_health HEALTH_OK 60
}

printf '[mon]\nauth = ticket\nauth_allow_none = true\n' >>"$ATOLL_CONF"
restart_mon
ok "monitor restarted with auth = ticket, auth_allow_none = true"
printf '[osd]\nauth = ticket\nauth_allow_none = true\n' >>"$ATOLL_CONF"
restart_osds
ok "OSDs restarted one at a time with auth = ticket, auth_allow_none = true"
printf '[client]\nauth = ticket\n' >>"$ATOLL_CONF"
echo keyed | atoll put default keyed -
ok "clients authenticate"
sed -i 's/^auth_allow_none = true$/auth_allow_none = false/; s/^auth = none$/auth = ticket/' \
	"$ATOLL_CONF"
restart_mon
restart_osds
ok "auth_allow_none removed, monitor and OSDs restarted: authentication everywhere"
sleep 1
stop_writer
cleanup_hook=

nw=$(wc -l <"$tmp/ledger")
[ "$nw" -ge 20 ] || fail "only $nw writes were acknowledged"
max=$(cat "$tmp/maxgap")
[ "$max" -le 20000 ] || fail "the writer waited $max ms for a write (more than a restart)"
while read -r o; do
	[ "$(atoll get default "$o" -)" = "value ${o#w}" ] || fail "object $o is wrong or lost"
done <"$tmp/ledger"
ok "$nw writes acknowledged, the longest wait $max ms, every object reads back"

sed 's/^auth = ticket$/auth = none/' "$ATOLL_CONF" >"$tmp/none.conf"
printf '[client]\nauth = none\nclient_mount_timeout = 3s\n' >>"$tmp/none.conf"
if ATOLL_CONF=$tmp/none.conf timeout 30 "$atoll_bin" status >/dev/null 2>&1; then
	fail "a client without a key was served"
fi
[ "$(atoll get default keyed -)" = keyed ] || fail "a client with a key"
ok "a client without a key is refused, one with a key served"
