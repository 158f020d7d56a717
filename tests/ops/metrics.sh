#!/bin/bash
# tests/ops/metrics.sh ATOLL-CLUSTER ATOLL - every daemon's /metrics
# (doc/metrics.md) on one local cluster: `atoll-cluster up` gives each a
# URL and prints them; each page passes `promtool check metrics` (when
# Debian's prometheus is installed) and the strict reader prom.py; the
# values follow what the test does (objects written counted by the OSDs,
# an OSD killed seen in the leader's up gauge and OSD_DOWN); only the
# leader shows the cluster-wide series; bad requests get 404 and 405;
# no metrics port is left open once the cluster is down.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../cluster/lib.sh
. "$here/../cluster/lib.sh"
prom() { python3 "$here/prom.py" "$@"; }

python3 "$here/prom.py" selftest >/dev/null || fail "prom.py refuses too little"
ok "the strict reader refuses malformed pages (negative control)"

cluster_up --osds 3 --mds 2
urls() { awk '$1 == "metrics" { print $3 }' "$cdir/cluster.state"; }
url_of() { awk -v n="$1" '$1 == "metrics" && $2 == n { print $3 }' "$cdir/cluster.state"; }
ndaemons=$(awk '$1 == "daemon"' "$cdir/cluster.state" | wc -l)
[ "$(urls | wc -l)" -eq "$ndaemons" ] || fail "not every daemon has a metrics URL: $(cat "$cdir/cluster.state")"
for d in $(awk '$1 == "daemon" { print $2 }' "$cdir/cluster.state"); do
	grep -q "^  $d *$(url_of "$d")\$" "$tmp/up.out" || fail "up did not print $d's URL: $(cat "$tmp/up.out")"
done
for u in $(urls); do
	case $u in http://127.0.0.*) ;; *) fail "$u is not on a loopback address" ;; esac
done
ok "up gives every daemon ($ndaemons) a loopback metrics URL, prints them and records them"

# every page, strictly
prom check $(urls) || fail "a /metrics page is malformed"
if command -v promtool >/dev/null; then
	for u in $(urls); do
		python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' "$u" >"$tmp/page"
		promtool check metrics <"$tmp/page" >"$tmp/lint" 2>&1 || fail "promtool on $u: $(cat "$tmp/lint")"
	done
	ok "promtool check metrics and prom.py accept every page"
else
	ok "prom.py accepts every page (promtool not installed: scripts/deps.sh)"
fi

# HTTP: only GET /metrics
u=$(url_of osd.0)
[ "$(prom status "$u" /nope GET)" = 404 ] || fail "GET /nope is not 404"
[ "$(prom status "$u" /metrics POST)" = 405 ] || fail "POST /metrics is not 405"
ok "GET elsewhere gets 404, POST gets 405"

# the leader alone shows the cluster-wide series
leader= nleaders=0
for m in $(awk '$1 == "daemon" && $3 == "mon" { print $2 }' "$cdir/cluster.state"); do
	for _ in $(seq 50); do
		[ "$(prom value "$(url_of "$m")" atoll_mon_term)" ] && break
		sleep 0.2
	done
	if [ "$(prom value "$(url_of "$m")" atoll_mon_leader)" = 1 ]; then
		leader=$m
		nleaders=$((nleaders + 1))
		[ "$(prom value "$(url_of "$m")" atoll_cluster_osds_up)" = 3 ] || fail "leader $m: osds_up is not 3"
	else
		[ -z "$(prom value "$(url_of "$m")" atoll_health_status)" ] || fail "$m is no leader but shows health"
	fi
done
[ "$nleaders" = 1 ] || fail "$nleaders monitors say they lead"
lu=$(url_of "$leader")
[ "$(prom value "$lu" atoll_health_check code=OSD_DOWN)" = 0 ] || fail "OSD_DOWN before any OSD is down"
ok "one monitor ($leader) leads and alone shows the cluster-wide view: 3 OSDs up, no OSD_DOWN"

