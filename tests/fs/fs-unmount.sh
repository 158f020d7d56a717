#!/bin/bash
# tests/fs/fs-unmount.sh - atoll-fuse exits after its unmount, whatever
# the MDS does (doc/fs-design.md, "Unmounting"), on one small cluster
# (lib.sh):
#  - the MDS killed with -9 and not coming back, with changes it answered
#    but never journaled (a slow journal): `fusermount3 -u` of a
#    background mount started with -o log=FILE; atoll-fuse must be gone
#    within EXIT_BOUND seconds, with no mount left, and its log file must
#    say that it gave up on the MDS and name the changes that may be lost;
#  - the MDS killed with -9 and restarted, both mounts unmounted at once
#    while its reconnect window waits for a third client (killed with -9)
#    that never comes back: both clients gone within EXIT_BOUND seconds
#    (before the window's end), their sessions ended, their changes there;
#  - atoll-fuse stopped with SIGTERM while a program waits on the mount for
#    a dead MDS: gone within EXIT_BOUND seconds, the program told ENOTCONN
#    or EIO, no mount left;
#  - SIGTERM while a file is open with 1 MiB written into atoll-fuse's
#    buffer and the OSD is dead: gone within EXIT_BOUND seconds, its log
#    (-o log=FILE with -f) naming the bytes the OSDs did not confirm.
# Usage: fs-unmount.sh ATOLL-CLUSTER ATOLL-FUSE ATOLL
set -u
cluster_bin=${1:?usage: $0 ATOLL-CLUSTER ATOLL-FUSE ATOLL}
fuse_bin=${2:?}
atoll_cli=${3:?}
. "$(dirname "$0")/lib.sh"
# what doc/fs.md promises: gone at most 10 s after the unmount
EXIT_BOUND=10
fs_setup
mds_log=$cdir/log/mds.a.log

