"""DuckDB over the in-memory Arrow rollout table, for exact grouped counts and sums.

Only integer aggregates and counts go through here: they are exact (HUGEINT) whatever
the thread schedule, so the output bytes do not depend on it. Every query has ORDER BY.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa


def query(table: pa.Table, sql: str, params: list | None = None) -> list[tuple]:
    """Run ``sql`` with ``table`` visible as ``r``; returns all rows."""
    con = duckdb.connect()
    try:
        con.register("r", table)
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


#: Hold of a row in integer microseconds, in SQL.
HOLD_US = "(epoch_us(finished_at) - epoch_us(started_at))"
