#!/usr/bin/env python3
"""ptyrun.py CMD [ARG...] - runs CMD with stdout and stderr on a new
pseudo-terminal (stdin is inherited) and copies what it wrote to our
stdout; exits with CMD's status.  Lets a test see what a user at a
terminal sees (progress bars appear only on terminals)."""
import os
import pty
import sys

pid, fd = pty.fork()
if pid == 0:
    # the child's stdin is the pty too: give it the parent's back
    os.execvp(sys.argv[1], sys.argv[1:])
out = bytearray()
while True:
    try:
        chunk = os.read(fd, 65536)
    except OSError:          # EIO: the child closed the terminal
        break
    if not chunk:
        break
    out += chunk
_, status = os.waitpid(pid, 0)
sys.stdout.buffer.write(bytes(out))
sys.exit(os.waitstatus_to_exitcode(status))
