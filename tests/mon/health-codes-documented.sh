#!/bin/bash
# health-codes-documented.sh - one set of health codes in three places
# (test 'health-codes-documented', suite 'mon'):
#   - the codes the checks raise: the string literals passed to add_check()
#     in mon/*.c;
#   - mon_health_codes[] in mon/health.c, for which the monitor exports an
#     atoll_health_check{code=...} series from its start (doc/metrics.md);
#   - the '## CODE' sections of doc/health-checks.md.
# Fails naming each code missing from one of them.
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
doc=$src/doc/health-checks.md

[ -f "$doc" ] || { echo "no $doc" >&2; exit 1; }
raised=$(grep -ho 'add_check(h, "[A-Z_]*"' "$src"/mon/*.c | sed 's/.*"\(.*\)"/\1/' | sort -u)
listed=$(sed -n '/^const char \*const mon_health_codes\[\] = {/,/^};/p' "$src/mon/health.c" |
	grep -o '"[A-Z_]*"' | tr -d '"' | sort -u)
documented=$(sed -n 's/^## \([A-Z_]*\)$/\1/p' "$doc" | sort -u)
[ -n "$raised" ] || { echo "found no add_check() call in mon/*.c" >&2; exit 1; }
[ -n "$listed" ] || { echo "found no mon_health_codes[] in mon/health.c" >&2; exit 1; }

bad=0
# missing WHAT-HAS WHAT-LACKS HAVE LACK
missing() {
	local c
	for c in $(comm -23 <(echo "$3") <(echo "$4")); do
		echo "health code $c: in $1, not in $2" >&2
		bad=1
	done
}
missing "an add_check() of mon/" "doc/health-checks.md (a '## CODE' section)" "$raised" "$documented"
missing "doc/health-checks.md" "any add_check() of mon/" "$documented" "$raised"
missing "an add_check() of mon/" "mon_health_codes[] (mon/health.c)" "$raised" "$listed"
missing "mon_health_codes[] (mon/health.c)" "any add_check() of mon/" "$listed" "$raised"
[ $bad = 0 ] && echo "$(echo "$raised" | wc -l) health codes: raised, listed for metrics, documented"
exit $bad
