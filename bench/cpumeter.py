#!/usr/bin/env python3
"""bench/cpumeter.py - the CPU a workload costs per operation, measured the
way issue 36 holds atoll to it (doc/benchmarks.md, "CPU per operation").

usage: cpumeter.py --out FILE.json [options] -- CMD [ARG...]

Runs CMD (a benchmark that prints JSON on stdout: `atoll bench --format
json`, `fio --output-format=json`) and reports:

  machine   busy time from /proc/stat (user + nice + system + irq + softirq
            of every CPU) over the run, less the idle baseline measured just
            before for --baseline seconds (the idle cluster's own
            heartbeats and timers), divided by the ops: the figure held to
            the targets (cpu_us_per_op)
  split     the same time by process, from /proc/PID/stat (utime + stime,
            and cutime + cstime: forked helpers count for their parent):
            client (CMD and its children, from rusage), osd, mon, mds, nbd,
            fuse, kernel threads (kworker, ksoftirqd: interrupts and I/O
            done on the workload's behalf); split_sum_ratio is their
            sum over the machine figure (within 15% when nothing else runs);
            beside them, not in the sum, "other": the machine's busy time
            beyond those processes (what the quiet check below limits)
  quiet     processes other than atoll's, the benchmark's and kernel
            threads may use at most --quiet-max percent (default 5) of the
            machine during the baseline and the run; otherwise the run is
            refused (exit 3), unless --allow-noisy, which marks the result
            "noisy": true (never a figure for doc/benchmarks.md)
  disk      with --read-bytes-expr: the bytes the workload read and the
            bytes the device under --dir served (/proc/diskstats), and
            their ratio (>= 0.9: the disk, not the page cache, served it)
  threads   with --state or --pid: for each role and thread name (the
            daemons name theirs: atoll-msgr, store-commit, store-flush, ...),
            summed over the role's daemons, CPU time and context switches
            (voluntary: the thread slept and was woken; involuntary:
            preempted) per op, from /proc/PID/task/TID; each wake-up costs
            the scheduler's and, on a VM, the hypervisor's time
  layers    with --perf: perf record -a -e cpu-clock during the run, the
            samples classified by symbol into messenger, OSD op path,
            replication, store, checksums, copies, allocator, client
            library, kernel network, kernel block, kernel scheduler,
            kernel other, other (percent of samples)

options:
  --out FILE          the result (JSON: CMD's JSON under "bench", the rest
                      beside it)
  --ops-expr EXPR     Python expression over CMD's JSON `j` giving the op
                      count (default: j["ops"])
  --read-bytes-expr E the bytes the workload read (e.g. j["bytes"])
  --dir DIR           the folder whose device serves the cluster (disk)
  --baseline S        seconds of idle baseline (default 2)
  --quiet-max PCT     (default 5)
  --allow-noisy
  --perf              sample with perf (needs linux-perf)
  --state FILE        atoll-cluster's cluster.state: only its daemons count
                      as osd/mon/mds/nbd/fuse (other clusters' are "other")
  --pid ROLE=PID      one more process of the workload (repeatable), e.g.
                      fuse=1234 for a mount the benchmark made
  --rss               sample RssAnon/RssFile (kB) of those daemons every
                      0.5 s; the largest of each goes in "rss_kB", by
                      daemon name (osd.0) or ROLE.PID
  --label NAME        printed in the one-line summary on stderr
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time

HZ = os.sysconf("SC_CLK_TCK")
NCPU = os.cpu_count() or 1
ROLES = {"atoll-osd": "osd", "atoll-mon": "mon", "atoll-mds": "mds", "atoll-nbd": "nbd",
         "atoll-fuse": "fuse"}


def machine_busy():
    """(busy, total) jiffies of all CPUs."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    user, nice, system, idle, iowait, irq, softirq = v[:7]
    steal = v[7] if len(v) > 7 else 0
    busy = user + nice + system + irq + softirq
    return busy, busy + idle + iowait + steal


