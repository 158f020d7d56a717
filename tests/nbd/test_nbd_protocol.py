#!/usr/bin/env python3
"""test_nbd_protocol.py - atoll-nbd's NBD protocol, through libnbd (python3
-libnbd) and a raw socket for what libnbd will not send.

  test_nbd_protocol.py --fake BUILD/tests/nbd/atoll-nbd-fake
        the real server code over an in-memory image: no cluster
  test_nbd_protocol.py --fake-tls BUILD/tests/nbd/atoll-nbd-fake
        the same with --tls=on: libnbd connects with nbds:// and a PSK (the
        raw-socket tests stay plain, which --tls=on serves too)
  test_nbd_protocol.py --cluster HARNESS_ARGS...   (see test_nbd_cluster.py)

Each test is named for the one behaviour it checks.  Image names are
fresh per test (the fake makes a zeroed image for any name)."""
import os
import random
import shutil
import socket
import struct
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nbdtest  # noqa: E402

try:
    import nbd
except ImportError:
    print("python3-libnbd is missing: scripts/deps.sh installs it")
    sys.exit(nbdtest.SKIP)

MiB = 1 << 20
counter = [0]


class Ctx:
    """The server under test and a way to get a fresh image."""

    def __init__(self, server, new_image, size):
        self.srv = server
        self.new_image = new_image      # () -> export name
        self.size = size

    def connect(self, name, structured=True, meta=True):
        h = nbd.NBD()
        h.set_uri_allow_local_file(True)   # nbds:// with tls-psk-file
        if not structured:
            h.set_request_structured_replies(False)
        if meta:
            h.add_meta_context(nbd.CONTEXT_BASE_ALLOCATION)
        h.set_strict_mode(0)     # send everything: the server must judge
        h.connect_uri(self.srv.uri(name))
        return h


# ---- libnbd-driven behaviour ---------------------------------------------

def test_size_and_flags_are_advertised(c):
    h = c.connect(c.new_image())
    assert h.get_size() == c.size, h.get_size()
    assert h.can_flush() and h.can_fua() and h.can_trim() and h.can_zero()
    assert h.can_multi_conn()
    assert not h.is_read_only()
    assert h.can_meta_context(nbd.CONTEXT_BASE_ALLOCATION)
    assert h.get_block_size(nbd.SIZE_MAXIMUM) == 32 * MiB
    h.shutdown()


def test_unaligned_write_reads_back(c):
    h = c.connect(c.new_image())
    data = os.urandom(12345)
    h.pwrite(data, 4097)
    assert h.pread(12345, 4097) == data
    assert h.pread(1, 4096) == b"\0"
    assert h.pread(3, 4097 + 12345) == b"\0\0\0"
    h.shutdown()


def test_simple_replies_work_too(c):
    h = c.connect(c.new_image(), structured=False, meta=False)
    data = os.urandom(5000)
    h.pwrite(data, 777)
    assert h.pread(5000, 777) == data
    try:
        h.pread(4096, c.size - 100)
        raise AssertionError("a read past the end succeeded")
    except nbd.Error as e:
        assert e.errno == "EINVAL", e
    assert h.pread(10, 777) == data[:10]  # still usable
    h.shutdown()


def test_fua_write_and_flush_succeed(c):
    h = c.connect(c.new_image())
    h.pwrite(b"x" * 4096, 0, nbd.CMD_FLAG_FUA)
    h.flush()
    assert h.pread(4096, 0) == b"x" * 4096
    h.shutdown()


def test_trim_reads_back_as_zeros(c):
    h = c.connect(c.new_image())
    h.pwrite(b"\xaa" * (3 * MiB), 0)
    h.trim(2 * MiB, 512 * 1024)          # whole and partial objects
    got = h.pread(3 * MiB, 0)
    assert got[:512 * 1024] == b"\xaa" * (512 * 1024)
    assert got[512 * 1024:512 * 1024 + 2 * MiB] == bytes(2 * MiB)
    assert got[512 * 1024 + 2 * MiB:] == b"\xaa" * (512 * 1024)
    h.shutdown()


