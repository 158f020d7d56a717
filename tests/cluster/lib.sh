# tests/cluster/lib.sh - shared by the cluster tests (sourced, not run).
#
# The tests drive the real programs the way a user does: `atoll-cluster up`
# in a temporary folder (free ports on 127.0.0.2, .3, ...), the `atoll`
# CLI with ATOLL_CONF pointing at the cluster, and `atoll-cluster down`
# always, from an EXIT trap, even when a check fails.
#
# The test scripts take two arguments: the paths of atoll-cluster and
# atoll (meson passes the build's).  They exit 77 (skipped) with a message
# when a program they need is missing: the daemons (atoll-mon, atoll-osd,
# found next to atoll-cluster like atoll-cluster finds them) or python3.
#
# Environment: ATOLL_TEST_TIMEOUT (seconds to reach HEALTH_OK, default
# 60; the sanitizer build passes more), ATOLL_TEST_KEEP=1 keeps the
# folder (the cluster is still stopped) for a look at the logs.

cluster_bin=${1:?usage: $0 ATOLL-CLUSTER ATOLL}
atoll_bin=${2:?usage: $0 ATOLL-CLUSTER ATOLL}
shift 2

skip() { echo "skipped: $*"; exit 77; }
command -v python3 >/dev/null || skip "python3 is missing"
[ -x "$cluster_bin" ] || skip "atoll-cluster is missing ($cluster_bin)"
[ -x "$atoll_bin" ] || skip "atoll is missing ($atoll_bin)"
bindir=$(cd "$(dirname "$cluster_bin")/.." && pwd)
for d in mon/atoll-mon osd/atoll-osd; do
	if [ ! -x "$bindir/$d" ] && [ ! -x "$(dirname "$cluster_bin")/$(basename $d)" ]; then
		skip "$(basename $d) is not built (looked in $bindir/$d)"
	fi
done

timeout_s=${ATOLL_TEST_TIMEOUT:-60}
# The stores use O_DIRECT: /var/tmp is on disk where /tmp may be tmpfs.
tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/atoll-cluster-test.XXXXXX")
cdir=$tmp/c
export ATOLL_CONF=$cdir/atoll.conf
unset ATOLL_CLUSTER_DIR

# A test may set cleanup_hook to a function that stops its own helpers
# (clients it started) before the cluster goes down.
cleanup_hook=
cleanup() {
	local rc=$?
	local st
	if [ -n "$cleanup_hook" ]; then
		"$cleanup_hook" || true
	fi
	for st in "$tmp"/*/cluster.state; do
		[ -f "$st" ] || continue
		"$cluster_bin" down --dir "$(dirname "$st")" >/dev/null 2>&1 ||
			echo "cleanup: atoll-cluster down --dir $(dirname "$st") failed" >&2
	done
	if [ $rc -ne 0 ] && [ -d "$cdir/log" ]; then
		for f in "$cdir"/log/*.log; do
			echo "---- tail of $f" >&2
			tail -n 30 "$f" >&2
		done
	fi
	if [ "${ATOLL_TEST_KEEP:-0}" = 1 ]; then
		echo "kept $tmp" >&2
	else
		rm -rf "$tmp"
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

n=0
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { n=$((n + 1)); echo "ok $n - $*"; }

# cluster_up [ATOLL-CLUSTER-UP-OPTIONS...]: a small, fast cluster.
# Short heartbeat settings so that failures are noticed in seconds; stores
# not zero-filled at mkfs (osd_mkfs_prefill, doc/daemons.md: the fill
# writes every store whole once, most of the time `up` takes; the tests
# that keep it are tests/cluster/launcher.sh and tests/fs/fs.sh).
cluster_up() {
	"$cluster_bin" up --dir "$cdir" --size 1G --pg 16 --timeout "$timeout_s" \
		--set osd_heartbeat_interval=500ms --set osd_heartbeat_grace=4s \
		--set osd_mkfs_prefill=false --set log_level=info "$@" >"$tmp/up.out" 2>"$tmp/up.err" ||
		{ cat "$tmp/up.out" "$tmp/up.err" >&2; fail "atoll-cluster up $*"; }
}

atoll() { "$atoll_bin" "$@"; }

# pyjson EXPR: reads JSON on stdin as `j`, evaluates the Python assertion
# EXPR (e.g. "j['status'] == 'HEALTH_OK'"); fails the test when it is false.
pyjson() {
	python3 -c '
import json, sys
src = sys.stdin.read()
try:
    j = json.loads(src)
except ValueError as e:
    sys.exit("not JSON (%s): %r" % (e, src[:300]))
if not eval(sys.argv[1]):
    sys.exit("false: %s\n  for: %s" % (sys.argv[1], src[:600]))
' "$1"
}

# expect CODE PATTERN CMD...: CMD exits CODE and says PATTERN on stderr.
expect() {
	local code=$1 pat=$2 rc=0
	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	[ $rc -eq "$code" ] || fail "'$*' exited $rc, not $code: $(cat "$tmp/err")"
	grep -q -- "$pat" "$tmp/err" || fail "'$*' did not say '$pat': $(cat "$tmp/err")"
}

# wait_health STATUS [SECONDS]: until `atoll health` prints STATUS first.
wait_health() {
	local want=$1 t=${2:-$timeout_s} i=0
	while [ $i -lt $((t * 5)) ]; do
		if [ "$(atoll health 2>/dev/null | head -n 1)" = "$want" ]; then
			return 0
		fi
		sleep 0.2
		i=$((i + 1))
	done
	atoll health detail >&2 || true
	fail "health did not become $want within $t s"
}

# state_pid NAME: the PID atoll-cluster recorded for a daemon (0 = none).
state_pid() { awk -v n="$1" '$1 == "daemon" && $2 == n { print $8 }' "$cdir/cluster.state"; }
# state_addr NAME: its ip:port.
state_addr() { awk -v n="$1" '$1 == "daemon" && $2 == n { print $6 ":" $7 }' "$cdir/cluster.state"; }

# pg1_state POOL: the state of POOL's first PG as `atoll pg ls` says (the
# primary's last beacon), or nothing
pg1_state() {
	atoll --format json pg ls "$1" 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["state"])' 2>/dev/null || true
}

# wait_pg1 POOL PATTERN: POOL's first PG reaches a state matching the shell
# PATTERN within 60 s (left in $state), or the test fails
wait_pg1() {
	local i
	for i in $(seq 300); do
		state=$(pg1_state "$1")
		# shellcheck disable=SC2254
		case $state in $2) return 0 ;; esac
		sleep 0.2
	done
	atoll pg ls "$1" >&2 || true
	fail "the PG of pool $1 is '$state', not $2"
}

# read_waits POOL OBJECT: a read of OBJECT gets no answer at all within
# 5 s (neither old data nor "no such object"), or the test fails
read_waits() {
	local rc=0
	timeout 5 "$atoll_bin" get "$1" "$2" "$tmp/read_waits" 2>"$tmp/read_waits.err" || rc=$?
	[ $rc -eq 124 ] ||
		{ cat "$tmp/read_waits.err" >&2; fail "a read of $2 was answered (exit $rc) while its PG is down"; }
}

# wait_log FILE COUNT PATTERN: FILE holds COUNT lines with PATTERN within
# 60 s, or the test fails
wait_log() {
	local i
	for i in $(seq 300); do
		[ "$(grep -c -- "$3" "$1" || true)" -ge "$2" ] && return 0
		sleep 0.2
	done
	fail "$(basename "$1") did not say '$3' $2 times within 60 s"
}
