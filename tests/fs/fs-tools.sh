#!/bin/bash
# tests/fs/fs-tools.sh - everyday tools at some scale on a real mount:
# `cp -a` of a tree of 1,000 files (mixed sizes, five large ones, under
# 300 MiB in all) in and out with equal checksums; `ls -l` on a directory
# of 10,000 files, and a warm one again that the client's leases answer
# (at most 10 requests reach the MDS); tar and rsync round trips; `git
# clone` of a local repository onto the mount, `git fsck` there, a commit
# and `git gc`.
# Usage: fs-tools.sh ATOLL-CLUSTER ATOLL-FUSE ATOLL
# ATOLL_FS_TOOLS_SMALL=1 shrinks the tree and the directory (a quick run
# while developing; CI runs the full size).
set -u
cluster_bin=${1:?usage: $0 ATOLL-CLUSTER ATOLL-FUSE ATOLL}
fuse_bin=${2:?}
atoll_cli=${3:?}
. "$(dirname "$0")/lib.sh"
for t in rsync tar git sha256sum; do
	command -v $t >/dev/null || skip "$t is missing (scripts/deps.sh installs it)"
done
small=${ATOLL_FS_TOOLS_SMALL:-0}
nfiles=1000 nls=10000 big=$((52 << 20))
[ "$small" = 1 ] && nfiles=100 nls=500 big=$((4 << 20))
fs_setup

A=$tmp/mnt1
mount_fs "$A" "$tmp/fuse1.log"

# sums DIR: the checksum, type, mode and size of everything under DIR
sums() {
	(cd "$1" && find . -mindepth 1 -printf '%p %y %m %s %l\n' | LC_ALL=C sort &&
		find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
}

step "a tree of $nfiles files: five of $((big >> 20)) MiB, the rest 0 B to 128 KiB"
src=$tmp/tree
python3 - "$src" "$nfiles" "$big" <<'PY' || fail "making the tree"
import os, random, sys
root, n, big = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(6)
dirs = [""] + [f"d{i}" for i in range(8)] + [f"d{i}/s{j}" for i in range(8) for j in range(3)]
for d in dirs:
    os.makedirs(os.path.join(root, d), exist_ok=True)
chunk = os.urandom(1 << 20)
for i in range(n):
    if i < 5:
        size = big
    else:
        size = rng.choice([0, rng.randint(1, 4096), rng.randint(4096, 65536), rng.randint(65536, 131072)])
    p = os.path.join(root, rng.choice(dirs), f"f{i:04d}")
    with open(p, "wb") as f:
        left, k = size, i
        while left:
            piece = chunk[k % 997:][:left]	# every file distinct
            f.write(piece)
            left -= len(piece)
            k += 1
    os.chmod(p, rng.choice([0o644, 0o600, 0o755, 0o444]))
    os.utime(p, (1000000000 + i, 1000000000 + i))
os.symlink("d0/s0", os.path.join(root, "link"))
total = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(root) for f in fs)
assert n < 1000 or total <= 300 << 20, f"the tree holds {total} bytes, over 300 MiB"
PY
echo "tree: $(du -sm --apparent-size "$src" | cut -f1) MiB"
sums "$src" >"$tmp/sum.src"

step "cp -a in and out"
cp -a "$src" "$A/tree" || fail "cp -a into the mount"
sums "$A/tree" >"$tmp/sum.in"
diff -u "$tmp/sum.src" "$tmp/sum.in" >"$tmp/diff.in" || { head -20 "$tmp/diff.in"; fail "the tree differs after cp -a in"; }
cp -a "$A/tree" "$tmp/back" || fail "cp -a out of the mount"
sums "$tmp/back" >"$tmp/sum.out"
diff -u "$tmp/sum.src" "$tmp/sum.out" >/dev/null || fail "the tree differs after cp -a out"
[ "$(find "$tmp/back" -newermt '2001-10-01' -type f | wc -l)" = 0 ] || fail "cp -a lost modification times"
rm -rf "$tmp/back"

step "tar round trip (a part of the tree)"
part=d0
tar -C "$src" -cf - $part | tar -C "$A" -xf - || fail "tar into the mount"
tar -C "$A" -cf "$tmp/part.tar" $part || fail "tar out of the mount"
mkdir "$tmp/untar" && tar -C "$tmp/untar" -xf "$tmp/part.tar" || fail "untar"
diff <(sums "$src/$part") <(sums "$tmp/untar/$part") >/dev/null || fail "tar round trip differs"
tar -C "$A" -df "$tmp/part.tar" || fail "tar --diff sees changes on the mount"

