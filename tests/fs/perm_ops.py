#!/usr/bin/env python3
# tests/fs/perm_ops.py - one script of file operations whose results
# depend on who runs them: permission checks (EACCES, EPERM), ownership
# of new files, setgid directories, sticky directories, the set-user-ID
# bit cleared by a write.  fs-users.sh runs it as root and as an
# unprivileged user, on atoll and on a local folder (the oracle), and
# compares the outputs.
#
#   perm_ops.py setup DIR    (as root) makes the tree the script works on
#   perm_ops.py run DIR      (as anyone) runs the operations, prints one
#                            line each: the result or the errno's name
#
# Owners are printed as "root", "me" (the caller) or a number, so the
# output does not depend on the folder.
import errno
import os
import stat
import subprocess
import sys

OTHER_GID = 4242	# a group the caller is not in (the setgid folder's)


def setup(d):
    """As root: the tree, identical on every file system."""
    os.umask(0)
    for sub, mode in (("ro", 0o755), ("closed", 0o700), ("pub", 0o777),
                      ("sticky", 0o1777), ("sgid", 0o2777)):
        os.mkdir(os.path.join(d, sub), mode)
        os.chmod(os.path.join(d, sub), mode)	# mkdir drops S_ISVTX/S_ISGID on some paths
    os.chown(os.path.join(d, "sgid"), 0, OTHER_GID)
    os.mkdir(os.path.join(d, "pub/rootdir"), 0o755)
    for path, mode, body in (("ro/f", 0o644, b"readable\n"), ("ro/secret", 0o600, b"secret\n"),
                             ("ro/x", 0o755, b"#!/bin/sh\n"), ("ro/xo", 0o744, b"#!/bin/sh\n"),
                             ("closed/in", 0o644, b"in\n"),
                             ("sticky/roots", 0o666, b"root's\n"), ("pub/suid", 0o4777, b"s\n"),
                             ("pub/roots", 0o644, b"r\n")):
        p = os.path.join(d, path)
        with open(p, "wb") as f:
            f.write(body)
        os.chmod(p, mode)


