"""DuckDB over the in-memory Arrow rollout table, for exact grouped counts and sums.

Only integer aggregates and counts go through here: they are exact (HUGEINT) whatever
the thread schedule, so the output bytes do not depend on it. Every query has ORDER BY.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pyarrow as pa

_local = threading.local()


@contextmanager
def session() -> Iterator[None]:
    """Let the queries inside the block share one connection (opening one costs ~35 ms);
    it is opened by the first query only (measure over canonical input runs none, so it
    never imports DuckDB) and closed after, so no DuckDB threads outlive the block."""
    if getattr(_local, "in_session", False):  # already inside one
        yield
        return
    _local.in_session, _local.con = True, None
    try:
        yield
    finally:
        if _local.con is not None:
            _local.con.close()
        _local.in_session, _local.con = False, None


def _connect():
    import duckdb

    return duckdb.connect()


@contextmanager
def registered(**tables: pa.Table) -> Iterator:
    """A DuckDB connection (the session's, else a new one) with ``tables`` visible under their
    names, unregistered after so no Arrow table outlives the call. Fetch every result inside."""
    if getattr(_local, "in_session", False) and _local.con is None:
        _local.con = _connect()
    shared = getattr(_local, "con", None)
    con = shared if shared is not None else _connect()
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
