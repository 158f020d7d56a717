#!/bin/bash
# leader-io.sh - the monitors' leader killed under client I/O.
#
#   leader-io.sh ATOLL-CLUSTER ATOLL THRASH-CLIENT
#
# Three monitors, three OSDs; a ledger workload through the library with
# 16 ops in flight (tests/thrash's thrash-client).  Five times in a row:
# kill -9 of the current leader, a map change (`osd set noout`, then
# unset) issued 100 ms after the kill, and the killed monitor started
# again once a new leader answered.  Prints for every kill: the member
# killed, the time from the kill to the first write acknowledged after it,
# the longest op stall around it, and the latency of the map change.
# Checks: every acknowledged write reads back (no loss, no stale read), no
# op failed or timed out, every map change was answered, and the members
# end with one digest.
set -euo pipefail
. "$(dirname "$0")/../cluster/lib.sh"
. "$(dirname "$0")/ledger.sh"

client_bin=${1:?usage: $0 ATOLL-CLUSTER ATOLL THRASH-CLIENT}
[ -x "$client_bin" ] || skip "thrash-client is missing ($client_bin)"
kills=5

cluster_up --osds 3 --hosts 3 --mons 3 --no-mds --no-nbd --set client_op_timeout=60s
wait_health HEALTH_OK

leader() {
	atoll quorum status --format json 2>/dev/null | python3 -c 'import json, sys
d = json.load(sys.stdin)
print(d["leader"] or "")'
}
now_ms() { date +%s%3N; }

cleanup_hook=ledger_kill
ledger_start "$client_bin" 41 16
sleep 2

killed=()
for k in $(seq "$kills"); do
	l=$(leader)
	[ -n "$l" ] || fail "no leader before kill $k"
	echo stall >&9
	echo "mark kill-$k" >&9
	"$cluster_bin" mon kill "$l" --dir "$cdir" >/dev/null || fail "mon kill $l"
	t0=$(now_ms)
	killed+=("$l")
	sleep 0.1
	flag=$([ $((k % 2)) = 1 ] && echo set || echo unset)
	atoll osd "$flag" noout >/dev/null 2>"$tmp/cmd.err" ||
		fail "osd $flag noout after kill $k: $(cat "$tmp/cmd.err")"
	t1=$(now_ms)
	echo "  kill $k: mon.$l; osd $flag noout issued 100 ms after answered in $((t1 - t0 - 100)) ms"
	sleep 2
	echo stall >&9
	"$cluster_bin" mon start "$l" --dir "$cdir" >/dev/null || fail "mon start $l"
	sleep 2
done
ledger_stop
ledger_verify
for k in $(seq "$kills"); do
	grep -q "^mark kill-$k: first write" "$tmp/client.out" || fail "no write after kill $k"
done
ok "$kills leader kills (${killed[*]}) under 16 ops in flight: no op lost, failed or stale"

# every member back, at one epoch with one digest
for i in $(seq 100); do
	atoll quorum status --format json >"$tmp/q.json" 2>/dev/null &&
		python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
m = d["members"]
sys.exit(0 if len(m) == 3 and all(x["lag"] == 0 for x in m) and
         len({(x["epoch"], x["digest"]) for x in m}) == 1 else 1)' "$tmp/q.json" && break
	sleep 0.2
done
python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
m = d["members"]
sys.exit(0 if len({(x["epoch"], x["digest"]) for x in m}) == 1 else "digests differ: %r" % m)' \
	"$tmp/q.json" || fail "the members disagree"
ok "the members agree on one epoch and digest"
