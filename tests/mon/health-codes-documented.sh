#!/bin/bash
# health-codes-documented.sh - every health code the monitor can raise has
# a section in doc/health-checks.md, and every section there names a code
# the monitor still raises (test 'health-codes-documented', suite 'mon').
# The codes are the string literals passed to add_check() in mon/*.c.
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
doc=$src/doc/health-checks.md

[ -f "$doc" ] || { echo "no $doc" >&2; exit 1; }
code=$(grep -ho 'add_check(h, "[A-Z_]*"' "$src"/mon/*.c | sed 's/.*"\(.*\)"/\1/' | sort -u)
documented=$(sed -n 's/^## \([A-Z_]*\)$/\1/p' "$doc" | sort -u)
[ -n "$code" ] || { echo "found no add_check() call in mon/*.c" >&2; exit 1; }

bad=0
for c in $(comm -23 <(echo "$code") <(echo "$documented")); do
	echo "health code $c (mon/) has no '## $c' section in doc/health-checks.md" >&2
	bad=1
done
for c in $(comm -13 <(echo "$code") <(echo "$documented")); do
	echo "doc/health-checks.md documents $c, which no add_check() in mon/ raises" >&2
	bad=1
done
[ $bad = 0 ] && echo "$(echo "$code" | wc -l) health codes, each documented"
exit $bad
