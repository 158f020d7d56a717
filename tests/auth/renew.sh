#!/bin/bash
# renew.sh ATOLL-CLUSTER ATOLL - tickets that live 6 s (auth_ticket_ttl):
# 16 writes in flight for three lifetimes while the OSD service secret
# rotates (auth_secret_period = the TTL) and every monitor session
# (the client's, each OSD's) renews its tickets and secrets at three
# quarters of their life: no write fails, health stays OK, and the OSDs
# say they renewed (doc/security.md, "Renewal").  With a skew of 2 s the
# OSDs close the client's connections as their tickets expire, and the
# client redials with its renewed ticket and resends (doc/caps.md,
# "Changing caps"): still no write fails.  A client whose osd caps lose
# `w` while it writes gets -EPERM within one ticket lifetime plus the
# skew, on the connections it had open; one whose key is removed stops
# being served.
set -euo pipefail
. "$(dirname "$0")/../cluster/lib.sh"

cluster_up --mons 1 --no-mds --no-nbd --set auth_ticket_ttl=6 --set auth_clock_skew=2
ok "cluster up with 6 s tickets"
rotations() { grep -c "service secret [0-9]* of the osd service made" "$cdir/log/mon.a.log" || true; }
made=$(rotations)
atoll bench default 18 write -t 16 -b 4096 >"$tmp/bench.out" 2>&1 ||
	{ cat "$tmp/bench.out" >&2; fail "a write failed while tickets renewed"; }
ok "16 writes in flight for 18 s: none failed"
# auth_secret_period defaults to the ticket TTL: the OSD service secret
# rotated under the writes, and no valid ticket was refused
rot=$(($(rotations) - made))
[ "$rot" -ge 2 ] || fail "$rot rotations of the osd service secret in 18 s"
ok "the osd service secret rotated $rot times under the writes"
[ "$(atoll health)" = HEALTH_OK ] || fail "health: $(atoll health detail)"
for f in "$cdir"/log/osd.*.log; do
	renewals=$(grep -c "renewing its tickets" "$f" || true)
	[ "$renewals" -ge 2 ] || fail "$(basename "$f"): $renewals renewals in 18 s"
done
ok "every OSD renewed its tickets and secrets, health OK"
grep -q "its ticket expired; it redials" "$cdir"/log/osd.*.log ||
	fail "no OSD closed a connection whose ticket expired"
ok "OSDs closed expired clients' connections; the writes went on"

# a cap change and `auth rm` reach a client's open connections:
# client.chg and client.gone write for up to 30 s; 2 s in, client.chg's
# osd caps become `allow r` (atoll auth caps) and client.gone is removed
# (atoll auth rm).  Tickets renew every 4.5 s and the OSDs close
# connections 2 s after their ticket's expiry, so within 8 s of the change
# client.chg's writes get -EPERM and client.gone's cannot go on (no new
# ticket; a write waits out client_op_timeout, 4 s): both stop about 12 s
# in.  The 30 s leave room for a slow machine; a client the change did
# not reach would write all of them.
for who in chg gone; do
	(umask 077; "$atoll_bin" auth add "client.$who" mon "allow r" osd "allow rw pool=default" \
		>"$tmp/$who.kr") || fail "auth add client.$who"
	sed -e "/^keyring/d" \
		-e "/^\[global\]/a auth_name = client.$who\nkeyring = $tmp/$who.kr\nclient_op_timeout = 4s" \
		"$ATOLL_CONF" >"$tmp/$who.conf"
done
ATOLL_CONF=$tmp/chg.conf "$atoll_bin" bench default 30 write -t 4 -b 4096 >"$tmp/chg.out" 2>&1 &
chg=$!
ATOLL_CONF=$tmp/gone.conf "$atoll_bin" bench default 30 write -t 4 -b 4096 >"$tmp/gone.out" 2>&1 &
gone=$!
sleep 2
"$atoll_bin" auth caps client.chg mon "allow r" osd "allow r pool=default" ||
	fail "auth caps client.chg"
"$atoll_bin" auth rm client.gone || fail "auth rm client.gone"
"$atoll_bin" auth ls | grep -q "client.gone" && fail "client.gone is still known"
if wait $chg; then
	fail "client.chg kept writing after its caps lost w: $(tail -3 "$tmp/chg.out")"
fi
grep -q "not permitted" "$tmp/chg.out" || fail "client.chg: $(tail -3 "$tmp/chg.out")"
ok "a cap change reaches a client's open connections within a ticket lifetime"
if wait $gone; then
	fail "client.gone kept writing after its key was removed: $(tail -3 "$tmp/gone.out")"
fi
grep -q "write of .* failed" "$tmp/gone.out" || fail "client.gone: $(tail -3 "$tmp/gone.out")"
ok "a removed key's client stops being served within a ticket lifetime"
