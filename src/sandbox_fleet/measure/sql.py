"""DuckDB over the in-memory Arrow rollout table, for exact grouped counts and sums.

Only integer aggregates and counts go through here: they are exact (HUGEINT) whatever
the thread schedule, so the output bytes do not depend on it. Every query has ORDER BY.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import duckdb
import pyarrow as pa

_local = threading.local()


@contextmanager
def session() -> Iterator[None]:
    """Let the queries inside the block share one connection (opening one costs ~35 ms and
    measure runs several); it is closed after, so no DuckDB threads outlive the block."""
    if getattr(_local, "con", None) is not None:  # already inside one
        yield
        return
    _local.con = duckdb.connect()
    try:
        yield
    finally:
        _local.con.close()
        _local.con = None


@contextmanager
def registered(**tables: pa.Table) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection (the session's, else a new one) with ``tables`` visible under their names,
    unregistered after so no Arrow table outlives the call. Fetch every result inside."""
    shared = getattr(_local, "con", None)
    con = shared if shared is not None else duckdb.connect()
    try:
        for name, table in tables.items():
            con.register(name, table)
        yield con
    finally:
        for name in tables:
            con.unregister(name)
        if shared is None:
            con.close()


def query(table: pa.Table, sql: str, params: list | None = None) -> list[tuple]:
    """Run ``sql`` with ``table`` visible as ``r``; returns all rows."""
    with registered(r=table) as con:
        return con.execute(sql, params or []).fetchall()


#: Hold of a row in integer microseconds, in SQL.
HOLD_US = "(epoch_us(finished_at) - epoch_us(started_at))"
