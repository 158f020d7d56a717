#!/bin/bash
# tests/ops/watch.sh ATOLL-CLUSTER ATOLL - the cluster log and `atoll -w`
# (doc/cli.md "watch", doc/quorum.md "The cluster log") and `atoll
# status`'s client I/O and recovery progress, on one local cluster of 3
# monitors and 3 OSDs:
#   - `atoll status` shows client write rates while `atoll bench` writes;
#   - a watcher's polls add no entry to the raft log;
#   - an OSD killed, written around, and started again: `atoll -w` prints
#     its down, the failed health check, its boot, the recovery starting
#     and done and the health check cleared, in that order, and `atoll
#     status` shows the recovery's progress (objects and bytes left, rate,
#     ETA) while it runs (recovery is slowed: osd_recovery_sleep_ms);
#   - the leader monitor killed: the watchers go on, every seq once, none
#     skipped, and a fresh watcher reads the same lines under the same
#     seqs from the new leader; each monitor exports its cluster log seq,
#     the leader alone the client rates.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../cluster/lib.sh
. "$here/../cluster/lib.sh"
prom() { python3 "$here/prom.py" "$@"; }

wpids=
stop_watchers() {
	local p
	for p in $wpids; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	wpids=
}
cleanup_hook=stop_watchers

"$atoll_bin" watch --help | grep -q "Streams the cluster log" || fail "atoll watch --help"
expect 2 "unexpected argument" "$atoll_bin" watch --bogus
expect 2 "interval" "$atoll_bin" -w --interval 0
ok "watch --help explains it; a bad argument is a usage error"

cluster_up --osds 3 --no-mds --no-nbd --set mon_cluster_log_interval=1s \
	--set osd_recovery_max_active=1 --set osd_recovery_sleep_ms=150

# the JSON watcher from the first line; the plain one as `atoll -w`
"$atoll_bin" --format json watch --last 1000 --interval 0.5 >"$tmp/w.json" 2>"$tmp/w.err" &
wpids="$wpids $!"
"$atoll_bin" -w --interval 0.5 >"$tmp/w.txt" 2>/dev/null &
wpids="$wpids $!"

# wait_line FILE PATTERN [SECONDS [FROM]]: until a line of FILE (from line FROM on) matches PATTERN
wait_line() {
	local i
	for i in $(seq $(( ${3:-60} * 5 ))); do
		tail -n +"${4:-1}" "$1" | grep -q -- "$2" && return 0
		sleep 0.2
	done
	tail -n 30 "$1" >&2
	fail "no line '$2' in $(basename "$1") within ${3:-60} s"
}
# seqs_ok FILE: the seqs of FILE's JSON lines go up by one, none twice
seqs_ok() {
	python3 - "$1" <<'EOF'
import json, sys
seqs = [json.loads(l)["seq"] for l in open(sys.argv[1]) if l.strip()]
bad = [(a, b) for a, b in zip(seqs, seqs[1:]) if b != a + 1]
if not seqs or bad:
    sys.exit("seqs %s..%s, not consecutive at %s" % (seqs[:1], seqs[-1:], bad[:5]))
EOF
}

wait_line "$tmp/w.json" "pool 'default' (id [0-9]*) created" 30
wait_line "$tmp/w.json" '"message":"mon\.[a-c] is the leader (term' 30
grep -q '"message":"osd.0 up (boot)' "$tmp/w.json" || fail "the OSDs' boots are not in the log"
seqs_ok "$tmp/w.json" || fail "the first lines' seqs"
wait_line "$tmp/w.txt" '^20[0-9-]*T[0-9:.]*Z \[INF\] ' 10
ok "atoll watch shows the cluster's history from its creation; atoll -w prints TIME [SEV] message"
atoll log last 5 >"$tmp/last" || fail "atoll log last 5"
[ "$(grep -Ec '^20[0-9-]*T[0-9:.]*Z \[(INF|WRN|ERR)\] ' "$tmp/last")" = 5 ] ||
	fail "atoll log last 5 printed: $(cat "$tmp/last")"
atoll --format json log last 3 | pyjson "len(j['lines']) == 3 and j['lines'][-1]['seq'] == j['last_seq'] \
	and j['first_seq'] == 1 and [l['seq'] for l in j['lines']] == list(range(j['last_seq'] - 2, j['last_seq'] + 1))"
ok "atoll log last N prints the last N lines (plain and JSON)"

