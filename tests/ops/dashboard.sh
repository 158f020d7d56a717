#!/bin/bash
# tests/ops/dashboard.sh ATOLL-CLUSTER ATOLL [ARTIFACT-DIR] - the monitors'
# web dashboard (doc/dashboard.md) in Debian's headless Chromium, on one
# local cluster: `atoll-cluster up` prints every monitor's dashboard URL;
# a monitor that does not lead redirects to the one that does (307) and
# tells a page where it is (/api/leader); the dashboard is read only
# (POST gets 405); the leader's page loads with no console message, shows
# HEALTH_OK, the OSD tree, the pool and the images, and draws its charts;
# an OSD killed shows as down with OSD_DOWN's text within seconds of the
# monitors marking it down, and no election happens meanwhile (the
# dashboard's OSD reads stay off the monitors' threads); the leader
# killed under an open page, the page moves to the new leader's
# dashboard.  Screenshots of the healthy page and of the page during the
# recovery are kept in ARTIFACT-DIR (meson's log folder).  Skipped (77) without chromium.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../cluster/lib.sh
. "$here/../cluster/lib.sh"
artifacts=${1:-}

chromium_bin=$(command -v chromium || command -v chromium-browser || true)
artifacts=${artifacts%/}
[ -n "$chromium_bin" ] || skip "chromium is not installed (scripts/deps.sh)"

# cdp URL STEP...: one page in headless Chromium driven through the
# DevTools protocol (cdp.py: wait for a condition, dump the DOM, take a
# screenshot, run a command); the page's console messages, exceptions and
# browser log entries (failed loads, refused content) in $tmp/console;
# Chromium's own temporary folders go to $tmp too (removed with it)
cdp() {
	TMPDIR=$tmp python3 "$here/cdp.py" --browser "$chromium_bin" --profile "$tmp/chromium" \
		--console "$tmp/console" "$@"
}

cluster_up --osds 4 --hosts 4 --mds 1 --set dashboard_images_interval=2s
dash_of() { awk -v n="$1" '$1 == "dashboard" && $2 == n { print $3 }' "$cdir/cluster.state"; }
mons=$(awk '$1 == "daemon" && $3 == "mon" { print $2 }' "$cdir/cluster.state")
for m in $mons; do
	u=$(dash_of "$m")
	case $u in http://127.0.0.*/) ;; *) fail "$m has no loopback dashboard URL: '$u'" ;; esac
	grep -q "^  $m *$u\$" "$tmp/up.out" || fail "up did not print $m's dashboard URL: $(cat "$tmp/up.out")"
done
ok "up gives every monitor a loopback dashboard URL and prints it"

wait_health HEALTH_OK
leader=mon.$(atoll --format json quorum status | python3 -c 'import json,sys; print(json.load(sys.stdin)["leader"])')
lurl=$(dash_of "$leader")
lurl=${lurl%/}
term0=$(atoll --format json quorum status | python3 -c 'import json,sys; print(json.load(sys.stdin)["term"])')

# HTTP: read only; a follower redirects, and says where the leader is
http() {
	python3 - "$@" <<'EOF'
import sys, urllib.request, urllib.error
method, url = sys.argv[1], sys.argv[2]
class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a, **k):
        return None
opener = urllib.request.build_opener(NoRedirect)
try:
    r = opener.open(urllib.request.Request(url, method=method), timeout=10)
    code, loc, body = r.status, r.headers.get("Location", ""), r.read()
except urllib.error.HTTPError as e:
    code, loc, body = e.code, e.headers.get("Location", ""), e.read()
print(code, loc)
sys.stdout.flush()
if len(sys.argv) > 3:
    open(sys.argv[3], "wb").write(body)
EOF
}
for m in $mons; do
	[ "$m" = "$leader" ] && continue
	fu=$(dash_of "$m")
	set -- $(http GET "${fu}api/status")
	[ "$1" = 307 ] && [ "${2:-}" = "$lurl/api/status" ] ||
		fail "$m answers /api/status with '$*', not 307 to $lurl/api/status"
	set -- $(http GET "$fu")
	[ "$1" = 307 ] && [ "${2:-}" = "$lurl/" ] || fail "$m answers / with '$*', not 307 to $lurl/"
	http GET "${fu}api/leader" "$tmp/leader.json" >/dev/null
	pyjson "j['leader'] is False and j['leader_url'] == '$lurl'" <"$tmp/leader.json" ||
		fail "$m's /api/leader does not name $lurl"
done
set -- $(http POST "$lurl/api/status")
[ "$1" = 405 ] || fail "POST to the dashboard got $1, not 405"
set -- $(http GET "$lurl/../../etc/passwd")
case $1 in 400|404) ;; *) fail "a path outside the page's files got $1, not 404" ;; esac
ok "the followers redirect to the leader's dashboard ($leader) and name it; POST gets 405"

