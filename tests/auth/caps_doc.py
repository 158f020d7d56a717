#!/usr/bin/env python3
"""caps_doc.py SRCDIR - doc/caps.md's tables against the code's tables.

auth-caps-walk checks on a cluster that the daemons behave as the doc's
tables say; this checks, without a cluster, that the tables name every
entry of the code's own tables and nothing else: every monitor command
of mon/commands.c with its MON_NEED_*, every message type of
mon/access.c and osd/access.c with what it needs or who may send it, and
every sub-op of osd/access.c with CAPS_R or CAPS_W.  A new command,
message type or sub-op without a row in the doc fails here.
"""
import re
import sys

src = sys.argv[1]


def read(path):
    with open(f"{src}/{path}") as f:
        return f.read()


def doc_rows(title):
    rows, inside = [], False
    for line in read("doc/caps.md").splitlines():
        if line.startswith("## "):
            inside = line[3:].startswith(title)
            continue
        if inside and line.startswith("| `"):
            rows.append([c.strip().replace("`", "") for c in line.strip("|").split("|")])
    if not rows:
        sys.exit(f"doc/caps.md: no table under '## {title}'")
    return rows


failed = []


def same(what, code, doc):
    if code != doc:
        for k in sorted(set(code) | set(doc)):
            if code.get(k) != doc.get(k):
                failed.append(f"{what} '{k}': code says {code.get(k)!r}, "
                              f"doc/caps.md says {doc.get(k)!r}")


need = {"r": "R", "rw": "W", "*": "ALL", "profile osd": "OSD", "profile mds": "MDS",
        "profile bootstrap-osd": "BOOTSTRAP_OSD", "profile blocklist": "BLOCKLIST",
        "the command's (below)": "R"}

# monitor commands (an entry without its MON_NEED_* is an error)
commands_c = read("mon/commands.c")
code = dict(re.findall(r'\{ "([a-z -]+)", cmd_\w+, CMD_\w+, MON_NEED_(\w+) \}', commands_c))
for name in re.findall(r'\{ "([a-z -]+)", cmd_\w+', commands_c):
    if name not in code:
        failed.append(f"monitor command '{name}' in mon/commands.c declares no MON_NEED_*")
doc = {r[0]: need.get(r[1], r[1]) for r in doc_rows("Monitor commands")}
same("monitor command", code, doc)

# messages to a monitor
code = {name: n for name, n in re.findall(r'\{ MT_\w+, "(\w+)", MON_NEED_(\w+), RF_\w+ \}',
                                          read("mon/access.c"))}
doc = {r[0]: need.get(r[2], r[2]) for r in doc_rows("Messages to a monitor")}
same("message to a monitor", code, doc)

# messages to an OSD
osd_access = read("osd/access.c")
frm = {"ANY": "any entity", "OSD": "osd.*", "OUR_MON": "monitors this OSD dialled"}
code = {t: frm.get(f, f) for t, f in re.findall(r'\{ MT_(\w+), FROM_(\w+) \}', osd_access)}
doc = {r[0]: r[2] for r in doc_rows("Messages to an OSD")}
same("message to an OSD", code, doc)

# sub-ops
bits = {"CAPS_R": "r", "CAPS_W": "w"}
code = {op: bits.get(b, b) for op, b in
        re.findall(r'\[OSD_OP_(\w+)\] = (CAPS_\w+)', osd_access)}
doc = {r[0]: r[2] for r in doc_rows("Sub-ops of OSD_OP")}
same("sub-op", code, doc)
# and the codes of the doc are proto.h's
codes = dict(re.findall(r'OSD_OP_(\w+) = (\d+),', read("lib/proto.h")))
for r in doc_rows("Sub-ops of OSD_OP"):
    if codes.get(r[0]) != r[1]:
        failed.append(f"sub-op '{r[0]}': code {r[1]} in doc/caps.md, "
                      f"{codes.get(r[0])} in lib/proto.h")
missing = set(codes) - {r[0] for r in doc_rows("Sub-ops of OSD_OP")}
if missing:
    failed.append(f"sub-ops of lib/proto.h without a row: {sorted(missing)}")

for f in failed:
    print("FAIL:", f, file=sys.stderr)
if failed:
    sys.exit(1)
print("ok: doc/caps.md's tables match mon/commands.c, mon/access.c, osd/access.c")
