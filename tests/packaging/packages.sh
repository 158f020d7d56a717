#!/bin/bash
# tests/packaging/packages.sh SOURCE_DIR - the Debian packages (debian/),
# end to end, on this machine (suite 'packages'; scripts/test.sh --full):
#
#  1. dpkg-buildpackage -us -uc -b builds the eight packages from a copy
#     of the source tree (nice, two jobs);
#  2. apt-get install -y ./*.deb installs them: the postinst makes the
#     user atoll and /var/log/atoll;
#  3. every installed unit passes systemd-analyze verify, and
#     tests/packaging/units.sh's hardening checks; logrotate reads the
#     rules;
#  4. a cluster is deployed the way doc/admin.md says (keyring with mon.,
#     client.admin and client.bootstrap-osd; atoll-mon --mkfs; each OSD
#     made with the bootstrap key and given its own key with `atoll auth
#     get-or-create`): one monitor, three OSDs on plain folders, one MDS
#     and atoll-nbd, each started with the ExecStart= of its installed
#     unit (tests/packaging/unit_exec.py: systemd is not PID 1 here) as
#     the user atoll; an object round-trips through the installed `atoll`,
#     a file through the fstab line of doc/fs.md (mount -T) and through
#     mount.fuse3 with atoll-fuse#, an image is seen by nbdinfo;
#  5. the daemons stopped, apt-get remove keeps the stores, atoll.conf,
#     the keyring, the logs and the user; apt-get purge removes the logs
#     and the enabled instances' links but still keeps the stores, the
#     configuration and (since stores remain) the user; with the stores
#     gone, a purge of atoll-common removes the user and every folder.
#
# It changes the machine, so it runs only with ATOLL_TEST_PACKAGES=1 (set
# by scripts/test.sh --full for this suite alone), as root, on a machine
# with no atoll package, no user atoll and no /etc/atoll, /var/lib/atoll
# or /var/log/atoll; otherwise it is skipped (77).  Whatever happens, it
# stops what it started, purges the packages and removes those folders
# and the user (all of which it made), and leaves no process behind.
# ATOLL_PKG_KEEP=1 keeps the scratch folder (the build log, the .debs);
# ATOLL_PKG_DEBS=DIR takes the .debs of DIR (such a kept folder) instead
# of building them, to run the rest again quickly.
set -u
src=${1:?usage: packages.sh SOURCE_DIR}
src=$(cd "$src" && pwd)
pkgs=(atoll-common atoll-mon atoll-osd atoll-mds atoll-nbd atoll-fuse libatoll1 libatoll-dev)
timeout_s=${ATOLL_TEST_TIMEOUT:-60}

skip() { echo "skipped: $*"; exit 77; }
[ "${ATOLL_TEST_PACKAGES:-0}" = 1 ] ||
	skip "it installs packages on this machine: scripts/test.sh --full runs it (ATOLL_TEST_PACKAGES=1)"
[ "$(id -u)" = 0 ] || skip "needs root (apt-get install)"
for p in "${pkgs[@]}"; do
	st=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
	case $st in ''|un*|pn*) ;; *) skip "package $p is on this machine ($st)" ;; esac
done
getent passwd atoll >/dev/null && skip "this machine has a user atoll"
getent group atoll >/dev/null && skip "this machine has a group atoll"
for d in /etc/atoll /var/lib/atoll /var/log/atoll; do
	[ -e "$d" ] && skip "$d exists: this machine has an atoll installation"
done
command -v systemd-analyze >/dev/null || skip "no systemd-analyze"
"$src/scripts/deps.sh" debhelper dpkg-dev fakeroot build-essential logrotate rsync fuse3 ||
	skip "cannot install debhelper, dpkg-dev, logrotate"

umask 022	# atoll.conf and the folders made here must be readable by atoll
work=$(mktemp -d /var/tmp/atoll-packages.XXXXXX) || exit 1
cd "$work" || exit 1	# no ./atoll.conf here: the CLI reads /etc/atoll/atoll.conf
export DEBIAN_FRONTEND=noninteractive
unit_exec=$src/tests/packaging/unit_exec.py
declare -A pid=()	# daemon name -> PID (the unit's ExecStart, exec'd)
installed=0
failed=0