# something to show: 48 MiB of objects (a recovery that lasts a moment)
# and an image
# (ATOLL_TEST_DASH_MIB: more, for a screenshot of a longer recovery)
atoll bench default 60 write -b 1M -t 8 --max-ops "${ATOLL_TEST_DASH_MIB:-48}" --no-cleanup \
	>/dev/null 2>&1 ||
	fail "atoll bench write"
atoll image create default disk1 --size 64M >/dev/null || fail "image create"
http GET "$lurl/api/status?since=0" "$tmp/status.json" >/dev/null
pyjson "j['status']['health']['status'] == 'HEALTH_OK' and len(j['history']) >= 2" <"$tmp/status.json" ||
	fail "/api/status is not a healthy snapshot with history"
for _ in $(seq 100); do
	http GET "$lurl/api/status" "$tmp/status.json" >/dev/null
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))
im=j["images"] or {}
fs=j["fs"] or {}
sys.exit(0 if any(i["name"] == "disk1" for p in im.get("pools", []) for i in p.get("images", []))
         and any("clients" in f for f in fs.get("filesystems", [])) else 1)' \
		"$tmp/status.json" && break
	sleep 0.3
done
pyjson "any(i['name'] == 'disk1' for p in (j['images'] or {}).get('pools', []) for i in p['images'])" \
	<"$tmp/status.json" || fail "the dashboard does not list image disk1 (as client.dashboard)"
pyjson "[f for f in (j['fs'] or {}).get('filesystems', []) if f['mds'] == 'a' and 'clients' in f]" \
	<"$tmp/status.json" || fail "the dashboard has not asked mds.a for its clients"
ok "/api/status: the snapshot, the samples of the last minutes, the images and the MDS's clients (as client.dashboard)"

# the page in a browser: healthy, then an OSD killed, then its recovery
shots=${artifacts:-$tmp}
[ -z "$artifacts" ] || mkdir -p "$artifacts"
healthy='document.body.dataset.health === "HEALTH_OK"
	&& document.querySelectorAll("#osd-tree tr[data-status=up][data-in=true]").length === 4
	&& document.getElementById("pool-default") && document.getElementById("image-default-disk1")
	&& document.getElementById("fs-body").textContent.includes("mds.a")
	&& ["chart-client", "chart-recovery", "chart-degraded"].every(
		(id) => Number(document.getElementById(id).dataset.points) > 0)'
down='document.querySelector("#osd-2[data-status=down]") && document.getElementById("check-OSD_DOWN")
	&& document.getElementById("check-OSD_DOWN").textContent.includes("What to do")
	&& document.body.dataset.health !== "HEALTH_OK"'
# an ETA on the page, or the recovery already over
recovering='/left/.test((document.getElementById("recovery-eta") || {}).textContent || "")
	|| /Nothing to recover/.test(document.getElementById("recovery-body").textContent)'
# kills osd.2 and returns once the monitors marked it down
cat >"$tmp/kill.sh" <<KILL
"$cluster_bin" osd kill 2 --dir "$cdir" >/dev/null 2>&1 || exit 1
for i in \$(seq 150); do
	"$atoll_bin" --format json osd tree 2>/dev/null | grep -Eq '"status": ?"down"' && exit 0
	sleep 0.2
done
echo "the monitors did not mark osd.2 down" >&2
exit 1
KILL
cdp "$lurl/" "wait:30:$healthy" "dom:$tmp/healthy.html" "shot:$shots/dashboard-healthy.png" \
	"run:sh $tmp/kill.sh" "wait:20:$down" "dom:$tmp/down.html" "shot:$shots/dashboard-degraded.png" \
	"run:\"$atoll_bin\" osd out 2 >/dev/null 2>&1" "try:20:$recovering" \
	"shot:$shots/dashboard-recovery.png" "dom:$tmp/recovery.html" >"$tmp/cdp.out" ||
	fail "the page in chromium: $(cat "$tmp/cdp.out")"
[ ! -s "$tmp/console" ] || fail "the page logged: $(cat "$tmp/console")"
grep -q 'class="badge HEALTH_OK">HEALTH_OK<' "$tmp/healthy.html" || fail "the DOM does not say HEALTH_OK"
ok "the page loads with no console message: HEALTH_OK, 4 OSDs up and in, the pool, disk1, mds.a, 3 charts with points"
seen=$(awk '/^waited/ { n++; if (n == 2) print $2 }' "$tmp/cdp.out")
grep -q 'id="check-OSD_DOWN"' "$tmp/down.html" || fail "the DOM has no OSD_DOWN"
ok "osd.2 killed: the page shows it down and OSD_DOWN with what to do, ${seen}s after the monitors marked it"
grep -q 'id="recovery-state"' "$tmp/recovery.html" || fail "the page has no recovery state"
[ -s "$shots/dashboard-healthy.png" ] && [ -s "$shots/dashboard-degraded.png" ] &&
	[ -s "$shots/dashboard-recovery.png" ] || fail "no screenshot"
