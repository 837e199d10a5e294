"""A client of scripts/wg-e2e's outside host (outside.py), through one given interface.

    python3 probe.py reach DEV PROTO HOST PORT [TIMEOUT]
        Prints the source address the host saw; exits 1 when there is no answer within
        TIMEOUT seconds (default 1).
    python3 probe.py blocked-within T0 SECONDS DEV PROTO HOST PORT
        Probes again and again (each probe waits 0.25 s for its answer) until one goes
        unanswered; exits 0 if that probe was sent within SECONDS of T0 (a Unix time, e.g. when
        the API answered), and 1 otherwise. Prints how long after T0 that probe was sent.
    python3 probe.py open-within T0 SECONDS DEV PROTO HOST PORT
        The same until a probe is answered.

DEV is bound with SO_BINDTODEVICE, so the probe leaves by that tunnel whatever the routing
table prefers; PROTO is tcp or udp. Each probe uses a fresh socket (a late answer to an
earlier probe cannot count).
"""

import socket
import sys
import time


def probe(dev, proto, host, port, timeout):
    kind = socket.SOCK_STREAM if proto == "tcp" else socket.SOCK_DGRAM
    with socket.socket(socket.AF_INET, kind) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, dev.encode())
        sock.settimeout(timeout)
        try:
            if proto == "tcp":
                sock.connect((host, port))
            else:
                sock.sendto(b"probe\n", (host, port))
            return sock.recv(2048).decode().strip() or None
        except OSError:  # timed out, refused, unreachable
            return None


def until(t0, within, want_answer, dev, proto, host, port):
    deadline = t0 + within + 5  # keep probing a while past the limit to report the figure
    while time.time() < deadline:
        sent = time.time()
        answered = probe(dev, proto, host, port, 0.25) is not None
        if answered == want_answer:
            elapsed = sent - t0
            print("%.0f ms" % (1000 * max(0.0, elapsed)))
            return 0 if elapsed <= within else 1
        if answered:
            time.sleep(0.02)
    print("never within %.0f s" % (within + 5))
    return 1


def main():
    command, args = sys.argv[1], sys.argv[2:]
    if command == "reach":
        dev, proto, host, port = args[:4]
        seen = probe(dev, proto, host, int(port), float(args[4]) if len(args) > 4 else 1.0)
        if seen is None:
            return 1
        print(seen)
        return 0
    t0, within, dev, proto, host, port = args
    want_answer = {"blocked-within": False, "open-within": True}[command]
    return until(float(t0), float(within), want_answer, dev, proto, host, int(port))


sys.exit(main())