def procs():
    """pid -> (comm, ppid, cpu jiffies incl. reaped children)."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                s = f.read()
        except OSError:
            continue
        comm = s[s.index("(") + 1:s.rindex(")")]
        rest = s[s.rindex(")") + 2:].split()
        out[int(d)] = (comm, int(rest[1]),
                       int(rest[11]) + int(rest[12]) + int(rest[13]) + int(rest[14]))
    return out


def kernel_thread(pid, comm, ppid):
    return pid == 2 or ppid == 2


def role(pid, comm, ppid, me, ours):
    """ours: pid -> role of the workload's daemons (None: any atoll
    daemon on the machine counts)."""
    if pid == me:
        return "meter"
    if ours is not None:
        if pid in ours:
            return ours[pid]
    elif comm in ROLES:
        return ROLES[comm]
    if kernel_thread(pid, comm, ppid):
        return "kernel threads"
    return "other"


def split(before, after, me, ours):
    """CPU jiffies by role between two snapshots (processes present in
    both; the client, a child of this meter, is counted from rusage)."""
    r = {}
    for pid, (comm, ppid, t1) in after.items():
        b = before.get(pid)
        if not b or b[0] != comm:
            continue
        k = role(pid, comm, ppid, me, ours)
        r[k] = r.get(k, 0) + (t1 - b[2])
    return r


NAMES = {}      # pid -> daemon name ("osd.0") from cluster.state


def threads(ours):
    """(role, thread name) -> [CPU ticks, voluntary, involuntary switches],
    summed over the threads of the processes in ours."""
    out = {}
    for pid, role in (ours or {}).items():
        try:
            tids = os.listdir("/proc/%d/task" % pid)
        except OSError:
            continue
        for tid in tids:
            base = "/proc/%d/task/%s/" % (pid, tid)
            try:
                with open(base + "stat") as f:
                    st = f.read()
                with open(base + "status") as f:
                    status = f.read()
            except OSError:
                continue
            comm = st[st.index("(") + 1:st.rindex(")")]
            fields = st[st.rindex(")") + 2:].split()
            ticks = int(fields[11]) + int(fields[12])
            sw = {}
            for line in status.splitlines():
                k, _, v = line.partition(":")
                if k in ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"):
                    sw[k] = int(v)
            t = out.setdefault((role, comm), [0, 0, 0])
            t[0] += ticks
            t[1] += sw.get("voluntary_ctxt_switches", 0)
            t[2] += sw.get("nonvoluntary_ctxt_switches", 0)
    return out


def threads_per_op(before, after, ops):
    r = {}
    for k, v in sorted(after.items()):
        b = before.get(k, [0, 0, 0])
        r["%s %s" % k] = {"cpu_us_per_op": round((v[0] - b[0]) / HZ / ops * 1e6, 2),
                          "wakeups_per_op": round((v[1] - b[1]) / ops, 3),
                          "preempted_per_op": round((v[2] - b[2]) / ops, 3)}
    return r


def cluster_daemons(state):
    """pid -> role from atoll-cluster's cluster.state ("daemon NAME TYPE ID
    ... PID": the 8th field, 0 when stopped); fills NAMES."""
    ours = {}
    for line in open(state):
        f = line.split()
        if len(f) > 7 and f[0] == "daemon" and f[7] != "0":
            ours[int(f[7])] = ROLES.get("atoll-" + f[2], f[2])
            NAMES[int(f[7])] = f[1]
    return ours


def rss(pid):
    r = {}
    try:
        for line in open("/proc/%d/status" % pid):
            k, _, v = line.partition(":")
            if k in ("RssAnon", "RssFile"):
                r[k] = int(v.split()[0])
    except OSError:
        pass
    return r


def device_of(path):
    st = os.stat(path)
    name = os.path.basename(os.path.realpath("/sys/dev/block/%d:%d" % (os.major(st.st_dev),
                                                                         os.minor(st.st_dev))))
    return name


def sectors_read(dev):
    with open("/proc/diskstats") as f:
        for line in f:
            x = line.split()
            if x[2] == dev:
                return int(x[5])
    return None


LAYERS = [
    # (layer, symbol prefixes or substrings), first match wins; kernel
    # symbols are matched only against the kernel rules below
    ("messenger", ("msg_", "msgr_", "messenger")),
    ("replication", ("rep_", "replication", "repop")),
    ("OSD op path", ("osd_", "op_", "pg_", "ops_", "mapwait")),
    ("store", ("store_", "kv_", "wal_", "alloc_", "chunk", "lmdb", "mdb_", "blob")),
    ("checksums", ("crc32c", "crc_")),
    ("client library", ("atoll_", "objecter", "client_")),
    ("copies", ("memcpy", "memmove", "__memcpy", "__memmove")),
    ("allocator", ("malloc", "free", "calloc", "realloc", "_int_", "tcache", "arena",
                   "memset")),
]
KERNEL = [
    ("kernel network", ("tcp_", "ip_", "sk_", "skb", "sock_", "net_", "__dev_", "loopback",
                        "inet_", "__sys_sendmsg", "__sys_recvmsg", "napi", "__netif")),
    ("kernel block", ("blk_", "bio_", "submit_bio", "virtblk", "ext4_", "xfs_", "iomap_",
                      "aio_", "io_submit", "jbd2", "mpage", "filemap_", "dio_", "__blockdev")),
    ("kernel scheduler", ("schedule", "__schedule", "futex", "try_to_wake_up", "pick_next",
                          "finish_task_switch", "enqueue_", "dequeue_", "update_curr",
                          "native_sched", "wake_up")),
]


