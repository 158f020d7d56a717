#!/bin/bash
# tools-smoke.sh STORE-TOOL STOREBENCH FIXTURE - a quick end-to-end check
# of atoll-store-tool and atoll-storebench: mkfs, a tiny benchmark run, then
# fsck, ls, stat, get, attrs, omap, log, statfs with plain and JSON output, on
# the benchmark's store and on one made by FIXTURE (fixture.c: names and
# values with bytes that must be escaped), and the errors an operator gets
# for a wrong command line or a missing store.
# Works in its own temporary folder, removed on exit.  Exit 77 (skip) when
# python3 is missing.
set -euo pipefail
tool=$1 bench=$2 fixture=$3
command -v python3 >/dev/null || { echo "python3 is missing: skipped"; exit 77; }

# The store needs O_DIRECT: /var/tmp is on disk where /tmp may be tmpfs.
tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/atoll-tools-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

n=0
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { n=$((n + 1)); echo "ok $n - $*"; }
json() { python3 -m json.tool >/dev/null || fail "$1: not valid JSON"; }
# expect CODE PATTERN CMD...: CMD exits CODE and says PATTERN on stderr
expect() {
	local code=$1 pat=$2 rc=0
	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	[ $rc -eq "$code" ] || fail "'$*' exited $rc, not $code: $(cat "$tmp/err")"
	grep -q -- "$pat" "$tmp/err" || fail "'$*' did not say '$pat': $(cat "$tmp/err")"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "'$*' printed more than one line of error"
}

# --- mkfs, then an empty store -------------------------------------------
"$tool" mkfs --data "$tmp/s" --size 256M --no-zero-fill >"$tmp/out"
grep -q "created store" "$tmp/out" || fail "mkfs did not say what it created"
ok "mkfs --data"
"$tool" mkfs --block "$tmp/s2.block" --kv "$tmp/s2.kv" --size 64M --format json | json "mkfs json"
ok "mkfs --block --kv --format json"
expect 1 "already holds a store" "$tool" mkfs --data "$tmp/s" --size 256M
ok "mkfs refuses an existing store"
expect 2 "give its size with --size" "$tool" mkfs --data "$tmp/nosize"
ok "mkfs without --size for a new file"
"$tool" --data "$tmp/s" fsck >"$tmp/out"
grep -q "clean" "$tmp/out" || fail "fsck of a new store is not clean: $(cat "$tmp/out")"
ok "fsck of a new store"
[ -z "$("$tool" --data "$tmp/s" colls)" ] || fail "a new store has collections"
"$tool" --data "$tmp/s" colls --format json | json "colls json"
"$tool" --data "$tmp/s" statfs --format json >"$tmp/statfs.json"
json "statfs json" <"$tmp/statfs.json"
python3 - "$tmp/statfs.json" <<'PY' || fail "statfs of a new store is wrong"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["objects"] == 0 and s["used"] == 0, s
assert s["total"] > 0 and s["free"] == s["total"] - s["used"], s
PY
ok "colls, statfs of a new store"

# --- a tiny benchmark run, then inspect what it wrote ----------------------
"$bench" --quick --no-zero-fill --seconds 1 --small-count 500 --small-reads 100 --dir "$tmp/b" \
	>"$tmp/bench.out" 2>"$tmp/bench.err" || fail "atoll-storebench --quick failed: $(tail -5 "$tmp/bench.err")"
for m in write_4M_MBps write_4M_lat_p99_us overwrite_4K_IOPS randread_4K_IOPS \
	randread_4K_cache_hits small_open_s small_rss_anon_MB; do
	grep -qP "^store\t$m\t[0-9.]+\t" "$tmp/bench.out" || fail "atoll-storebench printed no '$m'"
done
grep -qP "^store\trandread_4K_verify_errors\t0\t" "$tmp/bench.out" || fail "reads returned wrong data"
ok "atoll-storebench --quick"
expect 2 "unknown test" "$bench" --dir "$tmp/b" frobnicate
expect 2 "not valid" "$bench" --seconds abc
ok "atoll-storebench usage errors"