step "rsync round trip"
rsync -a "$src/d1/" "$A/rs/" || fail "rsync into the mount"
echo changed >>"$src/d1/s0/extra"
rsync -a --delete "$src/d1/" "$A/rs/" || fail "rsync update into the mount"
rsync -a "$A/rs/" "$tmp/rs-back/" || fail "rsync out of the mount"
diff <(sums "$src/d1") <(sums "$tmp/rs-back") >/dev/null || fail "rsync round trip differs"
[ -z "$(rsync -ai --dry-run "$src/d1/" "$A/rs/")" ] || fail "rsync still finds differences"

step "git clone onto the mount, git fsck"
repo=$tmp/repo
git init -q "$repo" && cp -r "$src/d2" "$repo/files" || fail "git init"
for i in $(seq 1 20); do
	echo "change $i" >>"$repo/files/log$((i % 4))"
	git -C "$repo" add -A && git -C "$repo" -c user.name=t -c user.email=t@t commit -qm "commit $i" ||
		fail "git commit $i"
done
git -C "$repo" gc -q
git clone -q "file://$repo" "$A/clone" || fail "git clone onto the mount"
git -C "$A/clone" fsck --full --strict 2>&1 | tee "$tmp/fsck" | grep -qv '^Checking' && { cat "$tmp/fsck"; fail "git fsck complains"; }
[ -z "$(git -C "$A/clone" status --porcelain)" ] || fail "a fresh clone is not clean: $(git -C "$A/clone" status --porcelain | head)"
[ "$(git -C "$A/clone" rev-parse HEAD)" = "$(git -C "$repo" rev-parse HEAD)" ] || fail "HEAD differs"
echo more >>"$A/clone/files/log1"
git -C "$A/clone" -c user.name=t -c user.email=t@t commit -qam "on the mount" || fail "git commit on the mount"
git -C "$A/clone" gc -q --prune=now || fail "git gc on the mount"
git -C "$A/clone" fsck --full --strict >/dev/null 2>&1 || fail "git fsck after gc"
[ "$(git -C "$A/clone" rev-list --count HEAD)" = 21 ] || fail "history lost after gc"

step "ls -l on $nls files"
mkdir "$A/many" || fail "mkdir many"
python3 -c 'import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n): os.mknod(f"{d}/file{i:05d}")' "$A/many" "$nls" || fail "creating $nls files"
t0=$(date +%s%N)
ls -l "$A/many" >"$tmp/ls.out" || fail "ls -l"
t1=$(date +%s%N)
[ "$(grep -c ' file[0-9]*$' "$tmp/ls.out")" = "$nls" ] || fail "ls -l lists $(grep -c ' file' "$tmp/ls.out") of $nls files"
[ "$(awk 'NR > 1 && $5 != 0' "$tmp/ls.out" | wc -l)" = 0 ] || fail "ls -l shows sizes other than 0"
diff <(ls "$A/many") <(seq -f 'file%05g' 0 $((nls - 1))) >/dev/null || fail "the names differ"
[ "$(stat -c %h "$A/many")" = 2 ] || fail "a folder of files has link count $(stat -c %h "$A/many")"

step "a warm ls -l of the unchanged $nls files: answered from leases"
# the MDS's request counter (atoll fs status) before and after
mds_requests() {
	"$atoll_cli" fs status --format json >"$tmp/fs.json" || fail "atoll fs status failed"
	python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["requests"]["total"])' "$tmp/fs.json"
}
r0=$(mds_requests)
t2=$(date +%s%N)
ls -l "$A/many" >"$tmp/ls2.out" || fail "warm ls -l"
t3=$(date +%s%N)
r1=$(mds_requests)
cmp -s "$tmp/ls.out" "$tmp/ls2.out" || fail "the warm ls -l differs from the first"
echo "ls -l of $nls files: first $(( (t1 - t0) / 1000000 )) ms, warm $(( (t3 - t2) / 1000000 )) ms, $((r1 - r0)) MDS requests"
[ $((r1 - r0)) -le 10 ] || fail "a warm ls -l of $nls unchanged files sent $((r1 - r0)) requests to the MDS (at most 10)"

step "unmount"
fusermount3 -u "$A" || fail "fusermount3 -u"
echo "fs-tools: all checks passed"
