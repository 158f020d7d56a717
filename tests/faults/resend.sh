#!/bin/bash
# resend.sh - resends injected at the messenger are applied once: the
# client's messenger writes 15% of its request frames twice (same tid) and
# resets the connection after 4% of them (ms_inject_dup_permille,
# ms_inject_reset_permille, doc/daemons.md); under 16 ops in flight every
# append must be applied exactly once (size and content against the
# ledger) with strictly increasing versions per object, and every read
# must return the last acknowledged write_full.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

faults_up
wait_health HEALTH_OK
ok "3 OSDs on 3 hosts are up"

fc resend default || fail "the workload under injected duplicates and resets"
ok "duplicated and reset requests were applied exactly once"
[ "$(atoll health)" = HEALTH_OK ] || fail "health after the workload: $(atoll health detail)"
ok "the cluster is still HEALTH_OK"
