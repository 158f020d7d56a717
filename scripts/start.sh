#!/bin/bash
# scripts/start.sh - builds atoll and starts its main job: a local cluster.
#
#   scripts/start.sh [UP-OPTIONS]     build, then `atoll-cluster up`: a monitor
#                                     and 3 OSDs on 3 loopback "hosts"
#                                     (127.0.0.2-4), a pool 'default' of size
#                                     3; waits for HEALTH_OK and prints how to
#                                     use it (export ATOLL_CONF=..., atoll ...)
#   scripts/start.sh down [--purge]   stop that cluster (--purge: remove it)
#   scripts/start.sh status           its daemons and the cluster's status
#   scripts/start.sh storebench [ARGS]  the store engine's benchmark, as
#                                     before the cluster existed: runs
#                                     atoll-storebench on a temporary store
#                                     under $TMPDIR (default /var/tmp),
#                                     removed at the end (--quick: a short
#                                     run; --help lists its options)
#
# The cluster lives in scratch/cluster/ inside the repository (ignored by
# git) unless --dir DIR or $ATOLL_CLUSTER_DIR says otherwise; its logs are
# in DIR/log/.  UP-OPTIONS go to `atoll-cluster up`, e.g. --osds 6 --hosts 3
# --size 20G (see: build-release/tools/atoll-cluster --help).  Running it
# again while the cluster runs just prints how to use it; after `down` it
# starts the same cluster again, with its data.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bin=$root/build-release

case ${1:-} in
-h|--help)
	sed -n '2,/^set -eu/p' "$0" | sed -e '/^set -eu/d' -e 's/^# \{0,1\}//'
	exit 0 ;;
storebench)
	shift
	echo "start.sh: building atoll-storebench (build-release)..." >&2
	"$root/scripts/build.sh" osd/atoll-storebench osd/atoll-store-tool
	exec "$bin/osd/atoll-storebench" "$@" ;;
esac

echo "start.sh: building atoll (build-release)..." >&2
"$root/scripts/build.sh" tools/atoll tools/atoll-cluster mon/atoll-mon osd/atoll-osd \
	blockdev/nbd/atoll-nbd posixfs/atoll-mds posixfs/atoll-fuse

export ATOLL_CLUSTER_DIR=${ATOLL_CLUSTER_DIR:-$root/scratch/cluster}
cluster=$bin/tools/atoll-cluster
case ${1:-} in
down|status)
	exec "$cluster" "$@" ;;
esac

running=0
if [ -f "$ATOLL_CLUSTER_DIR/cluster.state" ] && [ $# -eq 0 ]; then
	running=$("$cluster" status --format json 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["running"])' 2>/dev/null || echo 0)
fi
if [ "$running" != 0 ]; then
	echo "start.sh: the cluster in $ATOLL_CLUSTER_DIR is already running" >&2
	"$cluster" status || true
else
	"$cluster" up "$@"
fi
cat <<EOT

The programs are in $bin (not installed); to type them as above:
  export PATH=$bin/tools:\$PATH ATOLL_CONF=$ATOLL_CLUSTER_DIR/atoll.conf
Stop the cluster with: scripts/start.sh down   (scripts/start.sh down --purge removes it)
EOT
