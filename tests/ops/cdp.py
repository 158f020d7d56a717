#!/usr/bin/env python3
"""tests/ops/cdp.py - drives one headless Chromium page through the DevTools
protocol over a pipe (--remote-debugging-pipe: NUL-separated JSON on file
descriptors 3 and 4, so no websocket and nothing but the standard library),
for tests/ops/dashboard.sh.

usage: cdp.py --browser PATH --profile DIR --console FILE URL STEP...

Opens URL in one tab, then runs the steps in order:
  wait:SECONDS:EXPR   evaluates the JavaScript EXPR every 0.2 s until it is
                      true; prints "waited S" (seconds); fails after SECONDS
  try:SECONDS:EXPR    the same, but going on after SECONDS ("gave up S")
  dom:FILE            writes document.documentElement.outerHTML to FILE
  shot:FILE           writes a PNG screenshot of the whole page to FILE
  run:COMMAND         runs COMMAND with /bin/sh; fails if it fails
Every console message, uncaught exception and browser log entry (failed
loads, refused content) of the page is written to FILE given by --console,
one per line.  Exit status: 0, or 1 with the reason on stderr.  The
browser is always stopped (its process group) before exiting.
"""
import argparse
import base64
import fcntl
import json
import os
import select
import signal
import subprocess
import sys
import time


class Browser:
    def __init__(self, path, profile):
        # fd 3: the browser reads our commands; fd 4: it writes to us
        cmd_r, self.cmd_w = os.pipe()
        self.ev_r, ev_w = os.pipe()
        r3, w4 = os.dup(cmd_r), os.dup(ev_w)
        args = [path, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--no-default-browser-check", "--disable-extensions", "--disable-sync",
                "--disable-background-networking", "--disable-component-update",
                "--disable-breakpad", "--mute-audio", "--hide-scrollbars",
                "--remote-debugging-pipe", "--user-data-dir=" + profile,
                "--window-size=1400,1000", "about:blank"]

        def fds():
            # via fds above 9 first: r3 or w4 may be 3 or 4 themselves
            hi_r, hi_w = fcntl.fcntl(r3, fcntl.F_DUPFD, 10), fcntl.fcntl(w4, fcntl.F_DUPFD, 10)
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)
            os.close(hi_r)
            os.close(hi_w)
            os.setpgrp()
        # close_fds=False: subprocess would close 3 and 4 after fds() ran;
        # every other descriptor of ours is close-on-exec (os.pipe, os.dup)
        self.p = subprocess.Popen(args, close_fds=False, preexec_fn=fds,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for fd in (cmd_r, ev_w, r3, w4):
            os.close(fd)
        self.buf = b""
        self.next_id = 0
        self.events = []

    def _read_one(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the browser did not answer")
            ready, _, _ = select.select([self.ev_r], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.ev_r, 1 << 20)
            if not chunk:
                raise EOFError("the browser closed its pipe (exit %s)" % self.p.poll())
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=None, timeout=30):
        self.next_id += 1
        m = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            m["sessionId"] = session
        os.write(self.cmd_w, json.dumps(m).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            r = self._read_one(deadline)
            if r.get("id") == self.next_id:
                if "error" in r:
                    raise RuntimeError("%s: %s" % (method, r["error"]))
                return r.get("result", {})
            if "method" in r:
                self.events.append(r)

    def drain(self):
        """Events that arrived meanwhile (non-blocking)."""
        while select.select([self.ev_r], [], [], 0)[0]:
            chunk = os.read(self.ev_r, 1 << 20)
            if not chunk:
                break
            self.buf += chunk
        while b"\0" in self.buf:
            msg, self.buf = self.buf.split(b"\0", 1)
            r = json.loads(msg)
            if "method" in r:
                self.events.append(r)

    def stop(self):
        try:
            os.killpg(self.p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.p.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.p.pid, signal.SIGKILL)
            self.p.wait()
        # the browser's helpers (zygote, renderer) share its group
        try:
            os.killpg(self.p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def messages(events):
    out = []
    for e in events:
        m, p = e["method"], e.get("params", {})
        if m == "Runtime.consoleAPICalled":
            out.append("console.%s: %s" % (p.get("type"), " ".join(
                str(a.get("value", a.get("description", ""))) for a in p.get("args", []))))
        elif m == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            out.append("exception: %s %s" % (d.get("text", ""),
                                              d.get("exception", {}).get("description", "")))
        elif m == "Log.entryAdded":
            en = p.get("entry", {})
            out.append("log.%s: %s %s" % (en.get("level"), en.get("text"), en.get("url", "")))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--browser", required=True)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--console", required=True)
    ap.add_argument("url")
    ap.add_argument("steps", nargs="*")
    a = ap.parse_args()
    b = Browser(a.browser, a.profile)
    rc = 0
    try:
        t = b.call("Target.createTarget", {"url": "about:blank"})
        s = b.call("Target.attachToTarget", {"targetId": t["targetId"], "flatten": True})["sessionId"]
        for m in ("Runtime.enable", "Log.enable", "Page.enable"):
            b.call(m, session=s)
        b.call("Page.navigate", {"url": a.url}, session=s)
        for step in a.steps:
            kind, _, arg = step.partition(":")
            if kind in ("wait", "try"):
                secs, _, expr = arg.partition(":")
                t0 = time.monotonic()
                while True:
                    r = b.call("Runtime.evaluate", {"expression": "!!(%s)" % expr,
                                                    "returnByValue": True}, session=s)
                    if r.get("result", {}).get("value") is True:
                        print("waited %.1f" % (time.monotonic() - t0))
                        sys.stdout.flush()
                        break
                    if time.monotonic() - t0 > float(secs):
                        if kind == "try":
                            print("gave up %.1f" % (time.monotonic() - t0))
                            break
                        raise RuntimeError("not true within %s s: %s" % (secs, expr))
                    time.sleep(0.2)
                    b.drain()
            elif kind == "dom":
                r = b.call("Runtime.evaluate", {"expression": "document.documentElement.outerHTML",
                                                "returnByValue": True}, session=s)
                with open(arg, "w") as f:
                    f.write(r["result"]["value"])
            elif kind == "shot":
                # the whole page, not only the window
                m = b.call("Page.getLayoutMetrics", session=s)
                size = m.get("cssContentSize") or m["contentSize"]
                clip = {"x": 0, "y": 0, "width": size["width"],
                        "height": min(size["height"], 6000), "scale": 1}
                r = b.call("Page.captureScreenshot", {"format": "png", "clip": clip,
                                                      "captureBeyondViewport": True},
                           session=s, timeout=60)
                with open(arg, "wb") as f:
                    f.write(base64.b64decode(r["data"]))
            elif kind == "run":
                if subprocess.call(arg, shell=True) != 0:
                    raise RuntimeError("step failed: " + arg)
            else:
                raise RuntimeError("unknown step " + step)
        b.drain()
    except Exception as e:  # the reason, then the browser is stopped
        print("cdp.py: %s" % e, file=sys.stderr)
        rc = 1
    finally:
        b.stop()
        with open(a.console, "w") as f:
            for line in messages(b.events):
                f.write(line + "\n")
    return rc


if __name__ == "__main__":
    sys.exit(main())
