#!/usr/bin/env python3
"""badframes.py KIND@ADDR[@PID]... - hostile bytes for each daemon (KIND is
mon, osd, mds or nbd - which gets step 1 only; ADDR ip:port; PID, when given, must still run after
every step).

1. Before the handshake: malformed and truncated frames from a raw
   socket; the daemon must close each such connection within a few
   seconds instead of hanging on to it.
2. Inside a session: after a completed client hello, every message type
   a daemon accepts (and a few it does not) with malformed fronts:
   empty, truncated sections, section lengths and counts past the end,
   compat versions from the future, 0xFF and 0x00 bodies (huge sizes,
   counts and bad enums), random bytes, the fuzz corpora's seeds cut
   short or smashed, frames whose lengths lie, and a header announcing
   64 MiB of data that never fully arrives.  After each frame a real
   request (a probe: a monitor command, a stale-epoch OSD op, an MDS
   status) must be answered on a fresh or the same connection; the
   daemon may close the connection that sent the bad frame.
3. The same malformed fronts (without the corpus seeds) from connections
   whose hello claims a monitor, an OSD or an MDS, which reach the
   handlers kept for cluster peers; a client's probe on its own
   connection must be answered after each frame.
4. A client connection that completed its hello before all this, and
   sends keepalives, must still be open and answer a probe at the end:
   the daemon kept serving its other clients.

Any failed step fails the test (exit 1).  Frames follow lib/msg.h: a
32-byte little-endian header (magic "ATM1", type, flags, tid, front_len,
data_len, reserved, header crc32c), front, data, and a crc32c trailer."""
import errno
import os
import random
import select
import socket
import struct
import sys
import threading
import time

MAGIC = 0x314D5441


def _crc_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 & -(c & 1))
        t.append(c)
    return t


CRC_TABLE = _crc_table()


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    t = CRC_TABLE
    for b in data:
        crc = (crc >> 8) ^ t[(crc ^ b) & 0xFF]
    return crc ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283


def header(mtype, front_len, data_len, tid=1, flags=0, magic=MAGIC, good_crc=True):
    h = struct.pack("<IHHQIII", magic, mtype, flags, tid, front_len, data_len, 0)
    c = crc32c(h)
    if not good_crc:
        c ^= 0xDEADBEEF
    return h + struct.pack("<I", c)


def frame(mtype, front, bad_trailer=False):
    body = front
    c = crc32c(body)
    if bad_trailer:
        c ^= 1
    return header(mtype, len(front), 0) + body + struct.pack("<I", c)


CASES = [
    ("random bytes", os.urandom(200)),
    ("bad magic", header(1, 0, 0, magic=0x12345678)),
    ("bad header crc", header(1, 16, 0, good_crc=False) + b"\0" * 20),
    ("huge front_len", header(1, 0xFFFFFFF0, 0)),
    ("huge data_len", header(1, 8, 0xFFFFFFF0)),
    ("truncated header", header(1, 0, 0)[:13]),
    ("truncated front", header(1, 1000, 0) + b"\1" * 10),
    ("bad trailer crc", frame(1, b"\0" * 40, bad_trailer=True)),
    ("garbage hello", frame(1, os.urandom(64))),
    ("command before hello", frame(12, b"\x05\x00\x00\x00{\"a\"}")),
    ("unknown type before hello", frame(999, b"")),
]


def closes(addr, payload, half_close, timeout=8.0):
    ip, port = addr.rsplit(":", 1)
    s = socket.create_connection((ip, int(port)), timeout=5)
    try:
        try:
            s.sendall(payload)
            if half_close:
                s.shutdown(socket.SHUT_WR)
        except (ConnectionResetError, BrokenPipeError, OSError) as e:
            # the daemon closed it already (ENOTCONN, ECONNRESET, EPIPE):
            # what this test wants; a connect failure is raised above
            if e.errno in (errno.ENOTCONN, errno.ECONNRESET, errno.EPIPE):
                return True
            raise
        deadline = time.time() + timeout
        while time.time() < deadline:
            s.settimeout(max(0.1, deadline - time.time()))
            try:
                b = s.recv(65536)
            except socket.timeout:
                break
            except (ConnectionResetError, BrokenPipeError):
                return True
            if not b:
                return True
        return False
    finally:
        s.close()


