#!/bin/bash
# store.sh ATOLL-CLUSTER ATOLL - keys, caps and client ids in the monitors'
# replicated state (doc/security.md, "The monitors' state"), on one
# cluster of 3 monitors: the `atoll auth` commands round trip; `auth get`
# needs a secure session; a removed entity cannot log in; the state
# reaches every monitor and survives the leader's death and a restart;
# `auth rotate client.admin --keyring-out` under a loop of puts and gets
# fails no op; the monitors' stores are mode 0600.
set -euo pipefail
. "$(dirname "$0")/../cluster/lib.sh"

# ms_mon_mode = prefer-secure: the monitors also take crc sessions (the
# default, secure, refuses them at the handshake), so that the command's
# own refusal over crc is what is tested
cluster_up --mons 3 --no-nbd --set auth_rotate_grace=5 --set client_mount_timeout=10s \
	--set ms_mon_mode=prefer-secure
kr=$cdir/keyring

# ---- the commands
out=$(atoll auth ls)
for e in client.admin client.bootstrap-osd osd.0 osd.1 osd.2; do
	grep -q "^\[$e\]" <<<"$out" || fail "auth ls lacks $e: $out"
done
! grep -q "key" <<<"$out" || fail "auth ls shows a key: $out"
ok "the first leader imported up's keyring; every OSD was registered; ls shows no key"

atoll auth add client.u osd "allow rw pool=default" mon "allow r" >"$tmp/u.kr" 2>"$tmp/err" ||
	fail "auth add: $(cat "$tmp/err")"
grep -q '^\[client.u\]' "$tmp/u.kr" && grep -q 'key = [0-9a-f]\{64\}' "$tmp/u.kr" ||
	fail "auth add printed no keyring section: $(cat "$tmp/u.kr")"
if atoll auth add client.u 2>"$tmp/err"; then fail "auth add of an existing entity"; fi
grep -q "exists already" "$tmp/err" || fail "add twice: $(cat "$tmp/err")"
atoll auth ls | grep -A2 '^\[client.u\]' | grep -q 'caps osd = allow rw pool=default' ||
	fail "ls: $(atoll auth ls)"
ok "auth add prints the new keyring section, refuses an existing name; ls shows caps"

sed -e "/^ms_mon_mode/d" -e "s#^auth = ticket#auth = ticket\nms_mon_mode = crc#" "$ATOLL_CONF" >"$tmp/crc.conf"
atoll auth get-or-create client.v osd "allow r" >"$tmp/v.kr" || fail "get-or-create new"
grep -q '^\[client.v\]' "$tmp/v.kr" || fail "get-or-create printed: $(cat "$tmp/v.kr")"
if ATOLL_CONF=$tmp/crc.conf atoll auth get-or-create client.v osd "allow r" >/dev/null 2>"$tmp/err"; then
	fail "get-or-create of an existing entity printed its key over crc"
fi
grep -q "secure" "$tmp/err" || fail "get-or-create existing: $(cat "$tmp/err")"
if ATOLL_CONF=$tmp/crc.conf atoll auth get client.v >/dev/null 2>"$tmp/err"; then
	fail "auth get over crc"
fi
grep -q "only over a secure session" "$tmp/err" || fail "get over crc: $(cat "$tmp/err")"
ok "auth get (and get-or-create of an existing entity) refused over a crc session"
sed -e "/^ms_mon_mode/d" -e "s#^auth = ticket#auth = ticket\nms_mon_mode = secure#" "$ATOLL_CONF" >"$tmp/sec.conf"
ATOLL_CONF=$tmp/sec.conf atoll auth get client.v >"$tmp/v2.kr" 2>"$tmp/err" ||
	fail "auth get over a secure session: $(cat "$tmp/err")"
cmp -s <(grep 'key =' "$tmp/v.kr") <(grep 'key =' "$tmp/v2.kr") ||
	fail "auth get printed another key: $(cat "$tmp/v2.kr")"
ok "auth get prints the key over a secure session"

atoll auth caps client.v osd "allow rw" mds "allow r" || fail "auth caps"
atoll --format json auth ls | python3 -c '
import json, sys
e = {x["entity"]: x for x in json.load(sys.stdin)["entities"]}
v = e["client.v"]
assert v["caps"] == {"osd": "allow rw", "mds": "allow r"}, v
assert "key" not in v, v
' || fail "caps not replaced: $(atoll --format json auth ls)"
ok "auth caps replaces the caps (json ls)"

for bad in "auth get client.nobody" "auth rm client.nobody" "auth caps client.nobody"; do
	if atoll $bad 2>"$tmp/err"; then fail "$bad succeeded"; fi
	grep -q "no entity 'client.nobody'" "$tmp/err" || fail "$bad: $(cat "$tmp/err")"
