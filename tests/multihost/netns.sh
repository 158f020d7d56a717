#!/bin/bash
# tests/multihost/netns.sh - a real deployment across three "hosts".
#
# Three network namespaces, each with its own address on a private bridge
# (10.77.N.0/24, in a fourth namespace that plays the switch), and no
# launcher: a monitor is bootstrapped in the first with the plain commands
# of doc/admin.md, two OSDs are added in each of the other two, a pool of
# size 2 (failure domain host) is created from the first, objects round
# trip, and no daemon binds or dials 127.0.0.1 (checked with ss in every
# namespace while the cluster runs).  Needs root and iproute2; skipped
# (77) otherwise.  Everything it creates is removed on every exit.
#
# usage: netns.sh BUILD_DIR
set -euo pipefail

build=${1:?usage: netns.sh BUILD_DIR}
bin() { echo "$build/$1"; }
for p in mon/atoll-mon osd/atoll-osd tools/atoll; do
	[ -x "$(bin $p)" ] || { echo "SKIP: $(bin $p) not built"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for network namespaces"; exit 77; }
command -v ip >/dev/null || { echo "SKIP: iproute2 missing"; exit 77; }
command -v ss >/dev/null || { echo "SKIP: ss missing"; exit 77; }

tag=a$$
net=$((10 + $$ % 200))		# 10.77.$net.0/24, unlikely to collide
sw=atl-$tag-sw
hosts=(atl-$tag-1 atl-$tag-2 atl-$tag-3)
tmp=$(mktemp -d /tmp/atoll-netns.XXXXXX)
pids=()

cleanup() {
	local rc=$?
	# the OSDs first (each tells the monitor it stops), then the monitor
	local order=("${pids[@]:1}" "${pids[@]:0:1}")
	for p in "${order[@]:0:${#order[@]}-1}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${order[@]}"; do
		[ "$p" = "${pids[0]:-}" ] && kill -TERM "$p" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null || true
	done
	# nothing of ours may outlive the test (a daemon holding $tmp open)
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
	rm -rf "$tmp"
	exit $rc
}
trap cleanup EXIT

ip netns add "$sw"
ip -n "$sw" link add br0 type bridge
ip -n "$sw" link set br0 up
for i in 0 1 2; do
	h=${hosts[$i]}
	ip netns add "$h"
	ip link add "v$tag$i" type veth peer name eth0 netns "$h"
	ip link set "v$tag$i" netns "$sw"
	ip -n "$sw" link set "v$tag$i" master br0 up
	ip -n "$h" addr add "10.77.$net.$((i + 1))/24" dev eth0
	ip -n "$h" link set eth0 up
	ip -n "$h" link set lo up
done
in_ns() { local n=$1; shift; ip netns exec "${hosts[$n]}" "$@"; }
# (no ping on a minimal machine: the first OSD boot proves the path)

mon="10.77.$net.1:6789"
conf=$tmp/atoll.conf
cat > "$conf" <<CONF
[global]
mon_host = $mon
osd_heartbeat_interval = 500ms
osd_heartbeat_grace = 6s
CONF

# host 1: the monitor
in_ns 0 "$(bin mon/atoll-mon)" --mkfs --data "$tmp/mon" --conf "$conf" > "$tmp/fsid"
# Daemons start through `ip netns exec` itself, not the in_ns function: a
# function in the background runs in a subshell whose PID is not the
# daemon's, and killing it would leave the daemon running.
ip netns exec "${hosts[0]}" "$(bin mon/atoll-mon)" --data "$tmp/mon" --addr "$mon" --conf "$conf" \
	> "$tmp/mon.log" 2>&1 &
pids+=($!)

# hosts 2 and 3: two OSDs each
for h in 1 2; do
	for j in 0 1; do
		d=$tmp/osd-$h-$j
		in_ns $h "$(bin osd/atoll-osd)" --mkfs --data "$d" --mon "$mon" \
			--size 512M --conf "$conf" > "$d.id"
		ip netns exec "${hosts[$h]}" "$(bin osd/atoll-osd)" --data "$d" \
			--addr "10.77.$net.$((h + 1))" --host "node$h" --mon "$mon" \
			--conf "$conf" > "$d.log" 2>&1 &
		pids+=($!)
	done
done

cli() { in_ns 0 "$(bin tools/atoll)" --conf "$conf" "$@"; }
for _ in $(seq 150); do
	up=$(cli status --format json 2>/dev/null |
	     python3 -c 'import json,sys; print(json.load(sys.stdin)["osds"]["up"])' 2>/dev/null || echo 0)
	[ "$up" = 4 ] && break
	sleep 0.2
done
[ "$up" = 4 ] || { echo "FAIL: only $up of 4 OSDs came up"; exit 1; }

cli pool create mh --size 2 --min-size 2 --failure-domain host
head -c 3000000 /dev/urandom > "$tmp/obj"
for i in $(seq 20); do cli put mh "o$i" "$tmp/obj"; done
for i in $(seq 20); do
	cli get mh "o$i" "$tmp/back"
	cmp -s "$tmp/obj" "$tmp/back" || { echo "FAIL: object o$i differs"; exit 1; }
done

# Every TCP socket of every namespace is on the namespace's own address.
for i in 0 1 2; do
	bad=$(in_ns $i ss -Htan | awk '{print $4" "$5}' | grep -E '127\.0\.0\.1|0\.0\.0\.0:[0-9]|\[::\]' || true)
	if [ -n "$bad" ]; then
		echo "FAIL: a socket on a loopback or wildcard address in ${hosts[$i]}:"
		echo "$bad"
		exit 1
	fi
done

for _ in $(seq 100); do
	h=$(cli health 2>/dev/null | head -n 1 || true)
	[ "$h" = HEALTH_OK ] && break
	sleep 0.2
done
[ "$h" = HEALTH_OK ] || { echo "FAIL: health is '$h'"; cli health detail; exit 1; }
echo "PASS: 4 OSDs on 2 hosts + a monitor on a third, objects round-trip"
