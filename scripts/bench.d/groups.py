"""Group memberships for scripts/bench-groups, run inside the server's network namespace.

    python3 groups.py seed API TOKEN SCIM_TOKEN USERS DEVICES GROUPS MEMBERS OUT
        Provisions USERS users through SCIM, DEVICES devices for each through /v0/devices,
        GROUPS groups of MEMBERS users each through SCIM (group g: the users from g * MEMBERS
        on, in turn) and one drop rule per group (group g: destination 100.64.0.0 + 2 g);
        writes the users (id, first IPv4 address) and the groups (id) to OUT as JSON.
    python3 groups.py wait-seeded GROUPS T0
        Lists `table inet ferrozone` until it holds the GROUPS destinations; prints
        `applied_ms` from T0 (a Unix time).
    python3 groups.py changes API SCIM_TOKEN STATE COUNT
        COUNT joins one after another, each a SCIM PATCH adding to group g (g = i modulo the
        groups) a user who is not in it; each join's latency is the arrival of the last
        nftables commit before the first listing that holds the element `user's address .
        group's destination`, minus the arrival of the PATCH's 200. Prints `p50_ms`,
        `p99_ms` and `max_ms`.
"""

import base64
import json
import os
import re
import subprocess
import sys
import threading
import time

from nft_watch import address, call, in_parallel, latency, percentile, table_addresses, watch_commits


def scim(api, token, method, path, body):
    return call(api, token, method, "/scim/v2" + path, body)


def seed(api, token, scim_token, users, devices, groups, members, out):
    users, devices, groups, members = int(users), int(devices), int(groups), int(members)

    def user(n):
        name = f"member{n:05d}@example.com"
        return scim(api, scim_token, "POST", "/Users", {"userName": name})["id"]

    ids = in_parallel(user, range(users))

    def device(job):
        owner, _ = job
        key = base64.b64encode(os.urandom(32)).decode()
        made = call(api, token, "POST", "/v0/devices", {"device": {"user_id": owner, "public_key": key}})
        return owner, made["data"]["ipv4"]

    made = in_parallel(device, [(owner, k) for owner in ids for k in range(devices)])
    first_address = {}
    for owner, ipv4 in made:
        first_address.setdefault(owner, ipv4)

    def group(g):
        chosen = [ids[(g * members + m) % users] for m in range(members)]
        body = {"displayName": f"bench-{g:04d}", "members": [{"value": i} for i in chosen]}
        group_id = scim(api, scim_token, "POST", "/Groups", body)["id"]
        rule = {"rule": {"destination": address(g), "action": "drop", "group_id": group_id}}
        call(api, token, "POST", "/v0/rules", rule)
        return group_id

    group_ids = in_parallel(group, range(groups))
    state = {"users": [{"id": i, "ipv4": first_address[i]} for i in ids], "groups": group_ids, "members": members}
    with open(out, "w") as file:
        json.dump(state, file)


def wait_seeded(groups, t0, seconds="300"):
    wanted = {address(g) for g in range(int(groups))}
    deadline = time.time() + float(seconds)
    while time.time() < deadline:
        if wanted <= table_addresses():
            print("applied_ms %.0f" % (1000 * (time.time() - float(t0))))
            return
        time.sleep(0.5)
    sys.exit(f"the table holds {len(wanted & table_addresses())} of the {len(wanted)} group destinations")


def holds(source, destination):
    """Whether the table has an element `source . destination` (as nft's JSON writes a
    concatenation: the source's address, then the destination's, within one element)."""
    listing = subprocess.run(["nft", "-j", "list", "table", "inet", "ferrozone"], capture_output=True, text=True)
    pattern = re.escape(f'"{source}"') + r'[^\]]{0,160}?' + re.escape(f'"{destination}"')
    return re.search(pattern, listing.stdout) is not None


def changes(api, scim_token, state_file, count):
    state = json.load(open(state_file))
    users, groups, members = state["users"], state["groups"], state["members"]
    commits = []
    committed = threading.Condition()
    watch_commits(commits, committed)
    latencies = []
    for i in range(int(count)):
        g = i % len(groups)
        # A user past the group's own members: not a member yet.
        joining = users[(g * members + members + i // len(groups)) % len(users)]
        before = len(commits)
        patch = {"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                 "Operations": [{"op": "add", "path": "members", "value": [{"value": joining["id"]}]}]}
        scim(api, scim_token, "PATCH", f"/Groups/{groups[g]}", patch)
        answered = time.time()
        present = lambda: holds(joining["ipv4"], address(g))  # noqa: E731
        latencies.append(latency(commits, committed, before, answered, present, f"the join of {joining['ipv4']} to group {g}"))
    latencies.sort()
    print("p50_ms %.1f" % (1000 * percentile(latencies, 0.50)))
    print("p99_ms %.1f" % (1000 * percentile(latencies, 0.99)))
    print("max_ms %.1f" % (1000 * latencies[-1]))


def main():
    command, args = sys.argv[1], sys.argv[2:]
    {"seed": seed, "wait-seeded": wait_seeded, "changes": changes}[command](*args)


main()
