#!/bin/bash
# full.sh - a full cluster: small stores and a low full ratio (0.3); 4 MiB
# writes until -ENOSPC (at most 60 s); health says OSD_FULL; deletes still
# work; after deleting everything (and a beacon or two) writes work again.
# Then the same with 4 KiB objects, which fill the stores' kv (their data
# inline in it) long before the data area: the OSDs count the kv's use in
# what they report, so the monitor's ratio stops them too, and no store
# reaches its own -ENOSPC (which left placement groups incomplete).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# 4 KiB objects inline (the default is 2K), so that the last part fills
# the kv before the data area
faults_up --size 512M --set mon_osd_nearfull_ratio=0.2 \
	--set mon_osd_backfillfull_ratio=0.25 --set mon_osd_full_ratio=0.3 \
	--set osd_store_inline_max=4096
wait_health HEALTH_OK
ok "3 OSDs with 512 MiB stores, full ratio 0.3"

nobj=$(fc fill default 60) || fail "writes did not end in -ENOSPC"
ok "writes end in -ENOSPC after $nobj objects of 4 MiB"

# wait_full yes|no: until health does (yes) or does not (no) say OSD_FULL
wait_full() {
	local i=0 now
	while :; do
		if atoll health detail 2>/dev/null | grep >/dev/null OSD_FULL; then now=yes; else now=no; fi
		[ "$now" = "$1" ] && return 0
		i=$((i + 1))
		[ $i -lt 50 ] || fail "health after 10 s (OSD_FULL wanted: $1): $(atoll health detail)"
		sleep 0.2
	done
}

wait_full yes
[ "$(atoll health | head -n 1)" = HEALTH_ERR ] || fail "health: $(atoll health)"
fc write-full default || fail "a write on the full cluster"
ok "health says HEALTH_ERR with OSD_FULL, and writes still get -ENOSPC"
fc full-try default || fail "ATOLL_IOCTX_FULL_TRY on the full cluster"
ok "a write through an ioctx with ATOLL_IOCTX_FULL_TRY goes through (the MDS's journal)"

fc drain default "$nobj" || fail "deletes on the full cluster"
ok "all $nobj objects deleted on the full cluster"

wait_full no
fc write-ok default || fail "a write after the deletes"
ok "OSD_FULL clears and writes work again"

nsmall=$(fc fill default 90 4096) || fail "4 KiB writes did not end in -ENOSPC"
# 0.3 of the data areas takes ~40,000 such objects; 0.3 of the kv (each
# 4 KiB inline takes 8 KiB of it) ~2,500: the kv must be what stopped them
[ "$nsmall" -lt 20000 ] || fail "$nsmall objects of 4 KiB before -ENOSPC: the kv's use is not counted"
wait_full yes
atoll health detail | grep >/dev/null PG_NOT_CLEAN && fail "placement groups not clean: $(atoll health detail)"
ok "4 KiB writes end in -ENOSPC after $nsmall objects (the kv filled: $(atoll df | sed -n 's/^RAW: //p')), with OSD_FULL and every placement group clean"

fc drain default "$nsmall" || fail "deletes of the small objects"
wait_full no
fc write-ok default || fail "a write after deleting the small objects"
ok "all $nsmall small objects deleted; OSD_FULL clears and writes work again"
