#!/usr/bin/env python3
"""test_nbd_cluster.py - atoll-nbd on a real cluster, driven by independent
NBD clients: nbdinfo, nbdcopy, qemu-img, python3-libnbd, nbdfuse + loop +
ext4, fio's nbd engine.

  test_nbd_cluster.py BUILD_DIR

One cluster (atoll-cluster up, which also starts the atoll-nbd under test)
serves every test, in a temporary folder; it is always stopped, and every
mount and nbdfuse is undone, whatever happens.  The OSD-kill test runs last.
Skips (77) when a client is missing (scripts/deps.sh installs them)."""
import hashlib
import json
import os
import random
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nbdtest  # noqa: E402

for tool in ("nbdinfo", "nbdcopy", "qemu-img", "fio", "nbdfuse", "fusermount3",
             "mkfs.ext4", "fsck.ext4"):
    if not shutil.which(tool):
        print("%s is missing: scripts/deps.sh installs it" % tool)
        sys.exit(nbdtest.SKIP)
try:
    import nbd
except ImportError:
    print("python3-libnbd is missing: scripts/deps.sh installs it")
    sys.exit(nbdtest.SKIP)
import test_nbd_protocol as proto  # noqa: E402

MiB = 1 << 20
BUILD = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None


def sh(*args, check=True, timeout=300, **kw):
    r = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise AssertionError("%s exited %d:\n%s%s" % (" ".join(args), r.returncode,
                                                     r.stdout[-2000:], r.stderr[-2000:]))
    return r


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(MiB), b""):
            h.update(b)
    return h.hexdigest()


class ClusterServer:
    """The cluster's own atoll-nbd, found in its state file."""

    def __init__(self, ip, port):
        self.ip, self.port = ip, port

    def uri(self, name):
        return "nbd://%s:%d/%s" % (self.ip, self.port, name)


class ClusterCtx(proto.Ctx):
    def __init__(self, tmp):
        self.tmp = tmp
        self.cdir = os.path.join(tmp, "cluster")
        self.bin = {
            "cluster": os.path.join(BUILD, "tools", "atoll-cluster"),
            "nbd": os.path.join(BUILD, "blockdev", "nbd", "atoll-nbd"),
            "tool": os.path.join(BUILD, "tests", "nbd", "nbd-image-tool"),
            "atoll": os.path.join(BUILD, "tools", "atoll"),
        }
        self.conf = os.path.join(self.cdir, "atoll.conf")
        self.own = []           # atoll-nbd processes a test started
        self.mounts = []        # (kind, path) to undo, newest last
        self.n = 0
        self.size = 64 * MiB
        self.up_out = ""

    def up(self):
        r = sh(self.bin["cluster"], "up", "--dir", self.cdir, "--size", "2G", "--pg", "16",
               "--timeout", "90", "--set", "osd_heartbeat_interval=500ms",
               "--set", "osd_heartbeat_grace=4s", check=False, timeout=240)
        self.up_out = r.stdout + r.stderr
        if r.returncode != 0:
            raise AssertionError("atoll-cluster up failed:\n" + self.up_out[-3000:])
        for line in open(os.path.join(self.cdir, "cluster.state")):
            f = line.split()
            if len(f) >= 7 and f[0] == "daemon" and f[2] == "nbd":
                self.srv = ClusterServer(f[5], int(f[6]))
                return
        raise AssertionError("atoll-cluster up started no atoll-nbd:\n" + self.up_out)

    def image(self, size=None, prefix="img"):
        self.n += 1
        name = "%s%d" % (prefix, self.n)
        sh(self.bin["tool"], self.conf, "default", "create", name, str(size or self.size))
        return name

    def new_image(self):
        return self.image()

    def snapshot_export(self):
        name = self.image()
        sh(self.bin["tool"], self.conf, "default", "snap", name, "s1")
        return name + "@s1"

    def own_conf(self):
        """The cluster's atoll.conf without the [nbd] section's metrics_addr:
        the cluster's atoll-nbd serves its metrics there already."""
        path = os.path.join(self.tmp, "own-nbd.conf")
        out, section = [], ""
        for line in open(self.conf):
            if line.strip().startswith("["):
                section = line.strip()
            elif section == "[nbd]" and line.strip().startswith("metrics_addr"):
                continue
            out.append(line)
        with open(path, "w") as f:
            f.writelines(out)
        return path

    def own_server(self, *extra):
        s = nbdtest.Server(self.bin["nbd"], ["--conf", self.own_conf(), "--pool", "default",
                                             "--log-level", "info"] + list(extra),
                           ip="127.0.0.2", log=os.path.join(self.tmp, "own-nbd.log"))
        self.own.append(s)
        return s.start()

    def cli(self, *args, check=True, timeout=120):
        """The atoll CLI on this cluster, run in the test's folder."""
        return sh(self.bin["atoll"], "--conf", self.conf, *args, check=check,
                  timeout=timeout, cwd=self.tmp)

    def lock_owner(self, name):
        """The client id holding the image's writer lock, or None."""
        out = self.cli("--format", "json", "image", "info", "default", name).stdout
        return json.loads(out)["lock_owner"]

    def wait_unlocked(self, name, timeout=20):
        deadline = time.time() + timeout
        while self.lock_owner(name) is not None:
            if time.time() > deadline:
                raise AssertionError("image %s still locked %d s after its last "
                                     "connection left" % (name, timeout))
            time.sleep(0.1)

    def down(self):
        while self.mounts:
            kind, path = self.mounts.pop()
            if kind == "mount":
                subprocess.run(["umount", "-l", path], capture_output=True)
            else:
                # busy while a loop device still holds the file: retry,
                # then detach lazily rather than leave a mount behind
                for _ in range(50):
                    if subprocess.run(["fusermount3", "-u", path],
                                      capture_output=True).returncode == 0:
                        break
                    time.sleep(0.1)
                else:
                    subprocess.run(["fusermount3", "-uz", path], capture_output=True)
                if isinstance(kind, subprocess.Popen):
                    try:
                        kind.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        kind.kill()
        for s in self.own:
            try:
                s.stop()
            except Exception:
                s.kill9()
        sh(self.bin["cluster"], "down", "--dir", self.cdir, check=False, timeout=120)


