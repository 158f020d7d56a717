#!/bin/bash
# badframes.sh ATOLL-CLUSTER ATOLL - malformed and truncated frames written
# to the monitor's and every OSD's port from a raw socket (badframes.py):
# each such connection is closed, and the daemons keep serving: every
# daemon still runs, health is still HEALTH_OK, objects still round-trip.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

cluster_up
ok "cluster up"
# every daemon that listens: a standby MDS does not (it listens once it
# is the active one), so of the MDS daemons only the active one
addrs=$(awk '$1 == "daemon" && $3 != "mds" { print $6 ":" $7 }' "$cdir/cluster.state")
addrs="$addrs $(atoll --format json fs status | python3 -c 'import json, sys; print(json.load(sys.stdin)["active"]["addr"])')"
python3 "$(dirname "$0")/badframes.py" $addrs || fail "a daemon did not close a bad connection"
ok "each bad connection is closed by monitor and OSDs"

for p in $(awk '$1 == "daemon" { print $8 }' "$cdir/cluster.state"); do
	[ -d /proc/$p ] || fail "daemon pid $p died"
done
ok "every daemon still runs"
[ "$(atoll health)" = HEALTH_OK ] || fail "health after bad frames: $(atoll health detail)"
echo "still serving" | atoll put default after -
[ "$(atoll get default after -)" = "still serving" ] || fail "round trip after bad frames"
ok "health OK and objects round-trip after the bad frames"
