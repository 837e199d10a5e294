"""Time from a create's 201 to the peer being on the WireGuard interface.

    python3 propagation.py API_URL TOKEN USER_ID SERVER_LOG COUNT

Creates COUNT devices one after another (inside the server's network namespace) and
notes the wall-clock time each 201 arrived. The server runs with
RUST_LOG=ferrozone_gateway=debug and FERROZONE_LOG_FORMAT=json; its reconciler logs
"peer on the interface" with the public key right after the batch that added it was
applied. Latency = that line's timestamp - the 201's (the same clock, on one machine).
Reading the interface from outside instead would measure the reader: at 10,000 peers one
wireguard-go `get` takes ~30 ms and holds back the `set` it is waiting for.
Prints `p50_ms`, `p99_ms` and `max_ms` lines.
"""

import base64
import datetime
import json
import os
import sys
import time
import urllib.request


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
        return key, time.time()


def applied_at(log_path):
    seen = {}
    with open(log_path) as log:
        for line in log:
            if "peer on the interface" not in line:
                continue
            event = json.loads(line)
            at = datetime.datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00")).timestamp()
            fields = event.get("fields", event)  # flattened or nested, as the subscriber writes it
            seen.setdefault(fields["public_key"], at)
    return seen


def percentile(values, p):
    return values[min(len(values) - 1, int(round(p * (len(values) - 1))))]


def main():
    api, token, user_id, log_path, count = sys.argv[1:6]
    created = [create(api, token, user_id) for _ in range(int(count))]
    deadline = time.time() + 10
    while True:
        seen = applied_at(log_path)
        missing = [key for key, _ in created if key not in seen]
        if not missing:
            break
        if time.time() > deadline:
            sys.exit(f"{len(missing)} peers never reached the interface")
        time.sleep(0.2)
    latencies = sorted(max(0.0, seen[key] - at) for key, at in created)
    print("p50_ms %.1f" % (1000 * percentile(latencies, 0.50)))
    print("p99_ms %.1f" % (1000 * percentile(latencies, 0.99)))
    print("max_ms %.1f" % (1000 * latencies[-1]))


main()