B=(--data "$tmp/b")
"$tool" "${B[@]}" fsck --deep >"$tmp/out" || fail "fsck --deep after the benchmark: $(cat "$tmp/out")"
"$tool" "${B[@]}" fsck --format json | json "fsck json"
ok "fsck --deep after the benchmark"
"$tool" "${B[@]}" colls | grep >/dev/null '^0x2$' || fail "colls does not list the read set 0x2"
"$tool" "${B[@]}" ls 0x2 --max 3 >"$tmp/out"
[ "$(wc -l <"$tmp/out")" -eq 3 ] || fail "ls --max 3 printed $(wc -l <"$tmp/out") names"
oid=$(head -n 1 "$tmp/out")
[ "$("$tool" "${B[@]}" ls 2 --max 3)" = "$(cat "$tmp/out")" ] || fail "ls 2 and ls 0x2 differ"
"$tool" "${B[@]}" ls 0x2 --after "$oid" --max 1 | grep -vx >/dev/null -- "$oid" || fail "ls --after"
"$tool" "${B[@]}" ls 0x2 --format json >"$tmp/ls.json"
python3 - "$tmp/ls.json" "$oid" <<'PY' || fail "ls --format json is wrong"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["coll"] == "0x2" and d["objects"][0] == sys.argv[2], d
PY
ok "ls, ls --after/--max, ls --format json"
"$tool" "${B[@]}" stat 0x2 "$oid" | grep >/dev/null "^size *4194304" || fail "stat: size is not 4 MiB"
"$tool" "${B[@]}" stat 0x2 "$oid" --format json | json "stat json"
ok "stat"
"$tool" "${B[@]}" get 0x2 "$oid" "$tmp/obj"
[ "$(stat -c %s "$tmp/obj")" -eq 4194304 ] || fail "get wrote $(stat -c %s "$tmp/obj") bytes"
cmp -s "$tmp/obj" <("$tool" "${B[@]}" get 0x2 "$oid") || fail "get to stdout differs from get FILE"
ok "get to a file and to stdout"
"$tool" "${B[@]}" attrs 0x2 "$oid" --format json | json "attrs json"
"$tool" "${B[@]}" omap 0x2 "$oid" --format json | json "omap json"
"$tool" "${B[@]}" statfs | grep >/dev/null "^objects" || fail "statfs plain"
ok "attrs, omap, statfs"

# --- escaping, attributes and omap: the fixture's store ------------------
"$fixture" "$tmp/f"
F=(--data "$tmp/f")
oid=$'obj\x01name\\x'
[ "$("$tool" "${F[@]}" colls)" = $'0x7\n0x2a\tcompress' ] || fail "colls: $("$tool" "${F[@]}" colls)"
[ "$("$tool" "${F[@]}" ls 42)" = $'empty\nobj\\x01name\\\\x' ] || fail "ls does not escape: $("$tool" "${F[@]}" ls 42)"
"$tool" "${F[@]}" ls 0x2a --format json >"$tmp/ls.json"
python3 - "$tmp/ls.json" <<'PY' || fail "ls --format json of an unprintable name"
import json, sys
assert json.load(open(sys.argv[1]))["objects"] == ["empty", "obj\\x01name\\\\x"]
PY
ok "colls with flags, ls escapes names"
"$tool" "${F[@]}" attrs 0x2a "$oid" >"$tmp/out"
[ "$(cat "$tmp/out")" = $'_ = hello (5 bytes)\nbin = \\x00\\xff (2 bytes)' ] || fail "attrs: $(cat "$tmp/out")"
"$tool" "${F[@]}" omap 0x2a "$oid" --format json >"$tmp/omap.json"
python3 - "$tmp/omap.json" <<'PY' || fail "omap --format json: $(cat "$tmp/omap.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert [(e["key"], e["value"], e["size"]) for e in d["omap"]] == \
    [("k\\x00", "nul key", 7), ("k1", "v1", 2)], d
