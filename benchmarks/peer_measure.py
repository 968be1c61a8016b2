"""The measure peer (issue 12): ONE DuckDB query over a canonical rollout Parquet file.

It computes only what a capacity planner asks first: peak and mean concurrency (a sweep
line over [started_at, finished_at), finishes netted before starts at one instant) and
hold-time quantiles. ``bench_measure.py`` times whole processes of this (python, the
duckdb import, the query, the print) against ``sandbox-fleet measure FILE --json``.

    python benchmarks/peer_measure.py FILE.parquet
"""

from __future__ import annotations

import sys

import duckdb

QUERY = """
WITH r AS (
    SELECT epoch_us(started_at) AS s, epoch_us(finished_at) AS f FROM read_parquet($path)
),
-- Running sum of +1 (start) / -1 (finish) events; at one instant finishes sort first,
-- so the running maximum is the netted level (a finish at t and a start at t never overlap).
lvl AS (
    SELECT sum(d) OVER (ORDER BY t, d ROWS UNBOUNDED PRECEDING) AS level
    FROM (SELECT s AS t, 1 AS d FROM r UNION ALL SELECT f AS t, -1 AS d FROM r)
),
holds AS (
    SELECT count(*) AS n, sum(f - s) AS hold_us, min(s) AS t0, max(f) AS t1,
           quantile_cont(f - s, [0.5, 0.9, 0.99]) AS q FROM r
)
SELECT (SELECT max(level) FROM lvl) AS peak,
       hold_us / (t1 - t0) AS mean,
       n, q[1] / 1e6 AS p50_s, q[2] / 1e6 AS p90_s, q[3] / 1e6 AS p99_s
FROM holds
"""


def main(path: str) -> None:
    ((peak, mean, n, p50, p90, p99),) = duckdb.execute(QUERY, {"path": path}).fetchall()
    print(f"rows {n} peak {peak} mean {mean:.3f} hold p50 {p50:.3f} s p90 {p90:.3f} s p99 {p99:.3f} s")


if __name__ == "__main__":
    main(sys.argv[1])
