#!/bin/bash
# secure.sh ATOLL-CLUSTER ATOLL ATOLL-FUSE CONNECT-SHIM - the secure wire
# mode end to end (doc/messenger.md, "Secure mode"), on one cluster with
# ms_client_mode = ms_cluster_mode = secure:
# objects, an image (atoll-nbd, nbdcopy/nbdinfo) and files (atoll-fuse)
# round-trip; then a client reaches the OSDs through a tampering proxy
# (tamperproxy.py; connect_shim.so points its connections there): no
# plaintext crosses it; a flipped byte, a replayed chunk and a dropped
# frame each close the connection with a warn line, and what lands is
# the old or the new value of the object, never a mixture; a flipped byte
# in a read's reply makes the client read again and return the object
# intact; a client that allows only crc is refused and told why; rewriting the
# offered modes in the hello cannot downgrade the secure-requiring OSDs
# (crc offered only: refused; any other rewrite: the proofs fail).
set -euo pipefail
fuse_bin=${3:?usage: $0 ATOLL-CLUSTER ATOLL ATOLL-FUSE CONNECT-SHIM}
shim=${4:?usage: $0 ATOLL-CLUSTER ATOLL ATOLL-FUSE CONNECT-SHIM}
. "$(dirname "$0")/../cluster/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)

proxy_pid=
fuse_pid=
stop_helpers() {
	if [ -n "$fuse_pid" ]; then
		fusermount3 -u "$tmp/mnt" 2>/dev/null || fusermount3 -uz "$tmp/mnt" 2>/dev/null || true
		kill "$fuse_pid" 2>/dev/null || true
		wait "$fuse_pid" 2>/dev/null || true
	fi
	if [ -n "$proxy_pid" ]; then
		kill "$proxy_pid" 2>/dev/null || true
		wait "$proxy_pid" 2>/dev/null || true
	fi
}
cleanup_hook=stop_helpers

cluster_up --mons 1 --mds 1 --set ms_client_mode=secure --set ms_cluster_mode=secure
wait_health HEALTH_OK
[ "$(atoll health)" = HEALTH_OK ] || fail "health: $(atoll health detail)"

# ---- round trips in secure mode ----
head -c 300000 /dev/urandom >"$tmp/obj"
atoll put default sec1 "$tmp/obj"
atoll get default sec1 "$tmp/obj.back"
cmp -s "$tmp/obj" "$tmp/obj.back" || fail "object round trip"
ok "objects round-trip with every connection secure"

nbd=$(awk '$1 == "daemon" && $3 == "nbd" { print $6 ":" $7 }' "$cdir/cluster.state")
if [ -n "$nbd" ] && command -v nbdcopy >/dev/null && command -v nbdinfo >/dev/null; then
	atoll image create default disk1 --size 8M
	head -c 8388608 /dev/urandom >"$tmp/img"
	nbdinfo "nbd://$nbd/disk1" >/dev/null || fail "nbdinfo nbd://$nbd/disk1"
	nbdcopy "$tmp/img" "nbd://$nbd/disk1" || fail "nbdcopy to the image"
	nbdcopy "nbd://$nbd/disk1" "$tmp/img.back" || fail "nbdcopy from the image"
	cmp -s "$tmp/img" "$tmp/img.back" || fail "image round trip"
	ok "an image round-trips through atoll-nbd in secure mode"
else
	echo "skipped: the image round trip (no atoll-nbd, nbdcopy or nbdinfo)"
fi

if [ -x "$fuse_bin" ] && [ -e /dev/fuse ] && command -v fusermount3 >/dev/null; then
	mkdir -p "$tmp/mnt"
	"$fuse_bin" "$tmp/mnt" -f -o "conf=$ATOLL_CONF" >"$tmp/fuse.log" 2>&1 &
	fuse_pid=$!
	for _ in $(seq 100); do mountpoint -q "$tmp/mnt" && break; sleep 0.1; done
	mountpoint -q "$tmp/mnt" || { cat "$tmp/fuse.log" >&2; fail "atoll-fuse did not mount"; }
	cp "$tmp/obj" "$tmp/mnt/file1"
	sync
	cmp -s "$tmp/obj" "$tmp/mnt/file1" || fail "file round trip"
	fusermount3 -u "$tmp/mnt"
	wait "$fuse_pid" || true
	fuse_pid=
	ok "files round-trip through atoll-fuse in secure mode"
else
	echo "skipped: the file round trip (no atoll-fuse or /dev/fuse)"
fi

# ---- a client that allows only crc: refused, and told why ----
sed -e '/^ms_client_mode/d' -e '/^ms_mon_mode/d' -e '/^client_mount_timeout/d' \
	"$ATOLL_CONF" >"$tmp/crc.conf"
sed -i '0,/^\[global\]/s//[global]\nms_client_mode = crc\nms_mon_mode = crc\nclient_mount_timeout = 3s/' \
	"$tmp/crc.conf"
grep -q "^ms_mon_mode = crc" "$tmp/crc.conf" || fail "no [global] section in atoll.conf to add to"
# a daemon logs at most one line a second about what peers send (the
# next says how many it left out): one refusal or tampering a second
pause_log() { sleep 1.2; }
pause_log
rc=0
ATOLL_CONF=$tmp/crc.conf timeout 30 "$atoll_bin" get default sec1 "$tmp/crc.out" \
	>"$tmp/crc.log" 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "a crc-only client was served by secure-requiring daemons"
grep -q "no wire mode in common" "$tmp/crc.log" ||
	{ cat "$tmp/crc.log" >&2; fail "the crc-only client was not told why"; }
grep -q "offers wire mode crc and ms_mon_mode = secure here" "$cdir"/log/mon.*.log ||
	fail "the monitor did not say why it refused the crc-only client"