# ---- the tests -------------------------------------------------------------

def test_cluster_up_starts_atoll_nbd_and_prints_its_uri(c):
    assert "nbd://%s:%d/" % (c.srv.ip, c.srv.port) in c.up_out, c.up_out


def test_nbdinfo_shows_size_and_flags(c):
    name = c.image()
    uri = c.srv.uri(name)
    out = sh("nbdinfo", "--json", uri).stdout
    assert '"export-size": %d' % c.size in out, out
    for cap in ("trim", "fua", "multi-conn", "flush", "zero"):
        assert sh("nbdinfo", "--can", cap, uri, check=False).returncode == 0, cap
    assert sh("nbdinfo", "--is", "read-only", uri, check=False).returncode != 0


def test_nbdcopy_256_mib_in_and_out_is_identical(c):
    name = c.image(256 * MiB)
    src, back = os.path.join(c.tmp, "src.raw"), os.path.join(c.tmp, "back.raw")
    with open(src, "wb") as f:
        for _ in range(256):
            f.write(os.urandom(MiB))
    sh("nbdcopy", src, c.srv.uri(name))
    sh("nbdcopy", c.srv.uri(name), back)
    assert sha256(src) == sha256(back)
    os.unlink(back)


def test_nbds_with_psk_round_trips_through_the_real_server(c):
    # the real atoll-nbd (GnuTLS linked in) over a real image; the TLS
    # cases themselves are tests/nbd/test_nbd_tls.py, on the fake
    psk = os.path.join(c.tmp, "keys.psk")
    nbdtest.make_psk_file(psk, ["alice"])
    s = c.own_server("--tls=require", "--tls-psk", psk)
    try:
        name = c.image(16 * MiB)
        uri = "nbds://alice@%s:%d/%s?tls-psk-file=%s" % (s.ip, s.port, name, psk)
        src, back = os.path.join(c.tmp, "tls-src.raw"), os.path.join(c.tmp, "tls-back.raw")
        with open(src, "wb") as f:
            f.write(os.urandom(16 * MiB))
        sh("nbdcopy", src, uri)
        sh("nbdcopy", uri, back)
        assert sha256(src) == sha256(back)
        plain = sh("nbdinfo", s.uri(name), check=False)
        assert plain.returncode != 0 and "export-size" not in plain.stdout
        os.unlink(back)
    finally:
        assert s.stop() == 0
        c.own.remove(s)


