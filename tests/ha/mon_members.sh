#!/bin/bash
# tests/ha/mon_members.sh ATOLL_MON ATOLL_CLI - membership at run time:
# three monitors; a fourth and a fifth are made with --mkfs --join and
# added with `atoll mon add` (non-voters first, voters once caught up)
# while map changes go on; then the leader and another member are removed
# with `atoll mon rm` (the leader hands over first).  Checks: each step's
# quorum status, every answered change in the map, the remaining members'
# digests equal, errors for a duplicate name and an unknown member, and a
# removed monitor restarted on its old store does not disturb the quorum.
set -u
mon_bin=$1
cli=$2
for b in "$mon_bin" "$cli"; do
	[ -x "$b" ] || { echo "SKIP: $b not built"; exit 77; }
done
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }

dir=$(mktemp -d /tmp/atoll-ha-members.XXXXXX)
names=(a b c d e)
declare -A pid addr
. "$(dirname "$0")/ports.sh"
base=$(ha_port_base 5) || { echo "FAIL: no free ports"; exit 1; }
fsid=$(python3 -c 'import uuid; print(uuid.uuid4())')
for i in 0 1 2 3 4; do
	addr[${names[$i]}]=127.0.0.$((i + 2)):$((base + i))
done

cleanup() {
	for n in "${names[@]}"; do
		[ -n "${pid[$n]:-}" ] && kill -9 "${pid[$n]}" 2>/dev/null
		[ -n "${pid[$n]:-}" ] && wait "${pid[$n]}" 2>/dev/null
	done
	[ -n "${KEEP:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	for n in "${names[@]}"; do
		[ -e "$dir/$n.log" ] || continue
		echo "---- mon.$n (last lines)"
		tail -n 12 "$dir/$n.log"
	done
	exit 1
}
ok() { echo "ok - $*"; }
now_ms() { date +%s%3N; }

start() {
	"$mon_bin" --data "$dir/$1" --log "$dir/$1.log" --set mon_election_timeout=1s &
	pid[$1]=$!
}
stop() {
	kill "${pid[$1]}" && wait "${pid[$1]}" 2>/dev/null
	pid[$1]=
}
initial="a=${addr[a]},b=${addr[b]},c=${addr[c]}"
for n in a b c; do
	"$mon_bin" --mkfs --data "$dir/$n" --name "$n" --fsid "$fsid" --initial "$initial" \
		>/dev/null 2>"$dir/mkfs.err" || fail "mkfs of mon.$n: $(cat "$dir/mkfs.err")"
	start "$n"
done

# cmd ARGS...: `atoll ARGS` against each running member in turn until one
# answers (15 s); the last error is in $dir/cmd.err
cmd() {
	local deadline=$(( $(now_ms) + 15000 )) out n
	while [ "$(now_ms)" -lt "$deadline" ]; do
		for n in "${names[@]}"; do
			[ -n "${pid[$n]:-}" ] || continue
			if out=$(timeout 20 "$cli" -m "${addr[$n]}" "$@" 2>"$dir/cmd.err"); then
				printf '%s\n' "$out"
				return 0
			fi
			grep -q "already\|not a member\|is not 1 to" "$dir/cmd.err" && return 1
		done
		sleep 0.1
	done
	return 1
}
status() {
	cmd --format json quorum status | python3 -c "
import json, sys
s = json.load(sys.stdin)
print(s['leader'], ' '.join(m['name'] + ('+' if m['voter'] else '-') for m in sorted(s['members'], key=lambda m: m['name'])))"
}
answered=()
changes=0
change() {
	local p=m$changes
	changes=$((changes + 1))
	cmd pool create "$p" --pg 2 >/dev/null || return 1
	answered+=("$p")
}

cmd osd ls >/dev/null || fail "no leader elected"
change || fail "pool create"

# ---- add d and e
for n in d e; do
	"$mon_bin" --mkfs --join --data "$dir/$n" --name "$n" --fsid "$fsid" \
		--addr "${addr[$n]}" >/dev/null 2>"$dir/mkfs.err" ||
		fail "mkfs --join of mon.$n: $(cat "$dir/mkfs.err")"
	start "$n"
	change || fail "pool create before adding mon.$n"
	cmd mon add "$n" "${addr[$n]}" >/dev/null || fail "mon add $n: $(cat "$dir/cmd.err")"
	st=$(status) || fail "quorum status"
	case " ${st#* } " in *" $n+ "*) ;; *) fail "mon.$n is not a voter after mon add: $st" ;; esac
	ok "mon add $n: $st"
	change || fail "pool create after adding mon.$n"
done
if cmd mon add d "${addr[d]}" >/dev/null; then fail "a second mon add d was taken"; fi
grep -q "already a member" "$dir/cmd.err" || fail "mon add d again: $(cat "$dir/cmd.err")"
ok "a second mon add of a member is refused"

# ---- remove the leader, then another member
l=$(status | cut -d' ' -f1)
cmd mon rm "$l" >/dev/null || fail "mon rm $l (the leader): $(cat "$dir/cmd.err")"
st=$(status) || fail "quorum status"
case " $st " in *" $l+ "*|*" $l- "*) fail "mon.$l is still a member: $st" ;; esac
[ "${st%% *}" != "$l" ] || fail "the removed mon.$l still leads: $st"
stop "$l"
ok "mon rm $l (the leader): $st"
change || fail "pool create after removing mon.$l"
for n in a b c d e; do
	[ "$n" != "$l" ] && [ "$n" != "${st%% *}" ] && { r=$n; break; }
done
cmd mon rm "$r" >/dev/null || fail "mon rm $r: $(cat "$dir/cmd.err")"
stop "$r"
st=$(status) || fail "quorum status"
ok "mon rm $r: $st"
change || fail "pool create after removing mon.$r"
if cmd mon rm zz >/dev/null; then fail "mon rm of an unknown member was taken"; fi
ok "mon rm of an unknown member is refused"

# ---- a removed monitor restarted on its old store cannot raise the term
term() {
	cmd --format json quorum status | python3 -c 'import json,sys; s=json.load(sys.stdin); print(s["term"], s["leader"])'
}
before=$(term) || fail "quorum status"
start "$r"
sleep 4
after=$(term) || fail "quorum status"
[ "$before" = "$after" ] || fail "removed mon.$r, restarted, changed term/leader: $before -> $after"
stop "$r"
ok "removed mon.$r restarted on its old store: term and leader unchanged ($after)"

# ---- the three left agree, and every answered change is there
deadline=$(( $(now_ms) + 15000 ))
while :; do
	verdict=$(cmd --format json quorum status | python3 -c '
import json, sys
s = json.load(sys.stdin)
ms = s["members"]
ok = len(ms) == 3 and all(m["epoch"] == s["epoch"] for m in ms) and len({m["digest"] for m in ms}) == 1
print("same" if ok else "differ", " ".join("%s:%d:%s" % (m["name"], m["epoch"], m["digest"]) for m in ms))')
	case $verdict in same*) break ;; esac
	[ "$(now_ms)" -lt "$deadline" ] || fail "members differ: $verdict"
	sleep 0.2
done
pools=$(cmd pool ls) || fail "pool ls"
for p in "${answered[@]}"; do
	grep -qx "$p" <<<"$pools" || fail "pool '$p' was answered but is not in the map"
done
ok "members agree (${verdict#same }); all ${#answered[@]} answered changes are there"
echo PASS
