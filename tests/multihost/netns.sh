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

. "$(dirname "$0")/lib.sh"
mh_init "${1:?usage: netns.sh BUILD_DIR}" 3
command -v ss >/dev/null || { echo "SKIP: ss missing"; exit 77; }
# (no ping on a minimal machine: the first OSD boot proves the path)

mh_conf "osd_heartbeat_interval = 500ms" "osd_heartbeat_grace = 6s"
mh_mon				# host 0: the monitor
for h in 1 2; do		# hosts 1 and 2: two OSDs each
	mh_osd $h 512M
	mh_osd $h 512M
done
cli() { mh_cli "$@"; }
mh_wait_up 4

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

mh_wait_health
echo "PASS: 4 OSDs on 2 hosts + a monitor on a third, objects round-trip"
