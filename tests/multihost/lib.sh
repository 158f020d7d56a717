# tests/multihost/lib.sh - "hosts" as network namespaces, for the tests of
# this folder (sourced; needs root and iproute2, skips with 77 otherwise).
#
#   mh_init BUILD_DIR NHOSTS   namespaces host 0..NHOSTS-1, each with the
#                              address 10.77.$net.(N+1)/24 on eth0, joined by
#                              a bridge in a further namespace (the switch);
#                              an EXIT trap removes everything again
#   mh_conf [LINE...]          writes $conf ([global]: mon_host, the lines)
#   mh_mon                     bootstraps and starts the monitor on host 0
#   mh_mons N                  (instead of mh_mon, before mh_conf) makes
#                              monitors a, b, ... on hosts 0..N-1 as
#                              doc/admin.md says (one fsid, one --initial
#                              list); $mon becomes the list of all of them
#   mh_mons_start N            (after mh_conf) starts them
#   mh_osd H SIZE              makes and starts an OSD on host H (osd_host
#                              nodeH); prints nothing, its id is in $tmp
#   mh_cli ARGS...             the atoll CLI, run on host 0
#   mh_wait_up N               until N OSDs are up
#   mh_wait_health             until HEALTH_OK
#   mh_cut H / mh_heal H       unplugs / plugs host H's cable at the switch
#   mh_bg H CMD...             runs CMD on host H in the background; its PID
#                              is stopped by the EXIT trap too
#   in_ns H CMD...             runs CMD on host H
# MH_KEEP=1 keeps the folder (logs, stores) after the test.
# Daemons start through `ip netns exec` itself, not a shell function: a
# function in the background runs in a subshell whose PID is not the
# daemon's, and killing it would leave the daemon running.

