#!/bin/bash
# clockskew.sh ATOLL-CLUSTER ATOLL - a daemon whose clock is beyond
# auth_clock_skew (doc/security.md, "Clock skew"): osd.2 restarted with
# its clock 120 s behind (the test-only debug_clock_offset) gives
# CLOCK_SKEW naming it, with how far and what to do; it refuses the
# tickets of clients and says why in its log; a client's op to it fails
# with -EKEYREJECTED at client_op_timeout ("key was rejected"), never a
# silent hang; restarted without the offset, health is OK again and the
# op works.  The grace is long so that osd.2 stays up (its peers' pings
# are refused too) while the client tries it.
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
