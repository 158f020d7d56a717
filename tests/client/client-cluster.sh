#!/bin/sh
# client-cluster.sh ATOLL_CLUSTER CLIENT_TEST HELLO [OBJECTS [MAX_MIB]]
# Starts a 3-OSD cluster on three loopback "hosts" with atoll-cluster,
# runs the client library's integration test (client_cluster.c) and the
# hello_objects example against it, and always stops the cluster.
# Skipped (77) when the daemons are not built yet.
set -u
cl=${1:?usage: client-cluster.sh ATOLL_CLUSTER CLIENT_TEST HELLO [OBJECTS [MAX_MIB]]}
test_bin=${2:?}
hello=${3:?}
# $CLIENT_TEST_OBJECTS / $CLIENT_TEST_MIB shrink the workload for a quick run
objects=${4:-${CLIENT_TEST_OBJECTS:-2000}}
max_mib=${5:-${CLIENT_TEST_MIB:-1024}}

bindir=$(dirname "$cl")
for d in "$bindir/../mon/atoll-mon" "$bindir/../osd/atoll-osd"; do
	[ -x "$d" ] || { echo "skip: $d is not built"; exit 77; }
done

dir=$(mktemp -d "${TMPDIR:-/tmp}/atoll-client-test.XXXXXX") || exit 1
stop() {
	"$cl" down --dir "$dir/c" --purge >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap stop EXIT
trap 'exit 1' INT TERM

# No atoll-nbd or file system (not this test's), and stores not zero-filled
# at mkfs (osd_mkfs_prefill, doc/daemons.md): writing three 4G stores whole
# took most of the time `up` did.
if ! "$cl" up --dir "$dir/c" --osds 3 --hosts 3 --size 4G --pool client --pg 16 \
	--no-nbd --no-mds --set osd_mkfs_prefill=false \
	--timeout 120 >"$dir/up.log" 2>&1; then
	echo "FAIL: atoll-cluster up"
	cat "$dir/up.log"
	tail -n 30 "$dir"/c/log/*.log 2>/dev/null
	exit 1
fi
export ATOLL_CONF="$dir/c/atoll.conf"

rc=0
"$test_bin" client "$objects" "$max_mib" || rc=1
"$hello" "$ATOLL_CONF" client || { echo "FAIL: hello_objects"; rc=1; }
if [ $rc -ne 0 ]; then
	for f in "$dir"/c/log/*.log; do
		echo "---- $f (last lines)"
		tail -n 20 "$f"
	done
fi
exit $rc