# stop_one NAME: SIGTERM to the daemon, SIGKILL (and a failure) if it is
# still there after 60 s; by PID.
stop_one() {
	local n=$1 i
	[ -n "${pid[$n]:-}" ] || return 0
	kill -TERM "${pid[$n]}" 2>/dev/null
	for ((i = 0; i < 600; i++)); do
		kill -0 "${pid[$n]}" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "${pid[$n]}" 2>/dev/null; then
		echo "FAIL $n (pid ${pid[$n]}) ignored SIGTERM for 60 s: killed" >&2
		kill -KILL "${pid[$n]}" 2>/dev/null
		failed=1
	fi
	wait "${pid[$n]}" 2>/dev/null
	unset "pid[$n]"
}

# Stops every daemon this test started, in the order atoll-cluster down
# uses: the cluster's clients (atoll-nbd, the MDS) while the OSDs are
# there to take their last writes, then the OSDs, then the monitor.
stop_daemons() {
	local n
	for n in nbd.data mds.a; do stop_one $n; done
	for n in "${!pid[@]}"; do
		case $n in osd.*) stop_one "$n" ;; esac
	done
	for n in "${!pid[@]}"; do stop_one "$n"; done
}

# The packages dpkg knows, installed or removed with their configuration
# left (a package with no maintainer script nor conffile is forgotten by
# remove: apt-get purge refuses it then).
present() {
	local p st
	for p in "${pkgs[@]}"; do
		st=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
		case $st in ''|un*|pn*) ;; *) echo "$p" ;; esac
	done
}

