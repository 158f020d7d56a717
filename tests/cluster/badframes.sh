#!/bin/bash
# badframes.sh ATOLL-CLUSTER ATOLL - malformed and truncated frames written
# to the monitor's, every OSD's and the active MDS's port from a raw socket
# (badframes.py), before the handshake and inside a client session (every
# message type): each bad connection before the handshake is closed, every
# probe after a bad frame is answered, a client connected beforehand keeps
# being served; then every daemon still runs, health is still HEALTH_OK and
# objects still round-trip.
#
# The cluster runs with `auth = none`: badframes.py holds no key, and
# what it sends inside a session is what any authenticated peer can send
# (that a peer without a key gets nowhere is tests/auth/keys.sh).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

cluster_up --set auth=none
ok "cluster up (auth = none)"
# every daemon that listens: a standby MDS does not (it listens once it
# is the active one), so of the MDS daemons only the active one
addrs=$(awk '$1 == "daemon" && $3 != "mds" { print $3 "@" $6 ":" $7 "@" $8 }' "$cdir/cluster.state")
mdsaddr=$(atoll --format json fs status | python3 -c 'import json, sys; print(json.load(sys.stdin)["active"]["addr"])')
mdspid=$(awk -v a="$mdsaddr" '$1 == "daemon" && $3 == "mds" && $6 ":" $7 == a { print $8 }' "$cdir/cluster.state")
addrs="$addrs mds@$mdsaddr${mdspid:+@$mdspid}"
python3 "$(dirname "$0")/badframes.py" $addrs || fail "a daemon mishandled bad frames (FAIL lines above)"
ok "monitor, OSDs and MDS refuse bad frames before and after the hello and keep serving"

for p in $(awk '$1 == "daemon" { print $8 }' "$cdir/cluster.state"); do
	[ -d /proc/$p ] || fail "daemon pid $p died"
done
ok "every daemon still runs"
[ "$(atoll health)" = HEALTH_OK ] || fail "health after bad frames: $(atoll health detail)"
echo "still serving" | atoll put default after -
[ "$(atoll get default after -)" = "still serving" ] || fail "round trip after bad frames"
ok "health OK and objects round-trip after the bad frames"
