#!/bin/bash
# tests/fs/fs-mds-restarts.sh - the MDS killed with -9 and restarted
# again and again under two mounts whose writers create, rename and
# remove files without a pause (one small cluster, lib.sh).  Each writer
# notes an operation in its ledger only once the operation returned;
# no operation may fail across the restarts, and at the end both mounts
# must show every ledger exactly (names, contents, removals).
# What it guards: after a restart a client's resends of what the MDS had
# answered but not journaled must reach the MDS before anything newer of
# that client (a rename sent before the resent create of its file got
# ENOENT: doc/fs-design.md, "The journal").
# Before that, opens across a restart: a file unlinked on one mount while
# the other holds it open must stay readable through the open descriptor
# after an MDS restart (the client re-counts its opens with the restarted
# MDS), and its data must go after the last close; one closed while the
# MDS was down must be purged after the restart.
# Usage: fs-mds-restarts.sh ATOLL-CLUSTER ATOLL-FUSE ATOLL MDS_BIGDIR [KILLS]
set -u
cluster_bin=${1:?usage: $0 ATOLL-CLUSTER ATOLL-FUSE ATOLL MDS_BIGDIR [KILLS]}
fuse_bin=${2:?}
atoll_cli=${3:?}
bigdir=${4:?}
kills=${5:-8}
. "$(dirname "$0")/lib.sh"
fs_setup

mds() { "$cluster_bin" mds "$1" --dir "$cdir" >>"$tmp/mds-cmd.log" 2>&1 || { cat "$tmp/mds-cmd.log" >&2; fail "atoll-cluster mds $1"; }; }

step "two mounts"
A=$tmp/mnt1
B=$tmp/mnt2
mount_fs "$A" "$tmp/fuse1.log"
mount_fs "$B" "$tmp/fuse2.log"

# the data objects of inode $1 in the data pool
objs_of() { "$atoll_cli" ls fs_data | grep "^$(printf '%016x' "$1")\." || true; }
# journaled MOUNT...: an fsync of each mount's root, which returns once
# every change that mount made is journaled by the MDS (its unsafe
# requests and the removals and creates it answered itself: fsyncdir,
# doc/fs-design-client.md).  Called before a kill that must find a file
# unlinked: an unlink is answered before it is journaled (early
# replies), and one still unjournaled at the kill reaches the restarted
# MDS as a resend in its reconnect window instead.  So would the
# removals of an earlier `rm -r` still waiting for the journal, and the
# MDS counts every file whose last name goes in the window among the
# "unlinked file(s) open before the restart" (doc/fs-design.md, "Open
# files across a restart"): thousands instead of this step's one.
journaled() {
	local m
	for m in "$@"; do
		python3 -c 'import os, sys; os.fsync(os.open(sys.argv[1], os.O_RDONLY))' "$m" ||
			fail "fsync of $m"
	done
}
window_over() {	# waits for the N-th "reconnect window over" in the MDS log
	local _
	for _ in $(seq 1 300); do
		[ "$(grep -c "reconnect window over" "$cdir/log/mds.a.log")" -ge "$1" ] && return 0
		sleep 0.1
	done
	fail "the restarted MDS's reconnect window did not end"
}

step "directories: objects only for entries, parents known after a restart"
# doc/fs-design.md, "Namespace layout in the metadata pool": a
# directory's object holds its entries only (its parent is in its inode
# record), so one that never had entries has none
dirobj() { "$atoll_cli" ls fs_meta | grep -c "^fs\.dir\.$(printf '%016x' "$1")$" || true; }
mkdir -p "$A/t/a/b/c" "$A/t/empty" "$A/t/full"
touch "$A/t/full/f"
ino_empty=$(stat -c %i "$A/t/empty") ino_full=$(stat -c %i "$A/t/full")
# the MDS writes the objects shortly after it journals (its applier)
for _ in $(seq 1 50); do [ "$(dirobj "$ino_full")" = 1 ] && break; sleep 0.1; done
[ "$(dirobj "$ino_full")" = 1 ] || fail "a directory with an entry has no object"
[ "$(dirobj "$ino_empty")" = 0 ] || fail "a directory that never had entries has an object"
nw=$(grep -c "reconnect window over" "$cdir/log/mds.a.log")
mds kill
mds start	# a cold cache: parents come from the inode records
window_over $((nw + 1))
# the kernel refuses these itself; the MDS is asked directly (mds_bigdir)
mds_addr=$(awk '/^mds_addr/ {print $3}' "$conf")
into_itself() {	# into_itself SRC DST: the MDS must answer EINVAL
	local out
	out=$("$bigdir" "$mds_addr" rename "$1" "$2") || fail "mds_bigdir rename $1 $2"
	[ "$out" = "rename: -22" ] || fail "the MDS moved $1 to $2 (under itself): $out"
}
into_itself t/a t/a/b/c/x
mv "$B/t/a/b/c" "$B/t/empty/" || fail "moving a directory across directories after the restart"
mv "$B/t/a" "$B/t/empty/c/" || fail "moving a directory under one moved before"
into_itself t/empty t/empty/c/a/b/x
into_itself t/empty/c t/empty/c/a/y
[ "$(ls "$B/t/empty")" = c ] && [ "$(ls "$B/t/empty/c/a")" = b ] || fail "the moved tree: $(find "$B/t")"
rm "$A/t/full/f"
rmdir "$A/t/full" || fail "rmdir of a directory whose entry was removed"
for _ in $(seq 1 50); do [ "$(dirobj "$ino_full")" = 0 ] && break; sleep 0.1; done
[ "$(dirobj "$ino_full")" = 0 ] || fail "the object of a removed directory is still there"
rm -r "$A/t"