cleanup() {
	local rc=$?
	mountpoint -q "$work/mnt" && { umount "$work/mnt" || umount -l "$work/mnt"; }
	stop_daemons
	if [ $installed = 1 ]; then
		local here
		here=$(present)
		[ -z "$here" ] || apt-get purge -y -qq $here >/dev/null 2>&1
	fi
	# all three were absent at the start (checked above): this test made them
	rm -rf /etc/atoll /var/lib/atoll /var/log/atoll
	getent passwd atoll >/dev/null && deluser --system --quiet atoll >/dev/null 2>&1
	getent group atoll >/dev/null && delgroup --system --quiet atoll >/dev/null 2>&1
	if [ "${ATOLL_PKG_KEEP:-0}" = 1 ]; then
		echo "kept $work"
	else
		rm -rf "$work"
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() { echo "FAIL $*" >&2; exit 1; }
ok() { echo "ok   $*"; }
free_port() {
	python3 -c 'import socket,sys; s=socket.socket(); s.bind((sys.argv[1],0)); print(s.getsockname()[1])' "$1"
}

# start NAME UNIT INSTANCE [VAR=VALUE...]: runs the installed unit's
# ExecStart= as its User=, in the background.
start() {
	local name=$1 unit=/lib/systemd/system/$2
	shift 2
	[ -f "$unit" ] || fail "$unit is not installed"
	python3 "$unit_exec" "$unit" "$@" </dev/null >>"$work/$name.out" 2>&1 &
	pid[$name]=$!
}

# runs_as NAME USER: the daemon runs, as USER
runs_as() {
	local p=${pid[$1]} u
	kill -0 "$p" 2>/dev/null || fail "$1 exited: $(tail -n 5 "$work/$1.out")"
	u=$(ps -o user= -p "$p" | tr -d ' ')
	[ "$u" = "$2" ] || fail "$1 runs as '$u', not '$2'"
}

# wait_for SECONDS DESCRIPTION COMMAND...: until the command succeeds
wait_for() {
	local t=$1 what=$2 end=$((SECONDS + $1))
	shift 2
	while [ $SECONDS -lt $end ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	fail "$what within $t s"
}

health_is_ok() { [ "$(atoll health 2>/dev/null | head -n 1)" = HEALTH_OK ]; }

# Processes whose program is one of the packages' programs: none may be
# left once the daemons are stopped.
atoll_procs() {
	local e p
	for p in /proc/[0-9]*; do
		e=$(readlink "$p/exe" 2>/dev/null) || continue
		case $e in /usr/bin/atoll*) echo "${p#/proc/} $e" ;; esac
	done
}

# ---- 1. build ---------------------------------------------------------------
t0=$(date +%s)
if [ -n "${ATOLL_PKG_DEBS:-}" ]; then
	cp "$ATOLL_PKG_DEBS"/*.deb "$work/" || fail "no .deb in '$ATOLL_PKG_DEBS'"
	ok "the packages of $ATOLL_PKG_DEBS (ATOLL_PKG_DEBS: not built)"
else
	rsync -a --exclude='/build*/' --exclude=/.git --exclude=/scratch --exclude=__pycache__ \
		"$src/" "$work/atoll/" || fail "cannot copy the source tree"
	(cd "$work/atoll" &&
		DEB_BUILD_OPTIONS="parallel=2 noautodbgsym" nice -n 19 dpkg-buildpackage -us -uc -b) \
		>"$work/build.log" 2>&1 || { tail -n 60 "$work/build.log" >&2; fail "dpkg-buildpackage"; }
	ok "dpkg-buildpackage -us -uc -b ($(( $(date +%s) - t0 )) s)"
fi
for p in "${pkgs[@]}"; do
	f=$(ls "$work/${p}_"*.deb 2>/dev/null | head -n 1)
	[ -n "$f" ] || fail "no $p package built"
done
ok "built: $(cd "$work" && ls ./*.deb | tr '\n' ' ')"
contains() {	# contains PACKAGE PATH: the built package holds PATH
	dpkg-deb -c "$(ls "$work/${1}_"*.deb)" | awk '{ print $6 }' | grep -qx "\.$2"
}
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
contains atoll-mon /usr/bin/atoll-mon && contains atoll-mon /lib/systemd/system/atoll-mon@.service &&
	contains atoll-osd /usr/bin/atoll-osd && contains atoll-osd /usr/bin/atoll-store-tool &&
	contains atoll-osd /lib/systemd/system/atoll-osd@.service &&
	contains atoll-mds /lib/systemd/system/atoll-mds@.service &&
	contains atoll-nbd /lib/systemd/system/atoll-nbd@.service &&
	contains atoll-fuse /usr/bin/atoll-fuse && contains atoll-common /usr/bin/atoll &&
	contains atoll-common /lib/systemd/system/atoll.target &&
	contains atoll-common /etc/logrotate.d/atoll &&
	contains atoll-common /usr/share/doc/atoll/admin.md &&
	contains libatoll1 "/usr/lib/$multiarch/libatoll.so.1" &&
	contains libatoll-dev /usr/include/atoll/atoll.h &&
	contains libatoll-dev "/usr/lib/$multiarch/pkgconfig/atoll.pc" ||
	fail "a package lacks a file it should hold (dpkg-deb -c)"
ok "each package holds its programs, units and files"

# ---- 2. install -------------------------------------------------------------
installed=1
apt-get install -y -qq ./*.deb >"$work/install.log" 2>&1 ||
	{ tail -n 30 "$work/install.log" >&2; fail "apt-get install -y ./*.deb"; }
ok "apt-get install -y ./*.deb"
getent passwd atoll | grep -q ':/var/lib/atoll:/usr/sbin/nologin$' ||
	fail "postinst made no user atoll (home /var/lib/atoll, no shell): $(getent passwd atoll)"
ok "postinst: user atoll ($(getent passwd atoll))"
[ "$(stat -c '%U %a' /var/log/atoll)" = "atoll 750" ] || fail "/var/log/atoll: $(stat -c '%U %a' /var/log/atoll)"
ok "postinst: /var/log/atoll is atoll's, 0750"
[ "$(command -v atoll)" = /usr/bin/atoll ] && atoll --help >/dev/null ||
	fail "the installed atoll does not run"

# ---- 3. units, logrotate -----------------------------------------------------
mkdir -p "$work/units"
units=$(dpkg -L "${pkgs[@]}" | grep '^/lib/systemd/system/.')
[ "$(echo "$units" | wc -l)" = 9 ] || fail "installed units: $units (want 4 templates and 5 targets)"
for u in $units; do
	out=$(systemd-analyze verify "$u" 2>&1)
	[ -z "$out" ] || fail "systemd-analyze verify $u: $out"
	cp "$u" "$work/units/"
done
ok "systemd-analyze verify: $(echo $units | tr '\n' ' ')"
"$src/tests/packaging/units.sh" "$work/units" >"$work/units.log" 2>&1 ||
	{ cat "$work/units.log" >&2; fail "tests/packaging/units.sh on the installed units"; }
ok "the installed units are hardened (units.sh)"
logrotate -d /etc/logrotate.d/atoll >"$work/logrotate.log" 2>&1 &&
	! grep -qi 'error' "$work/logrotate.log" ||
	{ cat "$work/logrotate.log" >&2; fail "logrotate -d /etc/logrotate.d/atoll"; }
ok "logrotate reads /etc/logrotate.d/atoll"

# ---- 4. a cluster from the units, deployed as doc/admin.md says -------------
mon_ip=127.0.0.2
mon_port=$(free_port $mon_ip)
key() { od -An -tx1 -N32 /dev/urandom | tr -d ' \n'; }
(
	umask 077
	{ printf '[mon.]\n\tkey = %s\n' "$(key)"
	  printf '[client.admin]\n\tkey = %s\n' "$(key)"
	  printf '\tcaps mon = allow *\n\tcaps osd = allow *\n\tcaps mds = allow *\n'
	  printf '[client.bootstrap-osd]\n\tkey = %s\n' "$(key)"
	  printf '\tcaps mon = profile bootstrap-osd\n'; } >/etc/atoll/keyring
)
chown atoll:atoll /etc/atoll/keyring
cat >/etc/atoll/atoll.conf <<EOF
[global]
mon_host = $mon_ip:$mon_port
auth = ticket
keyring = /etc/atoll/keyring
[mon]
mon_addr = $mon_ip:$mon_port
[osd]
# the test's stores are not written whole once at mkfs (1 GiB each)
osd_mkfs_prefill = false
EOF
atoll-mon --mkfs --data /var/lib/atoll/mon/a >"$work/mon-mkfs.out" 2>&1 ||
	fail "atoll-mon --mkfs: $(cat "$work/mon-mkfs.out")"
start mon.a atoll-mon@.service a
wait_for "$timeout_s" "the monitor answers" atoll status
runs_as mon.a atoll
[ "$(stat -c %U /var/lib/atoll/mon/a)" = atoll ] || fail "/var/lib/atoll/mon/a is not atoll's"
ok "atoll-mon@a runs as atoll from its unit; its folder handed over"

for h in 0 1 2; do
	id=$(atoll-osd --mkfs --data /var/lib/atoll/osd/$h --mon $mon_ip:$mon_port --size 1G \
		2>"$work/osd-mkfs.err") || fail "atoll-osd --mkfs: $(cat "$work/osd-mkfs.err")"
	[ "$id" = "$h" ] || fail "atoll-osd --mkfs printed id '$id', not $h"
	printf '\n[osd.%s]\nosd_addr = 127.0.0.%s\nosd_host = pkg-host%s\n' "$h" $((h + 3)) "$h" \
		>>/etc/atoll/atoll.conf
	atoll auth get-or-create osd.$h mon 'profile osd' osd 'allow *' \
		--keyring-out "$work/osd$h.keyring" >/dev/null 2>"$work/auth.err" ||
		fail "auth get-or-create osd.$h: $(cat "$work/auth.err")"
	cat "$work/osd$h.keyring" >>/etc/atoll/keyring
	start osd.$h atoll-osd@.service $h
done
atoll pool create data --size 3 --pg 8 >"$work/pool.out" 2>&1 || fail "atoll pool create data: $(cat "$work/pool.out")"
wait_for "$timeout_s" "HEALTH_OK with 3 OSDs" health_is_ok
for h in 0 1 2; do runs_as osd.$h atoll; done
ok "atoll-osd@0..2 run as atoll from their unit; HEALTH_OK"
head -c 1048576 /dev/urandom >"$work/obj"
atoll put data greeting "$work/obj" || fail "atoll put"
atoll get data greeting "$work/obj.back" || fail "atoll get"
cmp -s "$work/obj" "$work/obj.back" || fail "the object read back differs"
ok "an object round-trips with the installed atoll"

# the file system: an MDS from its unit, mounted with the fstab line
mds_port=$(free_port $mon_ip)
printf '\n[mds]\nmds_addr = %s:%s\n' $mon_ip "$mds_port" >>/etc/atoll/atoll.conf
atoll auth get-or-create mds.a mon 'profile mds' osd 'allow *' mds 'allow *' \
	--keyring-out "$work/mds.keyring" >/dev/null 2>"$work/auth.err" ||
	fail "auth get-or-create mds.a: $(cat "$work/auth.err")"
cat "$work/mds.keyring" >>/etc/atoll/keyring
atoll pool create fs_meta --size 3 --pg 8 >"$work/pool.out" 2>&1 &&
	atoll pool create fs_data --size 3 --pg 8 >>"$work/pool.out" 2>&1 ||
	fail "the file system's pools: $(cat "$work/pool.out")"
start mds.a atoll-mds@.service a
wait_for "$timeout_s" "mds.a active" sh -c 'atoll fs status 2>/dev/null | grep -q "active: *mds\.a "'
runs_as mds.a atoll
mkdir -p "$work/mnt"
# (run here, where the folder "atoll" of the source copy would turn a
# source "atoll" into its path: "atoll:" is what doc/fs.md writes)
echo "atoll: $work/mnt fuse.atoll-fuse conf=/etc/atoll/atoll.conf,_netdev 0 0" >"$work/fstab"
mount -T "$work/fstab" "$work/mnt" 2>"$work/mount.err" ||
	fail "mount -T FSTAB (atoll: MNT fuse.atoll-fuse conf=...,_netdev): $(cat "$work/mount.err")"
mountpoint -q "$work/mnt" || fail "mount returned but $work/mnt is not mounted"
cp "$work/obj" "$work/mnt/file" && cmp -s "$work/obj" "$work/mnt/file" ||
	fail "a file written through the mount reads back different"
mkdir "$work/mnt/sub" && echo hello >"$work/mnt/sub/hi" || fail "mkdir on the mount"
umount "$work/mnt" || fail "umount"
ok "the fstab line mounts the file system (fuse.atoll-fuse, _netdev)"
mount.fuse3 "atoll-fuse#atoll:/sub" "$work/mnt" -o conf=/etc/atoll/atoll.conf,_netdev \
	2>"$work/mount.err" || fail "mount.fuse3 atoll-fuse#atoll:/sub: $(cat "$work/mount.err")"
[ "$(cat "$work/mnt/hi" 2>/dev/null)" = hello ] || fail "atoll:/sub did not mount the folder sub"
umount "$work/mnt" || fail "umount"
ok "mount.fuse3 atoll-fuse#atoll:/sub mounts the folder sub"
fuse_gone() { ! atoll_procs | grep -q atoll-fuse; }
wait_for 20 "atoll-fuse gone after umount" fuse_gone

# block images: atoll-nbd@data from its unit, the address from a drop-in's
# Environment= (here the runner's VAR=VALUE)
nbd_port=$(free_port $mon_ip)
atoll auth get-or-create client.nbd mon 'profile client, profile blocklist' \
	osd 'allow rw pool=data' --keyring-out "$work/nbd.keyring" >/dev/null 2>"$work/auth.err" ||
	fail "auth get-or-create client.nbd: $(cat "$work/auth.err")"
cat "$work/nbd.keyring" >>/etc/atoll/keyring
atoll image create data disk1 --size 64M >/dev/null || fail "atoll image create"
start nbd.data atoll-nbd@.service data ATOLL_NBD_ADDR=$mon_ip:$nbd_port "ATOLL_NBD_OPTS=--name client.nbd"
if command -v nbdinfo >/dev/null; then
	wait_for "$timeout_s" "nbdinfo sees disk1" nbdinfo --size "nbd://$mon_ip:$nbd_port/disk1"
	[ "$(nbdinfo --size "nbd://$mon_ip:$nbd_port/disk1")" = 67108864 ] || fail "disk1's size over NBD"
	ok "atoll-nbd@data serves disk1 (nbdinfo)"
fi
runs_as nbd.data atoll
for f in mon.a osd.0 mds.a nbd.data; do
	[ -s "/var/log/atoll/$f.log" ] || fail "no /var/log/atoll/$f.log"
done
ok "each daemon logs to /var/log/atoll/NAME.log"

# ---- 5. remove, purge ---------------------------------------------------------
stop_daemons
[ $failed = 0 ] || fail "a daemon did not stop on SIGTERM"
procs=$(atoll_procs)
[ -z "$procs" ] || fail "processes left after the daemons stopped: $procs"
ok "every daemon stopped on SIGTERM"
apt-get remove -y -qq "${pkgs[@]}" >"$work/remove.log" 2>&1 ||
	{ tail -n 20 "$work/remove.log" >&2; fail "apt-get remove"; }
[ ! -e /usr/bin/atoll-mon ] || fail "apt-get remove left /usr/bin/atoll-mon"
for f in /var/lib/atoll/mon/a/store /var/lib/atoll/osd/0/block /var/lib/atoll/osd/2/block \
	/etc/atoll/atoll.conf /etc/atoll/keyring /var/log/atoll/osd.1.log; do
	[ -e "$f" ] || fail "apt-get remove took $f"
done
getent passwd atoll >/dev/null || fail "apt-get remove took the user atoll"
ok "apt-get remove keeps the stores, atoll.conf, the keyring, the logs and the user"

mkdir -p /etc/systemd/system/atoll-osd.target.wants
ln -s /lib/systemd/system/atoll-osd@.service /etc/systemd/system/atoll-osd.target.wants/atoll-osd@0.service
apt-get purge -y -qq $(present) >"$work/purge.log" 2>&1 ||
	{ tail -n 20 "$work/purge.log" >&2; fail "apt-get purge"; }
for f in /var/lib/atoll/mon/a/store /var/lib/atoll/osd/1/block /etc/atoll/atoll.conf /etc/atoll/keyring; do
	[ -e "$f" ] || fail "apt-get purge deleted $f (a store or the admin's file)"
done
getent passwd atoll >/dev/null || fail "purge removed the user atoll while stores remain"
grep -q 'the user atoll stays' "$work/purge.log" || fail "purge did not say why the user stays"
for f in /var/log/atoll /etc/logrotate.d/atoll /etc/systemd/system/atoll-osd.target.wants; do
	[ ! -e "$f" ] || fail "apt-get purge left $f"
done
left=$(dpkg -l "${pkgs[@]}" 2>/dev/null | awk '/^[a-z][a-z] / && $1 != "un" && $1 != "pn" { print $2 }')
[ -z "$left" ] || fail "packages left after purge: $left"
ok "apt-get purge removes the logs and enabled instances, keeps the stores, configuration and user"

# the administrator removes the stores and the configuration; a purge then
# removes the user and every folder
rm -rf /var/lib/atoll/mon/a /var/lib/atoll/osd/0 /var/lib/atoll/osd/1 /var/lib/atoll/osd/2 \
	/var/lib/atoll/mon /var/lib/atoll/osd /etc/atoll/atoll.conf /etc/atoll/keyring
apt-get install -y -qq ./atoll-common_*.deb ./libatoll1_*.deb >"$work/install2.log" 2>&1 ||
	{ tail -n 20 "$work/install2.log" >&2; fail "apt-get install atoll-common again"; }
apt-get purge -y -qq atoll-common libatoll1 >"$work/purge2.log" 2>&1 ||
	{ tail -n 20 "$work/purge2.log" >&2; fail "apt-get purge atoll-common"; }
for f in /var/lib/atoll /etc/atoll /var/log/atoll; do
	[ ! -e "$f" ] || fail "purge left $f"
done
! getent passwd atoll >/dev/null || fail "purge left the user atoll"
! getent group atoll >/dev/null || fail "purge left the group atoll"
links=$(find /etc/systemd /var/lib/systemd/deb-systemd-helper-enabled \
	/var/lib/systemd/deb-systemd-helper-masked -name '*atoll*' 2>/dev/null)
[ -z "$links" ] || fail "systemd links or state left after purge: $links"
procs=$(atoll_procs)
[ -z "$procs" ] || fail "processes left: $procs"
ok "with the stores gone, purge removes the user, the group and every folder; nothing runs"
installed=0
[ $failed = 0 ] || fail "see above"
echo "packages: all passed"
