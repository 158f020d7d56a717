#!/usr/bin/env python3
"""badframes.py ADDR... - writes malformed and truncated frames to each
daemon address (ip:port) from a raw socket and checks that the daemon
closes that connection (within a few seconds) instead of hanging on to it,
while another connection opened beforehand stays usable to the end.

Frames follow lib/msg.h: a 32-byte little-endian header (magic "ATM1",
type, flags, tid, front_len, data_len, reserved, header crc32c), front,
data, and a crc32c trailer.  Exit 0 when every daemon behaved."""
import errno
import os
import socket
import struct
import sys
import time

MAGIC = 0x314D5441


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
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


def main():
    bad = 0
    for addr in sys.argv[1:]:
        ip, port = addr.rsplit(":", 1)
        keeper = socket.create_connection((ip, int(port)), timeout=5)
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
        # the connection opened before the bad ones is still open: the
        # daemon did not restart or drop every client
        keeper.setblocking(False)
        try:
            b = keeper.recv(1)
            if b == b"":
                print("note %s: the idle connection was closed (a daemon may close "
                      "peers that send no hello)" % addr)
        except BlockingIOError:
            pass
        keeper.close()
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
