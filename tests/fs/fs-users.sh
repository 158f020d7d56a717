#!/bin/bash
# tests/fs/fs-users.sh - permissions as a non-root user: the mount is made
# allow_other, and one script of operations (perm_ops.py) runs as root and
# as `nobody` on atoll and on a local folder (the oracle, the ext4 or tmpfs
# under $TMPDIR); for each user the two outputs, errno values included,
# must be the same.  The unprivileged run must meet EACCES and EPERM.
# Root mounts, so /etc/fuse.conf needs no user_allow_other.
# Usage: fs-users.sh ATOLL-CLUSTER ATOLL-FUSE ATOLL PERM_OPS.PY
set -u
cluster_bin=${1:?usage: $0 ATOLL-CLUSTER ATOLL-FUSE ATOLL PERM_OPS.PY}
fuse_bin=${2:?}
atoll_cli=${3:?}
ops=${4:?}
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root (to run as root and as nobody)"
id nobody >/dev/null 2>&1 || skip "no user 'nobody'"
command -v setpriv >/dev/null || skip "setpriv is missing (util-linux)"
# the system's python3: a root-only one (pyenv under /root) is out of nobody's reach
py=/usr/bin/python3
[ -x $py ] || skip "no /usr/bin/python3 for the unprivileged run"
fs_setup
cp "$ops" "$tmp/perm_ops.py" && chmod 644 "$tmp/perm_ops.py"	# readable by nobody

A=$tmp/mnt1
mount_fs "$A" "$tmp/fuse1.log" allow_other
L=$tmp/local
mkdir -p "$L"

as_user() {	# as_user root|nobody CMD...
	if [ "$1" = root ]; then
		shift
		"$@"
	else
		shift
		setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all "$@"
	fi
}

for u in root nobody; do
	step "the operation script as $u"
	for where in atoll local; do
		[ $where = atoll ] && base=$A/$u || base=$L/$u
		mkdir "$base" && chmod 755 "$base" || fail "mkdir $base"
		python3 "$tmp/perm_ops.py" setup "$base" || fail "setup on $where"
		(cd / && as_user $u "$py" "$tmp/perm_ops.py" run "$base") >"$tmp/out.$u.$where" 2>&1
	done
	diff -u "$tmp/out.$u.local" "$tmp/out.$u.atoll" || fail "as $u, atoll differs from the local folder"
done
grep -q ": EACCES" "$tmp/out.nobody.local" && grep -q ": EPERM" "$tmp/out.nobody.local" ||
	fail "the unprivileged run met no EACCES or no EPERM: is it unprivileged?"
! grep -q ": EACCES" "$tmp/out.root.local" || fail "root met EACCES"
echo "root and nobody: $(wc -l <"$tmp/out.root.atoll") operations each, the same on atoll and local"

step "without allow_other the mount is root's alone"
B=$tmp/mnt2
mount_fs "$B" "$tmp/fuse2.log"
as_user nobody stat "$B/root" >/dev/null 2>&1 && fail "nobody reached a mount without allow_other"

# atoll-fuse checks permissions itself (no default_permissions), so the
# kernel walks the entries it caches without asking: a change of a
# folder's mode on another mount must make it drop them (the MDS's revoke
# says the mode changed), or nobody would still reach shut/f.
step "a folder closed on another mount: nobody loses the entries its kernel cached"
mkdir "$A/shut" && chmod 755 "$A/shut" && echo x >"$A/shut/f" || fail "mkdir shut"
as_user nobody cat "$A/shut/f" >/dev/null || fail "nobody cannot read shut/f"
chmod 700 "$B/shut" || fail "chmod 700 on the second mount"
for _ in $(seq 30); do
	as_user nobody stat "$A/shut/f" >/dev/null 2>&1 || break
	sleep 0.1
done
as_user nobody stat "$A/shut/f" 2>&1 | grep -q "Permission denied" ||
	fail "nobody still reaches shut/f 3 s after the other mount's chmod 700"
chmod 755 "$B/shut" || fail "chmod 755 on the second mount"
for _ in $(seq 30); do
	as_user nobody stat "$A/shut/f" >/dev/null 2>&1 && break
	sleep 0.1
done
as_user nobody cat "$A/shut/f" >/dev/null || fail "nobody cannot read shut/f after chmod 755"
echo "closed and opened again on the other mount: seen"

step "unmount"
fusermount3 -u "$B" && fusermount3 -u "$A" || fail "fusermount3 -u"
echo "fs-users: all checks passed"
