#!/bin/bash
# limits.sh - each default limit at its edge, +-1, against a live cluster:
# an object of exactly 128 MiB works and a byte more is -EFBIG; one op of
# exactly 64 MiB works and 64 MiB + 1 is -E2BIG; 10,000 omap entries in one
# op work and 10,001 are -E2BIG (faults-client, the public API).  Then the
# OSD itself: writes past 128 MiB sent straight over the messenger, past
# the client library's checks, still get -EFBIG (faults-rawop).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

faults_up
wait_health HEALTH_OK
ok "3 OSDs on 3 hosts are up"

fc limits default || fail "the limits through the public API"
ok "128 MiB objects, 64 MiB ops, 10,000 omap entries: the edge works, one more is refused"

atoll --format json osd map default rawbig >"$tmp/map.json"
atoll --format json osd tree >"$tmp/tree.json"
set -- $(python3 -c '
import json, sys
m = json.load(open(sys.argv[1])); t = json.load(open(sys.argv[2]))
addr = [o["addr"] for h in t["hosts"] for o in h["osds"] if o["id"] == m["primary"]][0]
print(addr, m["pool_id"], m["pg"], m["epoch"])' "$tmp/map.json" "$tmp/tree.json")
"$rawop_bin" "$1" "$2" "$3" "$4" rawbig || fail "the OSD does not enforce the object size limit"
atoll --format json stat default rawbig | pyjson "j['size'] == 128 * 1024 * 1024"
ok "the OSD refuses writes past 128 MiB sent past the client's checks"
