#!/bin/bash
# mds_limits.sh ATOLL-CLUSTER ATOLL MDS-PROBE - the MDS's per-daemon and
# per-session limits (doc/limits.md, "MDS"), with mds_max_sessions 3 and
# mds_session_max_open_files 2: a client's third open file is refused
# EMFILE (a create that opens too, before it creates anything) while one
# it holds opens again; of four more clients two get a session and two
# are refused EUSERS; the MDS serves on and its log says which limit.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
probe=${3:?usage: $0 ATOLL-CLUSTER ATOLL MDS-PROBE}
. "$here/../cluster/lib.sh"

# auth=none: mds_probe speaks the MDS protocol from a messenger of its own
# that holds no key (doc/security.md); the limits are the same with auth
cluster_up --mons 1 --osds 1 --hosts 1 --no-nbd --mds 1 --set auth=none \
	--set mds_max_sessions=3 --set mds_session_max_open_files=2
mds_addr=$(awk '/^mds_addr/ {print $3; exit}' "$ATOLL_CONF")
[ -n "$mds_addr" ] || fail "no mds_addr in $ATOLL_CONF"
ok "a cluster with an MDS and small mds_* limits"

"$probe" "$mds_addr" opens 3 >"$tmp/opens.out" || fail "the opens probe: $(cat "$tmp/opens.out")"
cat "$tmp/opens.out"
[ "$(tr '\n' ' ' <"$tmp/opens.out")" = "session 0 create 0 create 0 create -24 reopen 0 open -24 " ] ||
	fail "not 2 opens then EMFILE: $(tr '\n' ' ' <"$tmp/opens.out")"
ok "past mds_session_max_open_files: EMFILE, for a create that opens too; a held file opens again"

"$probe" "$mds_addr" sessions 4 >"$tmp/sess.out" || fail "the sessions probe: $(cat "$tmp/sess.out")"
cat "$tmp/sess.out"
[ "$(tr '\n' ' ' <"$tmp/sess.out")" = "session 0 session 0 session -87 session -87 " ] ||
	fail "not 2 sessions then EUSERS: $(tr '\n' ' ' <"$tmp/sess.out")"
ok "past mds_max_sessions: a new session is refused EUSERS"

atoll fs status >/dev/null || fail "the MDS does not answer its status"
grep -q "mds_max_sessions" "$cdir"/log/mds.*.log || fail "the MDS log does not name the limit"
ok "the MDS serves on and says which limit refused the session"
