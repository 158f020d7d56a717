#!/bin/bash
# tests/ha/mon_minority.sh ATOLL_MON ATOLL_CLI - a leader left without a
# majority stops serving: three monitors; both followers are frozen
# (SIGSTOP); within two election timeouts the leader steps down and
# answers nothing (a command gets no answer, only MONMAPs), so it can
# change nothing and grant no lease.  The followers thawed (SIGCONT), a
# leader serves again, the change made meanwhile never happened, and the
# digests match.
set -u
. "$(dirname "$0")/monlib.sh"
monlib_init "$1" "$2" minority
ok() { echo "ok - $*"; }
monlib_mkfs
for n in "${names[@]}"; do monlib_start "$n"; done

l=$(cmd --format json quorum status | python3 -c 'import json,sys; print(json.load(sys.stdin)["leader"])') ||
	fail "no leader elected"
[ -n "$l" ] || fail "quorum status names no leader"
cmd pool create before --pg 2 >/dev/null || fail "pool create"
ok "mon.$l leads"

for n in "${names[@]}"; do
	[ "$n" = "$l" ] || kill -STOP "${pid[$n]}"
done
t0=$(now_ms)
# it steps down within two election timeouts (doc/quorum.md) and then
# serves nothing: a change sent to it is never answered
deadline=$((t0 + 4000))
until grep -q "no longer the leader" "$dir/$l.log"; do
	[ "$(now_ms)" -lt "$deadline" ] || fail "mon.$l still leads 4 s after losing its majority"
	sleep 0.1
done
ok "mon.$l stepped down $(( $(now_ms) - t0 )) ms after losing its majority"
if timeout 3 "$cli" -m "${addr[$l]}" pool create during --pg 2 >/dev/null 2>&1; then
	fail "mon.$l, alone, answered a map change"
fi
if timeout 3 "$cli" -m "${addr[$l]}" quorum status >/dev/null 2>&1; then
	fail "mon.$l, alone, answered a command"
fi
ok "alone, mon.$l answers neither a change nor a read"

for n in "${names[@]}"; do
	[ "$n" = "$l" ] || kill -CONT "${pid[$n]}"
done
cmd pool create after --pg 2 >/dev/null || fail "no change after the followers came back"
pools=$(cmd pool ls) || fail "pool ls"
grep -qx before <<<"$pools" && grep -qx after <<<"$pools" || fail "pools: $pools"
! grep -qx during <<<"$pools" || fail "the change sent to the cut-off leader happened"
deadline=$(( $(now_ms) + 15000 ))
while :; do
	verdict=$(cmd --format json quorum status | python3 -c '
import json, sys
s = json.load(sys.stdin)
ms = s["members"]
ok = all(m["epoch"] == s["epoch"] for m in ms) and len({m["digest"] for m in ms}) == 1
print("same" if ok else "differ", " ".join("%s:%d:%s" % (m["name"], m["epoch"], m["digest"]) for m in ms))')
	case $verdict in same*) break ;; esac
	[ "$(now_ms)" -lt "$deadline" ] || fail "members differ: $verdict"
	sleep 0.2
done
ok "back together: the change sent meanwhile never happened; ${verdict#same }"
echo PASS
