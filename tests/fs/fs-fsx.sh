#!/bin/bash
# tests/fs/fs-fsx.sh - fsx on a real mount: 10,000 random reads, writes,
# truncates and extends on one file, each checked against fsx.py's model
# (the whole file every 500 steps), then the file read back through a
# second mount.  The seed is printed; ATOLL_FSX_SEED=S replays a run,
# ATOLL_FSX_OPS=N changes its length.  Then the client's write-back and
# read-ahead (fuse_data.c): reads see this client's buffered writes, a
# second client sees a file's new content after its close even when it
# read the file ahead before, a write that fails after its reply fails
# fsync and close (EIO; the fault fuse_fail_writes_at makes writes beyond an
# offset fail), and a small write-back bound loses nothing.
# Usage: fs-fsx.sh ATOLL-CLUSTER ATOLL-FUSE ATOLL FSX.PY
set -u
cluster_bin=${1:?usage: $0 ATOLL-CLUSTER ATOLL-FUSE ATOLL FSX.PY}
fuse_bin=${2:?}
atoll_cli=${3:?}
fsx=${4:?}
. "$(dirname "$0")/lib.sh"
fs_setup

A=$tmp/mnt1
mount_fs "$A" "$tmp/fuse1.log"
step "fsx: ${ATOLL_FSX_OPS:-10000} operations"
python3 "$fsx" "$A/fsx.file" --ops "${ATOLL_FSX_OPS:-10000}" ${ATOLL_FSX_SEED:+--seed "$ATOLL_FSX_SEED"} ||
	fail "fsx found a difference from its model (replay: ATOLL_FSX_SEED=<seed above>)"

step "a second mount reads what fsx left"
B=$tmp/mnt2
mount_fs "$B" "$tmp/fuse2.log"
cmp "$A/fsx.file" "$B/fsx.file" || fail "the second mount reads another content"
[ "$(stat -c %s "$A/fsx.file")" = "$(stat -c %s "$B/fsx.file")" ] || fail "the two mounts disagree on the size"

