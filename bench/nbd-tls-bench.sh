#!/bin/bash
# bench/nbd-tls-bench.sh - the cost of TLS in atoll-nbd: nbdcopy of 1 GiB
# into an image and back, plain and over TLS (PSK), against a real cluster
# (doc/benchmarks.md, "NBD over TLS").
#
#   bench/nbd-tls-bench.sh [--size-mib N] [--rounds N] [BUILD_DIR]
#
# Starts a cluster (3 OSDs on 3 hosts, 1 monitor, pool 'default' of size
# 3, no MDS), creates a 1 GiB image, starts one atoll-nbd of its own with
# --tls=on and a PSK file (so one server serves both kinds of client),
# then per round: plain write, TLS write, plain read, TLS read (nbdcopy
# from a random file; reads to null:), alternated so that drift of the
# shared machine hits both alike.  Prints each run's seconds and MiB/s,
# and the CPU seconds atoll-nbd used for it.  Stops everything and removes
# the cluster's stores on every exit.  Run it under `nice -n 19`.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
build=${ATOLL_BUILD:-$here/build-release}
mib=1024 rounds=1
while [ $# -gt 0 ]; do
	case $1 in
	--size-mib) mib=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	-h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "unknown option '$1'; see: bench/nbd-tls-bench.sh --help" >&2; exit 2 ;;
	*) build=$1; shift ;;
	esac
done
build=$(cd "$build" && pwd)
for t in nbdcopy psktool; do
	command -v "$t" >/dev/null || { echo "$t is missing; run scripts/deps.sh" >&2; exit 1; }
done
out=$(mktemp -d /var/tmp/atoll-nbd-tls-bench.XXXXXX)
cdir=$out/cluster
nbdpid=""
cleanup() {
	if [ -n "$nbdpid" ]; then
		kill "$nbdpid" 2>/dev/null || true
		wait "$nbdpid" 2>/dev/null || true
	fi
	[ -d "$cdir" ] && "$build/tools/atoll-cluster" down --dir "$cdir" --purge >/dev/null 2>&1 || true
	rm -f "$out/src" "$out/keys.psk"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "# nbd-tls-bench $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$here" rev-parse --short HEAD), $mib MiB, load $(cut -d' ' -f1-3 /proc/loadavg)"
mkdir -p "$cdir"
"$build/tools/atoll-cluster" up --dir "$cdir" --mons 1 --size 4G --no-mds --no-nbd \
	--timeout 120 > "$out/up.txt" 2>&1 ||
	{ tail -20 "$out/up.txt" >&2; echo "atoll-cluster up failed" >&2; exit 1; }
"$build/tests/nbd/nbd-image-tool" "$cdir/atoll.conf" default create bench $((mib << 20)) >/dev/null
psktool -u bench -p "$out/keys.psk" >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$build/blockdev/nbd/atoll-nbd" --conf "$cdir/atoll.conf" --addr "127.0.0.1:$port" \
	--tls=on --tls-psk "$out/keys.psk" --log "$out/nbd.log" &
nbdpid=$!
for _ in $(seq 100); do
	python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null && break
	sleep 0.1
done
head -c $((mib << 20)) /dev/urandom > "$out/src"
plain="nbd://127.0.0.1:$port/bench"
tls="nbds://bench@127.0.0.1:$port/bench?tls-psk-file=$out/keys.psk"
cpu() { awk '{print $14 + $15}' "/proc/$nbdpid/stat"; }
run() {	# LABEL SRC DST
	local c0 t0 t1 c1
	c0=$(cpu); t0=$(date +%s.%N)
	nbdcopy "$2" "$3"
	t1=$(date +%s.%N); c1=$(cpu)
	awk -v l="$1" -v t0="$t0" -v t1="$t1" -v c="$((c1 - c0))" -v m="$mib" \
		-v hz="$(getconf CLK_TCK)" \
		'BEGIN { printf "%-12s %7.2f s %8.1f MiB/s   atoll-nbd CPU %6.2f s\n", l, t1 - t0, m / (t1 - t0), c / hz }'
}
for r in $(seq "$rounds"); do
	echo "== round $r"
	run "plain write" "$out/src" "$plain"
	run "tls write" "$out/src" "$tls"
	run "plain read" "$plain" null:
	run "tls read" "$tls" null:
done
grep -m1 "TLS on (" "$out/nbd.log" | sed 's/.*TLS on/# cipher:/' || true
echo "# load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
