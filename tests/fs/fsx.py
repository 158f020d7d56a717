#!/usr/bin/env python3
# tests/fs/fsx.py - an fsx-style exerciser: random reads, writes,
# truncates (down and up) and extends on one file, each checked against an
# in-memory model of what the file must hold, after every step.
#
# Why this shape: the bugs a block-striped file system hides are at the
# edges - a write or truncate that crosses a data-object boundary, a hole
# read before and after a truncate, a size that forgets the largest write.
# Offsets are therefore drawn half the time near a multiple of --block
# (atoll's object size); the file grows to about two and a half blocks.
#
# After every operation the file's size (fstat) must equal the model's,
# and a window around the bytes the operation touched is read back through
# a second descriptor opened with O_DIRECT (so the read reaches the file
# system, not the kernel's page cache) and compared with the model.  The
# whole file is compared every --full operations and at the end; the file
# is closed and opened again now and then (close pushes the size).
#
# Usage: fsx.py FILE [--ops N] [--seed S] [--block B] [--max BYTES]
# The seed is printed first; `fsx.py FILE --seed S --ops N` replays a run.
# Exit 0 when every check held, 1 with the failing step and the last
# operations otherwise.
import argparse
import errno
import os
import random
import sys

p = argparse.ArgumentParser(description="fsx-style file exerciser")
p.add_argument("file")
p.add_argument("--ops", type=int, default=10000)
p.add_argument("--seed", type=int, default=None)
p.add_argument("--block", type=int, default=4 << 20)
p.add_argument("--max", type=int, default=None, help="largest file size (default 2.5 blocks)")
p.add_argument("--full", type=int, default=500, help="compare the whole file every N ops")
a = p.parse_args()

seed = a.seed if a.seed is not None else int.from_bytes(os.urandom(4), "little")
maxlen = a.max or (a.block * 5 // 2)
print(f"fsx: seed {seed} ops {a.ops} block {a.block} max {maxlen}", flush=True)
rng = random.Random(seed)
model = bytearray()
hist = []		# (step, text) of the last operations, for the failure report
fd = dfd = -1


def fail(step, why):
    print(f"fsx: FAIL at step {step}: {why}", file=sys.stderr)
    print("fsx: last operations:", file=sys.stderr)
    for s, t in hist[-25:]:
        print(f"  {s:6d} {t}", file=sys.stderr)
    print(f"fsx: replay with: {sys.argv[0]} FILE --seed {seed} --ops {a.ops}"
          + (f" --block {a.block}" if a.block != 4 << 20 else "")
          + (f" --max {a.max}" if a.max else ""), file=sys.stderr)
    sys.exit(1)


def reopen():
    global fd, dfd
    if fd >= 0:
        os.close(fd)
    if dfd >= 0:
        os.close(dfd)
    fd = os.open(a.file, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        dfd = os.open(a.file, os.O_RDONLY | os.O_DIRECT)
    except OSError:
        dfd = os.open(a.file, os.O_RDONLY)	# no O_DIRECT here: the page cache it is


def pick_off(limit):
    """An offset in [0, limit]: half the time near a block boundary."""
    if limit <= 0:
        return 0
    if rng.random() < 0.5:
        nb = limit // a.block + 1
        o = rng.randrange(nb) * a.block + rng.randint(-4096, 4096)
        return min(max(o, 0), limit)
    return rng.randint(0, limit)


def pick_len():
    r = rng.random()
    if r < 0.4:
        return rng.randint(1, 512)
    if r < 0.8:
        return rng.randint(1, 65536)
    return rng.randint(1, 1 << 20)


def pread_all(f, n, off):
    global dfd
    out = bytearray()
    while len(out) < n:
        try:
            b = os.pread(f, n - len(out), off + len(out))
        except OSError as e:
            if e.errno != errno.EINVAL or f != dfd:
                raise
            # a local file system wants aligned O_DIRECT reads: go cached
            os.close(dfd)
            f = dfd = os.open(a.file, os.O_RDONLY)
            continue
        if not b:
            break
        out += b
    return bytes(out)


def check(step, off, n, f=None):
    """The bytes [off, off+n) read from the file equal the model's."""
    f = dfd if f is None else f
    off = max(off, 0)
    got = pread_all(f, n, off)
    want = bytes(model[off:off + n])
    if got != want:
        for i in range(min(len(got), len(want))):
            if got[i] != want[i]:
                fail(step, f"byte {off + i}: read {got[i]:#04x}, model {want[i]:#04x} "
                     f"(window {off}+{n}, file size {len(model)})")
        fail(step, f"read {len(got)} bytes at {off}, model has {len(want)} (size {len(model)})")


def set_size(n):
    if n < len(model):
        del model[n:]
    else:
        model.extend(bytes(n - len(model)))


if os.path.exists(a.file):
    os.unlink(a.file)
reopen()
counts = {}
for step in range(1, a.ops + 1):
    r = rng.random()
    size = len(model)
    if r < 0.25:
        op = "read"
        off = pick_off(size + 4096)
        n = pick_len()
        text = f"read  {off:#x} +{n:#x}"
        hist.append((step, text))
        check(step, off, n, f=fd if rng.random() < 0.5 else dfd)
        lo, hi = off, off + n
    elif r < 0.63:
        op = "write"
        off = pick_off(maxlen - 1)
        n = min(pick_len(), maxlen - off)
        data = rng.randbytes(n)
        text = f"write {off:#x} +{n:#x}" + (" (past EOF: hole)" if off > size else "")
        hist.append((step, text))
        w = os.pwrite(fd, data, off)
        if w != n:
            fail(step, f"short write: {w} of {n}")
        if off > size:
            set_size(off)
        model[off:off + n] = data
        lo, hi = off, off + n
    elif r < 0.78:
        op = "truncate"
        n = pick_off(size)	# down (or to the same size)
        text = f"trunc {size:#x} -> {n:#x}"
        hist.append((step, text))
        os.ftruncate(fd, n)
        set_size(n)
        lo, hi = n, size
    elif r < 0.90:
        op = "extend"
        n = pick_off(maxlen)
        if n < size:
            n = size + (maxlen - size) // 2
        text = f"extnd {size:#x} -> {n:#x}"
        hist.append((step, text))
        os.ftruncate(fd, n)
        set_size(n)
        lo, hi = size, n
    elif r < 0.95:
        op = "fsync"
        hist.append((step, "fsync"))
        os.fsync(fd)
        lo = hi = 0
    else:
        op = "reopen"
        hist.append((step, "close+open"))
        reopen()
        lo = hi = 0
    counts[op] = counts.get(op, 0) + 1
    st = os.fstat(fd).st_size
    if st != len(model):
        fail(step, f"size {st}, model {len(model)}")
    if hi > lo or op in ("truncate", "extend"):
        check(step, lo - 4096, hi - lo + 8192)
    if step % a.full == 0:
        check(step, 0, len(model) + 4096)
reopen()
check(a.ops, 0, len(model) + 4096)
if os.stat(a.file).st_size != len(model):
    fail(a.ops, "size after the last reopen")
os.close(fd)
os.close(dfd)
print("fsx: %d ops passed (%s), final size %d" %
      (a.ops, " ".join(f"{k} {v}" for k, v in sorted(counts.items())), len(model)))
