# tests/hostile/lib.sh - shared by the hostile tests (sourced, not run).
#
# Arguments of a test: ATOLL-CLUSTER ATOLL ATOLL-FLOOD [ATOLL-FUSE]; the
# cluster comes from tests/cluster/lib.sh (cluster_up, atoll, fail, ok,
# the EXIT trap that stops everything).  On top of it: atoll-flood runs
# in the background (flood_start; stopped by PID in every outcome), the
# legitimate client's workloads (work_mon, work_osd, work_mds, work_nbd:
# each prints one rate and fails on any error), memory watchers, and
# `problem`, which records a failed threshold and lets the test go on so
# that one run reports every daemon (hostile_finish fails at the end).
#
# The flood's size and the timings come from the environment so that a
# developer can run small (HOSTILE_CONNS=200 HOSTILE_BIG=5 ...); the
# defaults are the issue's figures:
#   HOSTILE_CONNS (4000)   connections held
#   HOSTILE_HALFOPEN (500) half-open handshakes
#   HOSTILE_BIG (200)      frame headers announcing 64 MiB
#   HOSTILE_FUTURE (10000) ops with a future map epoch (OSD targets)
#   HOSTILE_WORK_S (5)     seconds of each client measurement
#   HOSTILE_LEAD_S (5)     seconds of flood before the client starts
# Memory budgets (resident, kB): HOSTILE_OSD_RSS_KB (150 MB),
# HOSTILE_MON_RSS_KB (50 MB, anonymous); the MDS and atoll-nbd have no
# budget of their own in the issue: their RSS is recorded only.  Every
# daemon: HOSTILE_VMDATA_KB (1 GiB) of allocations more during a flood.

. "$(dirname "$0")/../cluster/lib.sh"

flood_bin=${1:?usage: $0 ATOLL-CLUSTER ATOLL ATOLL-FLOOD [ATOLL-FUSE]}
fuse_bin=${2:-}
[ -x "$flood_bin" ] || skip "atoll-flood is missing ($flood_bin)"

HOSTILE_CONNS=${HOSTILE_CONNS:-4000}
HOSTILE_HALFOPEN=${HOSTILE_HALFOPEN:-500}
HOSTILE_BIG=${HOSTILE_BIG:-200}
HOSTILE_FUTURE=${HOSTILE_FUTURE:-10000}
HOSTILE_WORK_S=${HOSTILE_WORK_S:-5}
HOSTILE_LEAD_S=${HOSTILE_LEAD_S:-5}
HOSTILE_OSD_RSS_KB=${HOSTILE_OSD_RSS_KB:-153600}
HOSTILE_MON_RSS_KB=${HOSTILE_MON_RSS_KB:-51200}
# Under AddressSanitizer (ATOLL_SANITIZED=1) resident memory is recorded
# but not held to the budgets: its shadow memory and its quarantine of
# freed blocks (256 MB) add hundreds of MB that the daemon never asked
# for; the release build, which CI runs too, holds them.
rss_checked() { [ "${ATOLL_SANITIZED:-0}" != 1 ]; }
# What a daemon may allocate during a flood beyond what it had (VmData,
# kB): 200 headers announcing 64 MiB must not become 12.5 GiB of buffers
# waiting for payloads (pages not touched yet, so RSS does not show them)
HOSTILE_VMDATA_KB=${HOSTILE_VMDATA_KB:-1048576}

flood_pids=()
watch_pids=()
fuse_pids=()
problems=()

hostile_cleanup() {
	local p m
	for p in "${flood_pids[@]}" "${watch_pids[@]}"; do
		kill "$p" 2>/dev/null
	done
	for m in $(awk -v t="$tmp/" 'index($2, t) == 1 { print $2 }' /proc/self/mounts); do
		fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null || umount -l "$m"
	done
	[ -f "$tmp/fuse.pids" ] && fuse_pids+=($(cat "$tmp/fuse.pids"))
	for p in "${fuse_pids[@]}" "${flood_pids[@]}" "${watch_pids[@]}"; do
		for _ in $(seq 1 50); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$p" 2>/dev/null
	done
	return 0
}
cleanup_hook=hostile_cleanup

