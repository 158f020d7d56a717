#!/usr/bin/env python3
"""rawhello.py ADDR... - a peer without a key, from a raw socket, at each
daemon address (ip:port): a well-formed hello with no authentication, or
with a made-up auth section, then what an attacker would send next (a
monitor command, an OSD op, a boot, a map).  Each daemon must close the
connection without a hello of its own, so nothing sent after the hello is
ever read.  Exit 0 when every daemon behaved (lib/msg_auth.c)."""
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cluster"))
from badframes import frame  # noqa: E402  (the frame layout of lib/msg.h)

ENTITY_CLIENT, ENTITY_OSD = 1, 3


def hello(etype, eid, auth=b""):
    body = bytes(16) + struct.pack("<BQQ", etype, eid, 0) + struct.pack("<I", len(auth)) + auth
    return frame(1, struct.pack("<BBI", 1, 1, len(body)) + body)


# what follows the hello: types of lib/proto.h are above 9; any is enough,
# the daemon must not read past the hello
FOLLOW = frame(12, b"\x05\x00\x00\x00{\"prefix\":\"osd pool rm\"}") + frame(40, os.urandom(64))

CASES = [
    ("hello without auth", hello(ENTITY_CLIENT, 7)),
    ("hello declaring osd.0 without auth", hello(ENTITY_OSD, 0)),
    ("hello with a made-up auth section", hello(ENTITY_CLIENT, 7, os.urandom(80))),
]


def try_one(addr, name, data):
    ip, port = addr.rsplit(":", 1)
    s = socket.create_connection((ip, int(port)), timeout=5)
    try:
        s.sendall(data + FOLLOW)
    except OSError:
        pass  # closed already: fine
    got = b""
    deadline = time.time() + 5
    try:
        while time.time() < deadline:
            b = s.recv(4096)
            if not b:
                break
            got += b
    except socket.timeout:
        return "%s: %s: still open after 5 s" % (addr, name)
    except ConnectionResetError:
        pass
    finally:
        s.close()
    if got:
        return "%s: %s: the daemon answered %d bytes" % (addr, name, len(got))
    return None


def main():
    bad = []
    for addr in sys.argv[1:]:
        for name, data in CASES:
            e = try_one(addr, name, data)
            if e:
                bad.append(e)
    for e in bad:
        print(e, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