done
if atoll auth add "bad/name" 2>"$tmp/err"; then fail "bad name accepted"; fi
grep -q "not an entity name" "$tmp/err" || fail "bad name: $(cat "$tmp/err")"
if atoll auth add client.w rgw "allow *" 2>"$tmp/err"; then fail "bad service accepted"; fi
grep -q "unknown service 'rgw'" "$tmp/err" || fail "bad service: $(cat "$tmp/err")"
if atoll auth add mon. 2>"$tmp/err"; then fail "mon. accepted"; fi
ok "unknown names, bad names, bad services and mon. are refused with a sentence"

# client.u logs in with its own keyring; an unprivileged key manages nothing
chmod 600 "$tmp/u.kr"
echo hello | atoll put default u1 - || fail "put as admin"
sed -e "s#^keyring = .*#keyring = $tmp/u.kr\nauth_name = client.u\nclient_mount_timeout = 5s#" \
	"$ATOLL_CONF" >"$tmp/u.conf"
[ "$(ATOLL_CONF=$tmp/u.conf atoll get default u1 -)" = hello ] || fail "client.u get"
if ATOLL_CONF=$tmp/u.conf atoll auth ls 2>"$tmp/err"; then fail "client.u ran auth ls"; fi
grep -q "allow \*" "$tmp/err" || fail "client.u auth ls: $(cat "$tmp/err")"
atoll auth rm client.u || fail "auth rm"
if ATOLL_CONF=$tmp/u.conf timeout 30 atoll get default u1 - >/dev/null 2>&1; then
	fail "a removed entity logged in"
fi
ok "a new entity logs in with its key; auth needs admin caps; a removed one cannot"

# ---- every monitor holds the state: client.v logs in at each one alone
atoll auth get-or-create client.w mon "allow r" osd "allow rw" >"$tmp/w.kr" || fail "get-or-create client.w"
chmod 600 "$tmp/w.kr"
sed -e "s#^keyring = .*#keyring = $tmp/w.kr\nauth_name = client.w\nclient_mount_timeout = 10s#" \
	"$ATOLL_CONF" >"$tmp/w.conf"
mons=$(awk '$1 == "daemon" && $3 == "mon" { print $6 ":" $7 }' "$cdir/cluster.state")
[ "$(wc -w <<<"$mons")" = 3 ] || fail "3 monitors in cluster.state: $mons"
for m in $mons; do
	ATOLL_CONF=$tmp/w.conf atoll -m "$m" get default u1 - >/dev/null ||
		fail "client.w cannot log in at monitor $m"
done
ok "a new key reaches all 3 monitors (client.w logs in at each)"

leader=$("$cluster_bin" mon kill --dir "$cdir") || fail "mon kill"
[ "$(ATOLL_CONF=$tmp/w.conf atoll get default u1 -)" = hello ] ||
	fail "client.w after the leader ($leader) died"
atoll auth caps client.w mon "allow r" osd "allow r" || fail "auth caps with the leader dead"
"$cluster_bin" mon start --dir "$cdir" >/dev/null || fail "mon start"
"$cluster_bin" mon stop --dir "$cdir" >/dev/null || fail "mon stop (the new leader)"
"$cluster_bin" mon start --dir "$cdir" >/dev/null || fail "mon start again"
atoll --format json auth ls | python3 -c '
import json, sys
e = {x["entity"]: x for x in json.load(sys.stdin)["entities"]}
assert e["client.w"]["caps"] == {"mon": "allow r", "osd": "allow r"}, e["client.w"]
assert "client.u" not in e, e
' || fail "state after restarts: $(atoll auth ls)"
for m in $mons; do
	ATOLL_CONF=$tmp/w.conf atoll -m "$m" get default u1 - >/dev/null ||
		fail "client.w at monitor $m after the restarts"
done
ok "the state survives the leader's death and monitor restarts, on every monitor"

# ---- rotate the admin's key under load: no op fails
load() {
	local i=0
	while [ ! -e "$tmp/stop" ]; do
		i=$((i + 1))
		echo "v$i" | atoll put default load - || { echo "put $i" >>"$tmp/load.err"; }
		[ "$(atoll get default load -)" = "v$i" ] || { echo "get $i" >>"$tmp/load.err"; }
		echo "$i" >"$tmp/load.n"
	done
}
load 2>>"$tmp/load.log" &
load_pid=$!
stop_load() { touch "$tmp/stop"; wait "$load_pid" 2>/dev/null || true; }
cleanup_hook=stop_load
sleep 2
old=$(grep -A1 '^\[client.admin\]' "$kr" | awk '/key =/ { print $3 }')
for r in 1 2 3; do
	atoll auth rotate client.admin --keyring-out "$kr" 2>"$tmp/err" ||
		fail "rotate $r: $(cat "$tmp/err")"
	sleep 1
