#!/bin/bash
# scripts/test.sh - builds atoll and runs its test suites.
#
# This is the README's test command, and .ci/run runs exactly this.
#
#   scripts/test.sh          release build: every suite;
#                            sanitizer build (address, undefined): the
#                            suites 'unit', 'fuzz' and 'smoke'
#   scripts/test.sh --full   the same, but every suite under the sanitizers
#                            too, plus a libFuzzer run of each fuzz target
#                            (clang, installed when missing), two at a
#                            time, plus the suite 'packages' (the Debian
#                            packages built, installed on this machine,
#                            a cluster started from their units, removed
#                            and purged; it installs debhelper when
#                            missing); run it before calling an issue
#                            resolved
#
# Build folders (inside the repo, ignored by git): build-release, build-asan,
# build-fuzz.  The suites are described in doc/testing.md.  Suites that
# hammer the disk ('crash') run one test at a time, the rest two at a time
# (the machine has two cores).
#
# The last line is the tally of every test run, from meson's test logs:
#   N passed, N failed, N skipped
# The exit code is 0 only when everything built and nothing failed.
#
# Environment: ATOLL_FUZZ_SECONDS (default 60) per libFuzzer target in --full;
# --full sets ATOLL_TEST_FULL=1 for the tests that have a long variant.
set -uo pipefail

usage() {
	sed -n '2,/^set -uo/p' "$0" | sed -e '/^set -uo/d' -e 's/^# \{0,1\}//'
}

full=0
for a in "$@"; do
	case $a in
	--full) full=1 ;;
	-h|--help) usage; exit 0 ;;
	*) echo "test.sh: unknown option '$a'; use --full or --help" >&2; exit 2 ;;
	esac
done
# the long variants of the tests that have them (tests/ha: 5 MDS kills, not 3)
[ $full -eq 1 ] && export ATOLL_TEST_FULL=1

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1

"$root/scripts/deps.sh" || { echo "test.sh: installing the Debian packages failed" >&2; exit 1; }

# Every OSD store takes about 1,800 of the kernel's async-I/O events; the
# suites run up to a dozen stores at once beside whatever else the machine
# runs, and the default limit (65,536) can run out.  Raise it when we may.
aio_max=$(cat /proc/sys/fs/aio-max-nr 2>/dev/null || echo 0)
if [ "$aio_max" -lt 1048576 ] && [ "$(id -u)" = 0 ]; then
	sysctl -q -w fs.aio-max-nr=1048576 ||
		echo "test.sh: cannot raise fs.aio-max-nr ($aio_max); daemon tests may fail with EAGAIN" >&2
fi

# Make every UndefinedBehaviorSanitizer report fail its test (by default it
# only prints); tests may set their own.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}

start_all=$(date +%s)
logs=()		# meson test logs (JSON lines) written by this run
failed_steps=()	# steps that failed before any test could run
fuzz_pass=0
fuzz_fail=0

step() {
	printf '\n==== %s\n' "$*"
}

# configure DIR MESON-OPTIONS...: sets up DIR, or updates its options when
# it exists; wipes it when it cannot be reconfigured (another meson, moved
# checkout).
configure() {
	local dir=$1
	shift
	if [ -f "$dir/meson-private/coredata.dat" ]; then
		meson setup --reconfigure "$dir" "$@" >/dev/null && return 0
		echo "test.sh: reconfiguring '$dir' failed; starting it afresh" >&2
		meson setup --wipe "$dir" "$@"
	else
		meson setup "$dir" "$@"
	fi
}

# build DIR MESON-OPTIONS...
build() {
	local dir=$1 t0
	t0=$(date +%s)
	step "build $dir ($*)"
	if ! configure "$@"; then
		failed_steps+=("configure $dir")
		return 1
	fi
	if ! ninja -C "$dir"; then
		failed_steps+=("build $dir")
		return 1
	fi
	echo "built $dir in $(( $(date +%s) - t0 )) s"
}

