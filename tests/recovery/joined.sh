#!/bin/bash
# joined.sh - an OSD that joins a PG's up set while the PG is held on its
# old acting set by a pg_temp (doc/recovery.md, "Backfill").
#
# Five OSDs on five hosts, osd.3 and osd.4 out, a pool of 16 PGs, size 3,
# with backfill slowed down and a short log (so that it is backfill).  osd.3 comes in: PGs that now place a copy on
# it stay on their old acting sets behind a pg_temp while osd.3 is
# backfilled.  While that is still going on, osd.4 comes in: it creates
# PGs whose acting set did not change (the pg_temp holds it), so it cannot
# know from its own maps since when that interval runs, and takes the
# primary's start from the primary's query.  Every PG must end
# active+clean on its up set, and every object must read back right.
# (Before, osd.4 guessed the epoch it created the PG in, refused the
# primary's backfill scans as coming from another interval, and the PGs
# stayed active+remapped+backfilling for ever: the thrash test found it.)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

cluster_up --osds 5 --hosts 5 --no-mds --no-nbd --pool '' \
	--set osd_recovery_sleep_ms=300 --set osd_recovery_max_active=1 --set osd_pg_log_max=2
wait_health HEALTH_OK
atoll osd out 3 >/dev/null || fail "atoll osd out 3"
atoll osd out 4 >/dev/null || fail "atoll osd out 4"
atoll pool create default --size 3 --min-size 2 --pg 16 >/dev/null || fail "pool create"
wait_health HEALTH_OK
ok "5 OSDs on 5 hosts, osd.3 and osd.4 out, pool default: 16 PGs, size 3, backfill slowed"

rc phase1 || fail "phase 1 (60 objects)"
ok "60 objects written on osd.0-2"

start=$(date +%s)
atoll osd in 3 >/dev/null || fail "atoll osd in 3"
for i in $(seq 300); do
	grep -q "backfilling osd\.3 " "$cdir"/log/osd.*.log && break
	sleep 0.2
done
grep -q "backfilling osd\.3 " "$cdir"/log/osd.*.log || fail "no PG backfills osd.3"
atoll osd in 4 >/dev/null || fail "atoll osd in 4"
ok "osd.3 in and being backfilled; osd.4 in meanwhile"
rc phase2 || fail "phase 2 while the PGs move"
ok "written, overwritten and deleted while the PGs move"

wait_placed
ok "HEALTH_OK, every PG active+clean on its up set, every object right, in $(( $(date +%s) - start )) s"
grep -q "(the primary's)" "$cdir/log/osd.4.log" ||
	fail "osd.4 never took an interval start from a primary: the case was not exercised"
ok "osd.4 took the interval start of remapped PGs from their primaries"
echo "all $n checks passed"