def test_write_zeroes_reads_back_as_zeros(c):
    h = c.connect(c.new_image())
    h.pwrite(b"\x55" * MiB, 0)
    h.zero(100, 1000)                    # (count, offset)
    h.zero(300000, 200000, nbd.CMD_FLAG_NO_HOLE)
    got = h.pread(MiB, 0)
    assert got[1000:1100] == bytes(100) and got[999] == 0x55 and got[1100] == 0x55
    assert got[200000:500000] == bytes(300000) and got[500000] == 0x55
    h.shutdown()


def extents(h, length, offset, flags=0):
    out = []

    def cb(meta, off, ents, err):
        if meta == nbd.CONTEXT_BASE_ALLOCATION:
            out.extend(zip(ents[0::2], ents[1::2]))
        return 0
    h.block_status(length, offset, cb, flags)
    return out


def test_block_status_reports_holes_and_data(c):
    h = c.connect(c.new_image())
    obj = 4 * MiB
    h.pwrite(b"d" * 4096, obj + 10)      # second object has data
    ext = extents(h, 3 * obj, 0)
    assert sum(n for n, _ in ext) <= 3 * obj
    pos, kinds = 0, []
    for n, fl in ext:
        kinds.append((pos, n, fl))
        pos += n
    # byte 0 is a hole, byte obj+10 is data
    def flags_at(x):
        for p, n, fl in kinds:
            if p <= x < p + n:
                return fl
    assert flags_at(0) == 3, kinds
    assert flags_at(obj + 10) == 0, kinds
    one = extents(h, 3 * obj, 0, nbd.CMD_FLAG_REQ_ONE)
    assert len(one) == 1 and one[0][1] == 3, one
    h.shutdown()


def test_request_beyond_the_end_fails_and_connection_stays_usable(c):
    h = c.connect(c.new_image())
    for op in (lambda: h.pread(8192, c.size - 4096),
               lambda: h.pwrite(b"z" * 8192, c.size - 4096),
               lambda: h.trim(8192, c.size - 4096),
               lambda: h.zero(8192, c.size - 4096)):
        try:
            op()
            raise AssertionError("an I/O past the end succeeded")
        except nbd.Error as e:
            assert e.errno in ("EINVAL", "ENOSPC"), e
    h.pwrite(b"ok", c.size - 2)
    assert h.pread(2, c.size - 2) == b"ok"
    h.shutdown()


def test_64_requests_in_flight_complete(c):
    h = c.connect(c.new_image())
    bufs, cookies = {}, []
    for i in range(64):
        data = os.urandom(4096 + i)
        bufs[i] = data
        cookies.append(h.aio_pwrite(data, i * 65536))
    while h.aio_in_flight() > 0:
        h.poll(-1)
    for ck in cookies:
        assert h.aio_command_completed(ck)
    rbufs = [nbd.Buffer(4096 + i) for i in range(64)]
    cookies = [h.aio_pread(rbufs[i], i * 65536) for i in range(64)]
    assert h.aio_in_flight() >= 32 or True
    while h.aio_in_flight() > 0:
        h.poll(-1)
    for i, ck in enumerate(cookies):
        assert h.aio_command_completed(ck)
        assert rbufs[i].to_bytearray() == bufs[i], i
    h.shutdown()


def test_two_connections_see_each_others_flushed_writes(c):
    name = c.new_image()
    a, b = c.connect(name), c.connect(name)
    a.pwrite(b"from-a" * 100, 0)
    a.flush()
    assert b.pread(600, 0) == b"from-a" * 100
    b.pwrite(b"from-b" * 100, 8192)
    b.flush()
    assert a.pread(600, 8192) == b"from-b" * 100
    a.shutdown()
    b.shutdown()


def test_list_shows_images(c):
    h = nbd.NBD()
    h.set_uri_allow_local_file(True)   # nbds:// with tls-psk-file
    h.set_opt_mode(True)
    h.connect_uri(c.srv.uri(""))
    names = []
    h.opt_list(lambda name, desc: names.append(name) or 0)
    h.opt_abort()
    assert len(names) >= 1, names


def test_missing_image_is_refused_with_a_message(c):
    h = nbd.NBD()
    h.set_uri_allow_local_file(True)   # nbds:// with tls-psk-file
    try:
        h.connect_uri(c.srv.uri("missing-image-xyz"))
        raise AssertionError("connected to a missing image")
    except nbd.Error as e:
        assert "missing-image-xyz" in str(e) or e.errno is not None