# suites DIR LOGBASE MESON-TEST-ARGS...: runs meson test, keeps its log.
suites() {
	local dir=$1 logbase=$2 t0 rc
	shift 2
	t0=$(date +%s)
	step "test $dir: $*"
	rm -f "$dir/meson-logs/$logbase.json"
	meson test -C "$dir" --print-errorlogs --logbase "$logbase" "$@" </dev/null
	rc=$?
	[ -f "$dir/meson-logs/$logbase.json" ] && logs+=("$dir/meson-logs/$logbase.json")
	[ $rc -ne 0 ] && [ ! -f "$dir/meson-logs/$logbase.json" ] &&
		failed_steps+=("meson test in $dir ($*)")
	echo "($dir: $* took $(( $(date +%s) - t0 )) s)"
}

# ---- release build: every suite -------------------------------------------
# 'packages' installs packages on this machine: --full only, alone, and
# only here (tests/packaging/packages.sh builds its own tree).
if build build-release --buildtype=release; then
	suites build-release testlog-release --num-processes 2 --no-suite crash --no-suite packages
	suites build-release testlog-release-crash --num-processes 1 --suite crash
	if [ $full -eq 1 ]; then
		ATOLL_TEST_PACKAGES=1 suites build-release testlog-release-packages --num-processes 1 \
			--suite packages
	fi
fi

# ---- sanitizer build ------------------------------------------------------
if build build-asan --buildtype=debugoptimized -Db_sanitize=address,undefined -Db_lundef=false; then
	if [ $full -eq 1 ]; then
		suites build-asan testlog-asan --num-processes 2 --no-suite crash --no-suite packages
		suites build-asan testlog-asan-crash --num-processes 1 --suite crash
	else
		suites build-asan testlog-asan --num-processes 2 --suite unit --suite fuzz --suite smoke
	fi
fi

# ---- libFuzzer (--full) ---------------------------------------------------
# Each target under tests/fuzz/corpus/NAME/ is built as fuzz-NAME with clang
# (installed here when missing: only --full needs it) and fuzzed for
# ATOLL_FUZZ_SECONDS from its seeds, two targets at a time (two cores), each
# in a scratch folder with the seeds as read-only input, so that new inputs
# never land in the committed corpus.  Any crash, leak (LeakSanitizer),
# undefined behaviour (UBSAN_OPTIONS above halts on it), timeout or
# out-of-memory fails the target; its input is left in build-fuzz/artifacts/
# (add it to the corpus once fixed).

# fuzz_one NAME SECS: fuzzes one built target; its verdict is the exit code
# and build-fuzz/fuzz-NAME.log.
fuzz_one() {
	local name=$1 secs=$2 work r
	work=$(mktemp -d "${TMPDIR:-/tmp}/atoll-fuzz-$name.XXXXXX") || return 1
	# TMPDIR: a target that makes files (osd_ops: its store) makes them
	# in the scratch folder, removed with it
	TMPDIR=$work build-fuzz/tests/fuzz/fuzz-$name -max_total_time="$secs" \
		-malloc_limit_mb=256 -rss_limit_mb=2048 -timeout=30 \
		-print_final_stats=1 -artifact_prefix="build-fuzz/artifacts/$name-" \
		"$work" "tests/fuzz/corpus/$name" </dev/null >"build-fuzz/fuzz-$name.log" 2>&1
	r=$?
	rm -rf "$work"
	return $r
}

