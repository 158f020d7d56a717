# tests/ha/ports.sh - sourced by the ha tests that start monitors by hand:
#
#   ha_port_base COUNT   prints a port P such that 127.0.0.2:P,
#                        127.0.0.3:P+1, ... (COUNT of them) can be bound now
#
# The ports come from below the kernel's ephemeral range (as atoll-cluster
# picks them, tools/cluster_proc.c), so no outgoing connection of another
# test takes one between the probe and the daemon's bind.
ha_port_base() {
	python3 - "$1" <<'PY'
import random, socket, sys
count = int(sys.argv[1])
lo = 10000
hi = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0]) - count
for _ in range(500):
    base = random.randint(lo, hi)
    socks = []
    try:
        for i in range(count):
            s = socket.socket()
            socks.append(s)
            s.bind(("127.0.0.%d" % (2 + i), base + i))
    except OSError:
        continue
    finally:
        for s in socks:
            s.close()
    print(base)
    sys.exit(0)
sys.exit("no free ports below the ephemeral range")
PY
}