def classify(dso, sym):
    s = sym.lower()
    if dso.startswith("[kernel"):
        for name, keys in KERNEL:
            if any(s.startswith(k) or k in s for k in keys):
                return name
        if "copy" in s:
            return "copies"
        return "kernel other"
    for name, keys in LAYERS:
        if any(s.startswith(k) or k in s for k in keys):
            return name
    return "other"


def perf_layers(data, ours, client_pid):
    """Percent of the workload's samples by layer: the samples of its
    daemons (--state/--pid) and of the benchmark client (not its own
    children), by pid; all samples without --state/--pid."""
    cmd = ["perf", "report", "-i", data, "--stdio", "--sort", "dso,sym",
           "--percent-limit", "0", "-q"]
    if ours is not None:
        cmd += ["--pid", ",".join(str(p) for p in sorted(set(ours) | {client_pid}))]
    out = subprocess.run(cmd, capture_output=True, text=True)
    layers = {}
    for line in out.stdout.splitlines():
        x = line.split()
        if len(x) < 4 or not x[0].endswith("%"):
            continue
        pct = float(x[0][:-1])
        dso = x[1]
        sym = x[3] if x[2].startswith("[") else x[2]
        k = classify(dso, sym)
        layers[k] = layers.get(k, 0) + pct
    total = sum(layers.values()) or 1
    return {k: round(100 * v / total, 2)
            for k, v in sorted(layers.items(), key=lambda kv: -kv[1])}


