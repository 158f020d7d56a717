#!/bin/bash
# fscaps.sh ATOLL-CLUSTER ATOLL-FUSE ATOLL - file-system caps end to end
# (doc/security.md, "File-system caps"), one cluster with its MDS:
# - a client whose key says `allow rw path=/home/u` mounts /home/u by
#   default, cannot mount / or another folder (a clear message), and loses
#   a file and a folder (held open) that an admin moves out of its tree;
# - an `allow r` client reads and cannot write, create or remove;
# - `root_squash` makes root's files nobody's and refuses what nobody may
#   not do;
# - `uid=` refuses requests made as another user;
# - `fs authorize` makes a key limited to its folder (client.v mounts it);
# - data objects: client.u's key, with the OSD caps `fs authorize` gives,
#   cannot get or put the data object of a file outside its folder
#   (the OSD's object_prefix check).
# Test entities are made with `atoll auth add`; each client gets a
# keyring and an atoll.conf of its own.
set -u
cluster_bin=${1:?usage: $0 ATOLL-CLUSTER ATOLL-FUSE ATOLL}
fuse_bin=${2:?}
atoll_cli=${3:?}
. "$(dirname "$0")/../fs/lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root (FUSE mounts, setpriv)"
command -v setpriv >/dev/null || skip "setpriv is missing (util-linux)"
fs_setup
grep -q "^auth = ticket" "$conf" || fail "atoll-cluster up did not turn auth on"
atoll() { "$atoll_cli" "$@"; }
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }

xattr() {	# xattr get|set PATH NAME [VALUE]
	python3 -c 'import os, sys
if sys.argv[1] == "get":
    print(os.getxattr(sys.argv[2], sys.argv[3]).decode())
else:
    os.setxattr(sys.argv[2], sys.argv[3], sys.argv[4].encode())' "$@"
}
dnsx=trusted.atoll.data_namespace

A=$tmp/admin
mount_fs "$A" "$tmp/fuse-admin.log"
mkdir -p "$A/home/u" "$A/home/v" "$A/outside"
# /home/u gets a data namespace of its own while it has no subfolder
xattr set "$A/home/u" $dnsx 1 || fail "setting /home/u's data namespace"
prefix=$(xattr get "$A/home/u" $dnsx) || fail "reading /home/u's data namespace"
[ "$prefix" = "$(printf 'n%016x.' "$(stat -c %i "$A/home/u")")" ] || fail "prefix '$prefix'"
if xattr set "$A/home" $dnsx 1 2>/dev/null; then fail "a namespace set on a folder with subfolders"; fi
mkdir "$A/home/u/sub"
# the same through the command, which prints the caps to give the key
atoll fs authorize client.v /home/v rw >"$tmp/v.caps" || fail "fs authorize"
vprefix=$(printf 'n%016x.' "$(stat -c %i "$A/home/v")")
grep -qx "	caps osd = allow rw pool=.* object_prefix=$vprefix" "$tmp/v.caps" &&
	grep -qx "	caps mds = allow rw path=/home/v" "$tmp/v.caps" ||
	fail "fs authorize printed: $(cat "$tmp/v.caps")"
if atoll fs authorize client.x /home r >/dev/null 2>"$tmp/x.err"; then
	fail "fs authorize gave /home (with subfolders) a namespace"
fi
grep -q "subfolders" "$tmp/x.err" || fail "fs authorize /home said: $(cat "$tmp/x.err")"
echo secret >"$A/secret"
echo mine >"$A/home/u/mine"
echo kept >"$A/home/u/sub/kept"
chmod 777 "$A/home/u"
ok "an admin gives /home/u and /home/v a data namespace (setxattr, fs authorize), not /home"
pool=$(atoll --format json fs status | python3 -c \
	'import json, sys; print(json.load(sys.stdin)["data_pool"])' 2>/dev/null || echo fs_data)

# add_client NAME MDS-CAPS [OSD-CAPS]: a key made with `atoll auth add`,
# in a keyring + atoll.conf of its own ($tmp/NAME.conf)
add_client() {
	local name=$1 mds=$2 osd=${3:-allow rw pool=$pool}
	(umask 077; ATOLL_CONF=$conf "$atoll_cli" auth add "client.$name" mon "allow r" \
		osd "$osd" mds "$mds" >"$tmp/$name.keyring") || { echo "auth add client.$name failed" >&2; return 1; }
	sed -e "s#^keyring = .*#keyring = $tmp/$name.keyring#" \
	    -e "s#^\[global\]#[global]\nauth_name = client.$name#" "$conf" >"$tmp/$name.conf"
}
# mount_as NAME DIR [OPTIONS]: mounts with NAME's key
mount_as() {
	local name=$1 dir=$2
	mkdir -p "$dir"
	"$fuse_bin" "$dir" -f -o "conf=$tmp/$name.conf,allow_other${3:+,$3}" \
		>"$tmp/fuse-$name.log" 2>&1 &
	fuse_pids+=($!)
	for _ in $(seq 1 200); do
		mountpoint -q "$dir" && return 0
		sleep 0.1
	done
	cat "$tmp/fuse-$name.log" >&2
	fail "atoll-fuse did not mount $dir as client.$name"
}
# mount_refused NAME DIR WORD [OPTIONS]: the mount fails, its message says WORD
mount_refused() {
	local name=$1 dir=$2 word=$3
	mkdir -p "$dir"
	if timeout 60 "$fuse_bin" "$dir" -f -o "conf=$tmp/$name.conf${4:+,$4}" \
		>"$tmp/refused.log" 2>&1; then
		fail "client.$name mounted $dir with '${4:-}'"
	fi
	mountpoint -q "$dir" && fail "$dir is mounted"
	grep -q "$word" "$tmp/refused.log" || fail "no '$word' in: $(cat "$tmp/refused.log")"
}

