#!/bin/bash
# stale.sh - the stale-map retry path: 16 ops in flight (appends, and
# write_full each followed by a read) with a ledger, while the map changes
# under them: noout set, a pool created, noout unset, one OSD killed with
# kill -9 (its PGs go active+degraded, min_size 2, and keep serving), noout
# set again.  faults-client checks that every op completed (none lost, no
# -ENOENT), appends were applied exactly once (size and content against
# the ledger, in version order) and every read returned the last
# acknowledged write.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

faults_up
wait_health HEALTH_OK
ok "3 OSDs on 3 hosts are up, pool default size 3 min_size 2"

fc stale default "'$cluster_bin' osd kill 1 --dir '$cdir' >/dev/null" ||
	fail "the workload through the map changes"
ok "no op lost or applied twice, no -ENOENT, no stale read through 5 map changes"

atoll health detail >"$tmp/health" 2>&1 || true
grep -q "OSD_DOWN\|osd.1" "$tmp/health" || fail "health does not name the killed OSD: $(cat "$tmp/health")"
atoll --format json pg ls default |
	pyjson "all('degraded' in p['state'] and 'active' in p['state'] and 1 not in p['acting'] for p in j)"
ok "health names the killed OSD; every PG is active+degraded without it"
