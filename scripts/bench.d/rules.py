"""Egress rules for scripts/bench-dataplane, run inside the server's network namespace.

    python3 rules.py seed-users API TOKEN USERS OUT
        Creates USERS - 1 users with one device each (the admin, first in /v0/users, is the
        USERS-th, its device made by the caller); writes all user ids, the admin first, to OUT.
    python3 rules.py seed-rules API TOKEN USERS_FILE RULES
        Creates RULES rules spread evenly over the users, 16 at a time: each a distinct
        destination address (rule i: 100.64.0.0 + 2 i, never adjacent, so nothing merges),
        every fifth a TCP or UDP port rule, accept and drop alternating.
    python3 rules.py delete-rules API TOKEN
        Deletes every rule, 16 at a time.
    python3 rules.py wait-all RULES T0 [SECONDS]
        Lists `table inet ferrozone` again and again until it holds the RULES destinations
        (with RULES 0: none of them);
        prints `applied_ms` (from T0, a Unix time) and `list_ms` (one listing: the resolution).
    python3 rules.py changes API TOKEN USERS_FILE FIRST COUNT
        COUNT rule creates one after another (destinations from index FIRST on), each
        nftables commit timestamped from netlink: latency = the last commit before the first
        listing of the table that holds the new destination - the arrival of the 201.
        Prints `p50_ms`, `p99_ms` and `max_ms`.

Only the destinations' addresses are looked for in nft's output, so this does not depend on
how Ferrozone lays out its sets.
"""

import json
import sys
import threading
import time

from nft_watch import address, call, in_parallel, latency, percentile, table_addresses, watch_commits


def rule_body(i, user_id):
    rule = {"destination": address(i), "action": "accept" if i % 2 else "drop", "user_id": user_id}
    if i % 5 == 4:
        rule.update(port_type="tcp" if i % 10 == 4 else "udp", port_range=str(1000 + i % 1000))
    return {"rule": rule}


def seed_users(api, token, users, out):
    admin = call(api, token, "GET", "/v0/users")["data"][0]["id"]

    def user(n):
        user_id = call(api, token, "POST", "/v0/users", {"user": {"email": f"bench-{n}@example.com"}})["data"]["id"]
        call(api, token, "POST", "/v0/devices", {"device": {"user_id": user_id}})
        return user_id

    with open(out, "w") as file:
        json.dump([admin] + in_parallel(user, range(int(users) - 1)), file)


def seed_rules(api, token, users_file, rules):
    users = json.load(open(users_file))
    in_parallel(lambda i: call(api, token, "POST", "/v0/rules", rule_body(i, users[i % len(users)])), range(int(rules)))


def delete_rules(api, token):
    ids = [rule["id"] for rule in call(api, token, "GET", "/v0/rules")["data"]]
    in_parallel(lambda rule_id: call(api, token, "DELETE", f"/v0/rules/{rule_id}"), ids)


def wait_all(rules, t0, seconds="60"):
    wanted = {address(i) for i in range(int(rules))}
    deadline = time.time() + float(seconds)
    listings = []
    while time.time() < deadline:
        started = time.time()
        held = table_addresses()
        listings.append(time.time() - started)
        if (wanted <= held) if wanted else not held:  # RULES 0: none left
            print("applied_ms %.0f" % (1000 * (time.time() - float(t0))))
            print("list_ms %.0f" % (1000 * sorted(listings)[len(listings) // 2]))
            return 0
    sys.exit(f"the table holds {len(wanted & table_addresses())} of the {len(wanted)} destinations")


def changes(api, token, users_file, first, count):
    """Each create's latency: the arrival of the last nftables commit before the first
    listing that holds its destination, minus the arrival of its 201 (an upper bound when
    several commits came between two listings). The table is listed after each commit; the
    listing's own time is not in the figure."""
    users = json.load(open(users_file))
    commits = []
    committed = threading.Condition()
    watch_commits(commits, committed)
    latencies = []
    for i in range(int(first), int(first) + int(count)):
        before = len(commits)
        call(api, token, "POST", "/v0/rules", rule_body(i, users[i % len(users)]))
        answered = time.time()
        present = lambda: address(i) in table_addresses()  # noqa: E731
        latencies.append(latency(commits, committed, before, answered, present, f"rule {address(i)}"))
    latencies.sort()
    print("p50_ms %.1f" % (1000 * percentile(latencies, 0.50)))
    print("p99_ms %.1f" % (1000 * percentile(latencies, 0.99)))
    print("max_ms %.1f" % (1000 * latencies[-1]))


def main():
    command, args = sys.argv[1], sys.argv[2:]
    commands = {"seed-users": seed_users, "seed-rules": seed_rules, "delete-rules": delete_rules,
                "wait-all": wait_all, "changes": changes}
    commands[command](*args)


main()
