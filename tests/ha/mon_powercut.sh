#!/bin/bash
# tests/ha/mon_powercut.sh ATOLL_MON ATOLL_CLI SHIM PCREBUILD MODE [ROUNDS] -
# power cuts of the monitors.  Three monitors run under the power-cut shim
# (tests/crash/powercut_shim.c), each logging the writes and syncs made in
# its folder (raft log, snapshots, metadata, LMDB store).  A writer makes
# map changes (pool create) and records each answered one.  A power cut:
# kill -9 of one monitor (the leader or not; every third round two at once,
# after the third member crashed (a plain kill -9, its folder kept) so that
# the changes answered meanwhile live only on the two that lose power; a
# stopped process would still receive them in its socket buffers), its folder
# rebuilt from its log by pcrebuild (unsynced writes lost, applied or torn,
# unsynced name changes undone), restarted.  After each round: every
# answered change is in the map, every member has the same epoch and
# digest (`atoll quorum status`), and a new change is answered.
#
# MODE normal: ROUNDS rounds (default 8, 10 cuts; 24, 32 cuts, with
#   ATOLL_TEST_FULL=1) must pass.
# MODE nosync: the negative control: the monitors' syncs are dropped from
#   the logs (ATOLL_PC_NOSYNC='*': no fsync, no O_DSYNC) and every unsynced
#   write is lost; the two-at-once round must lose an answered change, and
#   this script passes only if it sees that.  MON_PC_NOSYNC=LIST drops
#   only those files' syncs (e.g. 'raft/*': then a cut member holds a store
#   ahead of its log and the members' digests stop agreeing, which this
#   mode reports as a failure of another kind).
# KEEP=1 keeps the folder; ATOLL_TEST_SEED=N replays the random choices.
set -u
mon_bin=$1
cli=$2
shim=$3
pcrebuild=$4
mode=$5
rounds=${6:-}
if [ -z "$rounds" ]; then
	if [ "${ATOLL_TEST_FULL:-0}" = 1 ]; then rounds=24; else rounds=8; fi
fi
for b in "$mon_bin" "$cli" "$pcrebuild" "$shim"; do
	[ -e "$b" ] || { echo "SKIP: $b not built"; exit 77; }
done
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
seed=${ATOLL_TEST_SEED:-$(( $$ + $(date +%s) ))}
RANDOM=$seed
echo "seed $seed (ATOLL_TEST_SEED=$seed replays the choices)"

dir=$(mktemp -d /var/tmp/atoll-ha-powercut.XXXXXX)
names=(a b c)
ips=(127.0.0.2 127.0.0.3 127.0.0.4)
declare -A pid addr
. "$(dirname "$0")/ports.sh"
base=$(ha_port_base 3) || { echo "FAIL: no free ports"; exit 1; }
fsid=$(python3 -c 'import uuid; print(uuid.uuid4())')
writer=
round=0

