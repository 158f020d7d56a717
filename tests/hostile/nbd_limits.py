#!/usr/bin/env python3
"""nbd_limits.py ATOLL-NBD-FAKE - atoll-nbd's limits across connections
(doc/limits.md, "atoll-nbd"), against the real server code linked with an
in-memory image (no cluster), configured through atoll.conf:

  - nbd_max_connections 3: a fourth and fifth connection are closed before
    the greeting while the first three negotiate and serve; once one of
    those leaves, a new connection is served again;
  - nbd_max_bytes_in_flight 1M (nbd_conn_max_bytes 1M): two connections
    each with four 512 KiB reads in flight, every completion delayed
    200 ms, have at most two in flight in the server together: the eight
    take four rounds (>= 0.7 s; without the shared bound two per
    connection would run, two rounds), and every one is answered;
  - all nbd_max_connections taken by connections still negotiating: a new
    one is served, and the oldest negotiating one is closed for it;
  - nbd_max_connections_per_addr 2: a third connection from one address is
    closed before the greeting;
  - nbd_write_data_timeout 1s: a write whose data stops coming closes its
    connection after about a second, and the server serves on."""
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "nbd"))
import nbdtest  # noqa: E402

KiB = 1024


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def serve(binary, conf, delay_us=0):
    env = {"ATOLL_NBD_FAKE_SIZE": str(8 << 20)}
    if delay_us:
        env["ATOLL_NBD_FAKE_DELAY_US"] = str(delay_us)
    srv = nbdtest.Server(binary, ["--conf", conf], env=env)
    srv.start()
    return srv


def connections(ctx):
    srv = serve(ctx["bin"], ctx["conf"])
    try:
        # wait_listening's probe connection must be gone before counting
        time.sleep(0.3)
        held = []
        for i in range(3):
            r = nbdtest.Raw(srv.ip, srv.port)
            r.greet()
            r.go("img%d" % i)
            held.append(r)
        extra = [nbdtest.Raw(srv.ip, srv.port) for _ in range(2)]
        for r in extra:
            check(r.closed(timeout=5), "a connection past nbd_max_connections was not closed")
            r.close()
        # the held ones still serve
        for i, r in enumerate(held):
            r.request(0, 0, 4096, cookie=i + 1)
            err, cookie, _ = r.simple_reply(4096)
            check(err == 0 and cookie == i + 1, "a held connection stopped serving")
        held.pop().close()
        time.sleep(0.5)
        r = nbdtest.Raw(srv.ip, srv.port)
        r.greet()
        r.go("img9")
        r.request(0, 0, 4096, cookie=7)
        check(r.simple_reply(4096)[0] == 0, "a connection after one left is not served")
        r.close()
        for r in held:
            r.close()
        check("nbd_max_connections" in srv.tail(200), "the log does not name the limit")
    finally:
        check(srv.stop() == 0, "atoll-nbd did not stop cleanly")
        srv.remove_log()


def bytes_in_flight(ctx):
    srv = serve(ctx["bin"], ctx["conf"], delay_us=200000)
    try:
        conns = []
        for i in range(2):
            r = nbdtest.Raw(srv.ip, srv.port)
            r.greet()
            r.go("bytes%d" % i)
            conns.append(r)
        errors = []

        def run(r):
            try:
                for k in range(4):
                    r.request(0, k * 512 * KiB, 512 * KiB, cookie=k + 1)
                for _ in range(4):
                    err, _, data = r.simple_reply(512 * KiB)
                    if err or len(data) != 512 * KiB:
                        errors.append(err)
            except Exception as e:  # reported below
                errors.append(repr(e))

        t0 = time.time()
        ts = [threading.Thread(target=run, args=(r,)) for r in conns]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
        took = time.time() - t0
        for r in conns:
            r.close()
        check(not errors, "reads failed: %r" % errors)
        check(took >= 0.7, "8 delayed reads took %.2f s: more than 1M was in flight" % took)
        print("     8 reads of 512K, 1M in flight at most: %.2f s" % took)
    finally:
        check(srv.stop() == 0, "atoll-nbd did not stop cleanly")
        srv.remove_log()


