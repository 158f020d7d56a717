#!/bin/bash
# tests/fs/fs-semantics.sh - two promises of the file system that a
# black-box check of POSIX behaviour caught broken (issue 37), on one
# small cluster (lib.sh) with two mounts:
#  - rename() over an existing file is atomic to every other reader: a
#    reader opening the target in a loop while another process renames
#    new files over it never sees ENOENT (what every editor's and package
#    manager's atomic save relies on), with the reader on the same mount
#    as the renamer and on another one; the files replaced are removed
#    after their moment to linger (the inode count comes back);
#  - timestamps before 1970 and after 2038 round-trip, with their
#    nanoseconds: `touch -d 1960-01-01` reads back as -315619200, on the
#    mount that set it and on the other one, after both remount, after
#    the MDS is killed (its journal replayed) and after it is stopped
#    (read from the inode records).
# Usage: fs-semantics.sh ATOLL-CLUSTER ATOLL-FUSE ATOLL
set -u
cluster_bin=${1:?usage: $0 ATOLL-CLUSTER ATOLL-FUSE ATOLL}
fuse_bin=${2:?}
atoll_cli=${3:?}
. "$(dirname "$0")/lib.sh"
fs_setup

A=$tmp/mnt1
B=$tmp/mnt2
# log_level=debug: a lookup or open that fails is logged with where its
# answer came from (the leased listing or the MDS); fail_race shows them
mount_fs "$A" "$tmp/fuse1.log" log_level=debug
mount_fs "$B" "$tmp/fuse2.log" log_level=debug

# fail_race MESSAGE: fail, with what each mount logged of its failed
# lookups and opens and of creates the MDS refused
fail_race() {
	local f
	for f in "$tmp"/fuse*.log; do
		echo "---- $f: failed lookups and opens, refused changes" >&2
		grep -E "lookup of|open of inode|refused" "$f" | tail -n 20 >&2
	done
	fail "$@"
}

# rename_race WDIR RDIR SECONDS: a writer renames fresh files over
# WDIR/target for SECONDS while a reader opens and reads RDIR/target in a
# loop (the same folder seen through RDIR's mount); fails at the first
# ENOENT (or any error) the reader sees, or a partial content.
rename_race() {
	python3 - "$1" "$2" "$3" <<'EOF' || fail_race "rename over a file: $1 -> reader in $2"
import os, sys, time
wdir, rdir, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
target = os.path.join(wdir, "target")
with open(target, "w") as f:
    f.write("v0\n" * 100)
# the reader's mount must see the first version before the race starts
end = time.monotonic() + 10
while not os.path.exists(os.path.join(rdir, "target")):
    if time.monotonic() > end:
        sys.exit("the reader's mount does not see the target")
    time.sleep(0.05)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    # the reader: until the writer's pipe closes
    os.close(w)
    os.set_blocking(r, False)
    path = os.path.join(rdir, "target")
    opens = 0
    while True:
        try:
            if os.read(r, 1) == b"":
                break
        except BlockingIOError:
            pass
        try:
            with open(path) as f:
                data = f.read()
        except OSError as e:
            print("reader: open/read of %s failed after %d opens: %s" % (path, opens, e),
                  file=sys.stderr)
            os._exit(1)
        opens += 1
        lines = data.splitlines()
        if len(lines) != 100 or len(set(lines)) != 1:
            print("reader: %s has a partial content (%d lines)" % (path, len(lines)),
                  file=sys.stderr)
            os._exit(1)
    print("reader: %d opens" % opens, flush=True)
    os._exit(0)
os.close(r)
i = 0
end = time.monotonic() + secs
ok = True
while time.monotonic() < end:
    i += 1
    tmp = os.path.join(wdir, ".target.%d" % i)
    with open(tmp, "w") as f:
        f.write(("v%d\n" % i) * 100)
    os.rename(tmp, target)
    if os.waitpid(pid, os.WNOHANG)[0]:
        ok = False	# the reader failed
        break
os.close(w)
print("writer: %d renames" % i, flush=True)
if not ok:
    sys.exit(1)
_, st = os.waitpid(pid, 0)
sys.exit(0 if os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0 else 1)
EOF
}

# settled: the files the renames replaced are gone once their moment to
# linger is over (mds_linger.c: 5 s, then the MDS's sweep), so each step
# starts with their purge done; left: the root, the folders made so far
# and their targets
iused() { df --output=iused "$A" | tail -n 1 | tr -d ' '; }
settled() {
	for _ in $(seq 1 150); do [ "$(iused)" -le "$1" ] && return 0; sleep 0.2; done
	fail "$(iused) inodes in use 30 s after the renames; $1 expected"
}