step "a client limited to /home/u"
add_client u "allow rw path=/home/u" "allow rw pool=$pool object_prefix=$prefix"
U=$tmp/u
mount_as u "$U"
[ "$(cat "$U/mine")" = mine ] || fail "client.u does not read its own file"
[ -d "$U/sub" ] && [ ! -e "$U/home" ] && [ ! -e "$U/secret" ] ||
	fail "client.u's mount is not /home/u: $(ls "$U")"
echo new >"$U/new" || fail "client.u cannot write in its folder"
[ "$(cat "$A/home/u/new")" = new ] || fail "client.u's file is not /home/u/new"
sync "$U/new" 2>/dev/null || true
obj=$prefix$(printf '%016x.%016x' "$(stat -c %i "$A/home/u/new")" 0)
[ "$(atoll get "$pool" "$obj" -)" = new ] || fail "/home/u/new's data is not in object $obj"
[ "$(atoll get "$pool" "$prefix$(printf '%016x.%016x' "$(stat -c %i "$A/home/u/sub/kept")" 0)" -)" = kept ] ||
	fail "/home/u/sub/kept's data is not under the namespace"
if xattr set "$U/sub" $dnsx 1 2>/dev/null; then fail "client.u set a data namespace"; fi
mkdir "$U/d" && mv "$U/new" "$U/d/new" && ln "$U/d/new" "$U/d/link" && rm "$U/d/link" ||
	fail "client.u cannot mkdir, rename, link, unlink in its folder"
ok "client.u mounts /home/u by default and works in it"

mount_refused u "$tmp/u-root" "outside what this key" "subdir=/"
mount_refused u "$tmp/u-v" "outside what this key" "subdir=/home/v"
mount_refused u "$tmp/u-none" "does not exist" "subdir=/home/u/none"
ok "client.u cannot mount / or /home/v, and a missing root is named"

step "client.v, whose key fs authorize made"
grep -q "^	key = [0-9a-f]\{64\}$" "$tmp/v.caps" || fail "fs authorize printed no key: $(cat "$tmp/v.caps")"
atoll fs authorize client.v /home/v rw --keyring-out "$tmp/v.keyring" 2>/dev/null ||
	fail "fs authorize again, same caps"
[ "$(grep key "$tmp/v.keyring")" = "$(grep key "$tmp/v.caps")" ] || fail "fs authorize again made another key"
sed -e "s#^keyring = .*#keyring = $tmp/v.keyring#" \
    -e "s#^\[global\]#[global]\nauth_name = client.v#" "$conf" >"$tmp/v.conf"
mount_as v "$tmp/v"
echo vee >"$tmp/v/f" || fail "client.v cannot write in /home/v"
[ "$(cat "$A/home/v/f")" = vee ] && [ ! -e "$tmp/v/home" ] || fail "client.v's mount is not /home/v"
if atoll fs authorize client.v /home/v r >/dev/null 2>"$tmp/v.err"; then
	fail "fs authorize changed client.v's caps"
fi
grep -q "other caps" "$tmp/v.err" || fail "fs authorize with other caps said: $(cat "$tmp/v.err")"
ok "fs authorize makes the key with the caps (again: the same key; other caps: refused)"

# what client.u holds open while an admin moves it out of its tree
python3 - "$U" "$A" <<'EOF' || fail "client.u reached a file or folder moved out of its tree"
import errno, os, sys
u, a = sys.argv[1], sys.argv[2]
fd = os.open(u + "/mine", os.O_RDONLY)
os.chdir(u + "/sub")
os.rename(a + "/home/u/mine", a + "/outside/mine")
os.rename(a + "/home/u/sub", a + "/outside/sub")
for what, f in (("chmod of the moved file", lambda: os.fchmod(fd, 0o600)),
                ("create in the moved folder", lambda: open("x", "w"))):
    try:
        f()
    except OSError as e:
        if e.errno not in (errno.EACCES, errno.EPERM):
            sys.exit(f"{what}: {e}")
    else:
        sys.exit(f"{what} succeeded outside the tree")