def test_snapshot_export_is_read_only(c):
    name = c.snapshot_export() if hasattr(c, "snapshot_export") else c.new_image() + "@s1"
    h = c.connect(name)
    assert h.is_read_only()
    assert not h.can_trim()
    try:
        h.pwrite(b"no", 0)
        raise AssertionError("wrote to a snapshot")
    except nbd.Error as e:
        assert e.errno == "EPERM", e
    h.shutdown()


# ---- malformed input on a raw socket -------------------------------------

def raw(c):
    return nbdtest.Raw(c.srv.ip, c.srv.port)


def test_bad_option_magic_closes_only_that_connection(c):
    other = c.connect(c.new_image())
    r = raw(c)
    r.greet()
    r.s.sendall(struct.pack(">QII", 0x1234, 7, 0))
    assert r.closed()
    other.pwrite(b"alive", 0)
    assert other.pread(5, 0) == b"alive"
    other.shutdown()


def test_absurd_option_length_closes_without_reading_it(c):
    r = raw(c)
    r.greet()
    r.s.sendall(struct.pack(">QII", nbdtest.IHAVEOPT, 7, 0xfffffff0))
    assert r.closed()


def test_unknown_option_gets_unsup_and_negotiation_goes_on(c):
    r = raw(c)
    r.greet()
    r.option(99, b"abc")
    opt, rtype, _ = r.reply()
    assert opt == 99 and rtype == 0x80000001, hex(rtype)
    info = r.go(c.new_image())
    assert info["size"] == c.size
    r.close()


def test_malformed_go_data_gets_invalid(c):
    r = raw(c)
    r.greet()
    r.option(7, struct.pack(">I", 1000) + b"abc")    # name longer than data
    _, rtype, _ = r.reply()
    assert rtype == 0x80000003, hex(rtype)
    r.option(2)                                        # abort
    r.close()


def test_set_meta_context_needs_structured_replies(c):
    r = raw(c)
    r.greet()
    q = b"base:allocation"
    data = struct.pack(">I", 5) + b"disk1" + struct.pack(">II", 1, len(q)) + q
    r.option(10, data)
    _, rtype, _ = r.reply()
    assert rtype == 0x80000003, hex(rtype)
    r.option(8)
    assert r.reply()[1] == 1
    r.option(10, data)
    _, rtype, payload = r.reply()
    assert rtype == 4 and payload[4:] == q, (rtype, payload)
    assert r.reply()[1] == 1
    r.close()


def test_unknown_command_gets_einval_and_connection_stays_usable(c):
    r = raw(c)
    r.greet()
    r.go(c.new_image())
    r.request(42, cookie=7)
    err, cookie, _ = r.simple_reply()
    assert err == 22 and cookie == 7, (err, cookie)
    r.request(0, offset=0, length=16, cookie=8)
    err, cookie, data = r.simple_reply(16)
    assert err == 0 and cookie == 8 and data == bytes(16)
    r.close()


def test_unknown_flag_gets_einval(c):
    r = raw(c)
    r.greet()
    r.go(c.new_image())
    r.request(0, offset=0, length=16, flags=0x8000, cookie=3)
    err, _, _ = r.simple_reply(16)
    assert err == 22, err
    r.close()


def test_bad_request_magic_closes_the_connection(c):
    r = raw(c)
    r.greet()
    r.go(c.new_image())
    r.request(0, length=16, magic=0xdeadbeef)
    assert r.closed()


def test_absurd_write_length_closes_without_reading_gigabytes(c):
    r = raw(c)
    r.greet()
    r.go(c.new_image())
    t0 = time.time()
    r.request(1, offset=0, length=0xffffffff, cookie=1)
    assert r.closed(timeout=5)
    assert time.time() - t0 < 5


def test_absurd_read_length_gets_einval(c):
    r = raw(c)
    r.greet()
    r.go(c.new_image(), structured=True)
    r.request(0, offset=0, length=0xffffffff, cookie=9)
    flags, rtype, cookie, payload = r.chunk()
    assert rtype == 0x8001 and cookie == 9 and flags & 1, (rtype, cookie)
    assert struct.unpack(">I", payload[:4])[0] == 22
    r.close()


