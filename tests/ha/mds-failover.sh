#!/bin/bash
# tests/ha/mds-failover.sh - a standby MDS takes over (doc/fs-design.md,
# "Standby MDS daemons"), on a one-OSD cluster with two MDS daemons
# (mds.a active, mds.b standby) and two mounts writing and renaming:
#  - the standby follows the journal: the place in the journal it shows
#    (`atoll fs status`) reaches the one the active showed a moment before;
#  - kill -9 of the active MDS, 3 times (5 with ATOLL_TEST_FULL=1, which
#    .ci/run --full sets): the standby takes over; the killed one, started
#    again, is a standby; every file fsync'd before the kill is there; the
#    writers' ledgers (every operation that returned, answered early or
#    not) show exactly on both mounts at the end; no operation fails and
#    no mount is remounted.  Prints each takeover time: from the kill to
#    the first metadata operation answered on an existing mount (a
#    rename, which the client cannot answer itself), and what the new
#    active's replay read at its start: a short tail (it followed the
#    rest as a standby).
#  - fencing: the active MDS, its journal writes held back (fault
#    mds_journal_delay_ms) and blind to the map (fault mds_fence_blind:
#    only the OSDs can stop it), is SIGSTOPped right after it answered a
#    rename; the standby takes over; the client resends the rename there;
#    SIGCONT: the old MDS's queued journal write is refused by the OSD
#    (it is blocklisted), it starts over as a standby, and nothing it
#    queued lands (the namespace is the ledger's, the rename done once).
#  - a second atoll-mds started by hand becomes a standby, never active.
# Usage: mds-failover.sh ATOLL-CLUSTER ATOLL-MDS ATOLL-FUSE ATOLL
# Environment: HA_MDS_KILLS (the number of kills), HA_MDS_GRACE (the
# monitors' mds_beacon_grace, default 2s; bench/mds-takeover.sh uses the
# daemons' default, 3s).
set -u
cluster_bin=${1:?usage: $0 ATOLL-CLUSTER ATOLL-MDS ATOLL-FUSE ATOLL}
mds_bin=${2:?}
fuse_bin=${3:?}
atoll_cli=${4:?}
kills=3
[ "${ATOLL_TEST_FULL:-0}" = 1 ] && kills=5
kills=${HA_MDS_KILLS:-$kills}
grace=${HA_MDS_GRACE:-2s}
. "$(dirname "$0")/../fs/lib.sh"
fs_prepare
hand_pid=

# the MDS log of lib.sh's cleanup is mds.a's; ours add mds.b's
ha_cleanup() {
	local rc=$?
	[ -n "$hand_pid" ] && kill -CONT "$hand_pid" 2>/dev/null && kill "$hand_pid" 2>/dev/null
	for p in $(awk '$1 == "daemon" && $3 == "mds" { print $8 }' "$cdir/cluster.state" 2>/dev/null); do
		kill -CONT "$p" 2>/dev/null
	done
	if [ $rc -ne 0 ]; then
		for f in "$cdir"/log/mds.*.log "$tmp"/hand.log; do
			[ -f "$f" ] && { echo "---- tail of $f" >&2; tail -n 15 "$f" >&2; }
		done
	fi
	(exit $rc)
	fs_cleanup
}
trap ha_cleanup EXIT

step "cluster: one OSD, mds.a and mds.b"
"$cluster_bin" up --dir "$cdir" --osds 1 --size 2G --no-nbd --mds 2 \
	--set "mds_beacon_grace=$grace" --set osd_mkfs_prefill=false >"$tmp/up.log" 2>&1 || { cat "$tmp/up.log"; fail "atoll-cluster up"; }

