#!/usr/bin/env python3
"""Renders a scripts/bench run as markdown: the table, then the targets.

    report.py ROWS_TSV META

ROWS_TSV: one line per measured workload, tab-separated: workload, nominal size, devices
stored when it started, concurrency, requests/s (devices/s for create), p50 and p99 in
microseconds, RSS and peak RSS in kB, errors (non-2xx + socket errors), first error.
META: key=value lines (a key may repeat, e.g. startup_ms).
"""

import statistics
import sys

MB = 1024  # kB per MB: RSS is reported in MiB


def read_rows(path):
    rows = []
    with open(path) as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            name, nominal, at, conns, rate, p50, p99, rss, peak, errors, first = fields
            rows.append(
                {
                    "name": name,
                    "nominal": int(nominal),
                    "at": int(at),
                    "conns": int(conns),
                    "rate": float(rate),
                    "p50": int(p50),
                    "p99": int(p99),
                    "rss": int(rss),
                    "peak": int(peak),
                    "errors": int(errors),
                    "first": first,
                }
            )
    return rows


def read_meta(path):
    meta = {}
    with open(path) as f:
        for line in f:
            key, _, value = line.rstrip("\n").partition("=")
            meta.setdefault(key, []).append(value)
    return meta


def ms(us):
    """Microseconds as milliseconds with about three significant digits."""
    v = us / 1000
    if v < 10:
        return f"{v:.2f} ms"
    if v < 100:
        return f"{v:.1f} ms"
    return f"{v:,.0f} ms"


def rate(per_s):
    return f"{per_s:.2f}" if per_s < 10 else f"{per_s:,.0f}"


def mb(kb):
    return f"{kb / MB:.1f} MB"


def find(rows, name, nominal, conns):
    for r in rows:
        if r["name"] == name and r["nominal"] == nominal and r["conns"] == conns:
            return r
    return None


