#!/usr/bin/env python3
"""tests/packaging/unit_exec.py UNIT_FILE INSTANCE [VAR=VALUE...] - runs the
ExecStart= of an installed systemd unit the way systemd would, for hosts
where systemd is not PID 1 (containers, this test machine).

It reads the unit file (a template: %i and %I become INSTANCE), takes its
Environment= (the VAR=VALUE arguments win, as a drop-in's would), expands
${VAR} (one word) and $VAR (split into words, none when empty) in the
ExecStart= line, makes the unit's StateDirectory= and LogsDirectory=
under /var/lib and /var/log and gives them to User=/Group= (recursively,
as systemd does at each start), applies UMask= and LimitNOFILE=, drops to
the user and execs the program: the caller's $! is the daemon's PID.

--print instead of running: prints the command line, one word a line.
Only what the atoll units use is understood; anything else in [Service]
that changes how the program starts is an error, so the test cannot pass
on a unit this runner does not really follow.
"""
import grp
import os
import pwd
import re
import resource
import shlex
import sys

# [Service] keys that do not change the command or its credentials here:
# systemd's sandboxing (the test cannot apply it without systemd), the
# restart policy, how it is stopped.
IGNORED = {
    "Type", "KillMode", "TimeoutStopSec", "Restart", "RestartSec", "LimitMEMLOCK",
    "NoNewPrivileges", "CapabilityBoundingSet", "AmbientCapabilities", "ProtectSystem",
    "ProtectHome", "PrivateTmp", "PrivateDevices", "ProtectKernelTunables",
    "ProtectKernelModules", "ProtectKernelLogs", "ProtectControlGroups", "ProtectClock",
    "ProtectHostname", "ProtectProc", "RestrictAddressFamilies", "RestrictNamespaces",
    "RestrictRealtime", "RestrictSUIDSGID", "LockPersonality", "MemoryDenyWriteExecute",
    "RemoveIPC", "SystemCallArchitectures", "SystemCallFilter", "SystemCallErrorNumber",
    "StateDirectoryMode", "LogsDirectoryMode", "ExecReload",
}
KNOWN = {"ExecStart", "Environment", "User", "Group", "UMask", "LimitNOFILE",
         "StateDirectory", "LogsDirectory"}


def die(msg):
    sys.stderr.write("unit_exec: %s\n" % msg)
    sys.exit(2)


def parse(path):
    """{key: [values]} of the [Service] section (continuation lines joined)."""
    out, section, pending = {}, None, ""
    with open(path) as f:
        for raw in f:
            line = pending + raw.rstrip("\n")
            pending = ""
            if line.endswith("\\"):
                pending = line[:-1] + " "
                continue
            s = line.strip()
            if not s or s[0] in "#;":
                continue
            if s.startswith("["):
                section = s.strip("[]")
                continue
            if section != "Service":
                continue
            k, _, v = s.partition("=")
            out.setdefault(k.strip(), []).append(v.strip())
    return out


def specifiers(s, inst):
    return s.replace("%i", inst).replace("%I", inst).replace("%%", "%")


def expand(words, env):
    """systemd's ExecStart= expansion: ${V} stays one word, $V splits."""
    out = []
    for w in words:
        m = re.fullmatch(r"\$([A-Za-z_][A-Za-z0-9_]*)", w)
        if m:
            out.extend(env.get(m.group(1), "").split())
            continue
        out.append(re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}",
                          lambda mm: env.get(mm.group(1), ""), w))
    return out


def chown_tree(path, uid, gid):
    os.lchown(path, uid, gid)
    for root, dirs, files in os.walk(path):
        for n in dirs + files:
            os.lchown(os.path.join(root, n), uid, gid)


def main():
    args = sys.argv[1:]
    show = False
    if args and args[0] == "--print":
        show = True
        args = args[1:]
    if len(args) < 2:
        die("usage: unit_exec.py [--print] UNIT_FILE INSTANCE [VAR=VALUE...]")
    unit, inst, overrides = args[0], args[1], args[2:]
    svc = parse(unit)
    for k in svc:
        if k not in KNOWN and k not in IGNORED:
            die("%s: [Service] %s= is not understood by this runner" % (unit, k))
    env = {}
    for line in svc.get("Environment", []):
        for item in shlex.split(specifiers(line, inst)):
            k, _, v = item.partition("=")
            env[k] = v
    for item in overrides:
        k, _, v = item.partition("=")
        env[k] = v
    starts = svc.get("ExecStart", [])
    if len(starts) != 1:
        die("%s: %d ExecStart= lines, want 1" % (unit, len(starts)))
    words = expand(shlex.split(specifiers(starts[0], inst)), env)
    if words and words[0][:1] in "-@+!:":
        die("%s: ExecStart= prefixes are not understood by this runner" % unit)
    if show:
        print("\n".join(words))
        return
    user = svc.get("User", ["root"])[-1]
    group = svc.get("Group", [None])[-1]
    pw = pwd.getpwnam(user)
    gid = grp.getgrnam(group).gr_gid if group else pw.pw_gid
    for key, base, mode_key in (("StateDirectory", "/var/lib", "StateDirectoryMode"),
                                ("LogsDirectory", "/var/log", "LogsDirectoryMode")):
        mode = int(svc.get(mode_key, ["0755"])[-1], 8)
        for line in svc.get(key, []):
            for d in specifiers(line, inst).split():
                p = os.path.join(base, d)
                os.makedirs(p, exist_ok=True)
                os.chmod(p, mode)
                chown_tree(p, pw.pw_uid, gid)
    if "UMask" in svc:
        os.umask(int(svc["UMask"][-1], 8))
    if "LimitNOFILE" in svc:
        n = int(svc["LimitNOFILE"][-1])
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
        except (ValueError, OSError):
            # a container may not let even root raise the hard limit
            # (no CAP_SYS_RESOURCE): go as far as it allows
            hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(n, hard), hard))
    os.initgroups(user, gid)
    os.setgid(gid)
    os.setuid(pw.pw_uid)
    os.environ.update(env)
    os.chdir("/")
    os.execv(words[0], words)


if __name__ == "__main__":
    main()
