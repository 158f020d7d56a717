#!/bin/bash
# tests/ha/mon_backup.sh ATOLL_MON ATOLL_CLI - `atoll mon backup` streamed:
# a monitor with a map history of many epochs is backed up with a chunk
# size far below the history's size (so the file is made of many
# pieces), restored with atoll-mon --restore and started: it serves the
# same map.  A backup whose history starts later than epoch 1 (what a
# member that installed a snapshot keeps) restores too, from its full
# map; a cut-short or altered file is refused and leaves nothing behind.
set -u
mon_bin=$1
cli=$2
for b in "$mon_bin" "$cli"; do
	[ -x "$b" ] || { echo "SKIP: $b not built"; exit 77; }
done
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }

dir=$(mktemp -d /tmp/atoll-ha-backup.XXXXXX)
. "$(dirname "$0")/ports.sh"
base=$(ha_port_base 2) || { echo "FAIL: no free ports"; exit 1; }
a1=127.0.0.2:$base
a2=127.0.0.3:$((base + 1))
pids=()
cleanup() {
	for p in "${pids[@]}"; do
		kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	[ -n "${KEEP:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	for l in "$dir"/*.log; do
		[ -e "$l" ] || continue
		echo "---- $l (last lines)"
		tail -n 12 "$l"
	done
	exit 1
}
ok() { echo "ok - $*"; }

# at ADDR ARGS...: `atoll ARGS` against one monitor, retried for 15 s
at() {
	local a=$1 i
	shift
	for i in $(seq 150); do
		timeout 20 "$cli" -m "$a" "$@" 2>"$dir/cmd.err" && return 0
		sleep 0.1
	done
	return 1
}
start() {	# DATA ADDR
	"$mon_bin" --data "$1" --addr "$2" --log "$1.log" --set mon_election_timeout=1s &
	pids+=($!)
}
dump() {	# ADDR: the map without what a restart changes
	at "$1" --format json osd dump | python3 -c "
import json, sys
m = json.load(sys.stdin)
print(json.dumps(m, sort_keys=True))"
}

"$mon_bin" --mkfs --data "$dir/m1" --name a --addr "$a1" >/dev/null 2>"$dir/mkfs.err" ||
	fail "mkfs: $(cat "$dir/mkfs.err")"
start "$dir/m1" "$a1"
at "$a1" osd ls >/dev/null || fail "the monitor does not answer"
for i in $(seq 20); do
	at "$a1" pool create "p$i" --pg 2 >/dev/null || fail "pool create p$i"
	at "$a1" osd set noout >/dev/null && at "$a1" osd unset noout >/dev/null ||
		fail "osd set/unset noout"
done
want=$(dump "$a1") || fail "osd dump"
epoch=$(printf '%s' "$want" | python3 -c 'import json,sys; print(json.load(sys.stdin)["epoch"])')
[ "$epoch" -ge 60 ] || fail "only $epoch epochs"

# ---- a backup in pieces of 512 bytes
timeout 60 "$cli" -m "$a1" mon backup "$dir/bk" --chunk-size 512 2>"$dir/bk.err" >/dev/null ||
	fail "mon backup: $(cat "$dir/bk.err")"
size=$(stat -c %s "$dir/bk")
[ "$size" -gt $((4 * 512)) ] || fail "the backup ($size bytes) fits in a few pieces"
[ ! -e "$dir/bk.part" ] || fail "mon backup left bk.part behind"
grep -q "epochs 1\.\.$epoch" "$dir/bk.err" || fail "mon backup said: $(cat "$dir/bk.err")"
ok "mon backup of epochs 1..$epoch in pieces of 512 bytes ($size bytes)"
if timeout 60 "$cli" -m "$a1" mon backup "$dir/bk0" --chunk-size 0 2>/dev/null; then
	fail "--chunk-size 0 was taken"
fi
ok "--chunk-size 0 is refused"

# ---- restored and started, it serves the same map
"$mon_bin" --restore "$dir/bk" --data "$dir/r1" --name a --addr "$a2" >/dev/null \
	2>"$dir/restore.err" || fail "restore: $(cat "$dir/restore.err")"
start "$dir/r1" "$a2"
got=$(dump "$a2") || fail "osd dump of the restored monitor"
[ "$got" = "$want" ] || fail "the restored monitor serves another map"
ok "the restored monitor serves the same map (epoch $epoch)"
for i in $(seq 50); do
	inc=$(at "$a2" --format json quorum status | python3 -c 'import json,sys; print(json.load(sys.stdin)["incarnation"])')
	[ "$inc" = 2 ] && break
	sleep 0.1
done
[ "$inc" = 2 ] || fail "the restored monitor is of incarnation '$inc', not 2"
ok "the restored monitor is a new incarnation (2): the old monitors are never followed again"
at "$a2" pool create after --pg 2 >/dev/null || fail "a change on the restored monitor"
ok "the restored monitor makes new epochs"

# ---- a history that starts later (a member that installed a snapshot)
python3 - "$dir/bk" "$dir/late" 30 <<'PY' || fail "cannot make the partial backup"
import struct, sys
def crc32c(data, crc=0):
    tab = crc32c.tab
    crc ^= 0xffffffff
    for b in data:
        crc = tab[(crc ^ b) & 0xff] ^ (crc >> 8)
    return crc ^ 0xffffffff
crc32c.tab = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82f63b78 if c & 1 else c >> 1
    crc32c.tab.append(c)
b = open(sys.argv[1], 'rb').read()
skip = int(sys.argv[3])
assert crc32c(b[:-4]) == struct.unpack('<I', b[-4:])[0], "checksum"
first, last = struct.unpack('<QQ', b[24:40])
off = 48
(fl,) = struct.unpack('<I', b[off:off + 4]); off += 4 + fl   # the full map
(al,) = struct.unpack('<I', b[off:off + 4]); off += 4 + al   # the auth state
head = b[:off]
for _ in range(skip):
    (l,) = struct.unpack('<I', b[off:off + 4]); off += 4 + l
out = head[:24] + struct.pack('<QQ', first + skip, last) + head[40:] + b[off:-4]
open(sys.argv[2], 'wb').write(out + struct.pack('<I', crc32c(out)))
PY
"$mon_bin" --restore "$dir/late" --data "$dir/r2" --name a --addr "$a1" >/dev/null \
	2>"$dir/restore.err" || fail "restore of a history from epoch 31: $(cat "$dir/restore.err")"
kill "${pids[0]}"; wait "${pids[0]}" 2>/dev/null
start "$dir/r2" "$a1"
got=$(dump "$a1") || fail "osd dump of the monitor restored from epoch 31"
[ "$got" = "$want" ] || fail "the monitor restored from a partial history serves another map"
ok "a backup whose history starts at epoch 31 restores and serves the same map"

# ---- damaged files are refused, nothing left behind
head -c $((size - 100)) "$dir/bk" >"$dir/short"
if "$mon_bin" --restore "$dir/short" --data "$dir/r3" >/dev/null 2>"$dir/restore.err"; then
	fail "a cut-short backup was restored"
fi
grep -q "damaged" "$dir/restore.err" || fail "a cut-short backup: $(cat "$dir/restore.err")"
[ ! -e "$dir/r3/store" ] || fail "a refused restore left a store behind"
python3 -c "
import sys
b = bytearray(open('$dir/bk', 'rb').read()); b[len(b) // 2] ^= 1
open('$dir/flip', 'wb').write(b)"
if "$mon_bin" --restore "$dir/flip" --data "$dir/r4" >/dev/null 2>"$dir/restore.err"; then
	fail "an altered backup was restored"
fi
grep -q "damaged" "$dir/restore.err" || fail "an altered backup: $(cat "$dir/restore.err")"
[ ! -e "$dir/r4/store" ] || fail "a refused restore left a store behind"
ok "cut-short and altered backups are refused and leave nothing"
echo "PASS"