step "rename over a file, reader on the same mount"
mkdir "$A/same" || fail "mkdir"
rename_race "$A/same" "$A/same" 5
settled 3

step "rename over a file, reader on the other mount"
mkdir "$A/across" || fail "mkdir"
rename_race "$A/across" "$B/across" 5
settled 5

step "rename over a file, both ways at once across the two mounts"
mkdir "$A/both" || fail "mkdir"
rename_race "$A/both" "$B/both" 5 &
p1=$!
# the second reader starts once the writer has made the first version of
# the target: on a busy machine the writer's python may start seconds
# late, and an open before that is an ENOENT the file system owes nobody
python3 -c 'import os, sys, time
end = time.monotonic() + 10
while not os.path.exists(sys.argv[1]):
    if time.monotonic() > end:
        sys.exit("the writer made no target in 10 s")
    time.sleep(0.01)
end = time.monotonic() + 5
while time.monotonic() < end:
    with open(sys.argv[1]) as f:
        f.read()' "$A/both/target" || fail_race "a second reader on the renaming mount saw the target missing"
wait $p1 || fail_race "rename over a file with readers on both mounts"
step "the files the renames replaced go once their moment to linger is over"
settled 7

# check_time FILE WANT_S WANT_NS: stat's %Y (seconds) and the
# nanoseconds of the mtime
check_time() {
	local got
	got=$(stat -c '%Y %y' "$1") || fail "stat $1"
	set -- "$1" "$2" "$3" "$got"
	local s=${4%% *} frac
	frac=$(sed -E 's/.*\.([0-9]{9}).*/\1/' <<<"$4")
	[ "$s" = "$2" ] || fail "$1: mtime $s, want $2 ($4)"
	[ "$((10#$frac))" = "$3" ] || fail "$1: mtime's nanoseconds $frac, want $3 ($4)"
}

step "timestamps before 1970 and after 2038 round-trip"
export TZ=UTC
touch -d 1960-01-01 "$A/old" || fail "touch -d 1960-01-01"
touch -d '2100-01-01 00:00:00.123456789' "$A/new" || fail "touch -d 2100-01-01"
touch -d '1969-12-31 23:59:59.5' "$A/edge" || fail "touch -d 1969-12-31 23:59:59.5"
touch -d '1901-12-13 20:45:52' "$A/i32min" || fail "touch -d 1901"
touch -a -d 1950-06-01 "$A/old" || fail "touch -a -d 1950-06-01"
# journaled (fsync waits for the journal): the MDS is killed below
sync "$A"/old "$A"/new "$A"/edge "$A"/i32min "$A" || fail "fsync of the files"
check_all() {
	local m
	for m in "$@"; do
		check_time "$m/old" -315619200 0
		check_time "$m/new" 4102444800 123456789
		check_time "$m/edge" -1 500000000
		check_time "$m/i32min" -2147483648 0
		[ "$(stat -c %X "$m/old")" = -618105600 ] ||
			fail "$m/old: atime $(stat -c %X "$m/old"), want -618105600"
	done
}
check_all "$A" "$B"
python3 -c 'import os, sys
os.utime(sys.argv[1], ns=(-1, -1))
st = os.stat(sys.argv[1])
assert st.st_mtime_ns == -1 and st.st_atime_ns == -1, (st.st_atime_ns, st.st_mtime_ns)' "$A/edge" ||
	fail "utime to -1 ns"
touch -d '1969-12-31 23:59:59.5' "$A/edge"
sync "$A/edge" || fail "fsync of edge"

mds() { "$cluster_bin" mds "$1" --dir "$cdir" >>"$tmp/mds-cmd.log" 2>&1 || { cat "$tmp/mds-cmd.log" >&2; fail "atoll-cluster mds $1"; }; }
remount_both() {
	fusermount3 -u "$A" && fusermount3 -u "$B" || fail "unmount"
	stop_fuse "${fuse_pids[@]}"
	fuse_pids=()
	[ -z "${1:-}" ] || { mds "$1"; mds start; }
	mount_fs "$A" "$tmp/fuse1.log"
	mount_fs "$B" "$tmp/fuse2.log"
}

step "the timestamps after a remount of both mounts"
remount_both
check_all "$B" "$A"
step "the timestamps after the MDS is killed (journal replay) and stopped (inode records)"
remount_both kill
check_all "$A" "$B"
remount_both stop
check_all "$A" "$B"

step "done"
