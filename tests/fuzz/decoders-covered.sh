#!/bin/bash
# decoders-covered.sh BUILD_DIR - every decoder in the built code has a
# fuzz target (test 'fuzz-decoders-covered', suite 'fuzz').
#
# Lists the *_decode functions that `nm --defined-only` finds in the
# objects under BUILD_DIR outside tests/ (libraries and programs, static
# functions too when the compiler kept them) and compares them with
# tests/fuzz/decoders.list.  Fails, naming each, on:
#   - a decoder with no line in decoders.list;
#   - a line whose target has no fuzz_TARGET.c, no seeds in corpus/TARGET/
#     or no entry in tests/fuzz/meson.build;
#   - a line whose target never names the decoder (or its "via" caller);
#   - a line for a decoder that no source file defines any more.
# A decoder listed but not built in this configuration (an optional
# program) is only reported.  Exit 77 (skipped) without nm.
set -u
build=${1:?usage: decoders-covered.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
list=$here/decoders.list

command -v nm >/dev/null || { echo "nm not found: skipped"; exit 77; }
[ -d "$build" ] || { echo "no build directory '$build'" >&2; exit 1; }

# symbol -> the first object defining it
declare -A where
while read -r obj sym; do
	[ -n "${where[$sym]:-}" ] || where[$sym]=$obj
done < <(find "$build" -name '*.o' -not -path "$build/tests/*" -print0 |
	 xargs -0 nm --defined-only -A 2>/dev/null |
	 awk '$(NF-1) ~ /^[TtWw]$/ && $NF ~ /_decode$/ {
		obj = $1; sub(/:[^:]*$/, "", obj); print obj, $NF }')

if [ ${#where[@]} -eq 0 ]; then
	echo "no *_decode symbol in the objects under '$build': is it built?" >&2
	exit 1
fi

declare -A listed
fail=0
while read -r sym target via caller; do
	case "$sym" in ''|'#'*) continue ;; esac
	if [ -n "${listed[$sym]:-}" ]; then
		echo "decoders.list: '$sym' is listed twice" >&2
		fail=1
	fi
	listed[$sym]=$target
	file=$here/fuzz_$target.c
	if [ ! -f "$file" ]; then
		echo "decoders.list: '$sym' names target '$target', but tests/fuzz/fuzz_$target.c does not exist" >&2
		fail=1
		continue
	fi
	if [ -z "$(ls -A "$here/corpus/$target" 2>/dev/null)" ]; then
		echo "target '$target' (for '$sym') has no seeds in tests/fuzz/corpus/$target/" >&2
		fail=1
	fi
	if ! grep -q "^ *\['$target'," "$here/meson.build"; then
		echo "target '$target' (for '$sym') is not in tests/fuzz/meson.build's fuzz_targets" >&2
		fail=1
	fi
	name=$sym
	if [ "$via" = via ]; then
		name=$caller
		if ! grep -rqw --include='*.c' "$caller" "$src/lib" "$src/osd" "$src/mon" \
			"$src/posixfs" "$src/blockdev" "$src/tools" 2>/dev/null; then
			echo "decoders.list: '$sym' is reached via '$caller', which no source defines" >&2
			fail=1
		fi
	fi
	if ! grep -qw "$name" "$file"; then
		echo "target '$target' never calls '$name' (for '$sym'): tests/fuzz/fuzz_$target.c" >&2
		fail=1
	fi
	if [ -z "${where[$sym]:-}" ]; then
		if grep -rqE --include='*.c' "\\b$sym\\(" "$src/lib" "$src/osd" "$src/mon" \
			"$src/posixfs" "$src/blockdev" "$src/tools" 2>/dev/null; then
			echo "note: '$sym' is not built in '$build' (an optional part?)"
		else
			echo "decoders.list: '$sym' is listed but no source defines it any more: remove the line" >&2
			fail=1
		fi
	fi
done < "$list"

n=0
for sym in $(printf '%s\n' "${!where[@]}" | sort); do
	n=$((n + 1))
	if [ -z "${listed[$sym]:-}" ]; then
		echo "decoder '$sym' (${where[$sym]#"$build"/}) has no fuzz target: add one" \
		     "(tests/fuzz/meson.build says how) and a line to tests/fuzz/decoders.list" >&2
		fail=1
	fi
done
[ $fail -eq 0 ] && echo "every one of the $n decoders built has a fuzz target"
exit $fail
