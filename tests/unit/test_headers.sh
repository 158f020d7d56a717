#!/bin/sh
# test_headers.sh INCLUDE_DIR CC... - every public header in INCLUDE_DIR/atoll
# compiles alone (and twice, for its include guard) as strict C11 and as
# C++, so users can include it first in any translation unit.  The C++
# half is skipped (exit 77 overall, if nothing else failed) when no C++
# compiler is installed.
set -u
inc=${1:?usage: test_headers.sh INCLUDE_DIR CC...}
shift
cc=${*:-cc}	# the build's C compiler command (may be "ccache gcc")
cxx=
for c in g++ clang++ c++; do
	if command -v "$c" >/dev/null 2>&1; then cxx=$c; break; fi
done

fail=0
n=0
for h in "$inc"/atoll/*.h; do
	[ -e "$h" ] || { echo "FAIL: no headers in $inc/atoll"; exit 1; }
	name=atoll/$(basename "$h")
	n=$((n + 1))
	src=$(printf '#include <%s>\n#include <%s>\n' "$name" "$name")
	if ! printf '%s\n' "$src" | $cc -std=c11 -Wall -Wextra -pedantic -Werror \
		-fsyntax-only -I "$inc" -x c -; then
		echo "FAIL: $name does not compile alone as C11"
		fail=1
	fi
	if [ -n "$cxx" ] && ! printf '%s\n' "$src" | $cxx -std=c++11 -Wall -Wextra \
		-pedantic -Werror -fsyntax-only -I "$inc" -x c++ -; then
		echo "FAIL: $name does not compile alone as C++"
		fail=1
	fi
done
[ $fail -eq 0 ] || exit 1
if [ -z "$cxx" ]; then
	echo "skip: $n header(s) compile as C11, but no C++ compiler to check C++"
	exit 77
fi
echo "ok: $n header(s) compile alone as C11 ($cc) and C++ ($cxx)"
