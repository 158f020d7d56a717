#!/bin/bash
# scripts/deps.sh - installs the Debian 12 packages that atoll's build and
# tests need, only when some are missing.
#
# Idempotent and quiet: when everything is there it prints nothing and
# exits 0.  Otherwise it runs `apt-get update` once and installs exactly
# the missing packages, without questions (root, or sudo when available).
# Extra packages can be asked for as arguments: scripts/deps.sh nbdkit
set -eu

pkgs=(
	# build
	meson ninja-build pkg-config gcc g++ libc6-dev
	# libraries (see doc/build.md for what each is for)
	libaio-dev liblmdb-dev lmdb-utils libisal-dev liblz4-dev
	libjemalloc-dev libxxhash-dev libinih-dev libcjson-dev
	# authentication (lib/auth_crypto.c): OpenSSL 3
	libssl-dev
	# the monitors' replicated log (mon/quorum.c)
	libraft-dev libuv1-dev
	# tests: Criterion, JSON checks (libFuzzer's clang and its runtime,
	# clang libclang-rt-14-dev, only for scripts/test.sh --full: it asks)
	libcriterion-dev python3
	# metrics (lib/metrics_http.c): libmicrohttpd; promtool (prometheus)
	# checks every daemon's /metrics in tests/ops
	libmicrohttpd-dev prometheus
	# the monitors' web dashboard (mon/dashboard/) in a headless
	# browser: tests/ops/dashboard.sh
	chromium
	# benchmarks: the disk reference (bench/disklimit.sh)
	fio
	# the block device tests (tests/nbd): NBD clients (nbdinfo, nbdcopy,
	# nbdfuse, nbdsh + python module), qemu-img, ext4 over nbdfuse + loop
	libnbd-bin nbdkit python3-libnbd qemu-utils fuse3 e2fsprogs
	# NBD over TLS (blockdev/nbd/nbd_tls.c): GnuTLS; certtool and psktool
	# make the tests' certificates and keys (tests/nbd/test_nbd_tls.py)
	libgnutls28-dev gnutls-bin
	# the file system (posixfs/atoll-fuse): libfuse3 low-level API; the
	# tools tests/fs/fs-tools.sh runs on a mount; bench/fsbench.sh's bc, postmark
	libfuse3-dev rsync tar git bc postmark
	"$@"
)

missing=()
for p in "${pkgs[@]}"; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[ "$st" = "install ok installed" ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		sudo="sudo -n"
	else
		echo "deps.sh: missing packages: ${missing[*]}; run as root or install them with: apt-get install ${missing[*]}" >&2
		exit 1
	fi
fi

echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >&2
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
	--no-install-recommends "${missing[@]}" >&2