mh_init() {
	build=$1
	mh_n=$2
	for p in mon/atoll-mon osd/atoll-osd tools/atoll; do
		[ -x "$build/$p" ] || { echo "SKIP: $build/$p not built"; exit 77; }
	done
	[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for network namespaces"; exit 77; }
	command -v ip >/dev/null || { echo "SKIP: iproute2 missing"; exit 77; }

	tag=a$$
	net=$((10 + $$ % 200))		# 10.77.$net.0/24, unlikely to collide
	sw=atl-$tag-sw
	hosts=()
	for ((i = 0; i < mh_n; i++)); do hosts+=("atl-$tag-$i"); done
	tmp=$(mktemp -d /tmp/atoll-netns.XXXXXX)
	conf=$tmp/atoll.conf
	mon="10.77.$net.1:6789"
	pids=()		# the OSDs
	mon_pids=()	# the monitors
	bg_pids=()	# clients and the like
	trap mh_cleanup EXIT

	ip netns add "$sw"
	ip -n "$sw" link add br0 type bridge
	ip -n "$sw" link set br0 up
	for ((i = 0; i < mh_n; i++)); do
		local h=${hosts[$i]}
		ip netns add "$h"
		ip link add "v$tag$i" type veth peer name eth0 netns "$h"
		ip link set "v$tag$i" netns "$sw"
		ip -n "$sw" link set "v$tag$i" master br0 up
		ip -n "$h" addr add "10.77.$net.$((i + 1))/24" dev eth0
		ip -n "$h" link set eth0 up
		ip -n "$h" link set lo up
	done
}

mh_cleanup() {
	local rc=$?
	for p in "${bg_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	# the OSDs first (each tells the monitors it stops), then the monitors
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}" "${bg_pids[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null || true
	done
	for p in "${mon_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${mon_pids[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null || true
	done
	# nothing of ours may outlive the test (a daemon holding $tmp open)
	local left
	left=$(ps -eo pid,args | grep -F -- "$tmp/" | grep -v grep || true)
	if [ -n "$left" ]; then
		echo "FAIL: processes left behind:"; echo "$left"
		echo "$left" | awk '{print $1}' | xargs -r kill -KILL 2>/dev/null || true
		rc=1
	fi
	for n in "${hosts[@]}" "$sw"; do ip netns del "$n" 2>/dev/null || true; done
	if [ $rc -ne 0 ]; then
		for f in "$tmp"/*.log; do [ -f "$f" ] && { echo "---- $f"; tail -n 30 "$f"; }; done
	fi
	if [ "${MH_KEEP:-0}" = 1 ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
	exit $rc
}

in_ns() { local n=$1; shift; ip netns exec "${hosts[$n]}" "$@"; }

mh_conf() {
	{
		echo "[global]"
		echo "mon_host = $mon"
		# the stores are not zero-filled at mkfs (doc/daemons.md)
		echo "osd_mkfs_prefill = false"
		for l in "$@"; do echo "$l"; done
	} > "$conf"
}

mh_mon() {
	in_ns 0 "$build/mon/atoll-mon" --mkfs --data "$tmp/mon" --conf "$conf" > "$tmp/fsid"
	ip netns exec "${hosts[0]}" "$build/mon/atoll-mon" --data "$tmp/mon" --addr "$mon" \
		--conf "$conf" > "$tmp/mon.log" 2>&1 &
	mon_pids+=($!)
}

# doc/admin.md, "2. Bootstrap the monitors": one fsid, one member list,
# `atoll-mon --mkfs --name X --fsid F --initial ...` on each host, then
# `atoll-mon --data DIR` (name, address and id come from the store).
mh_mons() {
	local n=$1 i fsid initial="" names=(a b c d e f g)
	fsid=$(cat /proc/sys/kernel/random/uuid)
	mon=""
	for ((i = 0; i < n; i++)); do
		initial+="${initial:+,}${names[$i]}=10.77.$net.$((i + 1)):6789"
		mon+="${mon:+,}10.77.$net.$((i + 1)):6789"
	done
	for ((i = 0; i < n; i++)); do
		in_ns $i "$build/mon/atoll-mon" --mkfs --data "$tmp/mon.${names[$i]}" \
			--name "${names[$i]}" --fsid "$fsid" --initial "$initial" \
			> "$tmp/mkfs.${names[$i]}.out"
	done
	echo "$fsid" > "$tmp/fsid"
}

# Starts the monitors mh_mons made (after mh_conf wrote mon_host).
mh_mons_start() {
	local n=$1 i names=(a b c d e f g)
	for ((i = 0; i < n; i++)); do
		ip netns exec "${hosts[$i]}" "$build/mon/atoll-mon" --data "$tmp/mon.${names[$i]}" \
			--conf "$conf" > "$tmp/mon.${names[$i]}.log" 2>&1 &
		mon_pids+=($!)
	done
}

mh_osd() {
	local h=$1 size=$2 d
	d=$tmp/osd-$h-$(( ${#pids[@]} + 1 ))	# osd-H-K: the K-th OSD made (from 1)
	in_ns "$h" "$build/osd/atoll-osd" --mkfs --data "$d" --mon "$mon" \
		--size "$size" --conf "$conf" > "$d.id"
	ip netns exec "${hosts[$h]}" "$build/osd/atoll-osd" --data "$d" \
		--addr "10.77.$net.$((h + 1))" --host "node$h" --mon "$mon" \
		--conf "$conf" > "$d.log" 2>&1 &
	pids+=($!)
}

mh_cli() { in_ns 0 "$build/tools/atoll" --conf "$conf" "$@"; }

mh_bg() {
	local h=$1; shift
	ip netns exec "${hosts[$h]}" "$@" &
	bg_pids+=($!)
}

mh_wait_up() {
	local want=$1 up=0
	for _ in $(seq 150); do
		up=$(mh_cli status --format json 2>/dev/null |
		     python3 -c 'import json,sys; print(json.load(sys.stdin)["osds"]["up"])' \
			2>/dev/null || echo 0)
		[ "$up" = "$want" ] && return 0
		sleep 0.2
	done
	echo "FAIL: only $up of $want OSDs came up"
	exit 1
}

mh_wait_health() {
	local h=
	for _ in $(seq 300); do
		h=$(mh_cli health 2>/dev/null | head -n 1 || true)
		[ "$h" = HEALTH_OK ] && return 0
		sleep 0.2
	done
	echo "FAIL: health is '$h'"
	mh_cli health detail || true
	exit 1
}

mh_cut() { ip -n "$sw" link set "v$tag$1" down; }
mh_heal() { ip -n "$sw" link set "v$tag$1" up; }
