#!/bin/bash
# cli.sh ATOLL-CLUSTER ATOLL - the `atoll` CLI against a 3-host cluster:
# the JSON of status, health, osd tree, osd ls, pool ls/get, df, stat, ls
# (checked with python3), pool create/set/rm, objects larger than one
# transfer piece, standard input and output, osd out/in and noout, mon
# backup, a 2-second bench (write, seq, rand, cleanup), `atoll verify` (and
# its negative control: objects deleted behind its back), and the errors a
# user gets: unknown pool or object (exit 3, one clear sentence), bad
# usage (exit 2), an unreachable monitor (exit 4), --help everywhere.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

cluster_up --no-mds	# the admin CLI on a plain cluster: one pool, no file system
ok "cluster up"

# ---- monitor commands, JSON ---------------------------------------------
atoll status --format json | pyjson "j['health'] == 'HEALTH_OK' and j['osds']['total'] == 3 and j['osds']['up'] == 3 and j['osds']['in'] == 3 and j['pools'] == 1"
atoll status >"$tmp/out"
grep -q "HEALTH_OK" "$tmp/out" || fail "plain status has no HEALTH_OK: $(cat "$tmp/out")"
ok "status (JSON and plain)"
atoll health --format json | pyjson "j['status'] == 'HEALTH_OK' and j['checks'] == []"
atoll health detail >/dev/null
ok "health (JSON, detail)"
atoll osd tree --format json | pyjson "sorted(h['name'] for h in j['hosts']) == ['host0', 'host1', 'host2'] and all(len(h['osds']) == 1 and h['osds'][0]['status'] == 'up' for h in j['hosts'])"
atoll osd tree | grep >/dev/null host1 || fail "plain osd tree lacks host1"
ok "osd tree: one OSD on each of three hosts, all up"
atoll osd ls --format json | pyjson "sorted(j) == [0, 1, 2]"
ok "osd ls"
atoll pool ls --format json | pyjson "[p['name'] for p in j] == ['default'] and j[0]['size'] == 3 and j[0]['failure_domain'] == 'host'"
[ "$(atoll pool ls)" = default ] || fail "plain pool ls: $(atoll pool ls)"
ok "pool ls: the default pool, size 3, failure domain host"

atoll pool create p2 --size 2 --pg 8 --format json | pyjson "j['name'] == 'p2' and j['epoch'] > 0"
atoll pool get p2 --format json | pyjson "j['size'] == 2 and j['pg_num'] == 8"
atoll pool get p2 size --format json | pyjson "j == {'size': 2}"
atoll pool set p2 size 3
atoll pool get p2 size --format json | pyjson "j == {'size': 3}"
expect 1 "pg_num" atoll pool set p2 pg_num 16
expect 1 "already exists" atoll pool create p2
ok "pool create, get, set; pg_num change refused; duplicate refused"
expect 1 "yes-i-really-mean-it" atoll pool rm p2
atoll pool rm p2 p2 --yes-i-really-mean-it
atoll pool ls --format json | pyjson "[p['name'] for p in j] == ['default']"
ok "pool rm asks for confirmation, then removes"

atoll df --format json | pyjson "j['total'] > 0 and any(p['name'] == 'default' for p in j['pools'])"
ok "df"

# ---- objects -------------------------------------------------------------
head -c 9437185 /dev/urandom >"$tmp/big"	# 9 MiB + 1: three pieces
atoll put default big "$tmp/big"
atoll get default big "$tmp/big.out"
cmp "$tmp/big" "$tmp/big.out" || fail "a 9 MiB object read back differs"
atoll stat default big --format json | pyjson "j['size'] == 9437185 and j['name'] == 'big'"
ok "put/get of a 9 MiB object, stat JSON"
echo "hello from stdin" | atoll put default small -
[ "$(atoll get default small -)" = "hello from stdin" ] || fail "stdin/stdout round trip"
: | atoll put default empty -
atoll stat default empty --format json | pyjson "j['size'] == 0"
ok "put from stdin, get to stdout, empty object"
atoll ls default --format json | pyjson "sorted(j) == ['big', 'empty', 'small']"
[ "$(atoll ls default | sort | tr '\n' ' ')" = "big empty small " ] || fail "plain ls"
ok "ls (JSON and plain)"
atoll rm default big small empty
atoll ls default --format json | pyjson "j == []"
ok "rm of several objects"

# ---- errors ----------------------------------------------------------------
expect 3 "pool 'nosuch' does not exist; create it with: atoll pool create nosuch" \
	atoll put nosuch obj "$tmp/big"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "more than one line of error: $(cat "$tmp/err")"
expect 3 "pool 'nosuch' does not exist" atoll ls nosuch
expect 3 "object 'gone' does not exist in pool 'default'" atoll get default gone "$tmp/x"
[ ! -e "$tmp/x" ] || fail "get of a missing object left a file behind"
expect 3 "does not exist" atoll rm default gone
expect 3 "" atoll pool get nosuch
expect 3 "" atoll osd out 99
ok "unknown pool, object and OSD: exit 3 and a clear sentence"
expect 2 "unknown command" atoll frobnicate
expect 2 "usage: atoll put" atoll put default
expect 2 "not an OSD id" atoll osd out x
expect 2 "is not a benchmark" atoll bench default 1 sideways
expect 2 "use json or plain" atoll --format yaml status
ok "usage errors: exit 2"
expect 4 "cannot connect" env ATOLL_MOUNT_TIMEOUT=2s "$atoll_bin" -m 127.0.0.2:1 status
ok "unreachable monitor: exit 4"
for c in "" "status" "pool create" "put" "bench" "osd tree"; do
	# shellcheck disable=SC2086
	atoll $c --help >"$tmp/out" || fail "atoll $c --help failed"
	grep -q "usage: atoll" "$tmp/out" || fail "atoll $c --help prints no usage"