step "creates answered here and cut off by a kill -9 are resent in their order"
# mount 3 makes files, folders and files in those folders in a folder
# only it uses: each answered at once, the MDS's create sent behind
# (doc/fs-design-client.md, "Asynchronous creates").  The MDS dies
# mid-burst; what was in flight must reach the restarted MDS in order (a
# folder before the file in it: else that create is refused) and nothing
# may be missing.
C=$tmp/mnt3
mount_fs "$C" "$tmp/fuse3.log"
mkdir "$C/burst" || fail "mkdir burst"
python3 - "$C/burst" "$tmp/burst.n" <<'PY' 2>"$tmp/burst.err" &
import os, sys
d, cnt = sys.argv[1], sys.argv[2]
for i in range(1, 3001):
    os.close(os.open("%s/f%d" % (d, i), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    if i % 10 == 0:
        os.mkdir("%s/d%d" % (d, i))
        os.close(os.open("%s/d%d/x" % (d, i), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    if i % 100 == 0:
        with open(cnt, "w") as f:
            f.write(str(i))
PY
burst=$!
for _ in $(seq 1 200); do [ "$(cat "$tmp/burst.n" 2>/dev/null || echo 0)" -ge 600 ] && break; sleep 0.05; done
nw=$(grep -c "reconnect window over" "$cdir/log/mds.a.log")
mds kill
mds start
wait $burst || fail "the burst of creates failed across the restart: $(cat "$tmp/burst.err")"
window_over $((nw + 1))
for m in "$C" "$B"; do
	[ "$(ls "$m/burst" | wc -l)" = 3300 ] || fail "$m/burst lists $(ls "$m/burst" | wc -l) names, not 3300"
	[ "$(ls "$m"/burst/d*/x | wc -l)" = 300 ] || fail "$m/burst: files in the new folders missing"
done
c3=${fuse_pids[-1]}
fusermount3 -u "$C" || fail "unmounting mount 3"
for _ in $(seq 1 100); do kill -0 "$c3" 2>/dev/null || break; sleep 0.1; done
grep -q "refused by the MDS after: 0 removals, 0 creates" "$tmp/fuse3.log" ||
	fail "the MDS refused creates mount 3 answered: $(grep -E 'refused|creates answered' "$tmp/fuse3.log")"
grep -E "creates answered here|answered here to the MDS" "$tmp/fuse3.log" | sed 's/^[^ ]* //'
rm -r "$B/burst"

step "a file unlinked while open stays readable across an MDS restart"
head -c 5000000 /dev/urandom >"$tmp/held.src"
cp "$tmp/held.src" "$A/held"
ino=$(stat -c %i "$A/held")
exec 3<"$B/held"
rm "$A/held"
[ ! -e "$B/held" ] || fail "the unlinked file is still visible"
journaled "$A" "$B"	# the unlink, and mount 2's rm -r above, are in the journal
nw=$(grep -c "reconnect window over" "$cdir/log/mds.a.log")
mds kill
mds start	# atoll-cluster must not pass fd 3 on to the MDS (it would hold the file)
window_over $((nw + 1))
sleep 1
[ -n "$(objs_of "$ino")" ] || fail "the restarted MDS purged the data of a file mount 2 holds open"
cmp - "$tmp/held.src" <&3 || fail "the open descriptor no longer reads the unlinked file after the MDS restart"
grep -q "1 unlinked file(s) open before the restart: 0 removed with their data, 1 still open" \
	"$cdir/log/mds.a.log" || fail "the MDS did not report the re-opened orphan: $(grep unlinked "$cdir/log/mds.a.log")"
exec 3<&-
for _ in $(seq 1 100); do [ -z "$(objs_of "$ino")" ] && break; sleep 0.2; done
[ -z "$(objs_of "$ino")" ] || fail "the unlinked file's data was not purged within 20 s of its last close"

step "a file unlinked while open and closed while the MDS is down goes after the restart"
cp "$tmp/held.src" "$A/held2"
ino=$(stat -c %i "$A/held2")
exec 3<"$B/held2"
rm "$A/held2"
journaled "$A"	# found unlinked by the restarted MDS, not resent to it
nw=$(grep -c "reconnect window over" "$cdir/log/mds.a.log")
mds kill
exec 3<&-
mds start
window_over $((nw + 1))
for _ in $(seq 1 100); do [ -z "$(objs_of "$ino")" ] && break; sleep 0.2; done
[ -z "$(objs_of "$ino")" ] || fail "an orphan closed while the MDS was down was not purged after its restart"

# lib.sh's ledger_writer: creates, renames every 3rd, removes every 5th
ledger_writer "$A" a w 2>"$tmp/w.a.err" & wa=$!
ledger_writer "$B" b w 2>"$tmp/w.b.err" & wb=$!
alive() { kill -0 $wa 2>/dev/null && kill -0 $wb 2>/dev/null; }

for k in $(seq 1 "$kills"); do
	step "kill -9 of the MDS, $k of $kills"
	# a kill at a different point of the writers' work each time
	sleep "1.$((RANDOM % 10))"
	alive || fail "a writer failed before kill $k: $(cat "$tmp"/w.*.err)"
	mds kill
	mds start
done
sleep 1
touch "$tmp/w.stop"
wait $wa || fail "mount 1's writer failed across the restarts: $(cat "$tmp/w.a.err")"
wait $wb || fail "mount 2's writer failed across the restarts: $(cat "$tmp/w.b.err")"

step "the ledgers, on both mounts"
ops=0
for t in a b; do
	for m in "$A" "$B"; do
		ledger_check w $t "$m" "after the restarts"
		ops=$((ops + ledger_n))
	done
done
[ $ops -ge 100 ] || fail "the writers did only $ops operations"
echo "ok: $kills restarts, $((ops / 2)) operations checked on both mounts"