ok "a client that allows only crc is refused, and both ends say why"

# ---- a tampering proxy between the client and the OSDs ----
ctl=$tmp/proxy.ctl
: >"$ctl"
osds=$(awk '$1 == "daemon" && $3 == "osd" { print $6 ":" $7 }' "$cdir/cluster.state")
# shellcheck disable=SC2086
python3 "$here/tamperproxy.py" "$ctl" $osds >"$tmp/proxy.out" 2>&1 &
proxy_pid=$!
for _ in $(seq 50); do grep -q '^ready' "$tmp/proxy.out" && break; sleep 0.1; done
grep -q '^ready' "$tmp/proxy.out" || { cat "$tmp/proxy.out" >&2; fail "the proxy did not start"; }
map=$(grep = "$tmp/proxy.out" | paste -sd, -)
# under AddressSanitizer the shim comes before its runtime in the list
# of libraries: tell it that is fine (nothing in the shim allocates)
viaproxy() {
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
		LD_PRELOAD=$shim ATOLL_CONNECT_MAP=$map timeout 60 "$atoll_bin" "$@"
}

marker="PLAINTEXT-MARKER-$RANDOM$RANDOM"
printf '%s\n' "$marker" >"$tmp/marked"
viaproxy put default marked "$tmp/marked" || fail "a put through the proxy"
[ -s "$ctl.cap" ] || fail "the proxy saw no bytes: the client did not go through it"
! grep -q "$marker" "$ctl.cap" || fail "the object's bytes crossed the proxy in plaintext"
[ "$(atoll get default marked -)" = "$marker" ] || fail "the marked object"
ok "a client through the proxy: nothing of its data in plaintext"

tagfails() { cat "$cdir"/log/osd.*.log | grep -c "fails its authentication tag" || true; }

# tamper ACTION: sets ACTION, writes B over A through the proxy; the
# action was done, an OSD closed the connection with one warn line, and
# the object read directly is A or B whole
tamper() {
	local action=$1 before after rc=0
	head -c 262144 /dev/zero | tr '\0' A >"$tmp/A"
	head -c 262144 /dev/zero | tr '\0' B >"$tmp/B"
	atoll put default ledger "$tmp/A"
	pause_log
	before=$(tagfails)
	echo "$action" >"$ctl"
	viaproxy put default ledger "$tmp/B" >"$tmp/tamper.out" 2>&1 || rc=$?
	grep -qx "$action" "$ctl.log" || fail "$action: the proxy had nothing to act on"
	for _ in $(seq 50); do [ "$(tagfails)" -gt "$before" ] && break; sleep 0.1; done
	after=$(tagfails)
	[ "$after" -gt "$before" ] || fail "$action: no OSD said a frame failed its tag"
	atoll get default ledger "$tmp/got"
	cmp -s "$tmp/got" "$tmp/A" || cmp -s "$tmp/got" "$tmp/B" ||
		fail "$action: the object is neither the old nor the new value"
	echo "  $action: put exit $rc, $((after - before)) tag failure(s), object $(head -c 1 "$tmp/got")"
}
tamper flip
ok "a flipped byte closes the connection; the object is old or new, whole"
tamper replay
ok "a replayed chunk closes the connection; the object is old or new, whole"

# a flipped byte in a read's reply: the client drops the connection and
# reads again; what it returns is the object, not a flipped byte
atoll get default ledger "$tmp/ref"
pause_log
echo flipreply >"$ctl"
viaproxy get default ledger "$tmp/got" || fail "flipreply: the read failed"
grep -qx flipreply "$ctl.log" || fail "flipreply: the proxy had nothing to act on"
cmp -s "$tmp/got" "$tmp/ref" || fail "flipreply: the read returned other bytes than the object's"
ok "a flipped byte in a reply: the client reads again and gets the object intact"

# a dropped frame: a sealed keepalive (64 bytes) of a client that stays
# connected, then its next frame fails the OSD's check
pause_log
before=$(tagfails)
echo drop >"$ctl"
viaproxy bench default 4 write -t 1 -b 4096 >"$tmp/bench.out" 2>&1 || true
grep -qx drop "$ctl.log" || fail "drop: no keepalive crossed the proxy"
for _ in $(seq 50); do [ "$(tagfails)" -gt "$before" ] && break; sleep 0.1; done
[ "$(tagfails)" -gt "$before" ] || fail "drop: no OSD said a frame failed its tag"
tamper flip
ok "a dropped frame closes the connection; writes after it land whole"

# rewriting the offered modes: crc only is refused by the OSD...
: >"$ctl.log"
pause_log
echo modes=1 >"$ctl"
viaproxy put default m1 "$tmp/marked" >/dev/null 2>&1 || true
grep -qx modes=1 "$ctl.log" || fail "modes=1: the proxy rewrote no hello"
grep -q "offers wire mode crc and ms_client_mode = secure here" "$cdir"/log/osd.*.log ||
	fail "no OSD refused a hello offering crc only"
# ... and offering more than the client did breaks the proofs
pause_log
echo modes=3 >"$ctl"
viaproxy put default m2 "$tmp/marked" >/dev/null 2>&1 || true
grep -qx modes=3 "$ctl.log" || fail "modes=3: the proxy rewrote no hello"
grep -Eq "bad authorizer|could not prove itself" "$cdir"/log/osd.*.log ||
	fail "a rewritten hello did not fail the proofs"
ok "rewriting the offered modes cannot downgrade a secure-requiring OSD"

for p in $(awk '$1 == "daemon" { print $8 }' "$cdir/cluster.state"); do
	[ -d /proc/$p ] || fail "daemon pid $p died"
done
[ "$(atoll get default marked -)" = "$marker" ] || fail "a read after the tampering"
ok "every daemon still runs and serves"