# writes counted: N objects of B bytes raise the OSDs' write counters by
# at least N and their written bytes by at least N*B
osd_sum() {
	local s=0 v o
	for o in osd.0 osd.1 osd.2; do
		v=$(prom value "$(url_of "$o")" "$@")
		s=$((s + ${v:-0}))
	done
	echo $s
}
w0=$(osd_sum atoll_osd_ops_total type=write)
b0=$(osd_sum atoll_osd_written_bytes_total)
head -c 4096 /dev/urandom >"$tmp/obj"
N=20
for i in $(seq $N); do
	atoll put default "m$i" "$tmp/obj" || fail "put m$i"
done
w1=$(osd_sum atoll_osd_ops_total type=write)
b1=$(osd_sum atoll_osd_written_bytes_total)
[ $((w1 - w0)) -ge $N ] || fail "write ops went from $w0 to $w1 for $N objects"
[ $((b1 - b0)) -ge $((N * 4096)) ] || fail "written bytes went from $b0 to $b1 for $N x 4096"
c=$(prom value "$(url_of osd.0)" atoll_osd_op_latency_seconds_count type=write)
[ "${c:-0}" -gt 0 ] || fail "osd.0's write latency histogram is empty"
ok "$N objects written: write ops +$((w1 - w0)), bytes +$((b1 - b0)) across the OSDs"

# the leader's pool usage follows (from the beacons, within seconds)
for _ in $(seq 50); do
	o=$(prom value "$lu" atoll_pool_objects pool=default)
	[ "${o:-0}" -ge $N ] && break
	sleep 0.2
done
[ "${o:-0}" -ge $N ] || fail "the leader's pool objects stay at ${o:-none}"
ok "the leader counts the pool's objects ($o)"

# atoll-nbd: 1 MiB copied in counts a connection and the bytes
if command -v nbdcopy >/dev/null; then
	nu=$(url_of nbd)
	atoll image create default mimg --size 4M >/dev/null || fail "image create"
	head -c 1048576 /dev/urandom >"$tmp/img"
	a0=$(prom value "$nu" atoll_nbd_connections_accepted_total)
	nbdcopy "$tmp/img" "nbd://$(state_addr nbd)/mimg" || fail "nbdcopy into the image"
	a1=$(prom value "$nu" atoll_nbd_connections_accepted_total)
	nb=$(prom value "$nu" atoll_nbd_written_bytes_total)
	nw=$(prom value "$nu" atoll_nbd_requests_total op=write)
	[ $((a1 - a0)) -ge 1 ] || fail "atoll-nbd accepted $a0 then $a1 connections"
	[ "${nb:-0}" -ge 1048576 ] || fail "atoll-nbd counts ${nb:-0} bytes written for 1 MiB"
	[ "${nw:-0}" -ge 1 ] || fail "atoll-nbd counts no write request"
	ok "atoll-nbd counts the connection, $nw writes and $nb bytes of a 1 MiB nbdcopy"
fi

# atoll-mds: a mount's mkdir counted by the active MDS, its session seen
fuse_bin=$bindir/posixfs/atoll-fuse
fuse_pid=
stop_mount() {
	if mountpoint -q "$tmp/mnt" 2>/dev/null; then
		fusermount3 -u "$tmp/mnt" 2>/dev/null || fusermount3 -uz "$tmp/mnt" 2>/dev/null || true
	fi
	if [ -n "$fuse_pid" ]; then
		for _ in $(seq 50); do kill -0 "$fuse_pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$fuse_pid" 2>/dev/null || true
		fuse_pid=
	fi
}
if [ -x "$fuse_bin" ] && command -v fusermount3 >/dev/null && [ -e /dev/fuse ]; then
	cleanup_hook=stop_mount
	active=
	for m in $(awk '$1 == "daemon" && $3 == "mds" { print $2 }' "$cdir/cluster.state"); do
		[ "$(prom value "$(url_of "$m")" atoll_mds_state)" = 2 ] && active=$m
	done
	[ -n "$active" ] || fail "no MDS says atoll_mds_state 2 (active)"
	au=$(url_of "$active")
	k0=$(prom value "$au" atoll_mds_requests_total op=mkdir)
	mkdir -p "$tmp/mnt"
	"$fuse_bin" "$tmp/mnt" -f -o "conf=$ATOLL_CONF" >"$tmp/fuse.log" 2>&1 &
	fuse_pid=$!
	for _ in $(seq 100); do mountpoint -q "$tmp/mnt" && break; sleep 0.1; done
	mountpoint -q "$tmp/mnt" || fail "atoll-fuse did not mount: $(cat "$tmp/fuse.log")"
	mkdir "$tmp/mnt/d1" "$tmp/mnt/d2" || fail "mkdir on the mount"
	k1=$(prom value "$au" atoll_mds_requests_total op=mkdir)
	ns=$(prom value "$au" atoll_mds_sessions)
	lc=$(prom value "$au" atoll_mds_request_latency_seconds_count op=mkdir)
	[ $((k1 - k0)) -ge 2 ] || fail "$active counted mkdir $k0 then $k1 for 2 directories"
	[ "${lc:-0}" -ge 2 ] || fail "$active's mkdir latency histogram has ${lc:-0} entries"
	[ "${ns:-0}" -ge 1 ] || fail "$active shows ${ns:-0} sessions with a mount"
	stop_mount
	cleanup_hook=
	ok "the active MDS ($active) counts 2 mkdirs with their times and the mount's session"