cleanup() {
	[ -n "$writer" ] && kill -9 "$writer" 2>/dev/null && wait "$writer" 2>/dev/null
	for n in "${names[@]}"; do
		[ -n "${pid[$n]:-}" ] || continue
		kill -9 "${pid[$n]}" 2>/dev/null
		wait "${pid[$n]}" 2>/dev/null
	done
	[ -n "${KEEP:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT
# lost: an answered change is gone (what the control must see)
lost() {
	if [ "$mode" = nosync ]; then
		echo "PASS: the control lost an answered change: $*"
		exit 0
	fi
	echo "FAIL: $*"
	exit 1
}
fail() {
	echo "FAIL: $*"
	for n in "${names[@]}"; do
		echo "---- mon.$n (last lines)"
		tail -n 15 "$dir/$n.log" 2>/dev/null
	done
	echo "---- the writer's last errors"
	tail -n 5 "$dir/writer.err" 2>/dev/null
	[ "$mode" = nosync ] && echo "(the control failed, but not by losing an answered change)"
	exit 1
}
now_ms() { date +%s%3N; }

initial=
for i in 0 1 2; do
	n=${names[$i]}
	addr[$n]=${ips[$i]}:$((base + i))
	initial+="${initial:+,}$n=${addr[$n]}"
done
for n in "${names[@]}"; do
	"$mon_bin" --mkfs --data "$dir/$n" --name "$n" --fsid "$fsid" --initial "$initial" \
		>/dev/null 2>"$dir/mkfs.$n.err" || fail "mkfs of mon.$n: $(cat "$dir/mkfs.$n.err")"
done

# start NAME: the folder as it is now is what the disk holds (the base of
# the next rebuild); the monitor runs under the shim with a fresh log
start() {
	local n=$1
	rm -rf "$dir/base.$n"
	cp -a --sparse=always "$dir/$n" "$dir/base.$n" || fail "copy of mon.$n's folder"
	[ -e "$dir/pclog.$n" ] && mv "$dir/pclog.$n" "$dir/pclog.$n.before-$round"
	if [ "$mode" = nosync ]; then
		export ATOLL_PC_NOSYNC="${MON_PC_NOSYNC:-*}"
	fi
	LD_PRELOAD=$shim ATOLL_PC_DIR="$dir/$n" ATOLL_PC_LOG="$dir/pclog.$n" \
		ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}verify_asan_link_order=0" \
		"$mon_bin" --data "$dir/$n" --log "$dir/$n.log" \
		--set mon_snapshot_threshold=16 --set mon_election_timeout=1s &
	pid[$n]=$!
}

# cut NAME: a power cut of mon.NAME: kill -9, then its folder rebuilt from
# its log and its base (what a disk would hold)
cut() {
	local n=$1 fate=random out
	kill -9 "${pid[$n]}" 2>/dev/null
	wait "${pid[$n]}" 2>/dev/null
	pid[$n]=
	[ "$mode" = nosync ] && fate=lose
	rm -rf "$dir/new.$n"
	out=$("$pcrebuild" --fate $fate --seed $((RANDOM * 32768 + RANDOM)) \
		--skip store/lock.mdb "$dir/pclog.$n" "$dir/base.$n" "$dir/new.$n" 2>&1) ||
		fail "rebuild of mon.$n: $out"
	echo "  mon.$n cut: $out"
	rm -rf "$dir/$n"
	mv "$dir/new.$n" "$dir/$n"
}

# cmd ARGS...: `atoll ARGS` against each member in turn until one answers;
# a creation refused because the pool exists (an earlier attempt was
# applied and its answer lost) is not answered: give up on it at once
cmd() {
	local deadline=$(( $(now_ms) + 20000 )) out n err=$dir/${cmd_err:-cmd}.err
	while [ "$(now_ms)" -lt "$deadline" ]; do
		for n in "${names[@]}"; do
			[ "$(cat "$dir/down" 2>/dev/null)" = "$n" ] && continue
			if out=$(timeout 2 "$cli" -m "${addr[$n]}" "$@" 2>"$err.last"); then
				cat "$err.last" >>"$err"
				printf '%s\n' "$out"
				return 0
			fi
			cat "$err.last" >>"$err"
			grep -q "already exists" "$err.last" && return 1
		done
		sleep 0.1
	done
	return 1
}

leader() {
	cmd --format json quorum status | python3 -c '
import json, sys
s = json.load(sys.stdin)
l = s.get("leader")
print(l if isinstance(l, str) else s["members"][l]["name"] if isinstance(l, int) and l >= 0 else "")' 2>/dev/null
}

writer_start() {
	rm -f "$dir/stop"
	(
		cmd_err=writer
		while [ ! -e "$dir/stop" ]; do
			p=r${round}w$RANDOM$RANDOM
			if cmd pool create "$p" --pg 2 >/dev/null; then
				echo "$p" >>"$dir/answered"
			fi
		done
	) &
	writer=$!
}
writer_stop() {
	touch "$dir/stop"
	wait "$writer"
	writer=
}

# check: every answered change is in the map; the members agree
check() {
	local deadline st verdict pools p n=0
	pools=$(cmd pool ls) || fail "pool ls after round $round"
	while read -r p; do
		grep -qx "$p" <<<"$pools" || lost "pool '$p' was answered but is not in the map after round $round"
		n=$((n + 1))
	done < <(cat "$dir/answered" 2>/dev/null)
	deadline=$(( $(now_ms) + 30000 ))
	while :; do
		st=$(cmd --format json quorum status) || fail "quorum status"
		verdict=$(printf '%s' "$st" | python3 -c '
import json, sys
s = json.load(sys.stdin)
ms = s["members"]
ep = s["epoch"]
ok = len(ms) == 3 and all(m["epoch"] == ep for m in ms) and len({m["digest"] for m in ms}) == 1
print("same" if ok else "differ", ep, " ".join("%s:%d:%s" % (m["name"], m["epoch"], m["digest"]) for m in ms))')
		case $verdict in same*) break ;; esac
		[ "$(now_ms)" -lt "$deadline" ] || fail "members differ after round $round: $verdict"
		sleep 0.3
	done
	p=r${round}check
	cmd pool create "$p" --pg 2 >/dev/null || fail "no change answered after round $round"
	echo "$p" >>"$dir/answered"
	echo "  round $round: $n answered changes there; members agree: ${verdict#same }"
}

for n in "${names[@]}"; do start "$n"; done
cmd osd ls >/dev/null || fail "no leader elected"

t0=$(now_ms)
total=0
[ "$mode" = nosync ] && rounds=3
for round in $(seq 1 "$rounds"); do
	writer_start
	sleep "0.$((RANDOM % 9 + 1))"
	if [ $((round % 3)) -eq 0 ]; then
		# two at once; the third crashed first (kill -9, no power cut),
		# so that the changes answered meanwhile are only on the two
		# that lose power
		s=${names[$((RANDOM % 3))]}
		echo "$s" >"$dir/down"
		kill -9 "${pid[$s]}"
		wait "${pid[$s]}" 2>/dev/null
		before=$(wc -l <"$dir/answered" 2>/dev/null || echo 0)
		deadline=$(( $(now_ms) + 15000 ))
		while [ "$(wc -l <"$dir/answered" 2>/dev/null || echo 0)" -lt $((before + 3)) ]; do
			[ "$(now_ms)" -lt "$deadline" ] || fail "no change answered with mon.$s down"
			sleep 0.1
		done
		sleep "0.$((RANDOM % 5))"
		victims=()
		for n in "${names[@]}"; do [ "$n" = "$s" ] || victims+=("$n"); done
		echo "round $round: power cut of mon.${victims[0]} and mon.${victims[1]} (mon.$s down)"
		for n in "${victims[@]}"; do kill -9 "${pid[$n]}"; done
		for n in "${victims[@]}"; do wait "${pid[$n]}" 2>/dev/null; done
		for n in "${victims[@]}"; do cut "$n"; done
		total=$((total + 2))
		rm -f "$dir/down"
		for n in "${victims[@]}" "$s"; do start "$n"; done
	else
		if [ $((RANDOM % 2)) -eq 0 ] && l=$(leader) && [ -n "$l" ]; then
			n=$l
		else
			n=${names[$((RANDOM % 3))]}
		fi
		echo "round $round: power cut of mon.$n"
		cut "$n"
		total=$((total + 1))
		sleep "0.$((RANDOM % 9 + 1))"
		start "$n"
	fi
	cmd osd ls >/dev/null || fail "no leader after round $round"
	writer_stop
	check
done
[ "$mode" = nosync ] && fail "the control lost no answered change in $rounds rounds"
echo "PASS: $total power cuts in $rounds rounds, $(wc -l <"$dir/answered") answered changes kept, $(( ($(now_ms) - t0) / 1000 )) s"
