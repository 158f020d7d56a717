# tests/ha/monlib.sh - three monitors alone (no OSD), for the tests of the
# quorum itself (sourced, not run): leader_kill.sh, mon_crash.sh,
# mon_minority.sh.
#
#   monlib_init ATOLL-MON ATOLL TAG   checks the programs, makes the folder
#                      $dir (/tmp/atoll-ha-TAG.XXXXXX), the names a b c, their
#                      addresses ${addr[N]} on 127.0.0.2..4 on free ports
#                      (ports.sh), a fsid; the EXIT trap kills every member
#                      (also a stopped one) and $monlib_extra_pids, and removes
#                      $dir unless KEEP is set
#   monlib_mkfs        makes the three members' stores (one --initial list)
#   monlib_start N [--set K=V]...   starts member N (log $dir/N.log, stderr
#                      $dir/N.err), its PID in ${pid[N]}, and waits until it
#                      listens (fails when it exits first); mon_election_timeout
#                      is 1 s
#   cmd ARGS...        `atoll ARGS` against each running member in turn until
#                      one answers (for up to $cmd_timeout_ms, 15 s); prints
#                      its output
#   leader             the leader's name, from quorum status
#   monlib_wait_agree SECONDS   until every member is at the leader's epoch
#                      with one state digest; prints "members agree: ..."
#   fail MSG           prints MSG and each member's last log lines, exits 1
#   now_ms             the wall clock in ms
# A member that knows no leader serves nothing, not even the map a client
# waits for when it connects, so each attempt of cmd gives up after 2 s.

. "$(dirname "${BASH_SOURCE[0]}")/ports.sh"

monlib_init() {
	mon_bin=$1
	cli=$2
	local b
	for b in "$mon_bin" "$cli"; do
		[ -x "$b" ] || { echo "SKIP: $b not built"; exit 77; }
	done
	command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
	dir=$(mktemp -d "/tmp/atoll-ha-$3.XXXXXX")
	names=(a b c)
	local ips=(127.0.0.2 127.0.0.3 127.0.0.4) i
	declare -gA pid addr
	base=$(ha_port_base 3) || { echo "FAIL: no free ports"; exit 1; }
	fsid=$(python3 -c 'import uuid; print(uuid.uuid4())')
	for i in 0 1 2; do
		addr[${names[$i]}]=${ips[$i]}:$((base + i))
	done
	monlib_extra_pids=
	cmd_timeout_ms=15000
	trap monlib_cleanup EXIT
}

monlib_cleanup() {
	local n p
	for p in $monlib_extra_pids; do
		kill -9 "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	for n in "${names[@]}"; do
		[ -n "${pid[$n]:-}" ] || continue
		kill -CONT "${pid[$n]}" 2>/dev/null
		kill -9 "${pid[$n]}" 2>/dev/null
		wait "${pid[$n]}" 2>/dev/null
	done
	[ -n "${KEEP:-}" ] || rm -rf "$dir"
}

fail() {
	local n
	echo "FAIL: $*"
	for n in "${names[@]}"; do
		echo "---- mon.$n (last lines)"
		tail -n 15 "$dir/$n.log" 2>/dev/null
		[ -s "$dir/$n.err" ] && tail -n 5 "$dir/$n.err"
	done
	exit 1
}

now_ms() { date +%s%3N; }

monlib_mkfs() {
	local initial= n
	for n in "${names[@]}"; do
		initial+="${initial:+,}$n=${addr[$n]}"
	done
	for n in "${names[@]}"; do
		"$mon_bin" --mkfs --data "$dir/$n" --name "$n" --fsid "$fsid" --initial "$initial" \
			>/dev/null 2>"$dir/mkfs.$n.err" || fail "mkfs of mon.$n: $(cat "$dir/mkfs.$n.err")"
	done
}

# how many times member $1's log says it listens
monlib_listens() {
	local c
	c=$(grep -c "listening on" "$dir/$1.log" 2>/dev/null)
	echo "${c:-0}"
}

monlib_start() {
	local n=$1
	shift
	local before deadline
	before=$(monlib_listens "$n")
	"$mon_bin" --data "$dir/$n" --log "$dir/$n.log" --set mon_election_timeout=1s "$@" \
		2>>"$dir/$n.err" &
	pid[$n]=$!
	deadline=$(( $(now_ms) + 20000 ))
	until [ "$(monlib_listens "$n")" -gt "$before" ]; do
		if ! kill -0 "${pid[$n]}" 2>/dev/null; then
			wait "${pid[$n]}" 2>/dev/null
			pid[$n]=
			fail "mon.$n exited at its start"
		fi
		[ "$(now_ms)" -lt "$deadline" ] || fail "mon.$n does not listen after 20 s"
		sleep 0.05
	done
}

cmd() {
	local deadline=$(( $(now_ms) + cmd_timeout_ms )) out n
	while [ "$(now_ms)" -lt "$deadline" ]; do
		for n in "${names[@]}"; do
			[ -n "${pid[$n]:-}" ] || continue
			if out=$(timeout 2 "$cli" -m "${addr[$n]}" "$@" 2>/dev/null); then
				printf '%s\n' "$out"
				return 0
			fi
		done
		sleep 0.1
	done
	return 1
}

leader() {
	cmd --format json quorum status |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["leader"])'
}

monlib_wait_agree() {
	local deadline=$(( $(now_ms) + $1 * 1000 )) st
	while :; do
		st=$(cmd --format json quorum status) || fail "quorum status"
		verdict=$(printf '%s' "$st" | python3 -c '
import json, sys
s = json.load(sys.stdin)
ms = s["members"]
ep = s["epoch"]
ok = all(m["epoch"] == ep for m in ms) and len({m["digest"] for m in ms}) == 1
print("same" if ok else "differ", ep, " ".join("%s:%d:%s" % (m["name"], m["epoch"], m["digest"]) for m in ms))')
		case $verdict in same*) break ;; esac
		[ "$(now_ms)" -lt "$deadline" ] || fail "members differ: $verdict"
		sleep 0.2
	done
	echo "members agree: ${verdict#same }"
}
