"""Time from a create's 201 to the peer being on the WireGuard interface.

Run inside the server's network namespace:
    python3 propagation.py API_URL TOKEN USER_ID SOCKET COUNT

Creates COUNT devices one after another. After each 201 it reads the interface over its
UAPI socket (`get=1`) in a loop until the new public key is there, and records the time
from the 201 to the first read that shows it (the read's duration bounds the error; it
is printed). Prints `p50_ms`, `p99_ms`, `max_ms` and `read_ms` lines.
"""

import base64
import json
import os
import socket
import sys
import time
import urllib.request


def uapi_get(path):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(path)
        s.sendall(b"get=1\n\n")
        chunks = []
        while True:
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            if b"errno=" in chunk and chunk.endswith(b"\n\n"):
                break
    return b"".join(chunks).decode()


def create(api, token, user_id):
    key = base64.b64encode(os.urandom(32)).decode()  # any 32 bytes serve as a public key
    body = json.dumps({"device": {"user_id": user_id, "public_key": key}}).encode()
    request = urllib.request.Request(
        api + "/v0/devices",
        data=body,
        method="POST",
        headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request) as response:
        assert response.status == 201, response.status
    return base64.b64decode(key).hex()


def percentile(sorted_values, p):
    return sorted_values[min(len(sorted_values) - 1, int(round(p * (len(sorted_values) - 1))))]


def main():
    api, token, user_id, sock, count = sys.argv[1:6]
    latencies, reads = [], []
    for _ in range(int(count)):
        wanted = "public_key=" + create(api, token, user_id)
        acknowledged = time.perf_counter()
        deadline = acknowledged + 10
        while True:
            started = time.perf_counter()
            seen = wanted in uapi_get(sock)
            done = time.perf_counter()
            reads.append(done - started)
            if seen:
                latencies.append(done - acknowledged)
                break
            if done > deadline:
                sys.exit("a peer did not reach the interface within 10 s")
    latencies.sort()
    reads.sort()
    print("p50_ms %.1f" % (1000 * percentile(latencies, 0.50)))
    print("p99_ms %.1f" % (1000 * percentile(latencies, 0.99)))
    print("max_ms %.1f" % (1000 * latencies[-1]))
    print("read_ms %.1f" % (1000 * percentile(reads, 0.50)))


main()
