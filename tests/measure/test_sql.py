"""The DuckDB helper: one connection per measure session, tables never left registered."""

from __future__ import annotations

import pyarrow as pa

from sandbox_fleet.measure.sql import query, registered, session

T = pa.table({"x": [3, 1, 2]})


def _views(con) -> set[str]:
    return {row[0] for row in con.execute("SELECT view_name FROM duckdb_views() WHERE temporary").fetchall()}


def test_query_outside_a_session():
    assert query(T, "SELECT sum(x) FROM r") == [(6,)]


def test_a_session_shares_one_connection_and_unregisters_tables():
    with session():
        with registered(r=T) as a:
            pass
        with registered(r=T) as b:
            assert b is a
            with registered(other=pa.table({"y": [1]})):
                assert b.execute("SELECT count(*) FROM r, other").fetchall() == [(3,)]
                assert "other" in _views(b)
            assert "other" not in _views(b)
        assert query(T, "SELECT max(x) FROM r") == [(3,)]
    with registered(r=T) as c:
        assert c is not a  # the session's connection was closed with it
