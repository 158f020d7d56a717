#!/bin/bash
# caps.sh ATOLL-CLUSTER ATOLL AUTH-CAPS-WALK DOC - capabilities on one
# cluster (doc/caps.md): a client with `allow rw pool=a` reads and writes
# a, gets -EPERM on b and cannot run `pool rm`; an `allow r` client cannot
# write; then auth-caps-walk walks every row of doc/caps.md's tables from
# an `allow r pool=a` key (message types to an OSD and to the monitor,
# sub-ops, commands, a forged osd.1 hello, a boot with a stolen uuid);
# atoll-nbd runs as client.nbd with `allow rw pool=default`.
# Test keys are made with `atoll auth add`, each in a keyring of its own.
set -euo pipefail
walk_bin=${3:?usage: $0 ATOLL-CLUSTER ATOLL AUTH-CAPS-WALK DOC}
doc=${4:?usage: $0 ATOLL-CLUSTER ATOLL AUTH-CAPS-WALK DOC}
. "$(dirname "$0")/../cluster/lib.sh"

cluster_up --mons 1 --no-mds
atoll pool create a --pg 8 >/dev/null
atoll pool create b --pg 8 >/dev/null
echo "b's" | atoll put b ob -

# add_key NAME MONCAPS OSDCAPS: a key made with `atoll auth add`, in
# $tmp/NAME.kr, and an atoll.conf that uses it ($tmp/NAME.conf)
add_key() {
	(umask 077; atoll auth add "$1" mon "$2" osd "$3" >"$tmp/$1.kr") ||
		fail "auth add $1"
	sed -e "/^auth_name/d" -e "/^keyring/d" \
		-e "/^\[global\]/a auth_name = $1\nkeyring = $tmp/$1.kr" "$ATOLL_CONF" >"$tmp/$1.conf"
}
add_key client.rw "allow r" "allow rw pool=a"
add_key client.ro "allow r" "allow r pool=a"
add_key client.walk "allow r" "allow r pool=a"
# the walker also tries the bootstrap key (OSD_NEW, a boot as osd.1)
awk '/^\[/ { on = ($0 == "[client.bootstrap-osd]") } on' "$cdir/keyring" >>"$tmp/client.walk.kr"

as() { local who=$1; shift; ATOLL_CONF=$tmp/$who.conf "$atoll_bin" "$@"; }
echo "rw's" | as client.rw put a o1 - || fail "allow rw pool=a cannot write a"
[ "$(as client.rw get a o1 -)" = "rw's" ] || fail "allow rw pool=a cannot read a"
ok "a client with 'allow rw pool=a' reads and writes a"
expect 1 "not permitted" as client.rw get b ob -
expect 1 "not permitted" as client.rw put b o2 /dev/null
ok "... and gets EPERM on b"
expect 1 "lacks the mon cap" as client.rw pool rm b b --yes-i-really-mean-it
atoll pool ls | grep -qx b || fail "pool b is gone"
ok "... and cannot run pool rm"
[ "$(as client.ro get a o1 -)" = "rw's" ] || fail "allow r cannot read"
expect 1 "not permitted" as client.ro put a o3 /dev/null
ok "a client with 'allow r pool=a' reads and cannot write"

mon=$(awk '$1 == "daemon" && $3 == "mon" { print $2; exit }' "$cdir/cluster.state")
"$walk_bin" "$doc" "$tmp/client.walk.conf" client.walk a b "$(state_addr "$mon")" \
	"$cdir/log/$mon.log" "$(state_addr osd.0)" "$cdir/log/osd.0.log" >"$tmp/walk.out" 2>&1 ||
	{ cat "$tmp/walk.out" >&2; fail "doc/caps.md's tables are not what the daemons do"; }
ok "every row of doc/caps.md's tables holds ($(grep -c '^ok' "$tmp/walk.out") checks)"
[ "$(atoll get b ob -)" = "b's" ] || fail "b's object after the walk"
[ "$(atoll health)" = HEALTH_OK ] || fail "health: $(atoll health detail)"
ok "the cluster still serves, health OK"

# atoll-nbd runs as client.nbd, limited to its pool
grep -A3 '^\[client.nbd\]' "$cdir/keyring" | grep -q "caps osd = allow rw pool=default" ||
	fail "no client.nbd key limited to pool default: $(cat "$cdir/keyring")"
grep -q -- "--name client.nbd" "$cdir/log/nbd.log" || fail "atoll-nbd does not run as client.nbd"
if command -v nbdinfo >/dev/null; then
	atoll image create default disk1 --size 1M >/dev/null
	nbdinfo "nbd://$(state_addr nbd)/disk1" >"$tmp/nbdinfo" 2>&1 ||
		fail "nbdinfo through atoll-nbd as client.nbd: $(cat "$tmp/nbdinfo")"
fi
ok "atoll-nbd serves its pool as client.nbd (allow rw pool=default)"