done
atoll --version | grep >/dev/null "^atoll [0-9]" || fail "--version"
ok "--help on every command, --version"

# ---- osd out/in, flags, backup ----------------------------------------------
atoll osd set noout
atoll health --format json | pyjson "any(c['code'] == 'OSDMAP_FLAGS' for c in j['checks'])"
atoll osd unset noout
atoll osd out 2 --format json | pyjson "j['epoch'] > 0"
atoll osd tree --format json | pyjson "[o['in'] for h in j['hosts'] for o in h['osds'] if o['id'] == 2] == [False]"
atoll osd in 2
atoll osd reweight 1 0.5
atoll osd reweight 1 1
wait_health HEALTH_OK
ok "noout flag, osd out/in/reweight"
atoll mon backup "$tmp/backup"
[ -s "$tmp/backup" ] || fail "mon backup wrote nothing"
ok "mon backup"

# ---- bench ---------------------------------------------------------------------
atoll bench default 2 write -b 64K -t 4 --no-cleanup >"$tmp/bench.out"
grep -q "Bandwidth (MB/s)" "$tmp/bench.out" || fail "bench write summary: $(cat "$tmp/bench.out")"
grep -q "p99 latency" "$tmp/bench.out" || fail "bench write has no p99"
atoll bench default 2 seq -t 4 --format json 2>/dev/null | pyjson "j['mode'] == 'seq' and j['ops'] > 0 and j['op_size'] == 65536"
atoll bench default 2 rand -b 4K -t 4 --format json 2>/dev/null | pyjson "j['mode'] == 'rand' and j['ops'] > 0 and j['op_size'] == 4096 and j['lat_p50_ms'] > 0"
atoll bench default 0 cleanup
atoll ls default --format json | pyjson "j == []"
expect 3 "write some first" atoll bench default 1 seq
atoll bench default 1 write -b 4K -t 2 --format json 2>/dev/null | pyjson "j['ops'] > 0 and j['iops'] > 0"
atoll ls default --format json | pyjson "j == []"
ok "bench write/seq/rand/cleanup; write without --no-cleanup leaves nothing"

# ---- verify: the ledger workload, healthy and with a lost write injected ----
atoll verify default 3 -t 2 --format json 2>"$tmp/verify.err" |
	pyjson "j['ok'] and j['verified'] == 12 and j['creates'] > 0 and j['lost'] == 0 and j['wrong'] == 0"
atoll ls default --format json | pyjson "j == []"
ok "verify on a healthy cluster: nothing lost, wrong or stale; its objects removed"
# negative control: another client deletes verify's objects behind its back
atoll verify default 6 -t 2 --prefix vneg. >"$tmp/vneg.out" 2>&1 &
vpid=$!
sleep 2
for round in 1 2 3 4 5 6; do
	for i in $(seq 0 11); do atoll rm default "vneg.t$i" 2>/dev/null || true; done
	sleep 0.3
done
if wait "$vpid"; then
	fail "verify missed objects deleted behind its back: $(cat "$tmp/vneg.out")"
fi
grep -Eq "atoll verify: (lost|wrong|stale) vneg\.t" "$tmp/vneg.out" ||
	fail "verify's report names no lost object: $(cat "$tmp/vneg.out")"
grep -q "disagrees with what it acknowledged" "$tmp/vneg.out" || fail "no closing sentence"
ok "verify reports objects deleted behind its back (negative control) and exits 1"
expect 2 "seconds" atoll verify default
expect 3 "does not exist" atoll verify nosuchpool 1
ok "verify: usage and unknown pool errors"

# ---- progress bars: on a terminal only, after a second ----------------------
ptyrun=$(dirname "$0")/ptyrun.py
python3 "$ptyrun" "$atoll_bin" bench default 2 write -b 4K -t 2 >"$tmp/pty.out" ||
	fail "bench on a terminal: $(cat "$tmp/pty.out")"
grep -q 'write \[=*>* *\] *[0-9]*%  [0-9] s of 2 s' "$tmp/pty.out" ||
	fail "no progress bar from bench on a terminal: $(tr '\r' '\n' <"$tmp/pty.out" | tail -5)"
grep -q "Bandwidth (MB/s)" "$tmp/pty.out" || fail "bench's summary lost under the bar"
atoll bench default 2 write -b 4K -t 2 >"$tmp/pipe.out" 2>&1
! grep -q '\[=' "$tmp/pipe.out" || fail "a progress bar in a pipe: $(cat "$tmp/pipe.out")"
mkfifo "$tmp/fifo"
(head -c 4M /dev/urandom; sleep 1.5; head -c 4M /dev/urandom) >"$tmp/fifo" &
python3 "$ptyrun" "$atoll_bin" image import default barimg "$tmp/fifo" >"$tmp/pty.out" ||
	fail "image import on a terminal: $(cat "$tmp/pty.out")"
wait
grep -q 'importing [0-9.]* MiB  [0-9.]* [KM]iB/s' "$tmp/pty.out" ||
	fail "no progress from image import on a terminal: $(tr '\r' '\n' <"$tmp/pty.out" | tail -5)"
atoll image info default barimg --format json | pyjson "j['size'] == 8 << 20"
atoll image rm default barimg
python3 "$ptyrun" "$atoll_bin" verify default 2 -t 1 >"$tmp/pty.out" || fail "verify on a terminal"
grep -q 'verifying \[' "$tmp/pty.out" || fail "no progress bar from verify on a terminal"
ok "progress bars on a terminal (bench, image import from a slow pipe, verify), none in a pipe"