mds() { "$cluster_bin" mds "$1" --dir "$cdir" >>"$tmp/mds-cmd.log" 2>&1 || { cat "$tmp/mds-cmd.log" >&2; fail "atoll-cluster mds $1"; }; }
fsj() { "$atoll_cli" fs status --format json >"$tmp/fs.json" || fail "atoll fs status failed"; }
fsv() { python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$tmp/fs.json" "$1"; }
mounted() { grep -q " $1 fuse" /proc/mounts; }

# fuse_pid_of DIR: the atoll-fuse serving DIR (a background one's pid is
# not $!: it forked)
fuse_pid_of() {
	local p
	for p in /proc/[0-9]*; do
		tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -q "^$fuse_bin $1 " && { echo "${p#/proc/}"; return 0; }
	done
	return 1
}

# alive PID: runs (a zombie waiting to be reaped has exited)
alive() { [ -d /proc/$1 ] && ! grep -q '^State:.*Z' /proc/$1/status 2>/dev/null; }
# gone_within PID SECONDS WHAT: fails unless PID exits within SECONDS
gone_within() {
	local i
	for i in $(seq 1 $(($2 * 10))); do
		alive "$1" || return 0
		sleep 0.1
	done
	fail "$3: atoll-fuse $1 still runs $2 s after its unmount"
}

# unmount_gone DIR PID: unmounts DIR, requires PID gone within EXIT_BOUND
# seconds and no mount left; prints how long it took
unmount_gone() {
	local t0=$(date +%s.%N)
	fusermount3 -u "$1" || fail "fusermount3 -u $1"
	gone_within "$2" $EXIT_BOUND "unmount of $1"
	! mounted "$1" || fail "$1 is still mounted"
	echo "   atoll-fuse of $1 exited $(echo "$(date +%s.%N) - $t0" | bc) s after fusermount3 -u"
}

step "the MDS killed with -9, not coming back: a background mount's atoll-fuse exits after its unmount"
# a slow journal: the MDS answers changes (early replies) seconds before
# it journals them, so the kill leaves changes the client alone holds
mds stop
if ! faults_compiled; then
	echo "skipped: this build has no fault injection (-Dfault_injection=false)"
else
with_faults mds_journal_delay_ms=3000 mds start
M=$tmp/mnt-bg
mkdir -p "$M"
"$fuse_bin" "$M" -o "conf=$conf,log=$tmp/bg.log" >"$tmp/bg.out" 2>&1 || { cat "$tmp/bg.out"; fail "atoll-fuse (background, -o log=) failed"; }
mounted "$M" || fail "atoll-fuse returned before its mount existed"
bgpid=$(fuse_pid_of "$M") || fail "no atoll-fuse serves $M"
fuse_pids+=("$bgpid")
mkdir "$M/unjournaled" && echo data >"$M/unjournaled/file" || fail "cannot write through the background mount"
mds kill
unmount_gone "$M" "$bgpid"
[ -s "$tmp/bg.out" ] && fail "the background atoll-fuse printed on its terminal after mounting: $(cat "$tmp/bg.out")"
# its log: one line per event, with the time and who wrote it
grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z fuse (ERROR|WARN|INFO) ' "$tmp/bg.log" ||
	fail "-o log= wrote no log line: $(cat "$tmp/bg.log")"
grep -q "did not answer within .* of the unmount of $M" "$tmp/bg.log" ||
	fail "atoll-fuse did not log that it gave up on the MDS: $(cat "$tmp/bg.log")"
grep -q "not journaled .* may be lost" "$tmp/bg.log" ||
	fail "atoll-fuse did not log the changes the MDS never journaled: $(cat "$tmp/bg.log")"
grep -q "mkdir 'unjournaled'" "$tmp/bg.log" ||
	fail "atoll-fuse did not name the unjournaled mkdir: $(cat "$tmp/bg.log")"
fi

step "the MDS killed with -9 and restarted, both mounts unmounted at once: both clients exit"
mds start
A=$tmp/mnt1
B=$tmp/mnt2
mount_fs "$A" "$tmp/fuse1.log"
mount_fs "$B" "$tmp/fuse2.log"
pa=${fuse_pids[-2]}
pb=${fuse_pids[-1]}
mkdir "$A/da" && echo a >"$A/da/f" && mkdir "$B/db" && echo b >"$B/db/f" || fail "writing on the mounts"
# a third client killed with -9 keeps a session the restarted MDS waits
# for: its reconnect window runs its full time (atoll-fuse used to wait
# for the window's end to send SESSION_END)
K=$tmp/mnt-killed
mount_fs "$K" "$tmp/fuse-killed.log"
kill -9 "${fuse_pids[-1]}"
fusermount3 -u "$K" || fail "fusermount3 -u of a mount whose atoll-fuse was killed"
w0=$(grep -c "reconnect window over" "$mds_log")
mds kill
with_mds_conf mds_reconnect_ms=20000 mds start	# past the bound: an unmount it holds fails
fusermount3 -u "$A" & ua=$!
fusermount3 -u "$B" & ub=$!
wait $ua || fail "fusermount3 -u $A"
wait $ub || fail "fusermount3 -u $B"
t0=$(date +%s.%N)
gone_within "$pa" $EXIT_BOUND "unmount of $A right after an MDS restart"
gone_within "$pb" $EXIT_BOUND "unmount of $B right after an MDS restart"
echo "   both exited within $(echo "$(date +%s.%N) - $t0" | bc) s"
[ "$(grep -c "reconnect window over" "$mds_log")" = "$w0" ] ||
	fail "the MDS's reconnect window ended before both clients exited: nothing held their unmount up"
! mounted "$A" && ! mounted "$B" || fail "a mount is left after the unmount"
# a new session waits for the window's end (20 s from the MDS's start,
# mount_fs's own limit): wait for it first
for _ in $(seq 1 400); do
	[ "$(grep -c "reconnect window over" "$mds_log")" != "$w0" ] && break
	sleep 0.1
done
C=$tmp/mnt3
mount_fs "$C" "$tmp/fuse3.log"
[ "$(cat "$C/da/f" "$C/db/f" 2>&1)" = "$(printf 'a\nb')" ] || fail "the changes made before the restart are not all there: $(ls -R "$C")"
fsj
[ "$(fsv "j['sessions']")" = 1 ] || fail "the unmounted clients' sessions did not end: $(cat "$tmp/fs.json")"

step "SIGTERM while a program waits on the mount for a dead MDS: atoll-fuse exits"
pc=${fuse_pids[-1]}
mds kill
stat "$C/nothing-here" >"$tmp/stat.out" 2>&1 & st=$!
sleep 1
kill -0 $st 2>/dev/null || fail "stat on a mount whose MDS is dead did not wait (hard mount): $(cat "$tmp/stat.out")"
kill -TERM "$pc"
gone_within "$pc" $EXIT_BOUND "SIGTERM with a request waiting for the MDS"
wait $st && fail "stat succeeded with the MDS dead"
grep -Eq "Transport endpoint is not connected|Input/output error|No such file" "$tmp/stat.out" ||
	fail "stat got an unexpected error: $(cat "$tmp/stat.out")"
for _ in $(seq 1 30); do mounted "$C" || break; sleep 0.1; done
! mounted "$C" || fail "$C is still mounted after atoll-fuse exited"
mds start
# C's session waits for a reconnect window that would hold the next
# mount's requests: its end first
for _ in $(seq 1 250); do fsj; [ "$(fsv "j['state']")" = active ] && break; sleep 0.1; done
[ "$(fsv "j['state']")" = active ] || fail "the MDS is not active 25 s after its restart: $(cat "$tmp/fs.json")"

step "SIGTERM with a file open and written, the OSD dead: atoll-fuse exits and logs the data the OSDs did not take"
D=$tmp/mnt4
mount_fs "$D" "$tmp/fuse4.log" "log=$tmp/fuse4-file.log"
pd=${fuse_pids[-1]}
# the file is made while the OSD runs (the MDS reads and writes its
# objects); the write, after the kill, is answered from atoll-fuse's
# buffer; the descriptor stays open, so only a signal ends this mount
python3 -c 'import os, sys, time
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o644)
open(sys.argv[2] + "/created", "w").close()
while not os.path.exists(sys.argv[2] + "/go"):
    time.sleep(0.05)
