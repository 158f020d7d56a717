#!/bin/sh
# test_exports.sh LIBATOLL_SO [HEADER] - libatoll.so exports exactly the
# public API: every defined dynamic symbol is atoll_ followed by a letter
# or digit (internal helpers are atoll__* or carry a subsystem prefix and
# must stay local; lib/libatoll.map enforces it, this checks that it did),
# and every function HEADER declares (default: include/atoll/atoll.h of
# this source tree) is exported, so a declared but unimplemented call is
# caught here rather than by a user's linker.  Every exported symbol
# carries the library's one version node (ATOLL_0.<minor> for libatoll,
# ATOLL_IMAGE_0.<minor> for libatoll-image, see their .map files).
set -u
lib=${1:?usage: test_exports.sh LIBATOLL_SO [HEADER]}
header=${2:-$(dirname "$0")/../../include/atoll/atoll.h}
command -v nm >/dev/null 2>&1 || { echo "nm not found; skipping"; exit 77; }
[ -f "$lib" ] || { echo "no such library: $lib"; exit 1; }

# Version nodes (type A) are not code or data; skip them.
versioned=$(nm -D --defined-only "$lib" | awk '$2 != "A" { print $3 }') || exit 1
[ -n "$versioned" ] || { echo "FAIL: $lib exports nothing"; exit 1; }
nodes=$(nm -D --defined-only "$lib" | awk '$2 == "A" { print $3 }')
if [ "$(printf '%s\n' "$nodes" | grep -Ec '^ATOLL_([A-Z]+_)?0\.[0-9]+$')" != 1 ] ||
   [ "$(printf '%s\n' "$nodes" | wc -l)" != 1 ]; then
	echo "FAIL: $lib should define exactly one version node ATOLL_[NAME_]0.N, has:"
	printf '  %s\n' $nodes
	exit 1
fi
unversioned=$(printf '%s\n' "$versioned" | grep -v "@@$nodes\$" || true)
if [ -n "$unversioned" ]; then
	echo "FAIL: symbols of $lib outside the version node $nodes:"
	printf '  %s\n' $unversioned
	exit 1
fi
syms=$(printf '%s\n' "$versioned" | sed 's/@.*//')
bad=$(printf '%s\n' "$syms" | grep -Ev '^atoll_[a-z0-9]' || true)
if [ -n "$bad" ]; then
	echo "FAIL: $lib exports symbols outside the public API:"
	printf '  %s\n' $bad
	exit 1
fi
[ -f "$header" ] || { echo "no such header: $header"; exit 1; }
# A declaration's first line: "type atoll_name(" at the start of a line.
declared=$(grep -o '^[a-z].*[ *]atoll_[a-z0-9_]*(' "$header" |
	grep -o 'atoll_[a-z0-9_]*($' | tr -d '(' | sort -u)
[ -n "$declared" ] || { echo "FAIL: no functions found in $header"; exit 1; }
missing=$(printf '%s\n' "$declared" | while read -r f; do
	printf '%s\n' "$syms" | grep -qx "$f" || echo "$f"
done)
if [ -n "$missing" ]; then
	echo "FAIL: $header declares functions that $lib does not export:"
	printf '  %s\n' $missing
	exit 1
fi
echo "ok: all $(printf '%s\n' "$declared" | wc -l) functions of $(basename "$header") exported"
echo "ok: $(printf '%s\n' "$syms" | wc -l) exported symbols, all atoll_* in $nodes:"
printf '  %s\n' $syms
