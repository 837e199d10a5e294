"""What the data-plane benchmarks share (scripts/bench.d/rules.py, groups.py): the API calls,
the rule destinations (100.64.0.0 + 2 i), and the timestamps of nftables commits, read from
netlink.
"""

import concurrent.futures
import ipaddress
import json
import re
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

# linux/netlink.h, linux/netfilter/nfnetlink.h, linux/netfilter/nf_tables.h
NETLINK_NETFILTER = 12
SOL_NETLINK = 270
NETLINK_ADD_MEMBERSHIP = 1
SO_RCVBUFFORCE = 33
NFNLGRP_NFTABLES = 7
NFNL_SUBSYS_NFTABLES = 10
NFT_MSG_NEWGEN = 15

BASE = int(ipaddress.ip_address("100.64.0.0"))
ADDRESS = re.compile(r"\b100\.(?:6[4-9]|[7-9][0-9]|1[01][0-9]|12[0-7])\.[0-9]{1,3}\.[0-9]{1,3}\b")


def address(i):
    return str(ipaddress.ip_address(BASE + 2 * i))



def call(api, token, method, path, body=None):
    request = urllib.request.Request(
        api + path,
        data=json.dumps(body).encode() if body is not None else None,
        method=method,
        headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request) as response:
            return json.load(response) if response.status != 204 else None
    except urllib.error.HTTPError as e:
        sys.exit(f"{method} {path}: {e.code} {e.read().decode(errors='replace')}")



def in_parallel(function, items):
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        return list(pool.map(function, items))



def table_addresses():
    listing = subprocess.run(["nft", "-j", "list", "table", "inet", "ferrozone"], capture_output=True, text=True)
    return set(ADDRESS.findall(listing.stdout))



def percentile(values, p):
    return values[min(len(values) - 1, int(round(p * (len(values) - 1))))]



def watch_commits(commits, committed):
    """Appends the arrival time of every nftables commit (an NFT_MSG_NEWGEN message on the
    nftables netlink multicast group) to `commits`. `nft monitor` would do, but 1.0.6 crashes
    (SIGSEGV) printing an element of a concatenated interval set, which the user rules are."""
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 64 << 20)
    sock.bind((0, 0))
    sock.setsockopt(SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, NFNLGRP_NFTABLES)

    def run():
        while True:
            data = sock.recv(1 << 20)
            now = time.time()
            offset = 0
            while offset + 16 <= len(data):
                length, kind = struct.unpack_from("=IH", data, offset)
                if kind == (NFNL_SUBSYS_NFTABLES << 8 | NFT_MSG_NEWGEN):
                    with committed:
                        commits.append(now)
                        committed.notify_all()
                offset += max(16, (length + 3) & ~3)

    threading.Thread(target=run, daemon=True).start()


def latency(commits, committed, before, answered, present, what):
    """The time from `answered` (a change's answer) to the last nftables commit, of those
    after the first `before` (counted before the change was sent), before the first listing
    for which `present()` holds (an upper bound when several commits came
    between two listings). The table is listed after each commit; the listing's own time
    is not in the figure. Exits when no commit brings it within 10 s."""
    checked = before
    deadline = answered + 10
    while True:
        with committed:
            committed.wait_for(lambda: len(commits) > checked, timeout=max(0.0, deadline - time.time()))
            seen = len(commits)
        if seen == checked:
            sys.exit(f"{what} never reached the kernel")
        if present():
            return max(0.0, commits[seen - 1] - answered)
        checked = seen
