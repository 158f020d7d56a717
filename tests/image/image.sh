#!/bin/bash
# image.sh ATOLL-CLUSTER ATOLL IMAGE_CLUSTER - a 3-OSD cluster (atoll-cluster
# up --size 1G in a temporary folder, always stopped), then the library
# checks (image_cluster) and the CLI's: import/export round trips with
# checksums, JSON output, snapshots, --help.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
prog=${3:?usage: image.sh ATOLL-CLUSTER ATOLL IMAGE_CLUSTER}
. "$here/../cluster/lib.sh" "$1" "$2"

"$cluster_bin" up --dir "$cdir" --size 1G --timeout "$timeout_s" \
	--set osd_mkfs_prefill=false >/dev/null
"$prog"

A=$atoll_bin
fail() { echo "FAIL $*" >&2; exit 1; }
ok() { echo "ok $*"; }

# image sizes are multiples of 512: keep the file one for exact checksums
head -c 9000448 /dev/urandom > "$tmp/in"
dd if=/dev/zero bs=1M count=5 2>/dev/null >> "$tmp/in"	# a sparse tail
sum=$(sha256sum < "$tmp/in")
"$A" image import default cli1 "$tmp/in" || fail import_file
"$A" image export default cli1 "$tmp/out" || fail export_file
[ "$(sha256sum < "$tmp/out")" = "$sum" ] && ok import_export_file_checksums || fail checksums
cat "$tmp/in" | "$A" image import default cli2 - || fail import_stdin
[ "$("$A" image export default cli2 - | sha256sum)" = "$sum" ] && ok import_stdin_export_stdout ||
	fail stdin_checksums
"$A" --format json image info default cli1 > "$tmp/info.json"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['size']==14243328 and d['object_size']==4194304, d" \
	"$tmp/info.json" && ok info_json || fail info_json
[ "$("$A" --format json image ls default)" = '["cli1","cli2"]' ] && ok ls_json || fail ls_json
"$A" image snap create default cli1@before || fail snap_create
head -c 1000000 /dev/urandom | "$A" image import default cli3 - >/dev/null
"$A" image snap ls default cli1 | grep -q before && ok snap_ls || fail snap_ls
python3 -c "import json,sys; a=json.loads(sys.argv[1]); assert a[0]['name']=='before'" \
	"$("$A" --format json image snap ls default cli1)" && ok snap_ls_json || fail snap_ls_json
"$A" image export default cli1@before - | cmp - "$tmp/in" && ok export_snapshot || fail export_snapshot
"$A" image resize default cli1 --size 1M && ok resize_cli || fail resize_cli
"$A" image snap rollback default cli1@before && ok rollback_cli || fail rollback_cli
[ "$("$A" image export default cli1 - | sha256sum)" = "$sum" ] && ok rollback_content || fail rollback_content
"$A" image snap rm default cli1@before && ok snap_rm_cli || fail snap_rm_cli
set +e
"$A" image create default cli1 --size 1M 2>"$tmp/err"; rc=$?
set -e
[ $rc = 1 ] && grep -q "taken" "$tmp/err" && ok create_existing_fails || fail create_existing
set +e; "$A" image info default nope 2>/dev/null; rc=$?; set -e
[ $rc = 3 ] && ok info_missing_exit_3 || fail info_missing
"$A" image create --help | grep -q -- --object-size && ok help || fail help
"$A" osd blocklist add client.42 60 && "$A" osd blocklist ls | grep -q client.42 &&
	"$A" osd blocklist rm 42 && ok blocklist_cli || fail blocklist_cli
for i in cli1 cli2 cli3; do "$A" image rm default $i || fail rm_$i; done
ok all
