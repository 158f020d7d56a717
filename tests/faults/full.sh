#!/bin/bash
# full.sh - a full cluster: small stores and a low full ratio (0.3); 4 MiB
# writes until -ENOSPC (at most 60 s); health says OSD_FULL; deletes still
# work; after deleting everything (and a beacon or two) writes work again.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

faults_up --size 512M --set mon_osd_nearfull_ratio=0.2 \
	--set mon_osd_backfillfull_ratio=0.25 --set mon_osd_full_ratio=0.3
wait_health HEALTH_OK
ok "3 OSDs with 512 MiB stores, full ratio 0.3"

nobj=$(fc fill default 60) || fail "writes did not end in -ENOSPC"
ok "writes end in -ENOSPC after $nobj objects of 4 MiB"

i=0
until atoll health detail 2>/dev/null | grep -q OSD_FULL; do
	i=$((i + 1))
	[ $i -lt 50 ] || fail "health does not say OSD_FULL: $(atoll health detail)"
	sleep 0.2
done
[ "$(atoll health | head -n 1)" = HEALTH_ERR ] || fail "health: $(atoll health)"
fc write-full default || fail "a write on the full cluster"
ok "health says HEALTH_ERR with OSD_FULL, and writes still get -ENOSPC"

fc drain default "$nobj" || fail "deletes on the full cluster"
ok "all $nobj objects deleted on the full cluster"

i=0
while atoll health detail 2>/dev/null | grep -q OSD_FULL; do
	i=$((i + 1))
	[ $i -lt 50 ] || fail "health still says OSD_FULL after the deletes: $(atoll health detail)"
	sleep 0.2
done
fc write-ok default || fail "a write after the deletes"
ok "OSD_FULL clears and writes work again"