done
sleep 2
stop_load
cleanup_hook=
[ ! -s "$tmp/load.err" ] || fail "ops failed during the rotations: $(cat "$tmp/load.err") $(tail -5 "$tmp/load.log")"
[ "$(cat "$tmp/load.n")" -gt 3 ] || fail "the load loop hardly ran: $(cat "$tmp/load.n")"
new=$(grep -A1 '^\[client.admin\]' "$kr" | awk '/key =/ { print $3 }')
[ -n "$new" ] && [ "$new" != "$old" ] || fail "the admin's key did not change"
[ "$(stat -c %a "$kr")" = 600 ] || fail "keyring mode after rotate: $(stat -c %a "$kr")"
grep -q '^\[osd.0\]' "$kr" || fail "rotate dropped the other entries of the keyring"
ok "auth rotate client.admin --keyring-out under a put/get loop: $(cat "$tmp/load.n") rounds, none failed"

# a replaced key is accepted for auth_rotate_grace (5 s here), then no more
printf '[client.admin]\n\tkey = %s\n' "$old" >"$tmp/old.kr"
chmod 600 "$tmp/old.kr"
sleep 6
if timeout 30 atoll --keyring "$tmp/old.kr" status >/dev/null 2>&1; then
	fail "the admin's old key still logs in after the grace"
fi
atoll status >/dev/null || fail "the new admin key"
ok "a rotated key is refused once auth_rotate_grace has passed"

# ---- the monitors' stores hold every key: only their owner reads them
for d in "$cdir"/mon.*; do
	[ "$(stat -c %a "$d")" = 700 ] || fail "$d is mode $(stat -c %a "$d")"
	bad=$(find "$d" -type f -perm /077 | head -3)
	[ -z "$bad" ] || fail "readable by group or others: $bad"
done
atoll mon backup "$tmp/bk" >/dev/null 2>&1 || fail "mon backup"
[ "$(stat -c %a "$tmp/bk")" = 600 ] || fail "backup mode $(stat -c %a "$tmp/bk")"
ok "monitor data folders 0700 with no file readable by others; backups 0600"

# ---- a backup holds the auth state: it leaves only over a secure session,
# and a monitor restored from it knows every key
if ATOLL_CONF=$tmp/crc.conf atoll mon backup "$tmp/bk-crc" >/dev/null 2>"$tmp/err"; then
	fail "mon backup over a crc session"
fi
grep -q "secure" "$tmp/err" || fail "mon backup over crc said: $(cat "$tmp/err")"
[ ! -e "$tmp/bk-crc" ] || fail "mon backup over crc left a file"
raddr=127.0.0.9:$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.9", 0)); print(s.getsockname()[1])')
"$bindir/mon/atoll-mon" --restore "$tmp/bk" --data "$tmp/rmon" --name a --addr "$raddr" \
	>/dev/null 2>"$tmp/err" || fail "restore: $(cat "$tmp/err")"
sed -e '/^metrics_addr/d' -e '/^dashboard_addr/d' "$ATOLL_CONF" >"$tmp/rmon.conf"	# mon.a's ports are taken
"$bindir/mon/atoll-mon" --data "$tmp/rmon" --addr "$raddr" --conf "$tmp/rmon.conf" \
	--log "$tmp/rmon.log" 2>"$tmp/rmon.err" &
rmon=$!
stop_rmon() { kill "$rmon" 2>/dev/null; wait "$rmon" 2>/dev/null || true; }
cleanup_hook=stop_rmon
for _ in $(seq 100); do
	kill -0 "$rmon" 2>/dev/null || fail "the restored monitor exited: $(cat "$tmp/rmon.err")"
	ATOLL_CONF=$tmp/w.conf timeout 10 "$atoll_bin" -m "$raddr" status >/dev/null 2>&1 && break
	sleep 0.2
done
ATOLL_CONF=$tmp/w.conf atoll -m "$raddr" status >/dev/null 2>"$tmp/err" ||
	fail "client.w (made with auth add) at the restored monitor: $(cat "$tmp/err")"
atoll -m "$raddr" auth ls | grep -q '^\[client.w\]' || fail "restored auth ls: $(atoll -m "$raddr" auth ls)"
grep -q "auth state created" "$tmp/rmon.log" && fail "the restored monitor made its auth state afresh from its keyring file"
stop_rmon
cleanup_hook=
ok "mon backup refuses a crc session; a monitor restored from a backup knows the keys made with auth add"
