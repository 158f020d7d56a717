#!/bin/bash
# health-codes-metrics.sh - the monitor exports a series per health code
# from its start (atoll_health_check{code=...} 0, for each code of
# mon/health.c's mon_health_codes[]); that list names every code
# doc/health-checks.md documents and no other, and every code an
# add_check() call raises (test 'ops-health-codes', suite 'ops').  With
# health-codes-documented (suite mon) it keeps code, page and metrics in
# step.
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
doc=$src/doc/health-checks.md
c=$src/mon/health.c

listed=$(sed -n '/^const char \*const mon_health_codes\[\] = {/,/^};/p' "$c" |
	grep -o '"[A-Z_]*"' | tr -d '"' | sort -u)
documented=$(sed -n 's/^## \([A-Z_]*\)$/\1/p' "$doc" | sort -u)
[ -n "$listed" ] || { echo "found no mon_health_codes[] in $c" >&2; exit 1; }
bad=0
for x in $(comm -13 <(echo "$listed") <(echo "$documented")); do
	echo "doc/health-checks.md documents $x, missing from mon_health_codes[] in mon/health.c" >&2
	bad=1
done
for x in $(comm -23 <(echo "$listed") <(echo "$documented")); do
	echo "mon_health_codes[] in mon/health.c lists $x, which doc/health-checks.md does not document" >&2
	bad=1
done
[ $bad = 0 ] && echo "$(echo "$listed" | wc -l) health codes, each with its series"
exit $bad
