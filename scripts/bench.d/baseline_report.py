"""The table of scripts/bench-baseline: per backend and workload, each side's median rate
over its runs (least-most), the ratio of the medians current / baseline, and idle RSS.

Usage: baseline_report.py ROWS META. ROWS has one tab-separated line per measure:
backend, side (baseline or current), run, workload, value (rate per second, or kB for
idle_rss_kb), p50 µs, p99 µs, errors. META has key=value lines for the header.
"""

import statistics
import sys

WORKLOADS = (
    ("create", "create devices/s (c=16)"),
    ("get", "GET /v0/devices/{id} requests/s (c=32)"),
    ("livez", "livez requests/s (c=32)"),
)


def main():
    rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1]) if line.strip()]
    meta = dict(line.rstrip("\n").split("=", 1) for line in open(sys.argv[2]) if "=" in line)
    values, errors = {}, {}
    for backend, side, _run, workload, value, _p50, _p99, errs in rows:
        values.setdefault((backend, workload, side), []).append(float(value))
        errors[(backend, workload)] = errors.get((backend, workload), 0) + int(errs)

    print(f"Baseline {meta['baseline']} against {meta['current']}, {meta['date']}; {meta['machine']}.")
    print(f"Load {meta['load']}. {meta['runs']} runs of each side per backend, alternating baseline and current,")
    print(f"each on a fresh database of {int(meta['devices']):,} devices, {meta['duration']} s per workload.")
    print("Median of the runs (least-most); ratio = current median / baseline median.")
    print()
    print("| backend | workload | baseline | current | ratio |")
    print("|---|---|--:|--:|--:|")
    for backend in ("sqlite", "postgres"):
        for workload, label in WORKLOADS:
            base, cur = values.get((backend, workload, "baseline")), values.get((backend, workload, "current"))
            if not base or not cur:
                continue
            flag = " **(ERRORS)**" if errors[(backend, workload)] else ""
            ratio = statistics.median(cur) / statistics.median(base)
            print(f"| {backend} | {label}{flag} | {spread(base)} | {spread(cur)} | {ratio:.2f} |")
        base, cur = values.get((backend, "idle_rss_kb", "baseline")), values.get((backend, "idle_rss_kb", "current"))
        if base and cur:
            mb = lambda kb: [v / 1024 for v in kb]  # noqa: E731
            print(f"| {backend} | idle RSS, MB | {spread(mb(base), 1)} | {spread(mb(cur), 1)} | "
                  f"{statistics.median(cur) / statistics.median(base):.2f} |")


def spread(values, decimals=0):
    fmt = f"{{:,.{decimals}f}}"
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–{fmt.format(max(values))})"


if __name__ == "__main__":
    main()
