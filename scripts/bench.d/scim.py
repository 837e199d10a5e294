"""SCIM provisioning for scripts/bench-scim (standard library only).

    python3 scim.py provision BASE SCIM_TOKEN USERS GROUPS MEMBERS WORKERS
        POSTs USERS users to /scim/v2/Users, then GROUPS groups of MEMBERS members each (the
        users in turn) to /scim/v2/Groups, WORKERS requests at a time, as a directory pushes
        them. Every answer must be 201. Prints `users_s`, `groups_s` and `total_s`.
    python3 scim.py pages BASE SCIM_TOKEN ADMIN_TOKEN SIZE ROUNDS
        Walks every page of SIZE users, ROUNDS times, alternating: SCIM by startIndex and
        count, /v0/users by limit and page_cursor. Prints the mean time of one page of each
        and their ratio (`scim_page_ms`, `v0_page_ms`, `ratio`).

Connections are kept open (one per worker), as a directory's client does.
"""

import concurrent.futures
import http.client
import json
import sys
import threading
import time
import urllib.parse

local = threading.local()


def connection(base):
    if getattr(local, "connection", None) is None:
        parsed = urllib.parse.urlparse(base)
        local.connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=60)
    return local.connection


def call(base, token, method, path, body=None):
    headers = {"Authorization": f"Bearer {token}"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/scim+json"
    conn = connection(base)
    conn.request(method, path, body=data, headers=headers)
    response = conn.getresponse()
    payload = response.read()
    return response.status, json.loads(payload) if payload else None


def created(base, token, path, body):
    status, answer = call(base, token, "POST", path, body)
    if status != 201:
        sys.exit(f"bench-scim: POST {path} answered {status}: {answer}")
    return answer["id"]


def provision(base, token, users, groups, members, workers):
    users, groups, members, workers = int(users), int(groups), int(members), int(workers)

    def user(n):
        name = f"user{n:05d}@example.com"
        body = {
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
            "userName": name,
            "externalId": f"ext-{n}",
            "name": {"givenName": "User", "familyName": str(n)},
            "emails": [{"value": name, "type": "work", "primary": True}],
            "active": True,
        }
        return created(base, token, "/scim/v2/Users", body)

    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        ids = list(pool.map(user, range(users)))
    users_done = time.monotonic()

    def group(g):
        chosen = [ids[(g * members + m) % len(ids)] for m in range(members)]
        body = {
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"],
            "displayName": f"group-{g:04d}",
            "externalId": f"gext-{g}",
            "members": [{"value": i} for i in chosen],
        }
        return created(base, token, "/scim/v2/Groups", body)

    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        list(pool.map(group, range(groups)))
    done = time.monotonic()
    print(f"users_s {users_done - started:.2f}")
    print(f"groups_s {done - users_done:.2f}")
    print(f"total_s {done - started:.2f}")


def scim_walk(base, token, size):
    pages, start = 0, 1
    while True:
        status, answer = call(base, token, "GET", f"/scim/v2/Users?startIndex={start}&count={size}")
        assert status == 200, answer
        pages += 1
        got = len(answer["Resources"])
        start += got
        if got < size or start > answer["totalResults"]:
            return pages


def v0_walk(base, token, size):
    pages, cursor = 0, None
    while True:
        path = f"/v0/users?limit={size}" + (f"&page_cursor={urllib.parse.quote(cursor)}" if cursor else "")
        status, answer = call(base, token, "GET", path)
        assert status == 200, answer
        pages += 1
        cursor = answer["metadata"]["next_page_cursor"]
        if not cursor:
            return pages


def pages(base, scim_token, admin_token, size, rounds):
    size, rounds = int(size), int(rounds)
    scim_total = v0_total = 0.0
    scim_pages = v0_pages = 0
    for _ in range(rounds):
        t = time.monotonic()
        scim_pages += scim_walk(base, scim_token, size)
        scim_total += time.monotonic() - t
        t = time.monotonic()
        v0_pages += v0_walk(base, admin_token, size)
        v0_total += time.monotonic() - t
    scim_ms, v0_ms = 1000 * scim_total / scim_pages, 1000 * v0_total / v0_pages
    print(f"scim_page_ms {scim_ms:.2f} ({scim_pages // rounds} pages a walk)")
    print(f"v0_page_ms {v0_ms:.2f} ({v0_pages // rounds} pages a walk)")
    print(f"ratio {scim_ms / v0_ms:.2f}")


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    {"provision": provision, "pages": pages}[command](*args)
