#!/bin/bash
# fillup.sh - a cluster at its default full ratios (0.95, failsafe 0.97)
# written full by 16 writes of 4 MiB in flight: far faster than beacons
# reach the monitor, so only the OSDs' space grants (osd/space.c) stop the
# writes before a store fills.  The writer gets -ENOSPC; no OSD's store
# refuses a write it was sent (which left placement groups incomplete and
# the writer hanging); every PG stays active; the deletes that follow work
# and the cluster takes writes again.  Then the same through a second
# pool of size 2 beside the first, so that the OSDs' grants are shared.
# Last, 4 KiB objects (their data in the stores' kv) until -ENOSPC: the
# deletes that follow must work (a kv that could not take its overlay of
# logged mutations once refused every batch, deletes included: doc/store.md).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# A 16 MiB kv (not the default eighth of the store) so the 4 KiB objects
# fill it in seconds; PG logs shortened to fit: 80 PGs keep about 14 MiB
# of log and dup entries at the defaults.
faults_up --size 512M --set osd_store_kv_max=16M --set osd_pg_log_max=200 --set osd_pg_log_dups_max=600
wait_health HEALTH_OK
ok "3 OSDs with 512 MiB stores, default full ratios"

# fill_up POOL [BENCH-OPTIONS]: atoll bench until -ENOSPC; it deletes its
# objects then
fill_up() {
	local out rc=0 pool=$1
	shift
	out=$(timeout "${fill_timeout:-120}" "$atoll_bin" bench "$pool" "${fill_seconds:-100}" write \
		-t 16 "$@" 2>&1) || rc=$?
	[ $rc -ne 124 ] || fail "the writer hung filling pool $pool: $(echo "$out" | tail -n 5)"
	[ $rc -ne 0 ] || fail "${fill_seconds:-100} s of writes into pool $pool did not fill 512 MiB stores"
	echo "$out" | grep >/dev/null 'no space left' ||
		fail "the writes into pool $pool did not end in -ENOSPC: $(echo "$out" | tail -n 5)"
	echo "$out" | grep >/dev/null 'removing the benchmark objects failed' &&
		fail "deletes on the full cluster failed: $(echo "$out" | tail -n 5)"
	echo "$out" | sed -n 's/^removing \([0-9]*\) benchmark objects.*/\1/p'
}

# no_store_refusal: no OSD's store refused a write, a replicated write or
# a recovery push (each would have failed a PG)
no_store_refusal() {
	if grep -h -E 'a write failed in the store|applying (a replicated write|recovered data) failed' \
		"$cdir"/log/osd.*.log >&2; then
		fail "a store refused a write: see above"
	fi
}

# all_active: no PG inactive or incomplete
all_active() {
	local bad
	bad=$(atoll pg ls --state inactive,incomplete,down | tail -n +2)
	[ -z "$bad" ] || fail "PGs not active on the full cluster: $bad"
}

nobj=$(fill_up default)
no_store_refusal
all_active
ok "16 writes in flight end in -ENOSPC after $nobj objects of 4 MiB; no store refused a write; every PG active; the objects deleted"

wait_health HEALTH_OK
atoll bench default 2 write -t 4 --max-ops 16 >/dev/null || fail "writes after the deletes"
ok "HEALTH_OK and writes work again"

atoll pool create two --size 2 --min-size 2 --pg 16 >/dev/null || fail "pool create two"
wait_health HEALTH_OK
atoll bench default 100 write -t 8 >"$tmp/bench-default.out" 2>&1 &
bench_pid=$!
stop_bench() { kill "$bench_pid" 2>/dev/null || true; wait "$bench_pid" 2>/dev/null || true; }
cleanup_hook=stop_bench
ntwo=$(fill_up two)
wait "$bench_pid" && fail "the writer of pool default got no -ENOSPC: $(tail -n 3 "$tmp/bench-default.out")"
cleanup_hook=
grep -q 'no space left' "$tmp/bench-default.out" ||
	fail "the writer of pool default ended otherwise: $(tail -n 5 "$tmp/bench-default.out")"
no_store_refusal
all_active
ok "two pools written at once end in -ENOSPC ($ntwo objects in pool two); no store refused a write; every PG active"

wait_health HEALTH_OK
atoll bench two 2 write -t 4 --max-ops 16 >/dev/null || fail "writes after the second fill"
ok "HEALTH_OK and writes work again"

wait_health HEALTH_OK
# (a few thousand objects: the 16 MiB kv holds the deferred mutations of
# each at four times their size until a checkpoint)
nsmall=$(fill_up default -b 4K)
no_store_refusal
all_active
wait_health HEALTH_OK
# The deletes themselves hold kv room until the store's next checkpoint
# (doc/store.md: kv_held), which the monitor's health may not show yet.
for i in $(seq 30); do
	atoll bench default 2 write -b 4K -t 4 --max-ops 64 >"$tmp/after.out" 2>&1 && break
	[ "$i" -lt 30 ] || fail "4 KiB writes 30 s after the deletes: $(tail -n 3 "$tmp/after.out")"
	sleep 1
done
ok "4 KiB objects end in -ENOSPC after $nsmall (the kv filled); their deletes work, no store refused a write, every PG active, writes work again"