# ---- inside a session ---------------------------------------------------

MT_MON_COMMAND = 12
MT_OSD_OP = 30
MT_MDS_STATUS = 63
MT_KEEPALIVE = 2
F_REPLY = 1
# Every type of lib/proto.h, osd/osd_proto.h and posixfs/mds_proto.h (each
# daemon gets all of them: one it does not serve must be refused cleanly
# too), plus a messenger-reserved one, a hello inside a session and one
# nobody knows.
TYPES = list(range(10, 21)) + list(range(30, 37)) + [40, 41, 42] + \
    list(range(60, 67)) + [1, 9, 999]
CORPORA = {
    "mon": ["proto", "mon"],
    "osd": ["proto", "osd_proto", "pglog", "scrub"],
    "mds": ["mds", "proto"],
}
PROBE_TIMEOUT = float(os.environ.get("BADFRAMES_PROBE_TIMEOUT", "15"))


def full_frame(mtype, front, data=b"", tid=0, flags=0, front_len=None, data_len=None):
    fl = len(front) if front_len is None else front_len
    dl = len(data) if data_len is None else data_len
    return header(mtype, fl, dl, tid=tid, flags=flags) + front + data + \
        struct.pack("<I", crc32c(data, crc32c(front)))


def section(body, ver=1, compat=1, blen=None):
    return struct.pack("<BBI", ver, compat, len(body) if blen is None else blen) + body


def blob(b):
    return struct.pack("<I", len(b)) + b


def hello(ident, etype=1):
    # lib/msg_frame.c msg_hello_encode: fsid (zero: adopt the daemon's),
    # entity type (1 client, 2 mon, 3 osd, 4 mds), id, features, auth
    # blob (empty)
    body = b"\0" * 16 + struct.pack("<BQQ", etype, ident, 0) + blob(b"")
    return frame(1, section(body))


def probe_frame(kind, tid):
    if kind == "mon":
        front = section(blob(b'{"prefix": "health"}') + struct.pack("<QQ", 0, 0))
        return full_frame(MT_MON_COMMAND, front, tid=tid)
    if kind == "osd":
        # a STAT of map epoch 0: older than any map, answered -ESTALE
        sub = section(struct.pack("<HHQQ", 2, 0, 0, 0) + blob(b"") + blob(b"") +
                      struct.pack("<II", 0, 0))
        front = section(struct.pack("<QQQII", 7, tid, 0, 1, 0) +
                        struct.pack("<I", 0) + blob(b"badframes") +
                        struct.pack("<QI", 0, 0) + struct.pack("<I", 1) + sub)
        return full_frame(MT_OSD_OP, front, tid=tid)
    return full_frame(MT_MDS_STATUS, b"", tid=tid)


class Session:
    """A client connection after a completed hello: frames out, and a
    reader that notices replies (by tid) and the end of the connection."""

    def __init__(self, addr, etype=1, ident=None):
        ip, port = addr.rsplit(":", 1)
        self.s = socket.create_connection((ip, int(port)), timeout=10)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.closed = False
        self.s.sendall(hello(random.getrandbits(63) if ident is None else ident, etype))
        # the daemon's hello answers ours
        if not self.wait_frame(lambda t, f, tid: t == 1, 10):
            raise OSError("no hello from %s" % addr)

    def send(self, b):
        try:
            self.s.sendall(b)
            return True
        except OSError:
            self.closed = True
            return False

    def wait_frame(self, want, timeout):
        """Reads frames until want(type, flags, tid) holds (True), the
        connection ends or timeout passes (False)."""
        deadline = time.time() + timeout
        while True:
            while len(self.buf) >= 32:
                magic, t, fl, tid, flen, dlen = struct.unpack("<IHHQII", self.buf[:24])
                n = 32 + flen + dlen + 4
                if len(self.buf) < n:
                    break
                self.buf = self.buf[n:]
                if want(t, fl, tid):
                    return True
            left = deadline - time.time()
            if left <= 0 or self.closed:
                return False
            r, _, _ = select.select([self.s], [], [], min(left, 0.5))
            if not r:
                continue
            try:
                b = self.s.recv(1 << 20)
            except OSError:
                b = b""
            if not b:
                self.closed = True
                return False
            self.buf += b

    def close(self):
        self.s.close()


