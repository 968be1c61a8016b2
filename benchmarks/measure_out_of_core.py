"""Out-of-core headline figures for inputs too large for `sandbox-fleet measure` (issue 28.4).

`measure` holds its columns in memory (~140-190 bytes a row at peak; see docs/measure.md,
"Scale and memory"). Past what the machine holds (100M+ rows: a year of a large lab's
rollouts), DuckDB computes the figures a capacity plan starts from out of core: it spills its
sorts and aggregates to ``--temp`` within ``--memory-limit``. One query per figure group, all
over the Parquet file(s) in place (a glob works):

- rows, first start, last finish, span, sandbox-seconds, mean concurrency (Little's law:
  sandbox-seconds / span, as ``measure``'s ``concurrency.mean``);
- peak concurrency: a running sum of +1 at each start and -1 at each finish, finishes first at
  one instant (a finish and a start at the same instant do not overlap), as ``measure``'s sweep;
- hold quantiles (``quantile_cont``: the same linear rule as ``measure``'s) and min/max;
- exception rate, and per model: rows, exception rate and hold p50/p90.

It gives no steps, cap detection, token fits or bootstrap intervals: run ``measure`` on a slice
(``--since/--until`` or ``--models``) for those. Input: canonical columns or an RST release's
(``model_name``, ...), times as timestamps.

    .venv/bin/python benchmarks/measure_out_of_core.py FILE.parquet [--memory-limit 5GB] [--threads 2] [--temp DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import duckdb

TOTALS = """
SELECT count(*) AS rows, min(s) AS first_us, max(f) AS last_us, sum(f - s) AS sandbox_us,
       quantile_cont(f - s, [0.5, 0.9, 0.99]) AS q, min(f - s) AS min_us, max(f - s) AS max_us,
       avg(CASE WHEN exc THEN 1.0 ELSE 0.0 END) AS exception_rate
FROM r
"""
PEAK = """
SELECT max(level) FROM (
    SELECT sum(d) OVER (ORDER BY t, d ROWS UNBOUNDED PRECEDING) AS level
    FROM (SELECT s AS t, 1 AS d FROM r UNION ALL SELECT f AS t, -1 AS d FROM r)
)
"""
MODELS = """
SELECT model, count(*) AS rows, avg(CASE WHEN exc THEN 1.0 ELSE 0.0 END) AS exception_rate,
       quantile_cont(f - s, [0.5, 0.9]) AS q
FROM r GROUP BY model ORDER BY model NULLS LAST
"""


def _source(con, path: str) -> str:
    names = [row[0] for row in con.execute("DESCRIBE SELECT * FROM read_parquet($p)", {"p": path}).fetchall()]
    model = "model_name" if "model_name" in names else "model" if "model" in names else "NULL"
    exc = "has_exception" if "has_exception" in names else "NULL"
    return (f"CREATE VIEW r AS SELECT epoch_us(started_at) AS s, epoch_us(finished_at) AS f, "
            f"nullif({model}, '') AS model, {exc} AS exc FROM read_parquet({path!r}) "
            "WHERE started_at IS NOT NULL AND finished_at IS NOT NULL AND finished_at >= started_at")


def figures(path: str, memory_limit: str, threads: int, temp: str | None) -> dict:
    con = duckdb.connect()
    con.execute(f"SET memory_limit = '{memory_limit}'")
    con.execute(f"SET threads = {int(threads)}")
    con.execute("SET preserve_insertion_order = false")
    if temp:
        con.execute(f"SET temp_directory = '{temp}'")
    con.execute(_source(con, path))
    timings = {}
    t = time.perf_counter()
    rows, first, last, sandbox_us, q, lo, hi, exc_rate = con.execute(TOTALS).fetchone()
    timings["totals_s"] = time.perf_counter() - t
    t = time.perf_counter()
    (peak,) = con.execute(PEAK).fetchone()
    timings["peak_s"] = time.perf_counter() - t
    t = time.perf_counter()
    models = [{"model": m, "rows": n, "exception_rate": e, "hold_p50_s": mq[0] / 1e6, "hold_p90_s": mq[1] / 1e6}
              for m, n, e, mq in con.execute(MODELS).fetchall()]
    timings["models_s"] = time.perf_counter() - t
    span_s = (last - first) / 1e6
    return {
        "source": path, "rows": rows, "span_s": span_s, "sandbox_s": sandbox_us / 1e6,
        "concurrency": {"mean": sandbox_us / 1e6 / span_s if span_s else None, "peak": peak},
        "hold_s": {"min": lo / 1e6, "p50": q[0] / 1e6, "p90": q[1] / 1e6, "p99": q[2] / 1e6, "max": hi / 1e6},
        "exception_rate": exc_rate, "by_model": models,
        "basis": "DuckDB out of core over the Parquet file(s): peak by a running sum of start/finish events "
                 "(finishes first at one instant); mean by Little's law; quantiles by quantile_cont",
        "timings": timings,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path")
    ap.add_argument("--memory-limit", default="5GB",
                    help="DuckDB memory_limit: its sorts spill past it; the exact quantiles hold every hold "
                         "value (8 bytes a row, 100M rows failed at 2GB)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--temp", help="DuckDB temp_directory for spilled data (default: DuckDB's own)")
    a = ap.parse_args()
    try:
        out = figures(a.path, a.memory_limit, a.threads, a.temp)
    except duckdb.Error as exc:
        print(f"{a.path}: {str(exc).splitlines()[0]}", file=sys.stderr)
        raise SystemExit(2) from exc
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