def test_qemu_img_info_and_convert(c):
    name = c.image(32 * MiB)
    h = c.connect(name)
    data = os.urandom(MiB)
    h.pwrite(data, 5 * MiB)
    h.shutdown()
    out = sh("qemu-img", "info", "--output=json", c.srv.uri(name)).stdout
    assert '"virtual-size": %d' % (32 * MiB) in out, out
    dst = os.path.join(c.tmp, "conv.raw")
    sh("qemu-img", "convert", "-O", "raw", c.srv.uri(name), dst)
    with open(dst, "rb") as f:
        f.seek(5 * MiB)
        assert f.read(MiB) == data
        f.seek(0)
        assert f.read(MiB) == bytes(MiB)
    # and back in: convert a file into an image
    name2 = c.image(32 * MiB)
    sh("qemu-img", "convert", "-n", "-O", "raw", dst, c.srv.uri(name2))
    h = c.connect(name2)
    assert h.pread(MiB, 5 * MiB) == data
    h.shutdown()
    os.unlink(dst)


def test_snapshot_export_has_the_old_content(c):
    name = c.image()
    h = c.connect(name)
    h.pwrite(b"old" * 1000, 0)
    h.flush()
    sh(c.bin["tool"], c.conf, "default", "snap", name, "before")
    h.pwrite(b"new" * 1000, 0)
    h.flush()
    s = c.connect(name + "@before")
    assert s.is_read_only()
    assert s.pread(3000, 0) == b"old" * 1000
    assert h.pread(3000, 0) == b"new" * 1000
    s.shutdown()
    h.shutdown()


def test_kill9_during_writes_loses_nothing_flushed(c):
    srv = c.own_server("--lease", "3")
    name = c.image()
    h = nbd.NBD()
    h.connect_uri(srv.uri(name))
    flushed = {}
    for i in range(64):
        d = os.urandom(4096)
        h.pwrite(d, i * 65536)
        flushed[i] = d
    h.flush()
    # more writes in flight, never flushed, while the server dies
    bufs = [nbd.Buffer.from_bytearray(bytearray(os.urandom(65536))) for _ in range(32)]
    for i, b in enumerate(bufs):
        h.aio_pwrite(b, 8 * MiB + i * 65536)
    srv.kill9()
    try:
        h.shutdown()
    except nbd.Error:
        pass
    srv.start()             # same port; takes the image over once the lease ends
    h = nbd.NBD()
    h.connect_uri(srv.uri(name))
    for i, d in flushed.items():
        assert h.pread(4096, i * 65536) == d, i
    h.shutdown()


