#!/bin/bash
# keys.sh ATOLL-CLUSTER ATOLL AUTH-FORGE-REQID - authentication end to end
# (doc/security.md):
# `atoll-cluster up` makes the keyring (0600) and turns auth on with
# nothing to type; objects, `pg query` (straight to an OSD) and `fs status`
# (straight to the MDS) work with tickets; a raw socket with a fake hello
# gets nowhere on the monitor, an OSD and the MDS, which keep serving; an
# op whose request id names another client is refused (-EPERM); a
# wrong key, an unknown entity and a client without auth are refused; a
# keyring readable by others is refused with the chmod that fixes it.
set -euo pipefail
forge_bin=${3:?usage: $0 ATOLL-CLUSTER ATOLL AUTH-FORGE-REQID}
. "$(dirname "$0")/../cluster/lib.sh"

cluster_up --mons 1 --mds 1 --no-nbd
grep -q "^auth = ticket" "$ATOLL_CONF" || fail "atoll.conf does not turn auth on"
[ "$(stat -c %a "$cdir/keyring")" = 600 ] || fail "keyring mode $(stat -c %a "$cdir/keyring")"
for e in mon. client.admin osd.0 osd.1 osd.2 mds.a; do
	grep -q "^\[$e\]" "$cdir/keyring" || fail "no key for $e in the keyring"
done
ok "up writes a 0600 keyring with every daemon's key and turns auth on"

[ "$(atoll health)" = HEALTH_OK ] || fail "health: $(atoll health detail)"
echo "with tickets" | atoll put default o1 -
[ "$(atoll get default o1 -)" = "with tickets" ] || fail "round trip"
atoll pg query 1.0 >/dev/null || fail "pg query straight to an OSD"
atoll fs status >/dev/null || fail "fs status straight to the MDS"
ok "objects, pg query and fs status work with auth on"
cp "$cdir/keyring" "$tmp/kr2" && chmod 600 "$tmp/kr2"
sed -i 's#^keyring = .*#keyring = /nonexistent/keyring#' "$ATOLL_CONF"
atoll --keyring "$tmp/kr2" pg query 1.0 >/dev/null || fail "atoll --keyring"
[ "$(atoll --keyring "$tmp/kr2" get default o1 -)" = "with tickets" ] || fail "get --keyring"
sed -i "s#^keyring = /nonexistent/keyring#keyring = $cdir/keyring#" "$ATOLL_CONF"
ok "atoll --keyring names the keyring"
"$forge_bin" "$ATOLL_CONF" || fail "an op with another client's request id"
ok "an OSD refuses request ids that are not the ticket's client id"

mds=$(atoll --format json fs status | python3 -c 'import json, sys; print(json.load(sys.stdin)["active"]["addr"])')
addrs="$(awk '$1 == "daemon" && ($3 == "mon" || $3 == "osd") { print $6 ":" $7 }' "$cdir/cluster.state") $mds"
python3 "$(dirname "$0")/rawhello.py" $addrs || fail "a daemon answered a peer without a key"
ok "a raw socket with a fake hello gets no answer from monitor, OSDs, MDS"
for p in $(awk '$1 == "daemon" { print $8 }' "$cdir/cluster.state"); do
	[ -d /proc/$p ] || fail "daemon pid $p died"
done
[ "$(atoll get default o1 -)" = "with tickets" ] || fail "round trip after the raw sockets"
ok "every daemon still runs and serves"

# other keyrings and configurations, each refused
bad=$tmp/bad
mkdir -p "$bad"
sed "s#^keyring = .*#keyring = $bad/keyring#" "$ATOLL_CONF" >"$bad/atoll.conf"
echo "client_mount_timeout = 3s" >>"$bad/atoll.conf"
printf '[client.admin]\n\tkey = %s\n' "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" \
	>"$bad/keyring"
chmod 600 "$bad/keyring"
expect_fail() {
	local what=$1
	shift
	if ATOLL_CONF=$bad/atoll.conf timeout 30 "$atoll_bin" "$@" >"$tmp/out" 2>&1; then
		fail "$what: accepted"
	fi
}
expect_fail "a wrong key" status
ok "a wrong key is refused"
sed -i 's/^\[client.admin\]/[client.eve]/' "$bad/keyring"
echo "auth_name = client.eve" >>"$bad/atoll.conf"
expect_fail "an unknown entity" status
ok "an unknown entity is refused"
chmod 644 "$bad/keyring"
expect_fail "a world-readable keyring" status
grep -q "chmod 600" "$tmp/out" || fail "no chmod advice: $(cat "$tmp/out")"
ok "a keyring readable by others is refused, with the chmod that fixes it"
sed "s/^auth = ticket/auth = none/" "$ATOLL_CONF" >"$bad/none.conf"
echo "client_mount_timeout = 3s" >>"$bad/none.conf"
if ATOLL_CONF=$bad/none.conf timeout 30 "$atoll_bin" status >/dev/null 2>&1; then
	fail "a client without authentication was served"
fi
ok "a client with auth = none is refused"
grep -q "authentication of .* failed" "$cdir"/log/mon.*.log ||
	fail "the monitor logged no refusal"
ok "the monitor says why it refused"