if [ $full -eq 1 ]; then
	if ! command -v clang >/dev/null || ! dpkg-query -W libclang-rt-14-dev >/dev/null 2>&1; then
		"$root/scripts/deps.sh" clang libclang-rt-14-dev ||
			echo "test.sh: cannot install clang: skipping the libFuzzer run" >&2
	fi
	if ! command -v clang >/dev/null; then
		echo "test.sh: clang is missing: skipping the libFuzzer run" >&2
	elif step "configure build-fuzz (clang, -Dfuzz=true)" &&
		CC=clang configure build-fuzz --buildtype=debugoptimized -Dfuzz=true \
			-Db_sanitize=address,undefined -Db_lundef=false; then
		secs=${ATOLL_FUZZ_SECONDS:-60}
		mkdir -p build-fuzz/artifacts
		names=()
		for corpus in tests/fuzz/corpus/*/; do
			[ -d "$corpus" ] && names+=("$(basename "$corpus")")
		done
		step "libFuzzer: building ${#names[@]} targets"
		# Only the fuzz targets: the rest of the tree is not meant to
		# link with coverage hooks and no fuzzer runtime.
		ninja -C build-fuzz "${names[@]/#/tests/fuzz/fuzz-}" >build-fuzz/fuzz-build.log 2>&1 ||
			tail -n 40 build-fuzz/fuzz-build.log
		step "libFuzzer: each target for $secs s, two at a time"
		declare -A fuzz_pid=()
		fuzz_reap() {	# waits for one running target and reports it
			local pid name r
			wait -n -p pid "${!fuzz_pid[@]}"
			r=$?
			name=${fuzz_pid[$pid]}
			unset "fuzz_pid[$pid]"
			if [ $r -eq 0 ]; then
				echo "OK: fuzz-$name ($(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' \
					"build-fuzz/fuzz-$name.log" | grep -o '[0-9]*$') runs)"
				fuzz_pass=$((fuzz_pass + 1))
			else
				tail -n 40 "build-fuzz/fuzz-$name.log"
				echo "FAIL: fuzz-$name (log: build-fuzz/fuzz-$name.log, input in build-fuzz/artifacts/)"
				fuzz_fail=$((fuzz_fail + 1))
			fi
		}
		for name in "${names[@]}"; do
			if [ ! -x "build-fuzz/tests/fuzz/fuzz-$name" ]; then
				echo "FAIL: fuzz-$name does not build (is '$name' in tests/fuzz/meson.build?)"
				fuzz_fail=$((fuzz_fail + 1))
				continue
			fi
			[ ${#fuzz_pid[@]} -ge 2 ] && fuzz_reap
			fuzz_one "$name" "$secs" &
			fuzz_pid[$!]=$name
		done
		while [ ${#fuzz_pid[@]} -gt 0 ]; do
			fuzz_reap
		done
	else
		failed_steps+=("configure build-fuzz")
	fi
fi

# ---- tally ----------------------------------------------------------------
step "summary ($(( $(date +%s) - start_all )) s)"
tally=$(python3 - "$fuzz_pass" "$fuzz_fail" "${logs[@]}" <<'EOF'
import json, sys
passed, failed = int(sys.argv[1]), int(sys.argv[2])
skipped = 0
bad = []
for path in sys.argv[3:]:
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            t = json.loads(line)
            r = t.get("result", "")
            if r in ("OK", "EXPECTEDFAIL"):
                passed += 1
            elif r == "SKIP":
                skipped += 1
            else:
                failed += 1
                bad.append("%s: %s (%s)" % (path.split("/")[0], t.get("name"), r))
for b in bad:
    print("failed: " + b)
print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
EOF
) || { echo "test.sh: cannot read the test logs" >&2; tally="0 passed, 1 failed, 0 skipped"; }
for s in "${failed_steps[@]}"; do
	echo "failed: $s"
done
status=0
case $tally in
*" 0 failed,"*) ;;
*) status=1 ;;
esac
[ ${#failed_steps[@]} -gt 0 ] && status=1
if [ ${#failed_steps[@]} -gt 0 ]; then
	# A step that failed before its tests ran counts as one failure each.
	tally=$(printf '%s\n' "$tally" | awk -v n=${#failed_steps[@]} '
		/ passed, [0-9]+ failed/ { sub(/[0-9]+ failed/, ($3 + n) " failed") } { print }')
fi
printf '%s\n' "$tally"
exit $status
