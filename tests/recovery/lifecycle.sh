#!/bin/bash
# lifecycle.sh - the OSD lifecycle (doc/admin.md, "Replacing a dead disk",
# "Removing an OSD"): four OSDs on four hosts, pool size 3, 60 objects.
#   1. osd.1's disk "dies": stopped, `atoll osd destroy 1`, health says
#      OSD_DESTROYED; a new empty disk under the same id (a new disk for an
#      id that is not destroyed is refused): it is backfilled, HEALTH_OK.
#   2. `atoll osd drain 3`: health follows it to OSD_DRAINED; osd.3 stopped,
#      `atoll osd rm 3`: HEALTH_OK with three OSDs.
#   3. `atoll osd set noout` shows in health until it is unset.
# After each step every object reads back right; at the end the stores,
# inspected offline, hold every object on exactly the OSDs placement names.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# health_has CODE: the current health names CODE
health_has() {
	atoll --format json health 2>/dev/null |
		python3 -c 'import json,sys; sys.exit(0 if any(c["code"] == sys.argv[1] for c in json.load(sys.stdin)["checks"]) else 1)' "$1"
}
wait_check() {
	local i
	for i in $(seq 300); do health_has "$1" && return 0; sleep 0.2; done
	atoll health detail >&2 || true
	fail "health never said $1"
}

cluster_up --osds 4 --hosts 4 --no-mds --no-nbd
wait_health HEALTH_OK
rc phase1 || fail "phase 1 (60 objects)"
rc phase2 || fail "phase 2"
ok "4 OSDs on 4 hosts, 69 objects written"

# 1. a dead disk replaced under the same id
"$cluster_bin" osd stop 1 --dir "$cdir" >/dev/null || fail "atoll-cluster osd stop 1"
expect 1 "exists with another disk" "$cluster_bin" osd replace 1 --dir "$cdir"
ok "a new disk for osd.1 is refused while osd.1 is not destroyed"
expect 2 "yes-i-really-mean-it" atoll osd destroy 1
atoll osd destroy 1 --yes-i-really-mean-it >/dev/null || fail "atoll osd destroy 1"
wait_check OSD_DESTROYED
atoll health detail | grep >/dev/null "atoll-osd --mkfs --id" || fail "health does not say how to replace the disk"
ok "osd.1 destroyed: health says OSD_DESTROYED and how to replace the disk"
"$cluster_bin" osd replace 1 --dir "$cdir" >"$tmp/replace.out" 2>&1 ||
	{ cat "$tmp/replace.out" >&2; fail "atoll-cluster osd replace 1"; }
start=$(date +%s)
wait_placed
! health_has OSD_DESTROYED || fail "health still says OSD_DESTROYED"
[ "$(wc -l <"$tmp/want")" = 69 ] || fail "verify listed $(wc -l <"$tmp/want") objects, not 69"
awk '{print $3}' "$tmp/place" | tr , '\n' | grep -x >/dev/null 1 || fail "no PG is placed on osd.1"
ok "osd.1 on a new empty disk: backfilled, HEALTH_OK, every object right, in $(( $(date +%s) - start )) s"

# 2. drain osd.3 and remove it
atoll osd drain 3 >/dev/null || fail "atoll osd drain 3"
health_has OSD_DRAINING || health_has OSD_DRAINED || fail "health does not show the drain"
wait_check OSD_DRAINED
"$cluster_bin" osd stop 3 --dir "$cdir" >/dev/null || fail "atoll-cluster osd stop 3"
atoll osd rm 3 >/dev/null || fail "atoll osd rm 3"
"$cluster_bin" osd rm 3 --dir "$cdir" >/dev/null || fail "atoll-cluster osd rm 3"
wait_placed
! awk '{print $3}' "$tmp/place" | tr , '\n' | grep -x >/dev/null 3 || fail "placement still names osd.3"
atoll --format json osd dump | pyjson "not any(o['id'] == 3 for o in j['osds'])" ||
	fail "osd.3 is still in the map"
ok "osd.3 drained and removed: HEALTH_OK on three OSDs, every object right"

# 3. noout shows in health while set
atoll osd set noout >/dev/null || fail "atoll osd set noout"
health_has OSDMAP_FLAGS || fail "health does not show noout"
atoll osd unset noout >/dev/null || fail "atoll osd unset noout"
wait_health HEALTH_OK
ok "noout shows in health while it is set"

awk '{print $1, $3}' "$tmp/place" >"$tmp/map"
"$cluster_bin" down --dir "$cdir" >/dev/null || fail "atoll-cluster down"
python3 "$check" "$storetool_bin" "$cdir" "$tmp/want" "$tmp/map" ||
	fail "the stores do not hold what placement says"
ok "offline: every object on exactly the 3 OSDs placement names"
echo "all $n checks passed"