# polls are answered from the applied state: a watcher asking 10 times a
# second adds no raft entry (a barrier per poll would add about 30 here)
commit_index() {
	atoll --format json quorum status | python3 -c 'import json, sys; print(json.load(sys.stdin)["commit_index"])'
}
"$atoll_bin" -w --interval 0.1 >/dev/null 2>&1 &
fast=$!
wpids="$wpids $fast"
sleep 0.5
ci0=$(commit_index)
sleep 3
ci1=$(commit_index)
kill "$fast" 2>/dev/null || true
wait "$fast" 2>/dev/null || true
wpids=${wpids% $fast}
[ $((ci1 - ci0)) -lt 12 ] ||
	fail "the raft log grew by $((ci1 - ci0)) entries in 3 s of a watcher polling 10 times a second"
ok "3 s of a watcher polling every 0.1 s: the raft log grew by $((ci1 - ci0)) entries"

# client I/O: writes in the background, rates in atoll status
"$atoll_bin" bench default 20 write -b 64K -t 2 --max-ops 800 --no-cleanup --run-name w1 >"$tmp/bench1.out" 2>&1 &
bench=$!
wpids="$wpids $bench"
got=
for _ in $(seq 40); do
	if atoll --format json status 2>/dev/null | pyjson \
		"j['io']['write_ops_per_s'] > 0 and j['io']['write_bytes_per_s'] > 0" 2>/dev/null; then
		got=1
		break
	fi
	sleep 0.25
done
[ -n "$got" ] || fail "atoll status shows no client writes while bench writes: $(atoll status)"
atoll status >"$tmp/status" || fail "atoll status"
grep -Eq '^io: +client .*/s rd, [0-9.]+ [KMG]iB/s wr, [0-9]+ op/s rd, [1-9][0-9]* op/s wr' "$tmp/status" ||
	fail "the io line of atoll status shows no writes: $(cat "$tmp/status")"
wait "$bench" || fail "bench write: $(cat "$tmp/bench1.out")"
wpids=${wpids% $bench}
ok "atoll status shows the client writes ($(grep '^io:' "$tmp/status"))"

# an OSD killed, written around, started again: recovery
"$cluster_bin" osd kill 2 --dir "$cdir" >/dev/null 2>&1 || fail "atoll-cluster osd kill 2"
wait_line "$tmp/w.json" '"message":"osd.2 down"' 30
# after the down (the cluster's creation had an OSD_DOWN of its own; health
# is summarized every 2 s, so a restart before then would skip it)
from=$(grep -n '"message":"osd.2 down"' "$tmp/w.json" | tail -n 1 | cut -d: -f1)
wait_line "$tmp/w.json" 'health check failed: .*(OSD_DOWN)' 15 "$from"
atoll bench default 20 write -b 64K -t 2 --max-ops 150 --no-cleanup --run-name w2 >"$tmp/bench2.out" 2>&1 ||
	fail "bench write with osd.2 down: $(cat "$tmp/bench2.out")"
"$cluster_bin" osd start 2 --dir "$cdir" >/dev/null 2>&1 || fail "atoll-cluster osd start 2"
eta=
for _ in $(seq 150); do
	atoll --format json status >"$tmp/sj" 2>/dev/null || true
	if pyjson "j['recovery'].get('objects_left', 0) > 0 and j['recovery'].get('bytes_left', 0) > 0 \
		   and j['recovery'].get('eta_s', 0) > 0" <"$tmp/sj" 2>/dev/null; then
		atoll status >"$tmp/status" 2>/dev/null || true
		if grep -Eq '^progress: recovery/backfill: [0-9]+ object copies left \(about [0-9.]+ [KMG]?i?B\), [0-9.]+ objects/s, .*, about .* left \(ETA\)' "$tmp/status"; then
			eta=1
			break
		fi
	fi
	sleep 0.2
done
[ -n "$eta" ] || fail "atoll status never showed the recovery's progress with an ETA: $(cat "$tmp/status")"
ok "atoll status shows the recovery: $(grep '^progress:' "$tmp/status")"
wait_line "$tmp/w.json" '"message":"recovery done' 120
wait_line "$tmp/w.json" 'health check cleared: OSD_DOWN' 30
python3 - "$tmp/w.json" <<'EOF' || fail "the OSD's events are not in order"
import json, re, sys
msgs = [json.loads(l)["message"] for l in open(sys.argv[1]) if l.strip()]
def at(pat, after=-1):
    for i, m in enumerate(msgs):
        if i > after and re.search(pat, m):
            return i
    sys.exit("no %r after line %d in:\n%s" % (pat, after, "\n".join(msgs[-40:])))