def evict_negotiating(ctx):
    srv = serve(ctx["bin"], ctx["conf"])
    try:
        time.sleep(0.3)
        idle = []
        for _ in range(3):
            r = nbdtest.Raw(srv.ip, srv.port)
            r.greet()
            idle.append(r)
            time.sleep(0.05)
        r = nbdtest.Raw(srv.ip, srv.port)
        r.greet()
        r.go("fresh")
        r.request(0, 0, 4096, cookie=3)
        check(r.simple_reply(4096)[0] == 0, "a new client is not served while "
              "negotiating connections hold every slot")
        check(idle[0].closed(timeout=5), "the oldest negotiating connection was not closed")
        check(not idle[1].closed(timeout=0.3), "a newer negotiating connection was closed")
        for c in idle + [r]:
            c.close()
    finally:
        check(srv.stop() == 0, "atoll-nbd did not stop cleanly")
        srv.remove_log()


def per_addr_and_write_data(ctx):
    srv = serve(ctx["bin"], ctx["conf_b"])
    try:
        time.sleep(0.3)
        two = [nbdtest.Raw(srv.ip, srv.port) for _ in range(2)]
        for r in two:
            r.greet()
        third = nbdtest.Raw(srv.ip, srv.port)
        check(third.closed(timeout=5), "a third connection from one address was not closed")
        third.close()
        check("nbd_max_connections_per_addr" in srv.tail(200),
              "the log does not name nbd_max_connections_per_addr")
        two[0].go("w")
        t0 = time.time()
        two[0].request(1, 0, 1 << 20, cookie=9, payload=b"x" * 1000)
        check(two[0].closed(timeout=10), "a write whose data stopped did not close")
        took = time.time() - t0
        check(0.9 <= took <= 5, "the write's data timeout took %.2f s, not about 1 s" % took)
        print("     a write with 1000 of 1 MiB sent: closed after %.2f s" % took)
        for r in two:
            r.close()
        time.sleep(0.3)
        r = nbdtest.Raw(srv.ip, srv.port)
        r.greet()
        r.go("after")
        r.request(0, 0, 4096, cookie=4)
        check(r.simple_reply(4096)[0] == 0, "the server does not serve after the timeout")
        r.close()
    finally:
        check(srv.stop() == 0, "atoll-nbd did not stop cleanly")
        srv.remove_log()


def test_negotiating_connections_make_room(ctx):
    evict_negotiating(ctx)


def test_per_addr_and_write_data_timeout(ctx):
    per_addr_and_write_data(ctx)


def test_nbd_max_connections_closes_extra_ones(ctx):
    connections(ctx)


def test_nbd_max_bytes_in_flight_spans_connections(ctx):
    bytes_in_flight(ctx)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    d = tempfile.mkdtemp(prefix="atoll-nbd-limits.")
    conf = os.path.join(d, "atoll.conf")
    with open(conf, "w") as f:
        f.write("[nbd]\nnbd_max_connections = 3\nnbd_max_bytes_in_flight = 1M\n"
                "nbd_conn_max_bytes = 1M\n")
    conf_b = os.path.join(d, "atoll-b.conf")
    with open(conf_b, "w") as f:
        f.write("[nbd]\nnbd_max_connections_per_addr = 2\nnbd_write_data_timeout = 1s\n")
    ctx = {"bin": sys.argv[1], "conf": conf, "conf_b": conf_b}
    try:
        nbdtest.run([test_nbd_max_connections_closes_extra_ones,
                     test_nbd_max_bytes_in_flight_spans_connections,
                     test_negotiating_connections_make_room,
                     test_per_addr_and_write_data_timeout], lambda: ctx)
    finally:
        os.remove(conf)
        os.remove(conf_b)
        os.rmdir(d)


if __name__ == "__main__":
    main()