def main():
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--out", required=True)
    ap.add_argument("--ops-expr", default='j["ops"]')
    ap.add_argument("--read-bytes-expr")
    ap.add_argument("--dir", default=".")
    ap.add_argument("--baseline", type=float, default=2.0)
    ap.add_argument("--quiet-max", type=float, default=5.0)
    ap.add_argument("--allow-noisy", action="store_true")
    ap.add_argument("--perf", action="store_true")
    ap.add_argument("--label", default="")
    ap.add_argument("--state")
    ap.add_argument("--pid", action="append", default=[])
    ap.add_argument("--rss", action="store_true")
    ap.add_argument("-h", "--help", action="store_true")
    ap.add_argument("cmd", nargs="*")
    a = ap.parse_args()
    if a.help or not a.cmd:
        print(__doc__)
        return 0 if a.help else 2
    me = os.getpid()
    dev = device_of(a.dir) if a.read_bytes_expr else None
    ours = cluster_daemons(a.state) if a.state else None
    for x in a.pid:
        k, _, v = x.partition("=")
        if not v.isdigit():
            sys.exit("cpumeter: --pid takes ROLE=PID, not '%s'" % x)
        ours = ours if ours is not None else {}
        ours[int(v)] = k

    # idle baseline
    p0, (b0, t0) = procs(), machine_busy()
    time.sleep(a.baseline)
    p1, (b1, t1) = procs(), machine_busy()
    base_rate = (b1 - b0) / max(t1 - t0, 1)          # busy fraction of all CPUs
    base_known = sum(v for k, v in split(p0, p1, me, ours).items() if k not in ("other", "meter"))
    base_other = max(0, (b1 - b0) - base_known) / max(t1 - t0, 1)

    perf = None
    if a.perf:
        pdata = tempfile.mktemp(prefix="cpumeter.", suffix=".perf")
        perf = subprocess.Popen(["perf", "record", "-a", "-e", "cpu-clock", "-F", "499",
                                 "-o", pdata], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(0.3)
    peak, done = {}, threading.Event()

    def sample():
        while not done.is_set():
            for pid, k in (ours or {}).items():
                for key, v in rss(pid).items():
                    name = NAMES.get(pid, "%s.%d" % (k, pid))
                    peak.setdefault(name, {"RssAnon": 0, "RssFile": 0})
                    peak[name][key] = max(peak[name][key], v)
            done.wait(0.5)
    sampler = threading.Thread(target=sample)
    if a.rss:
        sampler.start()
    sec0 = sectors_read(dev) if dev else None
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    th0 = threads(ours)
    p2, (b2, t2) = procs(), machine_busy()
    w0 = time.monotonic()
    run = subprocess.Popen(a.cmd, stdout=subprocess.PIPE)
    client_pid = run.pid
    run.stdout_bytes = run.communicate()[0]
    wall = time.monotonic() - w0
    p3, (b3, t3) = procs(), machine_busy()
    th1 = threads(ours)
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    sec1 = sectors_read(dev) if dev else None
    if a.rss:
        done.set()
        sampler.join()
    if perf:
        perf.send_signal(2)
        perf.wait()
    if run.returncode != 0:
        sys.exit("cpumeter: %s failed (exit %d)" % (" ".join(a.cmd), run.returncode))
    j = json.loads(run.stdout_bytes)
    ops = float(eval(a.ops_expr, {}, {"j": j}))
    if ops <= 0:
        sys.exit("cpumeter: the workload reports no ops")

    total_j = t3 - t2
    busy_j = (b3 - b2) - base_rate * total_j
    client_s = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    parts = split(p2, p3, me, ours)
    by_role = {k: v / HZ for k, v in parts.items() if k not in ("meter", "other")}
    by_role["client"] = client_s
    # "other": what the machine did beyond the workload's processes and
    # kernel threads (per-process sums miss short-lived processes and
    # count children reaped long after they ran)
    other_j = max(0.0, (b3 - b2) - sum(by_role.values()) * HZ)
    other_frac = other_j / max(total_j, 1)
    machine_s = busy_j / HZ
    split_sum = sum(by_role.values())
    by_role["other (not in the sum)"] = other_j / HZ
    r = {
        "label": a.label,
        "bench": j,
        "ops": ops,
        "wall_s": round(wall, 3),
        "cpus": NCPU,
        "baseline_busy_pct": round(100 * base_rate, 2),
        "machine_cpu_s": round(machine_s, 4),
        "cpu_us_per_op": round(machine_s / ops * 1e6, 2),
        "split_s": {k: round(v, 4) for k, v in sorted(by_role.items())},
        "split_us_per_op": {k: round(v / ops * 1e6, 2) for k, v in sorted(by_role.items())},
        "split_sum_ratio": round(split_sum / machine_s, 3) if machine_s > 0 else None,
        "other_busy_pct": round(100 * max(other_frac, base_other), 2),
        "noisy": False,
    }
    if dev is not None and sec0 is not None and sec1 is not None:
        want = float(eval(a.read_bytes_expr, {}, {"j": j}))
        got = (sec1 - sec0) * 512
        r["disk"] = {"device": dev, "bytes_read": got, "workload_bytes": want,
                     "served_ratio": round(got / want, 3) if want else None}
    if ours:
        r["threads"] = threads_per_op(th0, th1, ops)
    if a.rss:
        r["rss_kB"] = peak
    if perf:
        r["layers_pct"] = perf_layers(pdata, ours, client_pid)
        os.unlink(pdata)
    if r["other_busy_pct"] > a.quiet_max:
        r["noisy"] = True
        msg = ("cpumeter: other processes used %.1f%% of the machine (limit %.1f%%): "
               "not a quiet machine" % (r["other_busy_pct"], a.quiet_max))
        if not a.allow_noisy:
            json.dump(r, open(a.out, "w"), indent=1)
            print(msg + "; refused (--allow-noisy keeps it, marked noisy)", file=sys.stderr)
            return 3
        print(msg + "; kept, marked noisy", file=sys.stderr)
    json.dump(r, open(a.out, "w"), indent=1)
    print("%s: %.0f ops, machine %.1f us/op (baseline %.1f%% busy), split %s (sum %.0f%% of "
          "machine)%s" % (a.label or os.path.basename(a.out), ops, r["cpu_us_per_op"],
                          r["baseline_busy_pct"],
                          ", ".join("%s %.1f" % kv for kv in r["split_us_per_op"].items()),
                          100 * (r["split_sum_ratio"] or 0),
                          "; disk served %.0f%% of the reads" % (100 * r["disk"]["served_ratio"])
                          if r.get("disk") and r["disk"]["served_ratio"] is not None else ""),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
