# tests/fs/lib.sh - sourced by the fs-*.sh tests: a one-OSD cluster with
# its MDS in a temporary folder, atoll-fuse mounts, and an EXIT trap that
# unmounts and stops everything in every outcome.
#
# One OSD (pools of size 1): these tests check the file system's logic and
# the tools on top of it, not replication (fs.sh and the cluster suites do
# that), and a single OSD keeps them inside issue 6's CI time.
#
# The sourcing script sets cluster_bin, fuse_bin, atoll_cli first, then
# calls fs_setup; mount_fs DIR LOG [OPTS] mounts; fail/step/skip report.
# fs.sh, which starts a cluster of its own, calls fs_prepare instead.
# Everything lives under $tmp (mode 0755, so that an unprivileged user can
# reach the folders a test makes there).

skip() { echo "skipped: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $* ($(date +%T))"; }

fuse_pids=()

# stop_fuse PID...: SIGTERM, and SIGKILL to those still running 5 s later
# (an evicted client may wait for an MDS that refuses it)
stop_fuse() {
	local p i alive
	for p in "$@"; do kill "$p" 2>/dev/null; done
	for i in $(seq 50); do
		alive=0
		for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ $alive = 1 ] || return 0
		sleep 0.1
	done
	for p in "$@"; do kill -9 "$p" 2>/dev/null; done
	return 0
}

fs_cleanup() {
	local rc=$?
	set +e
	if [ $rc -ne 0 ] && command -v gdb >/dev/null; then
		# a failed test may have found a hang: where each client waits
		for p in "${fuse_pids[@]}"; do
			kill -0 "$p" 2>/dev/null || continue
			echo "---- threads of atoll-fuse $p" >&2
			# -k: gdb may ignore the TERM (stuck on the mount it
			# serves); CONT: a gdb killed while attached may leave the
			# client stopped, and the unmount below would wait on it
			timeout -k 5 30 gdb -p "$p" -batch -ex "thread apply all bt 12" 2>/dev/null |
				grep -E '^(Thread|#)' >&2
			kill -CONT "$p" 2>/dev/null
		done
	fi
	# every mount under $tmp, from the mount table: `mountpoint` fails
	# on the mount of a client that crashed (ENOTCONN), which stays
	for m in $(awk -v t="$tmp/" 'index($2, t) == 1 { print $2 }' /proc/self/mounts); do
		fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null || umount -l "$m"
	done
	stop_fuse "${fuse_pids[@]}"
	[ -f "$cdir/cluster.state" ] && "$cluster_bin" down --dir "$cdir" >/dev/null 2>&1
	if [ $rc -ne 0 ]; then
		echo "---- tail of the MDS log" >&2
		tail -n 30 "$cdir/log/mds.a.log" >&2 2>/dev/null
		for f in "$tmp"/fuse*.log; do [ -f "$f" ] && { echo "---- $f" >&2; tail -n 20 "$f" >&2; }; done
	fi
	if [ "${ATOLL_TEST_KEEP:-0}" = 1 ]; then
		echo "kept $tmp" >&2
	else
		rm -rf "$tmp"
	fi
	exit $rc
}

# fs_prepare: checks what the tests need, makes $tmp (with $cdir and
# $conf in it) and arms the EXIT trap.
fs_prepare() {
	[ -x "$fuse_bin" ] || skip "atoll-fuse is not built (libfuse3-dev missing?)"
	[ -e /dev/fuse ] || skip "/dev/fuse is missing"
	command -v fusermount3 >/dev/null || skip "fusermount3 is missing (apt-get install fuse3)"
	tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/atoll-fs-test.XXXXXX")
	chmod 755 "$tmp"
	cdir=$tmp/c
	conf=$cdir/atoll.conf
	export ATOLL_CONF=$conf
	trap fs_cleanup EXIT
}

