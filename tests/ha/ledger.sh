# tests/ha/ledger.sh - the ledger client (tests/thrash's thrash-client, read
# its header) beside a cluster, for the ha tests (sourced after
# tests/cluster/lib.sh, which gives fail, $tmp and $ATOLL_CONF).
#
#   ledger_start BIN SEED THREADS  starts it on pool default with THREADS
#                   ops in flight; its commands go to fd 9, its output to
#                   $tmp/client.out; returns once it runs
#   ledger_kill     kills it if it still runs (for a cleanup hook)
#   ledger_stop     "stop", then until it printed "stopped"
#   ledger_verify   "verify", waits for it to exit, prints its output;
#                   fails unless every acknowledged write read back and no
#                   op failed or timed out

client_pid=

ledger_start() {
	local i
	mkfifo "$tmp/cmd"
	"$1" "$ATOLL_CONF" default "$2" "$tmp/ledger" "$3" <"$tmp/cmd" >"$tmp/client.out" \
		2>"$tmp/client.err" &
	client_pid=$!
	exec 9>"$tmp/cmd"
	for i in $(seq 150); do
		grep -q running "$tmp/client.out" && return 0
		kill -0 "$client_pid" 2>/dev/null || { cat "$tmp/client.err" >&2; fail "thrash-client died"; }
		sleep 0.1
	done
	fail "thrash-client did not start"
}

ledger_kill() {
	if [ -n "$client_pid" ] && kill -0 "$client_pid" 2>/dev/null; then
		kill -9 "$client_pid" 2>/dev/null || true
		wait "$client_pid" 2>/dev/null || true
	fi
}

ledger_stop() {
	local i
	echo stop >&9
	for i in $(seq 600); do
		grep -q '^stopped' "$tmp/client.out" && return 0
		sleep 0.1
	done
	fail "the client did not stop"
}

ledger_verify() {
	local rc=0
	echo verify >&9
	exec 9>&-
	wait "$client_pid" || rc=$?
	client_pid=
	sed 's/^/  client: /' "$tmp/client.out"
	[ $rc -eq 0 ] || { cat "$tmp/client.err" >&2; fail "the ledger found lost, wrong or stale data"; }
	grep -q 'timeouts 0 errors 0 lost 0 wrong 0 stale 0 version_bad 0' "$tmp/client.out" ||
		fail "ops failed: $(grep '^final' "$tmp/client.out")"
}
