"""Helpers of scripts/bench-gateways (gateways on other hosts, docs/benchmarks.md).

    python3 gateways.py seed API TOKEN USER_ID COUNT
        Creates COUNT devices (16 at a time).
    python3 gateways.py propagation API TOKEN USER_ID COUNT LOG...
        Creates COUNT devices one after another; for each, the time from its 201 to the
        "peer on the interface" line naming its key in the last of the gateways' LOGs (JSON
        lines, RUST_LOG=ferrozone_gateway=debug). Prints p50_ms, p99_ms, max_ms.
    python3 gateways.py until-key LOG KEY TIMEOUT
        Waits for LOG to show KEY on the interface; prints that line's Unix time.
    python3 gateways.py keys API TOKEN COUNT
        Prints the public keys of the first COUNT devices, one a line.
    python3 gateways.py stats API CREDENTIALS_FILE KEYS_FILE SECONDS
        For each credential (a line each), a gateway session posting statistics for every
        key (batches of 4,096) every 10 s, counters growing, for SECONDS. Prints the
        number of reports sent.
"""

import base64
import concurrent.futures
import datetime
import json
import os
import sys
import threading
import time
import urllib.request
import uuid


def request(api, method, path, token, body=None, headers=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(api + path, data=data, method=method)
    req.add_header("Authorization", "Bearer " + token)
    req.add_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        req.add_header(name, value)
    with urllib.request.urlopen(req, timeout=60) as response:
        return response.status, json.loads(response.read() or b"null")


def create(api, token, user_id):
    key = base64.b64encode(os.urandom(32)).decode()
    status, _ = request(api, "POST", "/v0/devices", token, {"device": {"user_id": user_id, "public_key": key}})
    assert status == 201, status
    return key, time.time()


def seed(api, token, user_id, count):
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda _: create(api, token, user_id), range(count)))


def applied(log_path):
    """{public key: Unix time} of the "peer on the interface" lines of a gateway's log."""
    seen = {}
    with open(log_path) as log:
        for line in log:
            if "peer on the interface" not in line:
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue
            key = record.get("public_key") or record.get("fields", {}).get("public_key")
            at = datetime.datetime.fromisoformat(record["timestamp"].replace("Z", "+00:00")).timestamp()
            if key:
                seen[key] = at
    return seen


def wait_everywhere(key, logs, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        times = [applied(path).get(key) for path in logs]
        if all(times):
            return max(times)
        time.sleep(0.02)
    raise SystemExit(f"{key} did not reach every gateway within {timeout} s")


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def propagation(api, token, user_id, count, logs):
    latencies = []
    for _ in range(count):
        key, answered = create(api, token, user_id)
        latencies.append((wait_everywhere(key, logs) - answered) * 1000)
    print(f"p50_ms {percentile(latencies, 50):.1f}")
    print(f"p99_ms {percentile(latencies, 99):.1f}")
    print(f"max_ms {max(latencies):.1f}")


def until_key(log, key, timeout):
    print(f"{wait_everywhere(key, [log], timeout):.6f}")


def keys(api, token, count):
    found, cursor = [], None
    while len(found) < count:
        path = "/v0/devices?limit=1000" + (f"&page_cursor={cursor}" if cursor else "")
        _, body = request(api, "GET", path, token)
        found += [d["public_key"] for d in body["data"]]
        cursor = (body.get("metadata") or {}).get("next_page_cursor")
        if not cursor or not body["data"]:
            break
    print("\n".join(found[:count]))


def stats(api, credentials_file, keys_file, seconds):
    credentials = [c.strip() for c in open(credentials_file) if c.strip()]
    peers = [k.strip() for k in open(keys_file) if k.strip()]
    sent = [0]
    lock = threading.Lock()

    def gateway(credential):
        session = str(uuid.uuid4())
        headers = {"ferrozone-gateway-session": session}
        started, cycle = time.time(), 0
        while time.time() - started < seconds:
            cycle += 1
            now_us = int(time.time() * 1e6)
            batch = [
                {"public_key": key, "latest_handshake_us": now_us - 5_000_000, "endpoint": "198.51.100.7:51820",
                 "rx_bytes": cycle * 1000 + i, "tx_bytes": cycle * 2000 + i}
                for i, key in enumerate(peers)
            ]
            for start in range(0, len(batch), 4096):
                status, _ = request(api, "POST", "/gateway/v1/stats", credential,
                                    {"peers": batch[start:start + 4096]}, headers)
                assert status == 200, status
            with lock:
                sent[0] += len(batch)
            time.sleep(max(0.0, started + cycle * 10 - time.time()))

    threads = [threading.Thread(target=gateway, args=(c,)) for c in credentials]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(f"reports {sent[0]}")


def main():
    command, args = sys.argv[1], sys.argv[2:]
    if command == "seed":
        seed(args[0], args[1], args[2], int(args[3]))
    elif command == "propagation":
        propagation(args[0], args[1], args[2], int(args[3]), args[4:])
    elif command == "until-key":
        until_key(args[0], args[1], float(args[2]))
    elif command == "keys":
        keys(args[0], args[1], int(args[2]))
    elif command == "stats":
        stats(args[0], args[1], args[2], float(args[3]))
    else:
        raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    main()