# A test that runs past HOSTILE_DEADLINE_S stops itself (TERM: the EXIT
# trap stops the cluster, the floods and the mounts) before meson's
# timeout would kill it outright and leave everything running.
if [ -n "${HOSTILE_DEADLINE_S:-}" ]; then
	(
		trap 'kill "$sp" 2>/dev/null; exit 0' TERM
		sleep "$HOSTILE_DEADLINE_S" &
		sp=$!
		wait "$sp" || exit 0
		echo "FAIL: past the test's deadline of ${HOSTILE_DEADLINE_S} s" >&2
		kill -TERM $$
	) &
	watch_pids+=($!)
fi

# problem TEXT: a threshold that did not hold (reported, the test goes on)
problem() {
	echo "PROBLEM: $*"
	problems+=("$*")
}

hostile_finish() {
	local p
	if [ ${#problems[@]} -gt 0 ]; then
		echo "---- ${#problems[@]} problem(s):" >&2
		for p in "${problems[@]}"; do echo "  $p" >&2; done
		fail "the daemons did not hold under the flood (above)"
	fi
}

# daemon_field NAME FIELD: a field of cluster.state's line of daemon NAME
# (mon.a, osd.0, mds.a, nbd): ip, port or pid
daemon_field() {
	awk -v n="$1" -v f="$2" '$1 == "daemon" && $2 == n {
		print (f == "ip" ? $6 : f == "port" ? $7 : $8) }' "$cdir/cluster.state"
}

# rss_watch PID OUT: the largest VmRSS, RssAnon and VmData (kB) of PID,
# sampled twice a second, in OUT as "rss anon data" until killed.  VmData
# shows what the daemon allocated and has not touched yet (a 64 MiB frame
# buffer waiting for bytes that never come) which RSS does not.
rss_watch() {
	local pid=$1 out=$2 max=0 amax=0 dmax=0 r a d
	echo "0 0 0" >"$out"
	while [ -r "/proc/$pid/status" ]; do
		read -r r a d < <(awk '/^VmRSS:/ { r = $2 } /^RssAnon:/ { a = $2 }
			/^VmData:/ { d = $2 } END { print r + 0, a + 0, d + 0 }' "/proc/$pid/status" 2>/dev/null)
		[ "${r:-0}" -gt "$max" ] && max=$r
		[ "${a:-0}" -gt "$amax" ] && amax=$a
		[ "${d:-0}" -gt "$dmax" ] && dmax=$d
		echo "$max $amax $dmax" >"$out.new" && mv "$out.new" "$out"
		sleep 0.5
	done
}

# sockstat: /proc/net/sockstat's TCP line (mem is in pages)
sockstat() { grep '^TCP:' /proc/net/sockstat; }

# flood_start OUT SECONDS ADDR [ATOLL-FLOOD-OPTIONS...]: atoll-flood in
# the background against ADDR with the test's figures; its pid joins
# flood_pids and is in $flood_pid
flood_start() {
	local out=$1 secs=$2 addr=$3
	shift 3
	"$flood_bin" --target "$addr" --conns "$HOSTILE_CONNS" --halfopen "$HOSTILE_HALFOPEN" \
		--big "$HOSTILE_BIG" --duration "$secs" "$@" >"$out" 2>"$out.err" &
	flood_pid=$!
	flood_pids+=("$flood_pid")
}

# ---- the legitimate client's workloads: one rate on stdout, or fail ----

# work_mon S: `atoll status` one after another for S seconds (each a new
# client: connect, hello, command); commands per second
work_mon() {
	local s=$1 n=0 t0 t
	t0=$(date +%s.%N)
	while :; do
		t=$(date +%s.%N)
		[ "$(echo "$t - $t0 >= $s" | bc)" = 1 ] && break
		timeout 30 "$atoll_bin" status >/dev/null 2>"$tmp/work.err" || {
			echo "atoll status failed: $(head -c 300 "$tmp/work.err")" >&2
			return 1
		}
		n=$((n + 1))
	done
	echo "$n / ($(date +%s.%N) - $t0)" | bc -l | xargs printf '%.2f\n'
}

# work_osd S: atoll bench, 64 KiB writes, 8 in flight; IOPS
work_osd() {
	local out
	out=$(timeout $(($1 * 2 + 20)) "$atoll_bin" --format json bench default "$1" write \
		-b 64K -t 8 2>"$tmp/work.err") || {
		echo "atoll bench failed (exit $?): $(grep -iv '^ *[0-9]' "$tmp/work.err" | tail -n 3)" >&2
		return 1
	}
	echo "$out" | python3 -c 'import json, sys; print(json.load(sys.stdin)["iops"])'
}

# work_mds S: mounts the file system (a new FUSE client), creates small
# files for S seconds, checks them, unmounts; files per second
work_mds() {
	local s=$1 m="$tmp/mnt.$RANDOM" n=0 t0 t rate
	mkdir -p "$m"
	"$fuse_bin" "$m" -f -o "conf=$ATOLL_CONF" >"$tmp/fuse.log" 2>&1 &
	echo $! >>"$tmp/fuse.pids"	# (a subshell: fuse_pids would not see it)
	for _ in $(seq 1 300); do
		mountpoint -q "$m" && break
		sleep 0.1
	done
	mountpoint -q "$m" || { echo "atoll-fuse did not mount: $(tail -c 300 "$tmp/fuse.log")" >&2; return 1; }
	mkdir -p "$m/w$$" || return 1
	t0=$(date +%s.%N)
	while :; do
		t=$(date +%s.%N)
		[ "$(echo "$t - $t0 >= $s" | bc)" = 1 ] && break
		echo "file $n" >"$m/w$$/f$n" || { echo "create f$n failed" >&2; return 1; }
		n=$((n + 1))
	done
	rate=$(echo "$n / ($(date +%s.%N) - $t0)" | bc -l | xargs printf '%.2f')
	[ "$(cat "$m/w$$/f$((n - 1))")" = "file $((n - 1))" ] || { echo "f$((n - 1)) reads back wrong" >&2; return 1; }
	rm -rf "$m/w$$"
	fusermount3 -u "$m" || { echo "unmount failed" >&2; return 1; }
	echo "$rate"
}

# work_nbd S: nbdcopy of 32 MiB into image 'hostile' (32 MiB) of pool
# default, over and over for S seconds, read back and compared; MB/s
work_nbd() {
	local s=$1 uri="nbd://$nbd_addr/hostile" n=0 t0 t
	[ -f "$tmp/src.raw" ] || head -c 32M /dev/urandom >"$tmp/src.raw"
	t0=$(date +%s.%N)
	while :; do
		t=$(date +%s.%N)
		[ "$(echo "$t - $t0 >= $s" | bc)" = 1 ] && break
		timeout 40 nbdcopy "$tmp/src.raw" "$uri" 2>"$tmp/work.err" || {
			echo "nbdcopy failed: $(head -c 300 "$tmp/work.err")" >&2
			return 1
		}
		n=$((n + 1))
	done
	t=$(date +%s.%N)
	timeout 40 nbdcopy "$uri" "$tmp/back.raw" 2>"$tmp/work.err" &&
		cmp -s "$tmp/src.raw" "$tmp/back.raw" ||
		{ echo "the image does not read back what was written" >&2; return 1; }
	echo "$n * 32 / ($t - $t0)" | bc -l | xargs printf '%.2f\n'
}
