#!/bin/bash
# tests/packaging/units.sh UNIT_DIR - the systemd units of packaging/systemd
# (as meson configured them in BUILD/packaging, or as installed) are valid
# and hardened (doc/admin.md, "Least privilege"): systemd-analyze
# verify finds nothing wrong in them (but for the binaries, not installed
# where the tests run), `systemd-analyze security` rates each at most 2.0
# ("OK"), each runs as the user atoll with no capability, and none names a
# wildcard address; every daemon has its template unit, part of its
# target, and each target part of atoll.target.  Skipped (77) without
# systemd-analyze.
set -u
dir=${1:?usage: units.sh UNIT_DIR}
command -v systemd-analyze >/dev/null || { echo "no systemd-analyze: skipped"; exit 77; }
fail=0
bad() { echo "FAIL $*"; fail=1; }
for kind in mon osd mds nbd; do
	u=$dir/atoll-$kind@.service
	[ -f "$u" ] || { bad "no atoll-$kind@.service in $dir"; continue; }
	grep -qx "PartOf=atoll-$kind.target" "$u" || bad "atoll-$kind@.service: not PartOf=atoll-$kind.target"
	grep -qx "WantedBy=atoll-$kind.target" "$u" || bad "atoll-$kind@.service: not WantedBy=atoll-$kind.target"
	grep -qx "PartOf=atoll.target" "$dir/atoll-$kind.target" 2>/dev/null ||
		bad "atoll-$kind.target: missing, or not PartOf=atoll.target"
done
for t in "$dir"/*.target; do
	out=$(systemd-analyze verify "$t" 2>&1)
	[ -z "$out" ] || bad "$(basename "$t"): systemd-analyze verify: $out"
done
for u in "$dir"/*.service; do
	name=$(basename "$u")
	out=$(systemd-analyze verify "$u" 2>&1 | grep -v "is not executable: No such file")
	[ -z "$out" ] || bad "$name: systemd-analyze verify: $out"
	# the exposure, 0.0 (locked down) to 10.0; --threshold counts tenths
	systemd-analyze security --offline=yes --threshold=20 "$u" >/dev/null 2>&1 ||
		bad "$name: exposure above 2.0: $(systemd-analyze security --offline=yes "$u" 2>&1 | tail -1)"
	grep -qx "User=atoll" "$u" || bad "$name: no User=atoll"
	grep -qx "CapabilityBoundingSet=" "$u" || bad "$name: capabilities not dropped"
	grep -qx "ProtectSystem=strict" "$u" || bad "$name: no ProtectSystem=strict"
	grep -q "0\.0\.0\.0\|\[::\]" "$u" && bad "$name: a wildcard address"
	[ "$fail" = 0 ] && echo "ok   $name"
done
exit $fail
