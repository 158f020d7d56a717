#!/bin/bash
# smoke.sh ATOLL-CLUSTER ATOLL - the README's first command, quickly:
# `atoll-cluster up` (1 monitor, 3 OSDs on 3 hosts, pool 'default' of
# size 3), `atoll health` says HEALTH_OK, an object goes in and comes back
# out equal, `atoll-cluster down` stops every daemon.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

cluster_up
grep -q "export ATOLL_CONF=$cdir/atoll.conf" "$tmp/up.out" ||
	fail "up did not print how to use the cluster: $(cat "$tmp/up.out")"
ok "atoll-cluster up, and it says how to use the cluster"

[ "$(atoll health)" = HEALTH_OK ] || fail "health: $(atoll health detail)"
ok "atoll health says HEALTH_OK"

for ip in 127.0.0.2 127.0.0.3 127.0.0.4; do
	grep -q "osd_addr = $ip:" "$ATOLL_CONF" || fail "no OSD on $ip in atoll.conf"
done
! grep -q "127.0.0.1" "$ATOLL_CONF" || fail "atoll.conf names 127.0.0.1"
ok "the three hosts have their own loopback addresses, none 127.0.0.1"

head -c 100000 /dev/urandom >"$tmp/in"
atoll put default obj1 "$tmp/in"
atoll get default obj1 "$tmp/outfile"
cmp "$tmp/in" "$tmp/outfile" || fail "the object read back differs"
atoll rm default obj1
expect 3 "does not exist" atoll stat default obj1
ok "put, get, rm round trip"

pids=$(awk '$1 == "daemon" { print $8 }' "$cdir/cluster.state")
"$cluster_bin" down --dir "$cdir" >/dev/null 2>&1 || fail "atoll-cluster down"
for p in $pids; do
	if [ -d /proc/$p ] && ! grep -q '^State:.*Z' /proc/$p/status 2>/dev/null; then
		fail "pid $p still runs after down"
	fi
done
ok "atoll-cluster down stops every daemon"
