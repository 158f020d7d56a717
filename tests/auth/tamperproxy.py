#!/usr/bin/env python3
"""tamperproxy.py CTL TARGET... - a TCP proxy between real atoll peers
for the secure-mode tests (tests/auth/secure.sh).  For each TARGET
(ip:port) it listens on a free port of 127.0.0.1 and prints
"TARGET=LISTEN"; then "ready".  It forwards bytes both ways, and appends
what diallers send to CTL.cap (so a test can look for plaintext).  The
file CTL holds one command, read for every chunk a dialler sends, done
once, then the file is emptied:

  flip           flip one byte in the middle of the next chunk of at least
                 32 KiB from a dialler (a payload in flight)
  replay         forward that chunk, then send it a second time
  flipreply      flip one byte in the middle of the next chunk of at least
                 32 KiB from a daemon (a read's reply in flight)
  drop           do not forward the next chunk of exactly 64 bytes (a
                 sealed keepalive: a whole frame) from a dialler; the
                 stream goes on after it
  modes=N        in the next dialler hello, offer wire modes N (1 crc, 2
                 secure, 3 both), crcs fixed up so that only the proofs
                 can tell

Each action done is appended to CTL.log.  Runs until killed."""
import os
import socket
import struct
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cluster"))
from badframes import crc32c  # noqa: E402

BIG = 32 * 1024
# the offered modes in a dialler's hello frame: header (32), the hello
# section's header (6), fsid (16), type (1), id (8), features (8), the
# auth blob's length (4), the auth section's header (6), methods (4)
MODES_OFF = 32 + 6 + 16 + 1 + 8 + 8 + 4 + 6 + 4

lock = threading.Lock()


def take(ctl, want):
    """The pending command if it starts with want (then cleared)."""
    with lock:
        try:
            cmd = open(ctl).read().strip()
        except OSError:
            return None
        if not cmd or not cmd.startswith(want):
            return None
        open(ctl, "w").close()
        with open(ctl + ".log", "a") as f:
            f.write(cmd + "\n")
        return cmd


def rewrite_modes(buf, modes):
    """buf starts with a hello frame: its offered modes set, crcs fixed."""
    if len(buf) < MODES_OFF + 4 or struct.unpack_from("<H", buf, 4)[0] != 1:
        return None
    front_len = struct.unpack_from("<I", buf, 16)[0]
    end = 32 + front_len
    if len(buf) < end + 4:
        return None
    b = bytearray(buf)
    struct.pack_into("<I", b, MODES_OFF, modes)
    struct.pack_into("<I", b, end, crc32c(bytes(b[32:end])))
    return bytes(b)


def pump(src, dst, ctl, from_dialler):
    first = True
    try:
        while True:
            data = src.recv(256 * 1024)
            if not data:
                break
            if from_dialler and first:
                first = False
                cmd = take(ctl, "modes=")
                if cmd:
                    new = rewrite_modes(data, int(cmd.split("=", 1)[1]))
                    data = new if new else data
            if from_dialler:
                with lock:
                    with open(ctl + ".cap", "ab") as f:
                        f.write(data)
            if from_dialler and len(data) >= BIG:
                cmd = take(ctl, "flip") or take(ctl, "replay")
                if cmd == "flip":
                    b = bytearray(data)
                    b[len(b) // 2] ^= 0x10
                    data = bytes(b)
                elif cmd == "replay":
                    dst.sendall(data)
            if from_dialler and len(data) == 64 and take(ctl, "drop"):
                continue
            if not from_dialler and len(data) >= BIG and take(ctl, "flipreply"):
                b = bytearray(data)
                b[len(b) // 2] ^= 0x10
                data = bytes(b)
            dst.sendall(data)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve(lsock, target, ctl):
    while True:
        c, _ = lsock.accept()
        ip, port = target.rsplit(":", 1)
        try:
            t = socket.create_connection((ip, int(port)))
        except OSError:
            c.close()
            continue
        for s in (c, t):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=pump, args=(c, t, ctl, True), daemon=True).start()
        threading.Thread(target=pump, args=(t, c, ctl, False), daemon=True).start()


def main():
    ctl = sys.argv[1]
    threads = []
    for target in sys.argv[2:]:
        ls = socket.socket()
        ls.bind(("127.0.0.1", 0))
        ls.listen(64)
        print("%s=127.0.0.1:%d" % (target, ls.getsockname()[1]), flush=True)
        th = threading.Thread(target=serve, args=(ls, target, ctl), daemon=True)
        th.start()
        threads.append(th)
    print("ready", flush=True)
    for th in threads:
        th.join()


if __name__ == "__main__":
    main()