def bad_fronts(kind, rng):
    """(name, front, data) for one message type: malformed on purpose."""
    out = [("empty", b"", b""),
           ("empty section", section(b""), b""),
           ("section length past the end", section(b"\0" * 8, blen=0xFFFFFFF0), b""),
           ("section length one past", section(b"\0" * 8, blen=9), b""),
           ("compat from the future", section(b"\0" * 16, ver=200, compat=200), b""),
           ("version 0", section(b"\0" * 16, ver=0, compat=0), b""),
           ("trailing bytes", section(b"\0" * 16) + b"junk", b""),
           ("nested section past the end",
            section(b"\0" * 20 + section(b"", blen=0xFFFFFFFF)), b""),
           ("nested 0xff", section(section(b"\xff" * 48)), b""),
           ("op-like header, blob past the end",
            section(struct.pack("<QQQII", 1, 1, 1, 1, 0) + struct.pack("<II", 0, 0xFFFFFFFF)), b""),
           ("op-like header, huge counts",
            section(struct.pack("<QQQIII", 1, 1, 1, 1, 0, 0) + blob(b"x") +
                    struct.pack("<QII", 0, 0xFFFFFFFF, 0xFFFFFFFF)), b""),
           ("data without a use", section(b"\0" * 8), os.urandom(4096))]
    for n in (1, 2, 4, 8, 16, 24, 40, 64, 128, 512):
        out.append(("0xff x%d" % n, section(b"\xff" * n), b""))
    for n in (4, 16, 64, 256):
        out.append(("0x00 x%d" % n, section(b"\0" * n), b""))
    for n in (8, 32, 96, 300, 2000):
        out.append(("random x%d" % n, section(rng.randbytes(n)), b""))
        out.append(("raw random x%d" % n, rng.randbytes(n), b""))
    base = b"\x01" * 64
    for off in range(0, 64, 4):
        for v in (0xFFFFFFFF, 0x7FFFFFFF, 0x10000):
            b = base[:off] + struct.pack("<I", v) + base[off + 4:]
            out.append(("u32 %#x at %d" % (v, off), section(b), b""))
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "corpus")
    for corpus in CORPORA[kind]:
        d = os.path.join(here, corpus)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            with open(os.path.join(d, name), "rb") as f:
                seed = f.read(8192)
            # the corpora's first byte picks a decoder; try with and without
            for body in (seed, seed[1:]):
                if len(body) < 2:
                    continue
                out.append(("seed %s/%s" % (corpus, name), body, b""))
                out.append(("seed %s/%s cut in half" % (corpus, name), body[:len(body) // 2], b""))
                out.append(("seed %s/%s less one byte" % (corpus, name), body[:-1], b""))
                if len(body) >= 8:
                    at = rng.randrange(0, len(body) - 3)
                    out.append(("seed %s/%s smashed at %d" % (corpus, name, at),
                                body[:at] + b"\xff\xff\xff\xff" + body[at + 4:], b""))
    return out


class Keeper(threading.Thread):
    """A well-behaved client: a hello, then a keepalive a second, until
    asked for a last probe."""

    def __init__(self, addr):
        super().__init__(daemon=True)
        self.sess = Session(addr)
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def run(self):
        while not self.stop.wait(1.0):
            with self.lock:
                self.sess.send(full_frame(MT_KEEPALIVE, b""))
                self.sess.wait_frame(lambda t, f, tid: False, 0.01)

    def finish(self, kind):
        self.stop.set()
        self.join()
        if self.sess.closed:
            return "the daemon closed a well-behaved client's connection"
        tid = 77777
        self.sess.send(probe_frame(kind, tid))
        if not self.sess.wait_frame(lambda t, f, x: x == tid and f & F_REPLY, PROBE_TIMEOUT):
            return "a well-behaved client's probe got no answer within %.0f s" % PROBE_TIMEOUT
        self.sess.close()
        return None


def alive(pid):
    return pid is None or os.path.exists("/proc/%d" % pid)


def in_session(kind, addr, pid, rng):
    """Every bad front of every type; returns the number of failures."""
    bad = 0
    sess = None
    tid = 1000
    sent = closed = 0
    for mtype in TYPES:
        for name, front, data in bad_fronts(kind, rng):
            if mtype == MT_MON_COMMAND and name.startswith("seed"):
                # the corpus holds real commands ("osd out"): a client
                # may send those; the command decoder has its fuzz target
                continue
            what = "%s %s: type %d, %s" % (kind, addr, mtype, name)
            for attempt in range(2):
                if sess is None or sess.closed:
                    if sess is not None:
                        sess.close()
                        closed += 1
                    try:
                        sess = Session(addr)
                    except OSError as e:
                        print("FAIL %s: cannot open a session: %s" % (what, e))
                        return bad + 1
                tid += 1
                flags = F_REPLY if tid % 7 == 0 else 0
                if sess.send(full_frame(mtype, front, data, tid=tid, flags=flags)):
                    break
            sent += 1
            tid += 1
            probe_tid = tid
            ok = sess.send(probe_frame(kind, probe_tid)) and \
                sess.wait_frame(lambda t, f, x: x == probe_tid and f & F_REPLY, PROBE_TIMEOUT)
            if not ok and sess.closed:
                # the daemon dropped the connection over the bad frame:
                # allowed; a fresh client must be served at once
                sess.close()
                closed += 1
                try:
                    sess = Session(addr)
                    tid += 1
                    probe_tid = tid
                    ok = sess.send(probe_frame(kind, probe_tid)) and \
                        sess.wait_frame(lambda t, f, x: x == probe_tid and f & F_REPLY,
                                        PROBE_TIMEOUT)
                except OSError:
                    ok = False
            if not alive(pid):
                print("FAIL %s: the daemon (pid %d) died" % (what, pid))
                return bad + 1
            if not ok:
                print("FAIL %s: no answer to a probe within %.0f s afterwards" %
                      (what, PROBE_TIMEOUT))
                bad += 1
                if bad > 5:
                    return bad
    # wrong lengths: a header whose front_len lies (the stream goes out of
    # step), and one announcing 64 MiB of data of which 1 MiB comes
    for name, b in (("front_len too long", header(MT_OSD_OP, 400, 0) + section(b"\0" * 16) +
                     full_frame(MT_KEEPALIVE, b"")),
                    ("front_len too short", header(MT_OSD_OP, 3, 0) + section(b"\0" * 16) + b"\0" * 4),
                    ("64 MiB announced, 1 MiB sent",
                     header(MT_OSD_OP, 64, 64 << 20) + b"\0" * 64 + os.urandom(1 << 20))):
        s2 = Session(addr)
        s2.send(b)
        s2.close()
        if not alive(pid):
            print("FAIL %s %s: %s: the daemon (pid %d) died" % (kind, addr, name, pid))
            return bad + 1
    if sess is not None:
        sess.close()
    s3 = Session(addr)
    s3.send(probe_frame(kind, 1))
    if not s3.wait_frame(lambda t, f, x: x == 1 and f & F_REPLY, PROBE_TIMEOUT):
        print("FAIL %s %s: no answer to a probe after the length lies" % (kind, addr))
        bad += 1
    s3.close()
    print("%s %s %s: %d bad frames in %d types after a hello, %d connections closed by "
          "the daemon, every probe answered" % ("ok  " if not bad else "FAIL", kind, addr,
                                               sent, len(TYPES), closed))
    return bad


ETYPE_NAME = {2: "mon", 3: "osd", 4: "mds"}


def as_peer(kind, addr, pid, rng, etype):
    """The generic bad fronts of every type from a connection whose hello
    claims a cluster peer (a monitor, an OSD, an MDS: declared, not
    proven, until authentication), which reaches the handlers kept for
    them; after each frame a client's probe on a connection of its own
    must be answered.  Returns the number of failures."""
    bad = sent = closed = 0
    sess = None
    probe = Session(addr)
    tid = 1 << 20
    for mtype in TYPES:
        if etype == 3 and mtype == 13:
            # OSD_NEW is taken from any OSD identity (atoll-osd --mkfs has
            # no id yet): a front of zeros is a valid request for a new id
            continue
        for name, front, data in bad_fronts(kind, rng):
            if name.startswith("seed"):
                # valid seeds from a claimed peer would be obeyed (a raft
                # entry, a boot): the malformed ones are the point here
                continue
            what = "%s %s: as a %s, type %d, %s" % (kind, addr, ETYPE_NAME[etype], mtype, name)
            for attempt in range(2):
                if sess is None or sess.closed:
                    if sess is not None:
                        sess.close()
                        closed += 1
                    try:
                        # an id no real daemon has: osd ids are small
                        sess = Session(addr, etype, ident=1000 + rng.randrange(1 << 20))
                    except OSError as e:
                        print("FAIL %s: cannot open a session: %s" % (what, e))
                        return bad + 1
                tid += 1
                if sess.send(full_frame(mtype, front, data, tid=tid)):
                    break
            sent += 1
            sess.wait_frame(lambda t, f, x: False, 0)
            tid += 1
            probe_tid = tid
            ok = probe.send(probe_frame(kind, probe_tid)) and \
                probe.wait_frame(lambda t, f, x: x == probe_tid and f & F_REPLY, PROBE_TIMEOUT)
            if not alive(pid):
                print("FAIL %s: the daemon (pid %d) died" % (what, pid))
                return bad + 1
            if not ok:
                print("FAIL %s: no answer to a client's probe within %.0f s" %
                      (what, PROBE_TIMEOUT))
                bad += 1
                if probe.closed:
                    probe.close()
                    probe = Session(addr)
                if bad > 5:
                    return bad
    if sess is not None:
        sess.close()
    probe.close()
    print("%s %s %s: %d bad frames in %d types from a claimed %s, %d connections closed by "
          "the daemon, every probe answered" % ("ok  " if not bad else "FAIL", kind, addr,
                                               sent, len(TYPES), ETYPE_NAME[etype], closed))
    return bad


def main():
    bad = 0
    rng = random.Random(int(os.environ.get("BADFRAMES_SEED", "35")))
    for arg in sys.argv[1:]:
        parts = arg.split("@")
        kind, addr = parts[0], parts[1]
        pid = int(parts[2]) if len(parts) > 2 else None
        # atoll-nbd speaks NBD (its own tests and fuzz target cover it):
        # only the cases before any handshake
        keeper = Keeper(addr) if kind in CORPORA else None
        if keeper:
            keeper.start()
        for name, payload in CASES:
            # truncated frames can only end when we stop sending
            half = name.startswith("truncated")
            try:
                ok = closes(addr, payload, half)
            except OSError as e:
                print("FAIL %s: %s: cannot connect: %s" % (addr, name, e))
                bad += 1
                continue
            print("%s %s: %s" % ("ok  " if ok else "FAIL", addr, name))
            bad += 0 if ok else 1
        if not alive(pid):
            print("FAIL %s %s: the daemon (pid %d) died before the handshake cases ended" %
                  (kind, addr, pid))
            bad += 1
            continue
        if not keeper:
            continue
        bad += in_session(kind, addr, pid, rng)
        for etype in (2, 3, 4):
            if alive(pid):
                bad += as_peer(kind, addr, pid, rng, etype)
        why = keeper.finish(kind)
        print("%s %s %s: the client connected before kept being served%s" %
              ("ok  " if why is None else "FAIL", kind, addr, "" if why is None else ": " + why))
        bad += 0 if why is None else 1
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
