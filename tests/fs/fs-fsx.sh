#!/bin/bash
# tests/fs/fs-fsx.sh - fsx on a real mount: 10,000 random reads, writes,
# truncates and extends on one file, each checked against fsx.py's model
# (the whole file every 500 steps), then the file read back through a
# second mount.  The seed is printed; ATOLL_FSX_SEED=S replays a run,
# ATOLL_FSX_OPS=N changes its length.
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

step "unmount"
fusermount3 -u "$B" && fusermount3 -u "$A" || fail "fusermount3 -u"
echo "fs-fsx: all checks passed"