# roles: "ACTIVE STANDBY..." (names without mds.) as the monitors say
roles() {
	"$atoll_cli" --format json fs status 2>/dev/null | python3 -c '
import json, sys
j = json.load(sys.stdin)
a = (j.get("active") or {}).get("name", "-")
print(a, *sorted(s["name"] for s in j.get("standbys", [])))' 2>/dev/null || echo "- "
}
active() { set -- $(roles); echo "$1"; }
# journal: "ACTIVE_SEG ACTIVE_SEQ STANDBY_SEG STANDBY_SEQ" (the first standby)
journal() {
	"$atoll_cli" --format json fs status 2>/dev/null | python3 -c '
import json, sys
j = json.load(sys.stdin)
a = j.get("active") or {}
s = (j.get("standbys") or [{}])[0]
print(int(a.get("journal_segment", 0)), int(a.get("journal_seq", 0)),
      int(s.get("journal_segment", 0)), int(s.get("journal_seq", 0)))' 2>/dev/null || echo "0 0 0 0"
}
pid_of() { awk -v n="mds.$1" '$1 == "daemon" && $2 == n { print $8 }' "$cdir/cluster.state"; }
wait_roles() {	# wait_roles WANT: until roles prints WANT (20 s at most)
	local _ r
	for _ in $(seq 1 200); do
		r=$(roles)
		[ "$r" = "$1" ] && return 0
		sleep 0.1
	done
	fail "the MDS roles are '$r', not '$1'"
}
now() { date +%s.%N; }

wait_roles "a b"
ok_roles=$(roles)
echo "roles: active mds.${ok_roles%% *}, standby mds.${ok_roles#* }"

step "two mounts, writing and renaming"
A=$tmp/mnt1
B=$tmp/mnt2
mount_fs "$A" "$tmp/fuse1.log"
mount_fs "$B" "$tmp/fuse2.log"
fpids=("${fuse_pids[@]}")
ledger_writer "$A" a w &
wa=$!
ledger_writer "$B" b w &
wb=$!
sleep 1

step "the standby follows the journal"
set -- $(journal)
want_seg=$1 want_seq=$2
[ "$want_seg" -gt 0 ] || fail "fs status shows no journal place of the active: $(journal)"
for _ in $(seq 1 100); do
	set -- $(journal)
	{ [ "$3" -gt "$want_seg" ] || { [ "$3" -eq "$want_seg" ] && [ "$4" -ge "$want_seq" ]; }; } && break
	sleep 0.1
done
{ [ "$3" -gt "$want_seg" ] || { [ "$3" -eq "$want_seg" ] && [ "$4" -ge "$want_seq" ]; }; } ||
	fail "the standby did not follow the journal to $want_seg:$want_seq (fs status: $(journal))"
echo "the active was at $want_seg:$want_seq; the standby followed to $3:$4 (active now $1:$2)"

times=()
for k in $(seq 1 "$kills"); do
	act=$(active)
	[ "$act" = a ] || [ "$act" = b ] || fail "no active MDS before kill $k ($(roles))"
	other=$([ "$act" = a ] && echo b || echo a)
	# durable before the kill: fsync of the file and of its folder
	echo "sync $k" >"$A/sync.$k" || fail "write of sync.$k"
	python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)
fd = os.open(sys.argv[2], os.O_RDONLY); os.fsync(fd)' "$A/sync.$k" "$A" || fail "fsync of sync.$k"
	echo "probe" >"$B/probe.$k" || fail "probe.$k"
	python3 -c 'import os, sys; os.fsync(os.open(sys.argv[1], os.O_RDONLY))' "$B" || fail "fsyncdir"
	step "kill $k: kill -9 mds.$act"
	t0=$(now)
	kill -9 "$(pid_of "$act")" || fail "kill of mds.$act"
	mv "$B/probe.$k" "$B/probed.$k" || fail "the rename after kill $k"
	t1=$(now)
	t=$(python3 -c "print(f'{$t1 - $t0:.2f}')")
	times+=("$t")
	echo "takeover $k: ${t} s (kill -9 of mds.$act -> first metadata operation answered on an existing mount)"
	wait_roles "$other"
	# "replayed N journal entries of segment S: F followed as a standby,
	# T read at the start": the replay read a short tail only
	rl=$(grep -o "replayed [0-9]* journal entr[a-z]* of segment [0-9]*: [0-9]* followed as a standby, [0-9]* read at the start" \
		"$cdir/log/mds.$other.log" | tail -n 1)
	[ -n "$rl" ] || fail "no replay line in mds.$other's log"
	set -- $rl
	followed_all=$(( ${followed_all:-0} + $8 ))
	[ "${13}" -le 32 ] || fail "the new active read ${13} entries at its start (not a short tail): $rl"
	# its start: from the grant to serving (replay, load), by its log's clock
	st=$(python3 - "$cdir/log/mds.$other.log" <<'PY'
import re, sys
from datetime import datetime
ts = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6})Z")
g = s = None
for line in open(sys.argv[1], errors="replace"):
    t = ts.search(line)
    if not t:
        continue
    if "has the active role since" in line:
        g, s = datetime.fromisoformat(t.group(1)), None
    elif "serving the file system on" in line and g and not s:
        s = datetime.fromisoformat(t.group(1))