step "read-your-writes: buffered data, read back before close"
python3 - "$A/ryw" <<'PY' || fail "a read did not see this client's buffered writes"
import os, sys
p = sys.argv[1]
a, b, c = os.urandom(100000), os.urandom(100000), os.urandom(3 << 20)
fd = os.open(p, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
os.pwrite(fd, a, 0)                      # buffered: not a whole block
assert os.pread(fd, 100000, 0) == a, "same descriptor"
fd2 = os.open(p, os.O_RDONLY)            # another open of the same file
assert os.pread(fd2, 50000, 25000) == a[25000:75000], "inside the buffer"
os.pwrite(fd, b, 200000)                 # not contiguous: the first goes out
got = os.pread(fd2, 250000, 50000)
assert got == a[50000:] + bytes(100000) + b[:100000], "across a hole"
os.pwrite(fd, c, 4 << 20)                # block 1, buffered
assert os.fstat(fd2).st_size == (4 << 20) + len(c), "size before close"
assert os.pread(fd2, 1 << 20, (4 << 20) + 5) == c[5:(1 << 20) + 5], "block 1"
os.close(fd2)
os.close(fd)
PY

step "close-to-open across clients, with read-ahead on the reader"
# B (leases: the MDS's revoke drops its read-ahead) and D (nolease: the
# open does) read the first MiB through a descriptor they keep open
# (sequential from 0: the next blocks are read ahead and kept); A
# rewrites the middle, grows the file and closes; a new open on B and D
# must read the new content.
D=$tmp/mnt4
mount_fs "$D" "$tmp/fuse4.log" writeback_mb=8,nolease
head -c $((9 << 20)) /dev/urandom >"$tmp/c2o.1"
head -c $((6 << 20)) /dev/urandom >"$tmp/c2o.2"
cp "$tmp/c2o.1" "$A/c2o" || fail "cp"
cmp "$tmp/c2o.1" "$B/c2o" || fail "the second mount reads another content after the close"
exec 3<"$B/c2o" 4<"$D/c2o"
head -c $((1 << 20)) <&3 >/dev/null && head -c $((1 << 20)) <&4 >/dev/null || fail "read on B, D"
dd if="$tmp/c2o.2" of="$A/c2o" bs=1M seek=5 conv=notrunc status=none || fail "dd"
{ head -c $((5 << 20)) "$tmp/c2o.1"; cat "$tmp/c2o.2"; } >"$tmp/c2o.3"
for m in "$B" "$D"; do
	cmp "$tmp/c2o.3" "$m/c2o" || fail "$m reads stale data after the writer closed"
	[ "$(stat -c %s "$m/c2o")" = $((11 << 20)) ] || fail "$m shows a stale size"
done
exec 3<&- 4<&-

step "a write that fails after its reply fails fsync and close"
C=$tmp/mnt3
ATOLL_FAULTS=${ATOLL_FAULTS:+$ATOLL_FAULTS,}fuse_fail_writes_at=$((1 << 40)) \
	mount_fs "$C" "$tmp/fuse3.log"
if ! faults_compiled; then
	echo "skipped: this build has no fault injection (-Dfault_injection=false)"
else
python3 - "$C" <<'PY' || fail "a failed write was not reported"
import errno, os, sys
d = sys.argv[1]
def eio(f):
    try:
        f()
    except OSError as e:
        return e.errno == errno.EIO
    return False
fd = os.open(f"{d}/fail1", os.O_CREAT | os.O_WRONLY, 0o644)
os.pwrite(fd, b"x" * 4096, 0)
assert os.pwrite(fd, b"y" * 4096, 1 << 40) == 4096, "the write itself is answered"
assert eio(lambda: os.fsync(fd)), "fsync"
os.close(fd)
fd = os.open(f"{d}/fail2", os.O_CREAT | os.O_WRONLY, 0o644)
os.pwrite(fd, b"y" * 4096, (1 << 40) + 4096)
# a close does not wait for its writes: a failure it knows of (this one
# fails as it is sent) is its; one that comes later, the next close's or
# fsync's (doc/fs-design-client.md, "Closing without waiting")
assert eio(lambda: os.close(fd)), "close"
fd = os.open(f"{d}/fail3", os.O_CREAT | os.O_WRONLY, 0o644)
os.pwrite(fd, b"y" * 4096, 1 << 40)
os.pwrite(fd, b"w" * 4096, 0)
try:
    os.close(fd)                           # may not know yet
    fd = os.open(f"{d}/fail3", os.O_WRONLY)
    assert eio(lambda: os.fsync(fd)), "fsync after the close"
    os.close(fd)
except OSError as e:
    assert e.errno == errno.EIO, f"close: {e}"
with open(f"{d}/ok", "wb") as f:           # writes below the offset still work
    f.write(b"z" * 100000)
    os.fsync(f.fileno())
PY
[ "$(head -c 100000 "$B/ok" | tr -d z | wc -c)" = 0 ] && [ "$(stat -c %s "$B/ok")" = 100000 ] ||
	fail "the good file's data is wrong"
fi

step "a small write-back bound (mount D): three files written at once, nothing lost"
for i in 1 2 3; do head -c $((13 << 20)) /dev/urandom >"$tmp/wb.$i"; done
pids=()
for i in 1 2 3; do dd if="$tmp/wb.$i" of="$D/wb.$i" bs=64k status=none & pids+=($!); done
for p in "${pids[@]}"; do wait "$p" || fail "dd to the small bound mount"; done
for i in 1 2 3; do
	cmp "$tmp/wb.$i" "$B/wb.$i" || fail "file $i differs on the other mount"
	cmp "$tmp/wb.$i" "$D/wb.$i" || fail "file $i differs on the writer (read-ahead)"
done

step "unmount"
for m in "$D" "$C" "$B" "$A"; do fusermount3 -u "$m" || fail "fusermount3 -u $m"; done
echo "fs-fsx: all checks passed"
