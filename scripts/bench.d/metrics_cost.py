"""Summarises scripts/bench-metrics: the runs' progress logs, off against on.

Usage: metrics_cost.py DIR [OUT]. DIR holds N-off.log and N-on.log, the progress logs of
scripts/bench (stderr); the table goes to stdout, and to OUT when given.
"""

import re
import statistics
import sys
from pathlib import Path

# What the table shows: the workloads the cost of metrics is judged on, plus livez (the
# request path alone, no database).
WORKLOADS = ("livez", "get", "create", "update")

STARTED = re.compile(r"bench: (\w+) at (\d+) devices, concurrency (\d+)")
RATE = re.compile(r"bench:\s+(\d+) req/s")
CPU = re.compile(r"server CPU [\d.]+ cores, (\d+) us per request")


def measures(log):
    """{(workload, size): (requests/s, CPU µs per request)} of one run: the first measure
    of each workload at each size (livez runs again at the end, at another size)."""
    found, current, rate = {}, None, None
    for line in log.read_text().splitlines():
        if m := STARTED.match(line):
            current, rate = (m[1], int(m[2])), None
        elif current and (m := RATE.match(line)):
            rate = int(m[1])
        elif current and rate is not None and (m := CPU.search(line)):
            if current[0] in WORKLOADS:
                found.setdefault(current, (rate, int(m[1])))
            current = None
    return found


def spread(values):
    return f"{statistics.median(values):,.0f} ({min(values):,}–{max(values):,})"


def table(directory):
    runs = {mode: [measures(p) for p in sorted(directory.glob(f"*-{mode}.log"))] for mode in ("off", "on")}
    if not runs["off"] or len(runs["off"]) != len(runs["on"]):
        sys.exit(f"metrics_cost: {directory} holds no complete off/on pairs")
    keys = [k for k in runs["off"][0] if all(k in r for mode in runs.values() for r in mode)]
    lines = [
        f"{len(runs['off'])} runs each, alternating off and on; median (least–most).",
        "",
        "| workload | size | off req/s | on req/s | change | off CPU µs | on CPU µs |",
        "|---|--:|--:|--:|--:|--:|--:|",
    ]
    for key in keys:
        rates = {mode: [r[key][0] for r in runs[mode]] for mode in runs}
        cpus = {mode: [r[key][1] for r in runs[mode]] for mode in runs}
        change = statistics.median(rates["on"]) / statistics.median(rates["off"]) - 1
        lines.append(
            f"| {key[0]} | {key[1]:,} | {spread(rates['off'])} | {spread(rates['on'])} | {change:+.1%} "
            f"| {spread(cpus['off'])} | {spread(cpus['on'])} |"
        )
    return "\n".join(lines) + "\n"


def main():
    text = table(Path(sys.argv[1]))
    sys.stdout.write(text)
    if len(sys.argv) > 2:
        Path(sys.argv[2]).write_text(text)


if __name__ == "__main__":
    main()