def run(d):
    me = os.getuid()
    os.umask(0o022)
    out = []

    def who(uid):
        return "me" if uid == me else ("root" if uid == 0 else str(uid))

    def t(name, fn):
        try:
            r = fn()
            out.append(f"{name}: ok" + ("" if r is None else f" {r}"))
        except OSError as e:
            out.append(f"{name}: {errno.errorcode.get(e.errno, e.errno)}")

    def p(x):
        return os.path.join(d, x)

    def read(x):
        with open(p(x), "rb") as f:
            return f.read().decode().strip()

    def write(x, data=b"w\n", flags=os.O_WRONLY | os.O_APPEND):
        fd = os.open(p(x), flags, 0o644)
        try:
            return os.write(fd, data)
        finally:
            os.close(fd)

    def st(x):
        s = os.lstat(p(x))
        return f"{stat.filemode(s.st_mode)} {who(s.st_uid)} {who(s.st_gid) if s.st_gid != OTHER_GID else 'other'} {s.st_size}"

    # reading and listing
    t("read ro/f", lambda: read("ro/f"))
    t("read ro/secret", lambda: read("ro/secret"))
    t("list ro", lambda: sorted(os.listdir(p("ro"))))
    t("list closed", lambda: sorted(os.listdir(p("closed"))))
    t("stat closed/in", lambda: st("closed/in"))
    t("read closed/in", lambda: read("closed/in"))
    t("access ro/f W_OK", lambda: os.access(p("ro/f"), os.W_OK))
    t("access ro/x X_OK", lambda: os.access(p("ro/x"), os.X_OK))
    t("access ro/secret R_OK", lambda: os.access(p("ro/secret"), os.R_OK))
    t("access closed X_OK", lambda: os.access(p("closed"), os.X_OK))
    t("chdir closed", lambda: (os.chdir(p("closed")), os.chdir("/"))[1])
    t("exec ro/x", lambda: subprocess.run([p("ro/x")]).returncode)
    t("exec ro/xo", lambda: subprocess.run([p("ro/xo")]).returncode)
    t("create closed/new", lambda: write("closed/new", b"n", os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    t("unlink closed/in", lambda: os.unlink(p("closed/in")))
    t("stat closed/nothing", lambda: st("closed/nothing"))
    # writing what is not ours
    t("append ro/f", lambda: write("ro/f"))
    t("open O_TRUNC ro/f", lambda: write("ro/f", b"", os.O_WRONLY | os.O_TRUNC))
    t("truncate ro/f", lambda: os.truncate(p("ro/f"), 1))
    t("create ro/new", lambda: write("ro/new", b"n", os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    t("mkdir ro/d", lambda: os.mkdir(p("ro/d")))
    t("symlink ro/l", lambda: os.symlink("f", p("ro/l")))
    t("chmod ro/f", lambda: os.chmod(p("ro/f"), 0o666))
    t("chown ro/f", lambda: os.chown(p("ro/f"), me, -1))
    t("utime ro/f now", lambda: os.utime(p("ro/f")))
    t("utime ro/f set", lambda: os.utime(p("ro/f"), (1000000000, 1000000000)))
    t("setxattr ro/f", lambda: os.setxattr(p("ro/f"), "user.k", b"v"))
    t("getxattr ro/secret", lambda: os.getxattr(p("ro/secret"), "user.k"))
    t("unlink ro/x", lambda: os.unlink(p("ro/x")))
    t("rename ro/secret pub/s", lambda: os.rename(p("ro/secret"), p("pub/s")))
    t("read ro/f after", lambda: read("ro/f"))
    t("stat ro/f after", lambda: st("ro/f"))
    # our own files in a public folder
    t("mkdir pub/mine", lambda: os.mkdir(p("pub/mine"), 0o755))
    t("stat pub/mine", lambda: st("pub/mine"))
    t("create pub/mine/f", lambda: write("pub/mine/f", b"mine\n", os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    t("stat pub/mine/f", lambda: st("pub/mine/f"))
    t("create O_EXCL again", lambda: write("pub/mine/f", b"", os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    t("chmod pub/mine/f 600", lambda: os.chmod(p("pub/mine/f"), 0o600))
    t("chmod pub/mine/f g+s", lambda: (os.chmod(p("pub/mine/f"), 0o2640), st("pub/mine/f"))[1])
    t("chown pub/mine/f root", lambda: os.chown(p("pub/mine/f"), 0, -1))
    t("chgrp pub/mine/f other", lambda: os.chown(p("pub/mine/f"), -1, OTHER_GID))
    t("utime pub/mine/f set", lambda: os.utime(p("pub/mine/f"), (1000000000, 1000000000)))
    t("setxattr pub/mine/f", lambda: os.setxattr(p("pub/mine/f"), "user.k", b"v"))
    t("getxattr pub/mine/f", lambda: os.getxattr(p("pub/mine/f"), "user.k"))
    t("link ro/f pub/mine/h", lambda: os.link(p("ro/f"), p("pub/mine/h")))
    t("link ro/secret pub/mine/h2", lambda: os.link(p("ro/secret"), p("pub/mine/h2")))
    t("symlink pub/mine/l", lambda: os.symlink("../../ro/secret", p("pub/mine/l")))
    t("read pub/mine/l", lambda: read("pub/mine/l"))
    t("rename pub/mine/f pub/mine/g", lambda: os.rename(p("pub/mine/f"), p("pub/mine/g")))
    t("rename pub/roots pub/mine/r", lambda: os.rename(p("pub/roots"), p("pub/mine/r")))
    t("chmod pub/mine 0", lambda: os.chmod(p("pub/mine"), 0))
    t("list pub/mine (mode 0)", lambda: sorted(os.listdir(p("pub/mine"))))
    t("stat pub/mine/g (mode 0)", lambda: st("pub/mine/g"))
    t("chmod pub/mine 755", lambda: os.chmod(p("pub/mine"), 0o755))
    # the set-user-ID bit goes when someone else writes
    t("append pub/suid", lambda: write("pub/suid"))
    t("stat pub/suid", lambda: st("pub/suid"))
    # sticky folder: only the owner removes
    t("unlink sticky/roots", lambda: os.unlink(p("sticky/roots")))
    t("rename sticky/roots sticky/r2", lambda: os.rename(p("sticky/roots"), p("sticky/r2")))
    t("setxattr sticky", lambda: os.setxattr(p("sticky"), "user.k", b"v"))
    t("utime sticky/roots now", lambda: os.utime(p("sticky/roots")))
    t("utime sticky/roots set", lambda: os.utime(p("sticky/roots"), (1000000000, 1000000000)))
    t("truncate sticky/roots", lambda: os.truncate(p("sticky/roots"), 7))
    t("append sticky/roots", lambda: write("sticky/roots"))
    t("create sticky/mine", lambda: write("sticky/mine", b"m", os.O_WRONLY | os.O_CREAT))
    t("rename sticky/mine sticky/mine2", lambda: os.rename(p("sticky/mine"), p("sticky/mine2")))
    t("unlink sticky/mine2", lambda: os.unlink(p("sticky/mine2")))
    # setgid folder: new entries take its group, folders its bit
    t("create sgid/f", lambda: write("sgid/f", b"g", os.O_WRONLY | os.O_CREAT))
    t("stat sgid/f", lambda: st("sgid/f"))
    t("chmod sgid/f g+s", lambda: (os.chmod(p("sgid/f"), 0o2644), st("sgid/f"))[1])
    t("mkdir sgid/d", lambda: os.mkdir(p("sgid/d"), 0o755))
    t("stat sgid/d", lambda: st("sgid/d"))
    # a folder moved to another parent changes its "..": write permission on it
    t("rename pub/rootdir pub/mine/rd", lambda: os.rename(p("pub/rootdir"), p("pub/mine/rd")))
    t("rename pub/mine/rd pub/rootdir", lambda: os.rename(p("pub/mine/rd"), p("pub/rootdir")))
    # cleaning up what we made
    t("rmdir pub/mine (not empty)", lambda: os.rmdir(p("pub/mine")))
    for x in ("pub/mine/g", "pub/mine/h", "pub/mine/h2", "pub/mine/l", "pub/mine/r"):
        t(f"unlink {x}", lambda x=x: os.unlink(p(x)))
    t("rmdir pub/mine", lambda: os.rmdir(p("pub/mine")))
    t("list pub", lambda: sorted(os.listdir(p("pub"))))
    print("\n".join(out))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("setup", "run"):
        sys.exit("usage: perm_ops.py setup|run DIR")
    (setup if sys.argv[1] == "setup" else run)(sys.argv[2])