os.close(fd)
EOF
[ "$(stat -c %a "$A/outside/mine")" = 644 ] || fail "the moved file's mode changed"
[ ! -e "$A/outside/sub/x" ] || fail "client.u created a file outside its tree"
ok "a file and a folder moved out of /home/u are out of client.u's reach"

step "a read-only client"
add_client ro "allow r path=/home/u"
R=$tmp/ro
mount_as ro "$R"
[ "$(cat "$R/d/new")" = new ] || fail "client.ro cannot read"
for what in "touch $R/x" "mkdir $R/y" "rm $R/d/new" "chmod 600 $R/d/new" \
	    "sh -c 'echo more >>$R/d/new'" "mv $R/d/new $R/renamed" "xattr set $R/d/new user.a 1"; do
	if eval "$what" 2>/dev/null; then fail "client.ro: '$what' succeeded"; fi
done
[ "$(cat "$A/home/u/d/new")" = new ] && [ ! -e "$A/home/u/x" ] || fail "client.ro changed something"
ok "an allow r client reads and changes nothing"

step "root_squash"
add_client sq "allow rw path=/home/u root_squash"
S=$tmp/sq
mount_as sq "$S"
touch "$S/squashed" || fail "squashed root cannot create in a 0777 folder"
[ "$(stat -c %u:%g "$A/home/u/squashed")" = 65534:65534 ] ||
	fail "squashed root's file is owned by $(stat -c %u:%g "$A/home/u/squashed")"
echo root-only >"$A/home/u/rootfile" && chmod 644 "$A/home/u/rootfile"
if sh -c "echo more >>$S/rootfile" 2>/dev/null; then fail "squashed root wrote a root-owned 0644 file"; fi
if chown 0:0 "$S/squashed" 2>/dev/null; then fail "squashed root gave a file to root"; fi
[ "$(cat "$A/home/u/rootfile")" = root-only ] || fail "rootfile changed"
ok "root_squash: root's creates are nobody's, and root is nobody for the checks"

step "uid="
add_client pin "allow rw path=/home/u uid=4242 gids=4242"
P=$tmp/pin
mount_as pin "$P"
if touch "$P/as-root" 2>/dev/null; then fail "client.pin acted as root"; fi
setpriv --reuid=4242 --regid=4242 --clear-groups touch "$P/as-4242" ||
	fail "client.pin cannot act as its uid"
[ "$(stat -c %u "$A/home/u/as-4242")" = 4242 ] || fail "as-4242 has the wrong owner"
if setpriv --reuid=4243 --regid=4242 --clear-groups touch "$P/as-4243" 2>/dev/null; then
	fail "client.pin acted as uid 4243"
fi
ok "uid= refuses requests made as another user"

step "data objects outside the tree"
# the data object of /secret (not under client.u's namespace); client.u's
# OSD caps are limited to its namespace's prefix once it has one
ino=$(stat -c %i "$A/secret")
oid=$(printf '%016x.%016x' "$ino" 0)
add_client obj "allow rw path=/home/u" "allow rw pool=$pool object_prefix=$prefix"
add_client rdonly "allow r path=/home/u" "allow r pool=$pool"
if ATOLL_CONF=$tmp/rdonly.conf "$atoll_cli" put "$pool" capsprobe - <<<"x" >/dev/null 2>&1; then
	fail "an 'allow r' key wrote an object"
fi
if ATOLL_CONF=$tmp/obj.conf "$atoll_cli" get "$pool" "$oid" - >/dev/null 2>&1; then
	fail "client.obj's key reads the data object of /secret"
fi
if ATOLL_CONF=$tmp/obj.conf "$atoll_cli" put "$pool" "$oid" - <<<"x" >/dev/null 2>&1; then
	fail "client.obj's key writes the data object of /secret"
fi
[ "$(cat "$A/secret")" = secret ] || fail "/secret changed"
[ "$(ATOLL_CONF=$tmp/obj.conf "$atoll_cli" get "$pool" "$obj" -)" = new ] ||
	fail "client.obj's key cannot read a data object of its namespace"
ok "client.obj's key can neither get nor put the data object of /secret, and reads its own"

step "a removed file's data objects go"
robj=$prefix$(printf '%016x.%016x' "$(stat -c %i "$A/home/u/d/new")" 0)
atoll get "$pool" "$robj" - >/dev/null || fail "no object $robj before the removal"
rm "$A/home/u/d/new"
for _ in $(seq 100); do
	atoll get "$pool" "$robj" - >/dev/null 2>&1 || break
	sleep 0.1
done
if atoll get "$pool" "$robj" - >/dev/null 2>&1; then fail "object $robj outlived its file"; fi
ok "the MDS purges a namespaced file's data objects"

for m in "$U" "$R" "$S" "$P"; do fusermount3 -u "$m" || fail "unmount $m"; done
ok "every mount unmounts"