down = at(r"^osd\.2 down$")
failed = at(r"^health check failed: .*\(OSD_DOWN\)$", down)
up = at(r"^osd\.2 up \(boot\)", failed)
started = at(r"^recovery started: ", up)
pgmap = at(r"^pgmap: .*(object copies degraded|misplaced)", started)
done = at(r"^recovery done", pgmap)
cleared = at(r"^health check cleared: OSD_DOWN$", down)
if not up < cleared:
    sys.exit("OSD_DOWN cleared before osd.2 came up")
EOF
seqs_ok "$tmp/w.json" || fail "the seqs during the recovery"
ok "atoll -w printed osd.2 down, OSD_DOWN, its boot, recovery started, progress, done, in order"

# the leader killed: the watchers go on from the same seq
leaders=$(grep -c '"message":"mon\.[a-c] is the leader' "$tmp/w.json")
old=$("$cluster_bin" mon kill --dir "$cdir" 2>/dev/null) || fail "atoll-cluster mon kill"
old=${old#mon.}
atoll osd out 1 >/dev/null 2>&1 || fail "osd out 1 after the leader was killed"
wait_line "$tmp/w.json" '"message":"osd.1 out' 30
for _ in $(seq 100); do
	[ "$(grep -c '"message":"mon\.[a-c] is the leader' "$tmp/w.json")" -gt "$leaders" ] && break
	sleep 0.2
done
grep '"message":"mon\.[a-c] is the leader' "$tmp/w.json" | tail -n 1 | grep -qv "mon\.$old is" ||
	fail "no new leader in the log after mon.$old was killed: $(tail -n 5 "$tmp/w.json")"
atoll osd in 1 >/dev/null 2>&1 || fail "osd in 1"
wait_line "$tmp/w.json" '"message":"osd.1 in"' 30
wait_line "$tmp/w.txt" '\[INF\] osd.1 in$' 30
seqs_ok "$tmp/w.json" || fail "the seqs across the leader kill"
# a fresh watcher reads the same seqs and lines from the new leader
"$atoll_bin" --format json watch --last 10000 --interval 0.5 >"$tmp/w2.json" 2>/dev/null &
w2=$!
wpids="$wpids $w2"
wait_line "$tmp/w2.json" '"message":"osd.1 in"' 20
kill "$w2" 2>/dev/null || true
wait "$w2" 2>/dev/null || true
wpids=${wpids% $w2}
python3 - "$tmp/w.json" "$tmp/w2.json" <<'EOF' || fail "the new leader's lines differ"
import json, sys
a = {j["seq"]: (j["message"], j["stamp_ms"]) for j in map(json.loads, filter(str.strip, open(sys.argv[1])))}
b = {j["seq"]: (j["message"], j["stamp_ms"]) for j in map(json.loads, filter(str.strip, open(sys.argv[2])))}
both = set(a) & set(b)
if len(both) < 20 or any(a[s] != b[s] for s in both):
    sys.exit("%d seqs in common; differing: %s" % (len(both), [s for s in both if a[s] != b[s]][:5]))
EOF
n1=$(wc -l <"$tmp/w.json")
ok "leader mon.$old killed: the watchers went on, $n1 lines with consecutive seqs, the same on the new leader"

# metrics: every monitor its log seq, the leader alone the client rates
nl=0
for m in $(awk '$1 == "daemon" && $3 == "mon" { print $2 }' "$cdir/cluster.state"); do
	[ "$m" = "mon.$old" ] && continue
	u=$(awk -v n="$m" '$1 == "metrics" && $2 == n { print $3 }' "$cdir/cluster.state")
	[ -n "$u" ] || continue
	[ "$(prom value "$u" atoll_mon_cluster_log_last_seq)" -gt 0 ] || fail "$m exports no cluster log seq"
	if [ "$(prom value "$u" atoll_mon_leader)" = 1 ]; then
		nl=$((nl + 1))
		[ -n "$(prom value "$u" atoll_cluster_client_write_ops_per_second)" ] ||
			fail "the leader $m exports no client rates"
		[ -n "$(prom value "$u" atoll_mon_member_lag_entries mon="${old}")" ] ||
			fail "the leader $m exports no lag for mon.$old"
	else
		[ -z "$(prom value "$u" atoll_cluster_client_write_ops_per_second)" ] ||
			fail "$m is no leader but exports client rates"
	fi
done
[ "$nl" = 1 ] || fail "$nl monitors export the cluster-wide view"
ok "each monitor exports its cluster log seq; the leader alone the client rates and the members' lag"

stop_watchers
echo "watch: $n tests passed"