def test_write_past_the_end_gets_enospc(c):
    r = raw(c)
    r.greet()
    r.go(c.new_image())
    r.request(1, offset=c.size - 10, length=20, cookie=5, payload=b"y" * 20)
    err, cookie, _ = r.simple_reply()
    assert err == 28 and cookie == 5, err
    r.request(3, cookie=6)                 # flush still works
    assert r.simple_reply()[0] == 0
    r.close()


def test_client_that_never_reads_replies_does_not_stall_others(c):
    name = c.new_image()
    r = raw(c)
    r.greet()
    r.go(name)
    # 64 MiB of read requests whose replies we never read
    for i in range(256):
        r.request(0, offset=0, length=MiB, cookie=i)
    h = c.connect(name)
    t0 = time.time()
    h.pwrite(b"q" * 4096, 0)
    assert h.pread(4096, 0) == b"q" * 4096
    assert time.time() - t0 < 10
    h.shutdown()
    r.close()


def test_replies_to_a_slow_reader_come_back_whole_and_in_order(c):
    """Many large reads at once, their replies read slowly: the server's
    batched sends fill the socket and stop mid-reply, and what is left
    must follow exactly once, never interleaved with another reply."""
    name = c.new_image()
    h = c.connect(name)
    data = os.urandom(8 * MiB)
    h.pwrite(data, 0)
    h.shutdown()
    r = raw(c)
    r.greet()
    r.go(name)
    r.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    want = {}
    for i in range(96):
        off = random.randrange(0, 8 * MiB - 256 * 1024) & ~511
        length = random.choice([4096, 65536, 256 * 1024])
        want[i] = data[off:off + length]
        r.request(0, offset=off, length=length, cookie=i)
    time.sleep(0.5)      # let the server's socket fill
    got = set()
    for _ in range(96):
        magic, err, cookie = struct.unpack(">IIQ", r.recv(16))
        assert magic == nbdtest.SIMPLE_MAGIC, "bad reply magic %x" % magic
        assert err == 0 and cookie in want and cookie not in got, (err, cookie)
        got.add(cookie)
        body = b""
        while len(body) < len(want[cookie]):
            body += r.s.recv(min(4096, len(want[cookie]) - len(body)))
        assert body == want[cookie], cookie
    r.close()


def test_disconnect_mid_write_payload_is_harmless(c):
    r = raw(c)
    r.greet()
    r.go(c.new_image())
    r.request(1, offset=0, length=MiB, cookie=1, payload=b"p" * 1000)
    r.close()
    h = c.connect(c.new_image())
    h.pread(10, 0)
    h.shutdown()


def test_sigterm_stops_the_server_cleanly(c):
    pass   # checked by the teardown: stop() must return 0


TESTS = [v for k, v in list(globals().items()) if k.startswith("test_")]


def fake_main(binary, tls=False):
    size = 64 * MiB
    tmp = tempfile.mkdtemp(prefix="atoll-nbd-proto.")

    def setup():
        args = ["--log-level", "debug"]
        if tls:
            psk = os.path.join(tmp, "keys.psk")
            nbdtest.make_psk_file(psk, ["conformance"])
            args += ["--tls=on", "--tls-psk", psk]
        srv = nbdtest.Server(binary, args, env={"ATOLL_NBD_FAKE_SIZE": str(size)})
        if tls:
            srv.uri_tls = ("conformance", psk)
        srv.start()

        def new_image():
            counter[0] += 1
            return "img%d" % counter[0]
        return Ctx(srv, new_image, size)

    def teardown(c):
        rc = c.srv.stop()
        if rc != 0:
            print(c.srv.tail())
            raise SystemExit("atoll-nbd exited %s on SIGTERM (log: %s)" % (rc, c.srv.log))
        c.srv.remove_log()
        shutil.rmtree(tmp, ignore_errors=True)
    nbdtest.run(TESTS, setup, teardown)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--fake":
        fake_main(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "--fake-tls":
        fake_main(sys.argv[2], tls=True)
    else:
        print(__doc__)
        sys.exit(2)
