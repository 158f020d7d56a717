#!/bin/bash
# tests/fs/fs-upgrade.sh - a manual check (not in CI: it needs an old
# atoll-mds) that an MDS reads a file system written by an older one: the
# namespace made by OLD_BIN_DIR/atoll-mds, its last journal entries left
# unapplied (kill -9), then this build's MDS replays them; after a second,
# cold start every listing is there, the MDS's rename loop check sees the
# old parents (`..` keys) and removing everything leaves no directory
# object.  Written for the change of 2026-12-03 (doc/fs-design.md, "Parents"):
# OLD_BIN_DIR then holds an atoll-mds built from 79e05b7.
#
#   tests/fs/fs-upgrade.sh OLD_BIN_DIR BUILD_DIR [DIR]
set -u
[ $# -ge 2 ] || { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
old=$1 B=$(cd "$2" && pwd) c=${3:-${TMPDIR:-/tmp}/atoll-upgrade.$$}
export PATH=$B/tools:$PATH
m=$c/mnt
cleanup() { fusermount3 -u "$m" 2>/dev/null; atoll-cluster down --dir "$c" --purge >/dev/null 2>&1; }
fail() { echo "FAIL: $*"; cleanup; exit 1; }
trap cleanup INT TERM
mount_it() { "$B/posixfs/atoll-fuse" "$m" -o "conf=$c/atoll.conf" || fail "mount"; }
atoll-cluster up --dir "$c" --mds 1 >/dev/null 2>&1 || fail "atoll-cluster up"
atoll-cluster mds stop --dir "$c" >/dev/null 2>&1
ATOLL_BIN_DIR=$old atoll-cluster mds start --dir "$c" >/dev/null 2>&1 || fail "the old MDS"
mkdir -p "$m"
mount_it
mkdir -p "$m/a/b/c" "$m/e"
touch "$m/a/f"
sleep 1	# applied
mkdir "$m/a/g" && touch "$m/a/g/h" && mkdir "$m/a/g/i" || fail "the old MDS's changes"
atoll-cluster mds kill --dir "$c" >/dev/null 2>&1
atoll-cluster mds start --dir "$c" >/dev/null 2>&1 || fail "the new MDS"
grep "replayed" "$c/log/mds.a.log" | tail -n 1
fusermount3 -u "$m"
atoll-cluster mds stop --dir "$c" >/dev/null 2>&1	# again, cold: records of the replay
atoll-cluster mds start --dir "$c" >/dev/null 2>&1 || fail "the new MDS again"
mount_it
[ "$(ls "$m/a" | tr '\n' ' ')" = "b f g " ] || fail "a: $(ls "$m/a")"
[ "$(ls "$m/a/g" | tr '\n' ' ')" = "h i " ] || fail "a/g: $(ls "$m/a/g")"
addr=$(awk '/^mds_addr/ {print $3}' "$c/atoll.conf")
loop() {
	local out
	out=$("$B/tests/fs/mds_bigdir" "$addr" rename "$1" "$2")
	[ "$out" = "rename: -22" ] || fail "moving $1 to $2: $out, not EINVAL"
}
loop a a/b/c/x
loop a a/g/i/x
mv "$m/a/b/c" "$m/e/" || fail "mv"
loop e e/c/x
rm -r "$m/a" "$m/e" || fail "rm"
sleep 1
left=$(atoll --conf "$c/atoll.conf" ls fs_meta | grep '^fs\.dir\.' | grep -v '^fs\.dir\.0000000000000001$')
[ -z "$left" ] || fail "directory objects left: $left"
echo "ok: the new MDS reads what the old one wrote"
cleanup