PY
[ "$("$tool" "${F[@]}" omap 0x2a "$oid" --max 1)" = 'k\x00 = nul key (7 bytes)' ] ||
	fail "omap --max 1: $("$tool" "${F[@]}" omap 0x2a "$oid" --max 1)"
ok "attrs and omap escape bytes, plain and JSON"
"$tool" "${F[@]}" get 0x2a "$oid" "$tmp/got"
cmp "$tmp/got" "$tmp/f/expected" || fail "get returned other bytes than were written"
"$tool" "${F[@]}" stat 0x2a "$oid" --format json >"$tmp/stat.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["size"] == 10000 and d["attrs"] == 2, d' \
	"$tmp/stat.json" || fail "stat --format json: $(cat "$tmp/stat.json")"
[ "$("$tool" "${F[@]}" get 0x2a empty | wc -c)" -eq 0 ] || fail "get of an empty object"
"$tool" "${F[@]}" fsck --deep >/dev/null || fail "fsck --deep of the fixture"
ok "get, stat and fsck on the fixture"
# The fixture's last transaction is in the log only (it ended as a crash
# would): the replay shows it to every command; `log` lists its record.
"$tool" "${F[@]}" get 7 logged "$tmp/got2"
cmp "$tmp/got2" "$tmp/f/expected2" || fail "get of an object the log holds"
"$tool" "${F[@]}" log >"$tmp/log.txt"
grep -q "chunk" "$tmp/log.txt" || fail "log: no chunk record mutation listed: $(cat "$tmp/log.txt")"
grep -q "^log: .* checkpoint at lsn" "$tmp/log.txt" || fail "log: no summary: $(cat "$tmp/log.txt")"
"$tool" "${F[@]}" log --format json >"$tmp/log.json"
python3 - "$tmp/log.json" <<'PY' || fail "log --format json: $(cat "$tmp/log.json")"
import json, sys
d = json.load(open(sys.argv[1]))
recs = d["records"]
assert recs and d["head"] > d["tail"], d
last = recs[-1]
assert last["version"] == 3 and last["blocks"] == 5 and not last["kv"], last
assert last["mutations"]["chunk"] == 1 and last["mutations"]["onode"] == 1, last
assert last["mutations"]["attr"] == 1 and last["bad_blocks"] == 0 and "error" not in last, last
PY
ok "log lists the records a crash left, plain and JSON; get reads through them"

# --- errors: one sentence, exit 2 for usage, 1 for a failed operation ------
expect 2 "unknown command 'frobnicate'" "$tool" "${B[@]}" frobnicate
expect 2 "no command given" "$tool" "${B[@]}"
expect 2 "unknown option" "$tool" "${B[@]}" ls 0x2 --bogus
expect 2 "needs more arguments" "$tool" "${B[@]}" stat 0x2
expect 2 "not a collection id" "$tool" "${B[@]}" ls zz
expect 2 "does not apply to 'ls'" "$tool" "${B[@]}" ls 0x2 --deep
expect 2 "does not apply to 'fsck'" "$tool" "${B[@]}" fsck --no-zero-fill
expect 2 "unknown format" "$tool" "${B[@]}" colls --format yaml
expect 2 "which store" "$tool" colls
ok "usage errors exit 2 with one sentence"
expect 1 "collection 0x7777 does not exist" "$tool" "${B[@]}" ls 0x7777
expect 1 "does not exist in collection 0x2" "$tool" "${B[@]}" stat 0x2 no-such-object
expect 1 "cannot open block" "$tool" --data "$tmp/nothing" fsck
ok "failed operations exit 1 with one sentence"
for c in fsck colls ls stat get attrs omap log statfs mkfs; do
	"$tool" "$c" --help | grep >/dev/null "^usage: atoll-store-tool .*$c" || fail "$c --help"
done
"$tool" --help | grep >/dev/null "^Commands:" || fail "--help"
"$tool" help ls | grep >/dev/null "^usage:" || fail "help ls"
"$bench" --help | grep >/dev/null "^usage: atoll-storebench" || fail "atoll-storebench --help"
ok "--help for every command"
echo "all $n checks passed"
