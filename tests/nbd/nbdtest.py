"""nbdtest.py - shared helpers for the NBD tests: start/stop an atoll-nbd
(fake or real), free ports, a tiny runner where each test is a function
named for the one behaviour it checks, and a raw-socket NBD client for the
malformed-input tests (libnbd refuses to send most of them)."""
import os
import signal
import socket
import struct
import subprocess
import sys
import time
import traceback

SKIP = 77

NBD_MAGIC = 0x4e42444d41474943
IHAVEOPT = 0x49484156454f5054
REP_MAGIC = 0x0003e889045565a9
REQ_MAGIC = 0x25609513
SIMPLE_MAGIC = 0x67446698
STRUCT_MAGIC = 0x668e33ef


def make_psk_file(path, users):
    """Writes a PSK file (psktool's USERNAME:HEXKEY lines, mode 0600) with a
    fresh random key per user; returns {user: hexkey}."""
    keys = {u: os.urandom(32).hex() for u in users}
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        for u, k in keys.items():
            f.write("%s:%s\n" % (u, k))
    return keys


def free_port(ip="127.0.0.1"):
    s = socket.socket()
    s.bind((ip, 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_listening(ip, port, proc, timeout=20.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError("atoll-nbd exited with %s" % proc.returncode)
        try:
            socket.create_connection((ip, port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("atoll-nbd does not listen on %s:%d" % (ip, port))


class Server:
    """One atoll-nbd process; always stopped by stop() (SIGTERM, then kill)."""

    def __init__(self, binary, args, ip="127.0.0.1", env=None, log=None):
        self.ip = ip
        self.port = free_port(ip)
        self.binary = binary
        self.args = args
        self.env = dict(os.environ, **(env or {}))
        self.log = log or "/tmp/atoll-nbd-test.%d.log" % os.getpid()
        self.proc = None
        self.uri_tls = None     # (user, psk file): uri() gives nbds:// URIs

    def start(self):
        logf = open(self.log, "ab")
        self.proc = subprocess.Popen(
            [self.binary, "--addr", "%s:%d" % (self.ip, self.port)] + self.args,
            stdout=logf, stderr=logf, env=self.env)
        logf.close()
        wait_listening(self.ip, self.port, self.proc)
        return self

    def uri(self, name):
        if self.uri_tls:
            user, psk = self.uri_tls
            return "nbds://%s@%s:%d/%s?tls-psk-file=%s" % (user, self.ip, self.port,
                                                         name, psk)
        return "nbd://%s:%d/%s" % (self.ip, self.port, name)

    def kill9(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self):
        if not self.proc or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError("atoll-nbd did not stop within 30 s of SIGTERM")

    def remove_log(self):
        """Removes the server's log (after a clean run: nothing is left in /tmp)."""
        try:
            os.unlink(self.log)
        except OSError:
            pass

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def tail(self, n=30):
        try:
            with open(self.log, "rb") as f:
                return b"\n".join(f.read().splitlines()[-n:]).decode(errors="replace")
        except OSError:
            return ""


def run(tests, setup=None, teardown=None):
    """Runs each test(ctx); prints one line per test; exit 1 if any failed."""
    failed = 0
    ctx = setup() if setup else None
    try:
        only = os.environ.get("NBD_TEST_ONLY")
        for t in tests:
            if only and only not in t.__name__:
                continue
            t0 = time.time()
            try:
                t(ctx)
                print("ok   %-45s %.2fs" % (t.__name__, time.time() - t0), flush=True)
            except Exception:
                failed += 1
                print("FAIL %s" % t.__name__, flush=True)
                traceback.print_exc()
    finally:
        if teardown:
            teardown(ctx)
    sys.exit(1 if failed else 0)


class Raw:
    """A hand-driven NBD connection for malformed input."""

    def __init__(self, ip, port, timeout=10):
        self.s = socket.create_connection((ip, port), timeout=timeout)

    def recv(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.s.recv(n - len(buf))
            if not chunk:
                raise EOFError("server closed after %d of %d bytes" % (len(buf), n))
            buf += chunk
        return buf

    def closed(self, timeout=5):
        """True when the server closes the connection (EOF or reset)."""
        self.s.settimeout(timeout)
        try:
            while True:
                d = self.s.recv(65536)
                if not d:
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False

    def greet(self, cflags=3):
        magic, opt, hflags = struct.unpack(">QQH", self.recv(18))
        assert magic == NBD_MAGIC and opt == IHAVEOPT, "bad greeting"
        assert hflags & 1, "not fixed newstyle"
        self.s.sendall(struct.pack(">I", cflags))

    def option(self, opt, data=b""):
        self.s.sendall(struct.pack(">QII", IHAVEOPT, opt, len(data)) + data)

    def reply(self):
        magic, opt, rtype, length = struct.unpack(">QIII", self.recv(20))
        assert magic == REP_MAGIC, "bad option reply magic %x" % magic
        return opt, rtype, self.recv(length)

    def go(self, name, structured=False):
        if structured:
            self.option(8)
            assert self.reply()[1] == 1
        data = struct.pack(">I", len(name)) + name.encode() + struct.pack(">H", 0)
        self.option(7, data)
        info = {}
        while True:
            opt, rtype, payload = self.reply()
            if rtype == 1:
                return info
            if rtype & 0x80000000:
                raise RuntimeError("GO refused: %x %r" % (rtype, payload))
            itype = struct.unpack(">H", payload[:2])[0]
            if itype == 0:
                info["size"], info["flags"] = struct.unpack(">QH", payload[2:12])

    def request(self, cmd, offset=0, length=0, flags=0, cookie=1, payload=b"",
                magic=REQ_MAGIC):
        self.s.sendall(struct.pack(">IHHQQI", magic, flags, cmd, cookie, offset, length)
                       + payload)

    def simple_reply(self, datalen=0):
        magic, err, cookie = struct.unpack(">IIQ", self.recv(16))
        assert magic == SIMPLE_MAGIC, "bad reply magic %x" % magic
        data = self.recv(datalen) if (datalen and err == 0) else b""
        return err, cookie, data

    def chunk(self):
        magic, flags, rtype, cookie, length = struct.unpack(">IHHQI", self.recv(20))
        assert magic == STRUCT_MAGIC, "bad chunk magic %x" % magic
        return flags, rtype, cookie, self.recv(length)

    def close(self):
        self.s.close()
