# tests/recovery/lib.sh - sourced by the scripts of tests/recovery: their
# arguments (after tests/cluster/lib.sh has taken ATOLL-CLUSTER ATOLL),
# rc() (the recovery client on pool default), and the placement checks.
. "$(dirname "$0")/../cluster/lib.sh"

client_bin=${1:?usage: $0 ATOLL-CLUSTER ATOLL RECOVERY-CLIENT STORE-TOOL}
storetool_bin=${2:?}
[ -x "$client_bin" ] || skip "recovery-client is missing ($client_bin)"
[ -x "$storetool_bin" ] || skip "atoll-store-tool is missing ($storetool_bin)"
rc() { "$client_bin" "$ATOLL_CONF" default "$@"; }
check=$(dirname "$0")/storecheck.py

# placement WANT-FILE: "OID PGID UP" for every object, as `atoll osd map`
# says now (UP: the OSDs placement gives the PG, without pg_temp)
placement() {
	rm -rf "$tmp/map.d"
	mkdir -p "$tmp/map.d"
	# eight at a time: one CLI call per object
	awk '{print $1}' "$1" | xargs -P 8 -I{} sh -c \
		'"$0" --format json osd map default "$1" >"$2/$1" || echo "osd map $1 failed" >&2' \
		"$atoll_bin" {} "$tmp/map.d"
	python3 - "$1" "$tmp/map.d" <<'PY'
import json, os, sys
for line in open(sys.argv[1]):
    oid = line.split()[0]
    j = json.load(open(os.path.join(sys.argv[2], oid)))
    print(oid, j["pgid"], ",".join(map(str, j["up"])))
PY
}

# wait_placed: HEALTH_OK, the objects read back right (into $tmp/want),
# and every PG holding one active+clean with its up set acting (its
# pg_temp dropped): the PG stats come from the primaries' beacons, and an
# old primary's last report still names the old acting set
wait_placed() {
	local i
	wait_health HEALTH_OK "${ATOLL_RECOVERY_BOUND:-90}"
	rc verify >"$tmp/want" || fail "reading back"
	placement "$tmp/want" >"$tmp/place"
	for i in $(seq 300); do
		atoll --format json pg ls default 2>"$tmp/err" >"$tmp/pgs" &&
			python3 - "$tmp/place" "$tmp/pgs" <<'PY' && return 0
import json, sys
want = {}
for line in open(sys.argv[1]):
    oid, pgid, up = line.split()
    want[pgid] = [int(x) for x in up.split(",")]
pgs = {p["pgid"]: p for p in json.load(open(sys.argv[2]))}
sys.exit(0 if all(pgs[g]["state"] == "active+clean" and pgs[g]["acting"] == up
                  for g, up in want.items()) else 1)
PY
		sleep 0.2
	done
	cat "$tmp/pgs" >&2
	fail "the PGs did not all become active+clean on their up sets"
}