os.write(fd, b"x" * 1048576)
open(sys.argv[2] + "/written", "w").close()
time.sleep(600)' "$D/held" "$tmp" 2>/dev/null & holder=$!
for _ in $(seq 1 100); do [ -e "$tmp/created" ] && break; sleep 0.1; done
[ -e "$tmp/created" ] || fail "cannot create a file on $D"
"$cluster_bin" osd kill 0 --dir "$cdir" >>"$tmp/osd-cmd.log" 2>&1 || fail "atoll-cluster osd kill 0: $(cat "$tmp/osd-cmd.log")"
touch "$tmp/go"
for _ in $(seq 1 100); do [ -e "$tmp/written" ] && break; sleep 0.1; done
[ -e "$tmp/written" ] || fail "a write on a mount whose OSD is dead was not answered (write-back)"
kill -TERM "$pd"
gone_within "$pd" $EXIT_BOUND "SIGTERM with buffered writes and the OSD dead"
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
grep -q "1048576 byte(s) written through $D (offsets 0 to 1048576) were not confirmed durable by the OSDs within 5 s of its unmount: they may be lost" "$tmp/fuse4-file.log" ||
	fail "atoll-fuse did not log the data the OSDs did not take: $(cat "$tmp/fuse4-file.log")"
# -o log= with -f: the file, not stderr
grep -q "not confirmed durable" "$tmp/fuse4.log" && fail "-o log= with -f also logged to stderr"
for _ in $(seq 1 30); do mounted "$D" || break; sleep 0.1; done
! mounted "$D" || fail "$D is still mounted after atoll-fuse exited"
"$cluster_bin" osd start 0 --dir "$cdir" >>"$tmp/osd-cmd.log" 2>&1 || fail "atoll-cluster osd start 0: $(cat "$tmp/osd-cmd.log")"
echo "fs-unmount: all checks passed"