print(f"{(s - g).total_seconds():.2f}" if g and s else "?")
PY
)
	echo "replay of mds.$other: $8 entries followed as a standby, ${13} read at the start; grant to serving $st s"
	"$cluster_bin" mds start "$act" --dir "$cdir" >>"$tmp/mds-cmd.log" 2>&1 ||
		{ cat "$tmp/mds-cmd.log"; fail "mds start $act"; }
	wait_roles "$other $act"
	echo "mds.$act started again: a standby"
	[ "$(cat "$A/sync.$k")" = "sync $k" ] || fail "sync.$k (fsync'd before kill $k) is lost"
	kill -0 "$wa" "$wb" 2>/dev/null || fail "a writer failed across kill $k"
done
[ "${followed_all:-0}" -gt 0 ] || fail "no takeover found entries followed as a standby"
sorted=$(printf '%s\n' "${times[@]}" | sort -n)
median=$(echo "$sorted" | sed -n "$(( (kills + 1) / 2 ))p")
echo "takeover times: ${times[*]} s; median $median s (mds_beacon_grace $grace)"

step "the ledgers on both mounts"
touch "$tmp/w.stop"
wait "$wa" || fail "the writer on mount 1 failed"
wait "$wb" || fail "the writer on mount 2 failed"
for m in "$A" "$B"; do
	ledger_check w a "$m" "after the MDS failovers"
	na=$ledger_n
	ledger_check w b "$m" "after the MDS failovers"
	echo "$m: $na + $ledger_n ledger entries there"
done
for k in $(seq 1 "$kills"); do
	[ -e "$A/probed.$k" ] && [ ! -e "$A/probe.$k" ] || fail "the rename of probe.$k"
done

