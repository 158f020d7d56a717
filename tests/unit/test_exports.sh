#!/bin/sh
# test_exports.sh LIBATOLL_SO - libatoll.so exports only the public API:
# every defined dynamic symbol is atoll_ followed by a letter or digit
# (internal helpers are atoll__* or carry a subsystem prefix and must stay
# local; lib/libatoll.map enforces it, this checks that it did).
set -u
lib=${1:?usage: test_exports.sh LIBATOLL_SO}
command -v nm >/dev/null 2>&1 || { echo "nm not found; skipping"; exit 77; }
[ -f "$lib" ] || { echo "no such library: $lib"; exit 1; }

# Version nodes (type A) are not code or data; skip them.
syms=$(nm -D --defined-only "$lib" | awk '$2 != "A" { print $3 }') || exit 1
[ -n "$syms" ] || { echo "FAIL: $lib exports nothing"; exit 1; }
bad=$(printf '%s\n' "$syms" | grep -Ev '^atoll_[a-z0-9]' || true)
if [ -n "$bad" ]; then
	echo "FAIL: $lib exports symbols outside the public API:"
	printf '  %s\n' $bad
	exit 1
fi
echo "ok: $(printf '%s\n' "$syms" | wc -l) exported symbols, all atoll_*:"
printf '  %s\n' $syms