def test_ext4_on_nbdfuse_and_loop_end_to_end(c):
    if os.geteuid() != 0:
        raise AssertionError("needs root for mount -o loop")
    name = c.image(512 * MiB)
    fusedir, mnt = os.path.join(c.tmp, "nf"), os.path.join(c.tmp, "mnt")
    os.makedirs(fusedir)
    os.makedirs(mnt)
    pidfile = os.path.join(c.tmp, "nbdfuse.pid")
    fuse = subprocess.Popen(["nbdfuse", "-P", pidfile, fusedir + "/disk", c.srv.uri(name)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    c.mounts.append((fuse, fusedir))
    for _ in range(200):
        if os.path.exists(pidfile) and os.path.exists(fusedir + "/disk"):
            break
        time.sleep(0.05)
    disk = fusedir + "/disk"
    assert os.path.getsize(disk) == 512 * MiB
    sh("mkfs.ext4", "-q", "-F", disk)
    sh("mount", "-o", "loop", disk, mnt)
    c.mounts.append(("mount", mnt))
    # a tree of files: the repository's sources and some random data
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    tree = os.path.join(mnt, "tree")
    shutil.copytree(os.path.join(src, "lib"), os.path.join(tree, "lib"))
    shutil.copytree(os.path.join(src, "doc"), os.path.join(tree, "doc"))
    rnd = random.Random(5)
    os.makedirs(os.path.join(tree, "rand"))
    for i in range(50):
        with open(os.path.join(tree, "rand", "f%d" % i), "wb") as f:
            f.write(os.urandom(rnd.randrange(1, 2 * MiB)))

    def sums():
        out = {}
        for root, _, files in os.walk(tree):
            for fn in files:
                p = os.path.join(root, fn)
                out[os.path.relpath(p, tree)] = sha256(p)
        return out
    before = sums()
    assert len(before) > 60
    sh("umount", mnt)
    c.mounts.pop()
    r = sh("fsck.ext4", "-n", "-f", disk, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    sh("mount", "-o", "loop", disk, mnt)
    c.mounts.append(("mount", mnt))
    assert sums() == before
    sh("umount", mnt)
    c.mounts.pop()
    # the loop device behind the ext4 mount lets go of the file
    # asynchronously (autoclear): until it has, unmounting says EBUSY
    for _ in range(100):
        r = sh("fusermount3", "-u", fusedir, check=False)
        if r.returncode == 0:
            break
        time.sleep(0.1)
    assert r.returncode == 0, r.stdout + r.stderr
    c.mounts.pop()
    fuse.wait(timeout=20)


def test_fio_verify_passes_while_an_osd_is_killed(c):
    name = c.image(128 * MiB)
    cmd = ["fio", "--name=killosd", "--ioengine=nbd", "--uri=" + c.srv.uri(name),
           "--rw=randwrite", "--bs=4k", "--iodepth=16", "--size=16M",
           "--time_based", "--runtime=10",      # the kill lands mid-run
           "--verify=crc32c", "--verify_backlog=64", "--do_verify=1",
           "--verify_fatal=1",
           "--output-format=terse"]
    # cwd: fio writes its verify state file there
    fio = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           cwd=c.tmp)
    time.sleep(2)
    sh(c.bin["cluster"], "osd", "kill", "2", "--dir", c.cdir)
    try:
        out, err = fio.communicate(timeout=200)
    except subprocess.TimeoutExpired:
        fio.kill()
        out, err = fio.communicate()
        raise AssertionError("fio still running 200 s after an OSD was killed:\n" + out[-2000:])
    assert fio.returncode == 0, "fio failed:\n" + out[-2000:] + err[-2000:]
    assert "err=" not in err or "err= 0" in err, err


def test_second_writer_is_refused_and_breaking_a_dead_writers_lock_fences_it(c):
    # a server of our own, with a long lease: nobody takes over by waiting
    srv = c.own_server("--lease", "60")
    name = c.image()
    h = nbd.NBD()
    h.connect_uri(srv.uri(name))
    h.pwrite(b"1" * 4096, 0)
    h.flush()
    owner = c.lock_owner(name)
    assert owner is not None, "atoll-nbd serves %s but holds no lock" % name
    # a second writer through the library, and through the CLI
    r = sh(c.bin["tool"], c.conf, "default", "write", name, "0", "4096", "0x32",
           check=False, cwd=c.tmp)
    assert r.returncode == 1 and "another writer holds its lock" in r.stderr, r.stderr
    r = c.cli("image", "resize", "default", name, "--size", str(2 * c.size), check=False)
    assert r.returncode != 0, r.stdout
    assert "another writer holds its lock" in r.stderr, r.stderr
    assert "atoll image lock break default %s" % name in r.stderr, r.stderr
    assert h.pread(4096, 0) == b"1" * 4096
    # the writer dies; its lock is broken on purpose, which fences it
    srv.kill9()
    try:
        h.shutdown()
    except nbd.Error:
        pass
    assert c.lock_owner(name) == owner      # a dead writer's lock stays until broken
    c.cli("image", "lock", "break", "default", name)
    assert "client.%s " % owner in c.cli("osd", "blocklist", "ls").stdout
    assert c.lock_owner(name) is None
    # a new writer writes; a restarted atoll-nbd (a new client) serves it at once
    sh(c.bin["tool"], c.conf, "default", "write", name, "0", "4096", "0x33", cwd=c.tmp)
    srv.start()
    h = nbd.NBD()
    h.connect_uri(srv.uri(name))
    assert h.pread(4096, 0) == b"3" * 4096
    h.pwrite(b"4" * 4096, 4096)
    h.flush()
    assert c.lock_owner(name) not in (None, owner)
    h.shutdown()
    srv.stop()

    # a writer that is only paused (not dead) is fenced as well: its late
    # writes are refused, by the library and by the OSDs themselves
    name = c.image()
    p = subprocess.Popen([c.bin["tool"], c.conf, "default", "hold", name, "0"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=c.tmp)
    try:
        line = p.stdout.readline()
        assert line.startswith("ready "), line + p.stderr.read()
        held = line.split()[1]
        assert c.lock_owner(name) == held
        p.send_signal(signal.SIGSTOP)
        c.cli("image", "lock", "break", "default", name)
        assert "client.%s " % held in c.cli("osd", "blocklist", "ls").stdout
        sh(c.bin["tool"], c.conf, "default", "write", name, "0", "4096", "0x43", cwd=c.tmp)
        p.send_signal(signal.SIGCONT)
        out, err = p.communicate("go\n", timeout=120)
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGCONT)
            p.kill()
            p.wait()
    assert p.returncode == 0, out + err
    eperm = -1
    assert "late image_write=%d object_write=%d" % (eperm, eperm) in out, out + err
    h = c.connect(name)
    assert h.pread(4096, 0) == b"C" * 4096          # the new writer's
    assert h.pread(4096, 4096) == bytes(4096)        # none of the fenced writer's
    h.shutdown()


def block_pattern(block, seq):
    return struct.pack("<QQ", block, seq) * 256


def test_snapshot_from_the_cli_during_writes_has_every_write_completed_before_it(c):
    """A python3-libnbd writer rather than fio: it keeps an exact ledger of
    when each write was issued and when its reply came (fio's logs do not
    say which data each completed write carried).  4 KiB random writes at
    queue depth 16, each block written with a unique (block, sequence)
    pattern, never two writes to one block in flight at once, so the
    writes to a block complete in the order they were issued."""
    name = c.image()
    nblocks = 4096                  # 16 MiB
    rnd = random.Random(7)
    h = nbd.NBD()
    h.connect_uri(c.srv.uri(name))
    issued, done = {}, {}           # seq -> (block, time issued) / time completed
    inflight, busy = {}, set()      # cookie -> (seq, block, buffer)
    seq = 0
    snap = after = None
    t_start = t_end = None
    t0 = time.monotonic()
    while True:
        now = time.monotonic()
        # the snapshot lands mid-stream: after 400 writes, and with 200 more after it
        if snap is None and (len(done) >= 400 or now - t0 > 30):
            t_start = time.monotonic()
            snap = subprocess.Popen([c.bin["atoll"], "--conf", c.conf, "image", "snap",
                                     "create", "default", name + "@s1"], cwd=c.tmp,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True)
        if snap is not None and t_end is None and snap.poll() is not None:
            t_end = time.monotonic()
            out, err = snap.communicate()
            assert snap.returncode == 0, "snap create failed:\n" + out + err
        if t_end is not None and after is None:
            after = seq
        stopping = t_end is not None and (seq - after >= 200 or now - t_end > 20)
        if now - t0 > 120:
            raise AssertionError("the snapshot command ran for over 2 minutes")
        while not stopping and len(inflight) < 16:
            b = rnd.randrange(nblocks)
            if b in busy:
                continue
            seq += 1
            buf = nbd.Buffer.from_bytearray(bytearray(block_pattern(b, seq)))
            issued[seq] = (b, time.monotonic())
            cookie = h.aio_pwrite(buf, b * 4096)
            inflight[cookie] = (seq, b, buf)
            busy.add(b)
        if not inflight:
            break
        h.poll(10)
        for cookie in list(inflight):
            if h.aio_command_completed(cookie):
                s, b, _ = inflight.pop(cookie)
                done[s] = time.monotonic()
                busy.discard(b)
    h.flush()
    h.shutdown()
    before = sum(1 for s in done if done[s] < t_start)
    during = sum(1 for s in done if t_start <= done[s] < t_end)
    assert before >= 100 and seq - after >= 50, (before, during, seq)

    img = os.path.join(c.tmp, "s1.raw")
    c.cli("image", "export", "default", name + "@s1", img)
    with open(img, "rb") as f:
        data = f.read(nblocks * 4096)
    os.unlink(img)
    # what the snapshot holds, block by block: a whole write or zeros
    got = {}
    for b in range(nblocks):
        blk = data[b * 4096:(b + 1) * 4096]
        if blk == bytes(4096):
            got[b] = 0
            continue
        pb, ps = struct.unpack("<QQ", blk[:16])
        assert pb == b and blk == block_pattern(b, ps), "block %d is torn" % b
        assert ps in issued and issued[ps][0] == b, "block %d: a write never made" % b
        got[b] = ps

    def last_completed_before(t):
        last = {}
        for s, (b, _) in issued.items():
            if s in done and done[s] < t and s > last.get(b, 0):
                last[b] = s
        return last
    # every write completed before the command started is there (or a later one)
    for b, s in last_completed_before(t_start).items():
        assert got[b] >= s, "block %d: the snapshot lacks write %d, completed %.3f s " \
            "before the snapshot command started" % (b, s, t_start - done[s])
    # nothing issued after the command returned is there
    for b, s in got.items():
        assert not s or issued[s][1] < t_end, "block %d: write %d, issued after the " \
            "snapshot command returned, is in the snapshot" % (b, s)
    # crash-consistent: with the newest write it holds, it holds every write
    # that completed before that one was issued
    newest = max((issued[s][1] for s in got.values() if s), default=t_start)
    for b, s in last_completed_before(newest).items():
        assert got[b] >= s, "block %d: the snapshot lacks write %d though it holds a " \
            "write issued after that one completed" % (b, s)
    # and the writes after it are not: the snapshot is not the final image
    final = {}
    for s, (b, _) in issued.items():
        final[b] = max(final.get(b, 0), s)
    assert any(got.get(b, 0) < s for b, s in final.items()), "no write after the snapshot"
    # writes completed between the command's start and its return: in or not
    late = sum(1 for b, s in last_completed_before(t_end).items() if got[b] < s)
    print("  %d writes before the snapshot command, %d during it (%.2f s), %d after; "
          "%d blocks took a write completed during the command after the snapshot point"
          % (before, during, t_end - t_start, seq - before - during, late))


def read_all(h, size):
    out = bytearray()
    for off in range(0, size, 16 * MiB):
        out += h.pread(min(16 * MiB, size - off), off)
    return bytes(out)


def test_snapshot_then_more_writes_export_has_the_old_content_and_rollback_restores_it(c):
    name = c.image()
    old = bytearray(c.size)
    h = c.connect(name)
    for off, ln in ((0, MiB), (5 * MiB + 123, 300000), (c.size - 4096, 4096)):
        d = os.urandom(ln)
        h.pwrite(d, off)
        old[off:off + ln] = d
    h.flush()
    old = bytes(old)
    c.cli("image", "snap", "create", "default", name + "@s1")     # the writer takes it
    assert "s1" in c.cli("image", "snap", "ls", "default", name).stdout
    for off, ln in ((0, 2 * MiB), (5 * MiB, MiB), (9 * MiB + 7, 5000)):
        h.pwrite(os.urandom(ln), off)
    h.trim(4096, c.size - 4096)
    h.flush()
    new = read_all(h, c.size)
    assert new != old
    snapfile = os.path.join(c.tmp, "snap.raw")
    c.cli("image", "export", "default", name + "@s1", snapfile)
    with open(snapfile, "rb") as f:
        assert f.read() == old, "the exported snapshot differs from the old content"
    os.unlink(snapfile)
    # rollback needs the lock, which atoll-nbd holds while a connection is open
    r = c.cli("image", "snap", "rollback", "default", name + "@s1", check=False)
    assert r.returncode != 0 and "another writer holds its lock" in r.stderr, r.stderr
    assert read_all(h, c.size) == new
    h.shutdown()                # the last connection: atoll-nbd closes the image
    c.wait_unlocked(name)
    c.cli("image", "snap", "rollback", "default", name + "@s1")
    h = c.connect(name)
    assert read_all(h, c.size) == old, "after the rollback the image differs from the snapshot"
    h.pwrite(b"x" * 4096, 0)                # and it is writable again
    h.flush()
    h.shutdown()
    s = c.connect(name + "@s1")
    assert s.pread(MiB, 0) == old[:MiB]     # the snapshot stays
    s.shutdown()


TESTS = [
    test_cluster_up_starts_atoll_nbd_and_prints_its_uri,
    test_nbdinfo_shows_size_and_flags,
] + [t for t in proto.TESTS if t.__name__ not in (
    "test_sigterm_stops_the_server_cleanly",
    "test_client_that_never_reads_replies_does_not_stall_others",
)] + [
    test_nbdcopy_256_mib_in_and_out_is_identical,
    test_nbds_with_psk_round_trips_through_the_real_server,
    test_qemu_img_info_and_convert,
    test_snapshot_export_has_the_old_content,
    test_snapshot_then_more_writes_export_has_the_old_content_and_rollback_restores_it,
    test_snapshot_from_the_cli_during_writes_has_every_write_completed_before_it,
    test_second_writer_is_refused_and_breaking_a_dead_writers_lock_fences_it,
    test_kill9_during_writes_loses_nothing_flushed,
    test_ext4_on_nbdfuse_and_loop_end_to_end,
    test_fio_verify_passes_while_an_osd_is_killed,   # last: leaves an OSD down
]


def main():
    if not BUILD or not os.path.exists(os.path.join(BUILD, "blockdev", "nbd", "atoll-nbd")):
        print("usage: test_nbd_cluster.py BUILD_DIR (with atoll-nbd built)")
        sys.exit(nbdtest.SKIP)
    tmp = tempfile.mkdtemp(prefix="atoll-nbd-test.")
    state = {}

    def on_sigterm(signum, frame):
        # meson's timeout: SIGTERM to our process group, SIGKILL 0.5 s later;
        # the cluster's daemons are not in the group, so a cleanup of its own
        # session undoes the mounts and stops the cluster
        c = state.get("c")
        steps = []
        for kind, path in reversed(c.mounts if c else []):
            steps.append(("umount -l %s" if kind == "mount" else "fusermount3 -u %s")
                         % shlex.quote(path))
        if c:
            steps.append("%s down --dir %s" % (shlex.quote(c.bin["cluster"]),
                                                shlex.quote(c.cdir)))
        if os.environ.get("ATOLL_TEST_KEEP") != "1":
            steps.append("rm -rf %s" % shlex.quote(tmp))
        subprocess.Popen(["sh", "-c", "; ".join(steps)], start_new_session=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
        print("SIGTERM: stopping the cluster in the background", flush=True)
        os._exit(1)
    signal.signal(signal.SIGTERM, on_sigterm)

    def setup():
        c = ClusterCtx(tmp)
        state["c"] = c
        t0 = time.time()
        try:
            c.up()
        except BaseException:
            c.down()            # whatever part of the cluster did start
            raise
        print("cluster up in %.1fs; atoll-nbd at %s" % (time.time() - t0, c.srv.uri("")))
        return c

    def teardown(c):
        c = state.get("c")
        if c:
            c.down()
        if os.environ.get("ATOLL_TEST_KEEP") == "1":
            print("kept", tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    try:
        nbdtest.run(TESTS, setup, teardown)
    finally:
        if "c" not in state:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