def main():
    rows = read_rows(sys.argv[1])
    meta = read_meta(sys.argv[2])
    one = {k: v[0] for k, v in meta.items()}
    backend = one["backend"]
    sizes = [int(s) for s in one["sizes"].split(",")]
    conns = int(one["connections"])
    out = []
    w = out.append

    title = "SQLite" if backend == "sqlite" else f"PostgreSQL {one.get('postgres_version', '')}".strip()
    w(f"## Ferrozone benchmark: {title}{' (quick smoke run)' if one['quick'] == 'true' else ''}")
    w("")
    w(f"- {one['date']}, commit {one['commit']}, binary {one['binary']}")
    w(f"- machine: {one['nproc']} cores (`nproc`), {one['cpu']}, {one['kernel']}, {one['memory']} RAM")
    w(
        f"- wrk {one['wrk']} on loopback, same machine; {one['duration']} s per workload; "
        f"concurrency {conns} (list: {one['list_connections']}); "
        f"devices spread over {one['owners']} users"
    )
    if one.get("metrics") == "true":
        w("- Prometheus metrics on (`--metrics`: FERROZONE_METRICS_LISTEN, scraped once at the end)")
    w(f"- first start on the empty database: {one['first_start_ms']} ms to the first 200 of /healthz")
    for key in sorted((k for k in meta if k.startswith("seed_")), key=lambda k: int(k[5:])):
        w(f"- seeding to {int(key[5:]):,}: {one[key]}")
    w(f"- wall time: {int(one['wall_seconds'])} s (plus {one['build_seconds']} s build)")
    w("")
    w("| workload | size | concurrency | requests/s | p50 | p99 | RSS | peak RSS | errors |")
    w("|---|--:|--:|--:|--:|--:|--:|--:|--:|")
    for r in rows:
        name = r["name"] + (" **(ERRORS)**" if r["errors"] else "")
        unit = " devices/s" if r["name"] == "create" else ""
        w(
            f"| {name} | {r['at']:,} | {r['conns']} | {rate(r['rate'])}{unit} | {ms(r['p50'])} | "
            f"{ms(r['p99'])} | {mb(r['rss'])} | {mb(r['peak'])} | {r['errors']} |"
        )
    for r in rows:
        if r["errors"]:
            w(f"\n{r['name']} at {r['at']:,}: first error: `{r['first']}`")
    first = find(rows, "livez", 0, conns)
    last = find(rows, "livez", sizes[-1], conns)
    if first and last:
        drift = (last["rate"] / first["rate"] - 1) * 100
        w("")
        w(
            f"livez at the start {first['rate']:,.0f} req/s, at the end {last['rate']:,.0f} "
            f"({drift:+.0f}%): how far the machine itself drifted during the run."
        )
    w("")
    w("Size: devices stored when the workload started. requests/s of create: devices created")
    w("per second. p50/p99: wrk's latency histogram. RSS: server RSS after the workload; peak")
    w("RSS: the server's high-water mark during it.")
    w("")

    # Targets ----------------------------------------------------------------------------
    sqlite = backend == "sqlite"
    lines = []

    def ratio_text(ratio, limit):
        """Two decimals, or three where two would print the limit itself for a miss or a pass
        by a hair (8.11 / 6.23 is 1.302, not 1.30)."""
        return f"{ratio:.3f}" if f"{ratio:.2f}" == f"{limit:.2f}" and ratio != limit else f"{ratio:.2f}"

    def target(label, value, limit, ok, shown, na=False):
        if value is None:
            result = "not measured"
        elif na:
            result = "n/a"
        else:
            result = "PASS" if ok else "MISS"
        lines.append(f"| {label} | {shown if value is not None else '-'} | {limit} | {result} |")

    small, large = sizes[0], sizes[-1]
    mid = min(sizes, key=lambda s: abs(s - 10000))
    livez = find(rows, "livez", 0, conns)
    get_mid = find(rows, "get", mid, conns)
    if livez and get_mid:
        ratio = get_mid["rate"] / livez["rate"]
        floor = 0.50 if sqlite else 0.35
        target(
            f"get / livez requests/s, get at {get_mid['at']:,} devices",
            ratio,
            f"≥ {floor:.2f}",
            ratio >= floor,
            f"{ratio_text(ratio, floor)} ({get_mid['rate']:,.0f} / {livez['rate']:,.0f})",
        )
    floor = 2500 if sqlite else 1000
    for r in rows:
        if r["name"] == "create" and r["conns"] == conns:
            target(
                f"create devices/s at {r['at']:,} devices",
                r["rate"],
                f"≥ {floor:,}",
                r["rate"] >= floor,
                f"{r['rate']:,.0f}",
            )
    for name, limit in (("create", 1.3), ("get", 1.3), ("list", 110)):
        c = int(one["list_connections"]) if name == "list" else conns
        a, b = find(rows, name, small, c), find(rows, name, large, c)
        if a and b and small != large:
            ratio = b["p50"] / a["p50"]
            target(
                f"{name} p50 at {b['at']:,} / p50 at {a['at']:,} devices",
                ratio,
                f"≤ {limit}",
                ratio <= limit,
                f"{ratio_text(ratio, limit)} ({ms(b['p50'])} / {ms(a['p50'])})",
            )
    reference = find(rows, "page50", large, conns)
    for name, what in (("admin-devices-page", "the console's devices page"), ("my-devices-page", "a user's device list")):
        page = find(rows, name, large, conns)
        if reference and page:
            ratio = page["p50"] / reference["p50"]
            target(
                f"{what} p50 / GET /v0/devices?limit=50 p50, at {page['at']:,} devices",
                ratio,
                "≤ 2",
                ratio <= 2,
                f"{ratio_text(ratio, 2)} ({ms(page['p50'])} / {ms(reference['p50'])})",
            )
    idle = int(one["idle_rss_kb"])
    target("idle RSS, fresh start", idle, "≤ 25 MB", idle <= 25 * MB, mb(idle))
    idle = int(one["restart_idle_rss_kb"])
    target(
        f"idle RSS, after restart on {int(one['startup_devices']):,} devices",
        idle,
        "≤ 25 MB",
        idle <= 25 * MB,
        mb(idle),
    )
    big_list = find(rows, "list", large, int(one["list_connections"]))
    if big_list:
        target(
            f"peak RSS while listing {big_list['at']:,} devices",
            big_list["peak"],
            "≤ 150 MB",
            big_list["peak"] <= 150 * MB,
            mb(big_list["peak"]),
        )
    runs = [int(v) for v in meta.get("startup_ms", [])]
    if runs:
        median = statistics.median(runs)
        target(
            f"start-up, launch → first 200 of /healthz, {int(one['startup_devices']):,} devices"
            + ("" if sqlite else " (target is for SQLite)"),
            median,
            "≤ 300 ms",
            median <= 300,
            f"{median:.0f} ms (runs: {', '.join(map(str, runs))} ms)",
            na=not sqlite,
        )
    w("### Targets")
    w("")
    if one["quick"] == "true":
        w("A quick run's sizes are too small for these to mean anything; they are computed to")
        w("check that the report works.")
        w("")
    w("| target | measured | limit | result |")
    w("|---|--:|--:|---|")
    out.extend(lines)
    missed = sum(1 for line in lines if line.endswith("| MISS |"))
    w("")
    w(f"{missed} of {len(lines)} targets missed." if missed else f"All {len(lines)} targets met.")
    print("\n".join(out))


if __name__ == "__main__":
    main()
