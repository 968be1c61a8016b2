"""`measure` out of core at scale (issue 43.2): completes, and its figures equal an independent DuckDB computation.

Runs ``sandbox-fleet measure FILE --out-of-core -o OUT`` in a child process (optionally under an
address-space limit, ``--rlimit-gb``: RLIMIT_AS set in the child before it starts), records its
wall time and peak RSS, then computes the same definitions in one DuckDB session of its own (not
the package's code): rows, first start, last finish, exact sum of holds; the peak, the time at
the peak and the touches by a running sum of +1/-1 events netted per instant (a finish and a
start at one instant do not overlap); hold min, max and the 0.5/0.9/0.99 quantiles by linear
interpolation between the two order statistics around (n - 1) q, overall and per model. Integer
figures must be equal; the quantiles equal to the last bit (the interpolation is written here).

    .venv/bin/python benchmarks/gen_rollouts.py /tmp/r30m.parquet --rows 30000000
    .venv/bin/python benchmarks/bench_measure_out_of_core.py /tmp/r30m.parquet --rlimit-gb 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import duckdb

US = 1_000_000


def run_measure(path: str, out: str, rlimit_gb: float | None) -> dict:
    def limit() -> None:
        if rlimit_gb:
            cap = int(rlimit_gb * 2**30)
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "sandbox_fleet.cli", "measure", path, "--out-of-core", "--json",
                           "-o", out], capture_output=True, text=True, preexec_fn=limit)
    wall = time.perf_counter() - t
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if proc.returncode != 0:
        raise SystemExit(f"measure failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return {"wall_s": wall, "peak_rss_gib": peak_kb / 2**20}


def _lerp(a: int, b: int, t: float) -> float:
    # NumPy's linear rule, written out: the two-sided form keeps it monotone.
    a_f, b_f = float(a), float(b)
    return b_f - (b_f - a_f) * (1.0 - t) if t >= 0.5 else a_f + (b_f - a_f) * t


def _quantiles(con, where: str) -> dict:
    """min, max and the 0.5/0.9/0.99 quantiles of the holds ``where`` selects, from the order statistics
    DuckDB returns by rank (a window over the sorted holds)."""
    (n,) = con.execute(f"SELECT count(*) FROM h {where}").fetchall()[0]
    ranks = {0, n - 1}
    pos = {}
    for q in (0.5, 0.9, 0.99):
        p = (n - 1) * q
        lo = int(p)
        pos[q] = (lo, p - lo, min(lo + 1, n - 1))
        ranks.update((lo, min(lo + 1, n - 1)))
    wanted = ",".join(str(k) for k in sorted(ranks))
    got = dict(con.execute(f"SELECT k, v FROM (SELECT row_number() OVER (ORDER BY v) - 1 AS k, v FROM h {where}) "
                           f"WHERE k IN ({wanted})").fetchall())
    # Scaled as measure reports holds: times 1e-6 (seconds from microseconds).
    out = {"rows": n, "min": got[0] * (1 / US), "max": got[n - 1] * (1 / US)}
    for q, name in ((0.5, "median"), (0.9, "p90"), (0.99, "p99")):
        lo, t, hi = pos[q]
        out[name] = _lerp(got[lo], got[hi], t) * (1 / US)
    return out


def independent(path: str, temp: str, threads: int, memory_limit: str) -> dict:
    con = duckdb.connect(os.path.join(temp, "check.duckdb"))
    con.execute(f"SET memory_limit = '{memory_limit}'")  # DuckDB's default, 80% of RAM, crowds a shared machine
    con.execute(f"SET temp_directory = '{os.path.join(temp, 'spill')}'")
    con.execute(f"SET threads = {threads}")
    con.execute("SET preserve_insertion_order = false")
    con.execute(f"CREATE TABLE r AS SELECT epoch_us(started_at) AS s, epoch_us(finished_at) AS f, model "
                f"FROM read_parquet('{path}')")
    rows, first, last, total = con.execute("SELECT count(*), min(s), max(f), sum(f - s)::HUGEINT FROM r").fetchall()[0]
    # The level after every event of an instant: +1 per start, -1 per finish, summed per instant, in time order.
    con.execute("CREATE TABLE lv AS SELECT t, sum(d) OVER (ORDER BY t ROWS UNBOUNDED PRECEDING) AS level, "
                "lead(t) OVER (ORDER BY t) AS next_t FROM (SELECT t, sum(d) AS d FROM "
                "(SELECT s AS t, 1 AS d FROM r UNION ALL SELECT f, -1 FROM r) GROUP BY t)")
    (peak,) = con.execute("SELECT max(level) FROM lv").fetchall()[0]
    at_peak_us, touches = con.execute(
        "SELECT sum(next_t - t)::HUGEINT, count(*) FILTER (WHERE NOT coalesce(prev_at, false)) FROM "
        "(SELECT t, next_t, level = $p AS at_peak, lag(level = $p) OVER (ORDER BY t) AS prev_at FROM lv) WHERE at_peak",
        {"p": peak}).fetchall()[0]
    con.execute("CREATE TABLE h AS SELECT f - s AS v, model FROM r")
    holds = _quantiles(con, "")
    models = [m for (m,) in con.execute("SELECT DISTINCT model FROM h WHERE model IS NOT NULL ORDER BY model").fetchall()]
    by_model = {m: _quantiles(con, f"WHERE model = '{m}'") for m in models}
    con.close()
    return {"rows": rows, "first_us": first, "last_us": last, "sandbox_us": int(total), "peak": peak,
            "time_at_peak_us": int(at_peak_us), "touches": touches, "hold_s": holds, "by_model": by_model}


def compare(summary: dict, ref: dict) -> list[str]:
    conc, hold = summary["concurrency"], summary["hold_s"]
    checks = [
        ("rows", summary["rows"], ref["rows"]),
        ("sandbox_s", summary["sandbox_s"], ref["sandbox_us"] / US),
        ("span_s", summary["span_s"], (ref["last_us"] - ref["first_us"]) / US),
        ("peak", conc["peak"], ref["peak"]),
        ("touches", conc["touches"], ref["touches"]),
        ("time_at_peak_s", conc["time_at_peak_s"], ref["time_at_peak_us"] / US),
        *[(f"hold_s.{k}", hold[k], ref["hold_s"][k]) for k in ("rows", "min", "median", "p90", "p99", "max")],
        *[(f"hold_s.by_model.{m}.{k}", hold["by_model"][m][k], v[k])
          for m, v in ref["by_model"].items() for k in ("rows", "median", "p90", "p99")],
    ]
    return [f"{name}: measure {a!r} != DuckDB {b!r}" for name, a, b in checks if a != b]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path")
    ap.add_argument("--rlimit-gb", type=float, help="address-space limit of the measure process, GiB")
    ap.add_argument("--threads", type=int, default=2, help="threads of the independent DuckDB check")
    ap.add_argument("--memory-limit", default="4GB", help="DuckDB memory_limit of the independent check (it spills past it)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-ooc-") as temp:
        out = os.path.join(temp, "summary.json")
        run = run_measure(a.path, out, a.rlimit_gb)
        with open(out, encoding="utf-8") as f:
            summary = json.load(f)
        t = time.perf_counter()
        ref = independent(a.path, temp, a.threads, a.memory_limit)
        check_s = time.perf_counter() - t
    diffs = compare(summary, ref)
    print(json.dumps({"rows": summary["rows"], "rlimit_gib": a.rlimit_gb, **run, "independent_check_s": check_s,
                      "peak": summary["concurrency"]["peak"], "figures_equal": not diffs, "differences": diffs},
                     indent=2))
    if diffs:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
