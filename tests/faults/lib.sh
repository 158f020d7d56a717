# tests/faults/lib.sh - shared by the fault tests (sourced, not run).
#
# Arguments: ATOLL-CLUSTER ATOLL FAULTS-CLIENT FAULTS-RAWOP STORE-TOOL
# (meson passes the build's).  tests/cluster/lib.sh does the rest: the
# skips (77) when a daemon or python3 is missing, the temporary folder,
# `atoll-cluster down` from the EXIT trap (also on failure), cluster_up,
# fail/ok/expect/pyjson/wait_health.
. "$(dirname "$0")/../cluster/lib.sh"

client_bin=${1:?usage: $0 ATOLL-CLUSTER ATOLL FAULTS-CLIENT FAULTS-RAWOP STORE-TOOL}
rawop_bin=${2:?}
storetool_bin=${3:?}
[ -x "$client_bin" ] || skip "faults-client is missing ($client_bin)"
[ -x "$rawop_bin" ] || skip "faults-rawop is missing ($rawop_bin)"
[ -x "$storetool_bin" ] || skip "atoll-store-tool is missing ($storetool_bin)"

fc() { "$client_bin" "$@"; }

# faults_up [ATOLL-CLUSTER-UP-OPTIONS...]: cluster_up without what these
# tests do not use: no atoll-nbd, no file system (its pools and MDS).
faults_up() {
	cluster_up --no-nbd --no-mds "$@"
}
