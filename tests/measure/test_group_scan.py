"""Per-group figures from NumPy passes (issue 12) against DuckDB GROUP BY as the oracle:
by-model/by-job counts and exact sums, the token sums and per-turn medians, exceptions by
type. Tables are random canonical rollouts with nulls, NaN rewards and blank groups."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox_fleet.measure.columns import NONE_LABEL, frame_from_table
from sandbox_fleet.measure.groups import group_table
from sandbox_fleet.measure.outcomes import HOUR_US, measure_exceptions
from sandbox_fleet.measure.stats import group_counts, group_sums
from sandbox_fleet.measure.tokens import _per_turn, _sums
from sandbox_fleet.telemetry import conform_rollouts

HOLD = "(epoch_us(finished_at) - epoch_us(started_at))"
TOK = "input_tokens IS NOT NULL AND output_tokens IS NOT NULL"


def sql(table: pa.Table, query: str, params=None) -> list[tuple]:
    con = duckdb.connect()
    try:
        con.register("r", table)
        return con.execute(query, params or []).fetchall()
    finally:
        con.close()


def random_table(seed: int, n: int, huge_holds: bool = False) -> pa.Table:
    rng = np.random.default_rng(seed)

    def nullable(values, p):
        return pa.array(values, mask=rng.random(n) < p)

    start = 1_750_000_000_000_000 + rng.integers(0, 10**12, n)
    span = 10**15 if huge_holds else 10**10
    finish = start + rng.integers(0, span, n)
    reward = rng.choice([0.0, 0.5, 1.0, np.nan], n)
    return conform_rollouts(pa.table({
        "id": [str(i) for i in range(n)],
        "model": nullable(rng.choice(["a", "b", "gpt", "z-model"], n), 0.1),
        "job": nullable(rng.choice(["j1", "j2"], n), 0.3),
        "started_at": pa.array(start).cast(pa.timestamp("us", tz="UTC")),
        "finished_at": pa.array(finish).cast(pa.timestamp("us", tz="UTC")),
        "input_tokens": nullable(rng.integers(0, 10**7, n), 0.3),
        "output_tokens": nullable(rng.integers(0, 10**5, n), 0.2),
        "cached_tokens": nullable(rng.integers(0, 10**6, n), 0.5),
        "turns": nullable(rng.integers(0, 30, n), 0.2),
        "reward": nullable(reward, 0.2),
        "has_exception": nullable(rng.random(n) < 0.3, 0.1),
        "exception_type": nullable(rng.choice(["Timeout", "OOM", NONE_LABEL, "Daytona"], n), 0.3),
    }))


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 300), st.integers(1, 6),
       st.sampled_from([10, 2**40, 2**55, -(2**20)]))
def test_group_sums_are_exact(seed, n, groups, scale):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, groups, n)
    values = rng.integers(min(scale, 0), max(scale, 1), n, dtype=np.int64)
    mask = rng.random(n) < 0.7
    expect = [sum(int(v) for v, c, m in zip(values, codes, mask) if m and c == g) for g in range(groups)]
    assert group_sums(codes, groups, values, mask) == expect
    assert group_counts(codes, groups, mask).tolist() == [int(((codes == g) & mask).sum()) for g in range(groups)]


def test_group_sums_limb_path_is_exact_past_float_precision():
    # 2**45 per row over 2**10 rows sums past 2**53: a float bincount would round, the limbs do not.
    values = np.full(1024, 2**45 + 1, dtype=np.int64)
    codes = np.zeros(1024, dtype=np.int64)
    assert group_sums(codes, 1, values) == [1024 * (2**45 + 1)]


_GROUP_SQL = f"""
SELECT coalesce(model, '{NONE_LABEL}') AS g, count(*), sum({HOLD}), count(has_exception),
       count(*) FILTER (WHERE has_exception),
       count(*) FILTER (WHERE reward IS NOT NULL AND NOT isnan(reward)),
       count(*) FILTER (WHERE reward >= ? AND NOT isnan(reward)),
       count(*) FILTER (WHERE {TOK}), coalesce(sum({HOLD}) FILTER (WHERE {TOK}), 0),
       coalesce(sum(input_tokens) FILTER (WHERE {TOK}), 0), coalesce(sum(output_tokens) FILTER (WHERE {TOK}), 0)
FROM r GROUP BY g
"""


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 400), st.booleans(), st.sampled_from([0.5, 1.0]))
def test_group_table_matches_duckdb(seed, n, huge, threshold):
    table = random_table(seed, n, huge)
    fr = frame_from_table(table)
    codes, names = fr.model.labelled()
    got = {name: tuple(row.values()) for name, row in zip(names, group_table(fr, codes, len(names), threshold))}
    expect = {row[0]: tuple(int(v) for v in row[1:]) for row in sql(table, _GROUP_SQL, [threshold])}
    assert got == expect


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 400))
def test_token_sums_and_turn_medians_match_duckdb(seed, n):
    table = random_table(seed, n)
    fr = frame_from_table(table)
    ((rows, hold, inp, outp, n_cached, cached, cached_inp),) = sql(table, f"""
        SELECT count(*), coalesce(sum({HOLD}), 0), coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0),
               count(cached_tokens), coalesce(sum(cached_tokens), 0),
               coalesce(sum(input_tokens) FILTER (WHERE cached_tokens IS NOT NULL), 0)
        FROM r WHERE {TOK}""")
    assert _sums(fr) == tuple(int(v) for v in (rows, hold, inp, outp, n_cached, cached, cached_inp))
    turns = sql(table, """SELECT turns, count(*), count(input_tokens), quantile_cont(input_tokens, 0.5)
                          FROM r WHERE turns IS NOT NULL GROUP BY turns ORDER BY turns""")
    assert _per_turn(fr) == [(int(t), int(c), int(k), None if m is None else float(m)) for t, c, k, m in turns]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 400))
def test_exceptions_by_type_match_duckdb(seed, n):
    table = random_table(seed, n)
    rows = sql(table, f"SELECT coalesce(exception_type, ?) AS t, count(*) AS n, sum({HOLD}) FROM r "
                      "WHERE has_exception GROUP BY t ORDER BY n DESC, t", [NONE_LABEL])
    got = measure_exceptions(frame_from_table(table))
    assert got == {
        "rows": sum(int(r[1]) for r in rows),
        "by_type": {t: int(k) for t, k, _ in rows},
        "sandbox_hours_by_type": {t: int(us) / HOUR_US for t, _, us in rows},
    }
    assert list(got["by_type"]) == [r[0] for r in rows]  # order: count descending, then name
