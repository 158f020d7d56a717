#!/bin/bash
# renew.sh ATOLL-CLUSTER ATOLL - tickets that live 6 s (auth_ticket_ttl):
# 16 writes in flight for three lifetimes while every monitor session
# (the client's, each OSD's) renews its tickets and secrets at three
# quarters of their life: no write fails, health stays OK, and the OSDs
# say they renewed (doc/security.md, "Renewal").  With a skew of 2 s the
# OSDs close the client's connections as their tickets expire, and the
# client redials with its renewed ticket and resends (doc/caps.md,
# "Changing caps"): still no write fails.
set -euo pipefail
. "$(dirname "$0")/../cluster/lib.sh"

cluster_up --mons 1 --no-mds --no-nbd --set auth_ticket_ttl=6 --set auth_clock_skew=2
ok "cluster up with 6 s tickets"
atoll bench default 18 write -t 16 -b 4096 >"$tmp/bench.out" 2>&1 ||
	{ cat "$tmp/bench.out" >&2; fail "a write failed while tickets renewed"; }
ok "16 writes in flight for 18 s: none failed"
[ "$(atoll health)" = HEALTH_OK ] || fail "health: $(atoll health detail)"
for f in "$cdir"/log/osd.*.log; do
	n=$(grep -c "renewing its tickets" "$f" || true)
	[ "$n" -ge 2 ] || fail "$(basename "$f"): $n renewals in 18 s"
done
ok "every OSD renewed its tickets and secrets, health OK"
grep -q "its ticket expired; it redials" "$cdir"/log/osd.*.log ||
	fail "no OSD closed a connection whose ticket expired"
ok "OSDs closed expired clients' connections; the writes went on"