ok "osd.2 out: the recovery shows ($(tail -n 1 "$tmp/cdp.out")); screenshots in $shots"

term1=$(atoll --format json quorum status | python3 -c 'import json,sys; print(json.load(sys.stdin)["term"])')
[ "$term0" = "$term1" ] || fail "an election happened (term $term0 -> $term1) with the dashboard open"
ok "no election while the dashboard was read through an OSD kill (term $term1)"

# the leader killed under an open page: the page finds the new leader's
# dashboard through the others' /api/leader and goes on there
moved="window.location.origin !== \"$lurl\" && document.body.dataset.health
	&& document.getElementById(\"mon-body\").textContent.includes(\"leader mon.\")"
cdp "$lurl/" "wait:30:document.body.dataset.health" \
	"run:\"$cluster_bin\" mon kill --dir \"$cdir\" >\"$tmp/killed\" 2>&1" \
	"wait:60:$moved" "dom:$tmp/moved.html" >"$tmp/cdp2.out" ||
	fail "the page after the leader was killed: $(cat "$tmp/cdp2.out")"
killed=$(cat "$tmp/killed")
[ "$killed" = "$leader" ] || fail "atoll-cluster mon kill stopped '$killed', not the leader $leader"
nleader=mon.$(atoll --format json quorum status | python3 -c 'import json,sys; print(json.load(sys.stdin)["leader"])')
grep -q "leader $nleader, term" "$tmp/moved.html" || fail "the page does not name the new leader $nleader"
secs=$(awk '/^waited/ { n++; if (n == 2) print $2 }' "$tmp/cdp2.out")
ok "$leader killed under an open page: it moved to $nleader's dashboard in ${secs}s"

# HTTPS: a lone monitor of its own refuses a dashboard beyond loopback
# without a certificate, and serves it over TLS with one
mon_bin=$bindir/mon/atoll-mon
lone_pid=
stop_lone() {
	if [ -n "$lone_pid" ]; then
		kill "$lone_pid" 2>/dev/null || true
		for _ in $(seq 100); do kill -0 "$lone_pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$lone_pid" 2>/dev/null || true
		lone_pid=
	fi
}
cleanup_hook=stop_lone
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
mport=$(free_port)
dport=$(free_port)
printf '[global]\nmon_host = 127.0.0.1:%s\n' "$mport" >"$tmp/lone.conf"
"$mon_bin" --mkfs --data "$tmp/lone" --name z --addr "127.0.0.1:$mport" \
	--conf "$tmp/lone.conf" >"$tmp/lone.mkfs" 2>&1 || fail "atoll-mon --mkfs: $(cat "$tmp/lone.mkfs")"
rc=0
timeout 30 "$mon_bin" --data "$tmp/lone" --conf "$tmp/lone.conf" \
	--set "dashboard_addr=192.0.2.1:$dport" >"$tmp/lone.out" 2>&1 || rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "a dashboard on 192.0.2.1 without HTTPS was not refused (exit $rc)"
grep -q "not a loopback address" "$tmp/lone.out" || fail "the refusal does not say why: $(cat "$tmp/lone.out")"
ok "a dashboard beyond loopback without a certificate is refused at start"

if command -v openssl >/dev/null; then
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
		-keyout "$tmp/dash.key" -out "$tmp/dash.crt" >/dev/null 2>&1 || fail "openssl req"
	"$mon_bin" --data "$tmp/lone" --conf "$tmp/lone.conf" \
		--set "dashboard_addr=127.0.0.1:$dport" --set "dashboard_cert=$tmp/dash.crt" \
		--set "dashboard_key=$tmp/dash.key" >"$tmp/lone.out" 2>&1 &
	lone_pid=$!
	got=
	for _ in $(seq 100); do
		got=$(python3 - "https://127.0.0.1:$dport/" "$tmp/dash.crt" <<'PYEOF' 2>/dev/null || true
import ssl, sys, urllib.request
ctx = ssl.create_default_context(cafile=sys.argv[2])
r = urllib.request.urlopen(sys.argv[1], context=ctx, timeout=5)
body = r.read().decode()
print(r.status, "atoll dashboard" in body)
PYEOF
)
		[ "$got" = "200 True" ] && break
		sleep 0.2
	done
	[ "$got" = "200 True" ] || fail "no page over HTTPS (got '$got'): $(tail -5 "$tmp/lone.out")"
	python3 -c 'import sys, urllib.request
try:
    urllib.request.urlopen(sys.argv[1], timeout=5)
except Exception:
    sys.exit(0)
sys.exit(1)' "http://127.0.0.1:$dport/" || fail "the HTTPS dashboard answers plain HTTP"
	stop_lone
	ok "with dashboard_cert and dashboard_key the page is served over HTTPS (verified), not over HTTP"
fi
cleanup_hook=