if faults_compiled; then
	step "fencing: SIGSTOP of the active with its journal writes queued"
	act=$(active)
	other=$([ "$act" = a ] && echo b || echo a)
	# the standby again, with its journal writes held back and blind to
	# the map, then made the active one by a clean stop of the other
	"$cluster_bin" mds stop "$other" --dir "$cdir" >>"$tmp/mds-cmd.log" 2>&1 || fail "mds stop $other"
	with_faults mds_journal_delay_ms=1500,mds_fence_blind=1 \
		"$cluster_bin" mds start "$other" --dir "$cdir" >>"$tmp/mds-cmd.log" 2>&1 ||
		{ cat "$tmp/mds-cmd.log"; fail "mds start $other with faults"; }
	wait_roles "$act $other"
	"$cluster_bin" mds stop "$act" --dir "$cdir" >>"$tmp/mds-cmd.log" 2>&1 || fail "mds stop $act"
	wait_roles "$other"
	"$cluster_bin" mds start "$act" --dir "$cdir" >>"$tmp/mds-cmd.log" 2>&1 || fail "mds start $act"
	wait_roles "$other $act"
	slow=$other
	slow_pid=$(pid_of "$slow")
	slow_log=$cdir/log/mds.$slow.log
	echo "x" >"$A/fence.src" && python3 -c 'import os, sys; os.fsync(os.open(sys.argv[1], os.O_RDONLY))' "$A" ||
		fail "fence.src"
	mv "$A/fence.src" "$A/fence.dst" || fail "the rename before the SIGSTOP"
	kill -STOP "$slow_pid"
	echo "mds.$slow answered the rename early and is stopped with its journal write queued"
	wait_roles "$act"
	echo "mds.$act took over"
	# the client resends the rename to the new active (early-reply rules)
	for _ in $(seq 1 100); do [ -e "$B/fence.dst" ] && break; sleep 0.1; done
	[ -e "$B/fence.dst" ] && [ ! -e "$B/fence.src" ] ||
		fail "the rename answered early by the stopped MDS is not on the new active"
	n0=$(grep -c "lost the active role: an OSD refused a" "$slow_log")
	kill -CONT "$slow_pid"
	for _ in $(seq 1 100); do
		[ "$(grep -c "lost the active role: an OSD refused a" "$slow_log")" -gt "$n0" ] && break
		sleep 0.1
	done
	[ "$(grep -c "lost the active role: an OSD refused a" "$slow_log")" -gt "$n0" ] ||
		fail "the old MDS's queued writes were not refused: $(tail -n 5 "$slow_log")"
	echo "the old mds.$slow's queued write was refused by the OSD (blocklisted): $(grep -o "an OSD refused a [a-z ]*write" "$slow_log" | tail -n 1)"
	wait_roles "$act $slow"
	echo "the old mds.$slow is a standby again"
	# nothing it queued landed: a restart of the new active replays the
	# journal, and the namespace is still the ledger's
	kill -9 "$(pid_of "$act")"
	wait_roles "$slow"
	"$cluster_bin" mds start "$act" --dir "$cdir" >>"$tmp/mds-cmd.log" 2>&1 || fail "mds start $act"
	[ -e "$A/fence.dst" ] && [ ! -e "$A/fence.src" ] && [ "$(cat "$A/fence.dst")" = x ] ||
		fail "fence.dst after the replay"
	for m in "$A" "$B"; do
		ledger_check w a "$m" "after the fencing"
		ledger_check w b "$m" "after the fencing"
	done
else
	echo "skipped: fencing (this build has no fault injection)"
fi

step "a second atoll-mds started by hand is a standby"
before=$(roles)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.2", 0)); print(s.getsockname()[1])')
# with authentication (atoll-cluster's default) mds.hand needs a key of
# its own: the monitors make it, atoll writes it into the keyring
if [ -f "$cdir/keyring" ]; then
	ATOLL_CONF=$conf "$atoll_cli" auth get-or-create mds.hand mon "profile mds" \
		osd "allow *" mds "allow *" --keyring-out "$cdir/keyring" >/dev/null ||
		fail "auth get-or-create mds.hand"
fi
"$mds_bin" --conf "$conf" --addr "127.0.0.2:$port" --name hand --log "$tmp/hand.log" \
	>>"$tmp/hand.log" 2>&1 &
hand_pid=$!
for _ in $(seq 1 100); do grep -q "^atoll-mds: standby mds.hand" "$tmp/hand.log" && break; sleep 0.1; done
grep -q "^atoll-mds: standby mds.hand" "$tmp/hand.log" || fail "the hand-started MDS did not start"
wait_roles "$before hand"
sleep 3	# more than the grace: it stays a standby
[ "$(roles)" = "$before hand" ] || fail "roles changed with a second MDS: $(roles)"
grep -q "serving on" "$tmp/hand.log" && fail "the hand-started MDS serves"
kill "$hand_pid"
wait "$hand_pid"
hand_pid=
wait_roles "$before"
echo "mds.hand was a standby and left cleanly"

step "no remount"
for p in "${fpids[@]}"; do kill -0 "$p" || fail "an atoll-fuse exited"; done
mountpoint -q "$A" && mountpoint -q "$B" || fail "a mount is gone"
grep -l "evicted" "$tmp"/fuse*.log && fail "a client was evicted"
echo "ok: $kills takeovers (median $median s), fencing, a hand-started standby; no remount"