# fs_setup [UP-OPTIONS]: fs_prepare, then a one-OSD cluster with its MDS
# (UP-OPTIONS go to atoll-cluster up, e.g. --set mds_session_timeout_ms=2000).
# The store is not zero-filled at mkfs (osd_mkfs_prefill, doc/daemons.md).
fs_setup() {
	fs_prepare
	step "cluster: one OSD and the MDS"
	"$cluster_bin" up --dir "$cdir" --osds 1 --size 2G --no-nbd --mds 1 \
		--set osd_mkfs_prefill=false "$@" >"$tmp/up.log" 2>&1 ||
		{ cat "$tmp/up.log"; fail "atoll-cluster up"; }
}

# with_faults FAULTS CMD...: runs CMD with FAULTS (name=value,...; see
# lib/fault.h) added to $ATOLL_FAULTS, e.g. an MDS start that crashes:
#   with_faults mds_crash_after_commits=1 mds start
with_faults() {
	local f=$1
	shift
	ATOLL_FAULTS=${ATOLL_FAULTS:+$ATOLL_FAULTS,}$f "$@"
}

# faults_compiled: whether this build has fault injection (not
# -Dfault_injection=false, which makes every fault a no-op), as
# atoll-fuse --version says; a test skips its fault steps when it has not:
#   if faults_compiled; then ...; else echo "skipped: ..."; fi
faults_compiled() {
	"$fuse_bin" --version 2>/dev/null | grep -qx "fault injection: on"
}

# with_mds_conf KEY=VALUE CMD...: runs CMD (an MDS start) with KEY set in
# [mds] of $conf (a section of its own at the end), then removes it again:
# later starts get the default.
with_mds_conf() {
	local key=${1%%=*} val=${1#*=} rc
	shift
	sed -i "/^$key *=/d" "$conf"
	printf '\n[mds]\n%s = %s\n' "$key" "$val" >>"$conf"
	"$@"
	rc=$?
	sed -i "/^$key *=/d" "$conf"
	return $rc
}

mount_fs() {	# mount_fs DIR LOG [MOUNT-OPTIONS]
	mkdir -p "$1"
	"$fuse_bin" "$1" -f -o "conf=$conf${3:+,$3}" >"$2" 2>&1 &
	fuse_pids+=($!)
	for _ in $(seq 1 200); do
		mountpoint -q "$1" && return 0
		sleep 0.1
	done
	cat "$2" >&2
	fail "atoll-fuse did not mount $1"
}

# ledger_writer MOUNT TAG P: in MOUNT/P.TAG creates f$i, renames every 3rd
# to r$i and removes every 5th, until $tmp/P.stop exists.  An operation
# goes into $tmp/P.TAG.ledger ("NAME CONTENT" or "- NAME") only once it
# returned, and the count of them into $tmp/P.TAG.n.  Exits 1 at the first
# failed operation.  Run it in the background.
ledger_writer() {
	local i=0 d="$1/$3.$2"
	mkdir "$d" || exit 1
	while [ ! -e "$tmp/$3.stop" ]; do
		i=$((i + 1))
		echo "v$i" >"$d/f$i" || exit 1
		if [ $((i % 3)) = 0 ]; then mv "$d/f$i" "$d/r$i" || exit 1; echo "r$i v$i"
		elif [ $((i % 5)) = 0 ]; then rm "$d/f$i" || exit 1; echo "- f$i"
		else echo "f$i v$i"; fi
		echo $i >"$tmp/$3.$2.n.new" && mv "$tmp/$3.$2.n.new" "$tmp/$3.$2.n"
	done >"$tmp/$3.$2.ledger"
}

# ledger_check P TAG MOUNT WHEN: MOUNT/P.TAG shows what ledger_writer's
# ledger says (contents, and no removed name back); fails naming WHEN
# ("after the MDS restart").  ledger_n: the entries checked.
ledger_check() {
	local name val got
	ledger_n=0
	while read -r name val; do
		ledger_n=$((ledger_n + 1))
		if [ "$name" = - ]; then
			[ ! -e "$3/$1.$2/$val" ] || fail "$3/$1.$2/$val is back $4"
		else
			# read, not $(cat): no fork per entry (thousands of them)
			got=
			{ IFS= read -r got <"$3/$1.$2/$name"; } 2>/dev/null
			[ "$got" = "$val" ] ||
				fail "$3/$1.$2/$name (acknowledged) is lost or wrong $4"
		fi
	done <"$tmp/$1.$2.ledger"
}
