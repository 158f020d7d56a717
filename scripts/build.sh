#!/bin/bash
# scripts/build.sh [TARGET...] - installs missing Debian packages, then
# builds the release build in build-release/ (everything, or the ninja
# targets given, e.g. osd/atoll-storebench).  Quiet when all goes well;
# prints the whole output of the step that failed.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

quiet() {
	local out
	if ! out=$("$@" 2>&1); then
		printf '%s\n' "$out" >&2
		echo "build.sh: '$*' failed" >&2
		exit 1
	fi
}

"$root/scripts/deps.sh"
if [ -f build-release/meson-private/coredata.dat ]; then
	quiet meson setup --reconfigure build-release --buildtype=release
else
	quiet meson setup build-release --buildtype=release
fi
quiet ninja -C build-release "$@"