fi

# an OSD killed: its page goes, the leader's up gauge and OSD_DOWN follow
ku=$(url_of osd.2)
"$cluster_bin" osd kill 2 --dir "$cdir" >/dev/null 2>&1 || fail "atoll-cluster osd kill 2"
python3 -c 'import sys, urllib.request
try:
    urllib.request.urlopen(sys.argv[1], timeout=5)
except Exception:
    sys.exit(0)
sys.exit(1)' "$ku" || fail "the killed OSD's metrics still answer"
for _ in $(seq 150); do
	up=$(prom value "$lu" atoll_cluster_osds_up)
	down=$(prom value "$lu" atoll_health_check code=OSD_DOWN)
	[ "$up" = 2 ] && [ "$down" = 1 ] && break
	sleep 0.2
done
[ "$up" = 2 ] || fail "the leader's osds_up is $up, not 2, after osd.2 was killed"
[ "$down" = 1 ] || fail "OSD_DOWN is $down on the leader after osd.2 was killed"
[ "$(prom value "$lu" atoll_health_status)" -ge 1 ] || fail "health status is OK with an OSD down"
ok "osd.2 killed: the leader shows 2 OSDs up, OSD_DOWN 1 and a warning"

# the leader killed: the cluster-wide view moves to the new leader
t0=$(prom value "$lu" atoll_mon_term)
"$cluster_bin" mon kill "${leader#mon.}" --dir "$cdir" >/dev/null 2>&1 || fail "mon kill $leader"
new=
for _ in $(seq 100); do
	for m in $(awk '$1 == "daemon" && $3 == "mon" { print $2 }' "$cdir/cluster.state"); do
		[ "$m" = "$leader" ] && continue
		mu=$(url_of "$m")
		if [ "$(prom value "$mu" atoll_mon_leader 2>/dev/null)" = 1 ] &&
		   [ "$(prom value "$mu" atoll_health_check code=MON_DOWN 2>/dev/null)" = 1 ]; then
			new=$m
		fi
	done
	[ -n "$new" ] && break
	sleep 0.2
done
[ -n "$new" ] || fail "no monitor took over the cluster-wide view with MON_DOWN after $leader was killed"
nu=$(url_of "$new")
[ "$(prom value "$nu" atoll_mon_term)" -gt "$t0" ] || fail "the term did not rise with the election"
[ "$(prom value "$nu" atoll_cluster_osds_up)" = 2 ] || fail "the new leader does not show 2 OSDs up"
for m in $(awk '$1 == "daemon" && $3 == "mon" { print $2 }' "$cdir/cluster.state"); do
	[ "$m" = "$leader" ] || [ "$m" = "$new" ] || [ -z "$(prom value "$(url_of "$m")" atoll_health_status)" ] ||
		fail "$m shows the cluster view beside the new leader $new"
done
ok "$leader killed: $new leads, shows the cluster view with MON_DOWN in a higher term"

# down: every metrics port closed
"$cluster_bin" down --dir "$cdir" >/dev/null 2>&1 || fail "atoll-cluster down"
for u in $(urls); do
	python3 -c 'import sys, urllib.request
try:
    urllib.request.urlopen(sys.argv[1], timeout=5)
except Exception:
    sys.exit(0)
sys.exit(1)' "$u" || fail "$u still answers after down"
done
ok "after down no metrics port answers"
