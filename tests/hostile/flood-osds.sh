#!/bin/bash
# flood-osds.sh ATOLL-CLUSTER ATOLL ATOLL-FLOOD [ATOLL-FUSE] - the flood of
# flood-each.sh (connections held, half-open handshakes, 64 MiB headers,
# future-epoch ops) against all three OSDs at once while a client writes
# (`atoll bench`): the client sees no error, no OSD is marked down (each
# keeps its up_from), the monitors hold no election (the raft term of
# `atoll quorum status` is unchanged) and the MDS does not fail over (the
# same active instance), and each OSD stays under its memory budget.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

cluster_up --size 2G
ok "cluster up"

# the state the flood must not change: each OSD's up_from, the term, the
# active MDS instance
snapshot() {
	{
		atoll --format json osd dump | python3 -c '
import json, sys
for o in json.load(sys.stdin)["osds"]:
    print("osd.%d up=%s up_from=%d" % (o["id"], o["up"], o["up_from"]))'
		atoll --format json quorum status | python3 -c '
import json, sys
j = json.load(sys.stdin)
print("term %d leader %s" % (j["term"], j["leader"]))'
		atoll --format json fs status | python3 -c '
import json, sys
a = json.load(sys.stdin).get("active") or {}
print("mds active %s instance %s" % (a.get("name"), a.get("instance")))'
	} 2>&1
}
snapshot >"$tmp/before" || fail "cannot read the cluster's state"
sed 's/^/   before: /' "$tmp/before"

w=$((HOSTILE_LEAD_S + 2 * HOSTILE_WORK_S + 10))
pids=()
vdata0=()
for i in 0 1 2; do
	addr="$(daemon_field osd.$i ip):$(daemon_field osd.$i port)"
	pids+=("$(daemon_field osd.$i pid)")
	vdata0[$i]=$(awk '/^VmData:/ { print $2 }' "/proc/${pids[$i]}/status")
	flood_start "$tmp/flood.osd.$i" $((w + 10)) "$addr" --future "$HOSTILE_FUTURE"
	rss_watch "${pids[$i]}" "$tmp/rss.osd.$i" &
	watch_pids+=($!)
done
# the client writes from the start of the flood until after it is done
timeout $((w * 2 + 20)) "$atoll_bin" --format json bench default "$w" write \
	-b 16K -t 8 >"$tmp/bench.out" 2>"$tmp/bench.err" &
bench_pid=$!
watch_pids+=("$bench_pid")
sleep $((HOSTILE_LEAD_S + HOSTILE_WORK_S))
echo "   during the flood: $(sockstat) (mem in pages)"
wait "$bench_pid"
rc=$?
if [ $rc -ne 0 ]; then
	echo "   the client's last seconds:"
	tail -n 6 "$tmp/bench.err" | sed 's/^/      /'
	problem "the client's writes failed under the flood (exit $rc$([ $rc = 124 ] &&
		echo ": did not finish within $((w * 2 + 20)) s")): $(grep -iv '^ *[0-9]\|^ *sec' "$tmp/bench.err" | tail -n 2)"
else
	echo "   client under the flood: $(python3 -c 'import json, sys; j = json.load(sys.stdin); print("%s IOPS, p99 %s ms, max %s ms" % (j["iops"], j["lat_p99_ms"], j["lat_max_ms"]))' <"$tmp/bench.out")"
fi
for p in "${flood_pids[@]}"; do
	kill "$p" 2>/dev/null
	wait "$p"
done
for i in 0 1 2; do
	echo "   osd.$i: $(tail -n 1 "$tmp/flood.osd.$i")"
	kill "${watch_pids[$i]}" 2>/dev/null
	wait "${watch_pids[$i]}" 2>/dev/null
	read -r rss anon vdata <"$tmp/rss.osd.$i"
	echo "   osd.$i: largest resident memory $rss kB (anonymous $anon kB); allocated" \
		"(VmData) $((vdata - vdata0[i])) kB more than before the flood"
	[ $((vdata - vdata0[i])) -lt "$HOSTILE_VMDATA_KB" ] ||
		problem "osd.$i: allocated $((vdata - vdata0[i])) kB during the flood (VmData;" \
			"limit $HOSTILE_VMDATA_KB kB): buffers for payloads that never came?"
	! rss_checked || [ "$rss" -lt "$HOSTILE_OSD_RSS_KB" ] ||
		problem "osd.$i: resident memory $rss kB over the OSD budget $HOSTILE_OSD_RSS_KB kB"
	kill -0 "${pids[$i]}" 2>/dev/null || problem "osd.$i: the daemon died under the flood"
done

snapshot >"$tmp/after"
sed 's/^/   after:  /' "$tmp/after"
while read -r line; do
	grep -qxF "$line" "$tmp/after" && continue
	case $line in
	osd.*) problem "${line%% *} was marked down or restarted under the flood (before: $line)" ;;
	term*) problem "the monitors held an election under the flood (before: $line; after: $(grep ^term "$tmp/after"))" ;;
	mds*) problem "the MDS failed over under the flood (before: $line; after: $(grep ^mds "$tmp/after"))" ;;
	esac
done <"$tmp/before"
hostile_finish
ok "three OSDs flooded at once: no OSD down, no election, no MDS failover"
