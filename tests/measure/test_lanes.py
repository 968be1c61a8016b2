"""Measure's pass runner (``measure.lanes``) and the per-model counts and sums built a block of rows
at a time: checked against counting by hand and against DuckDB's GROUP BY (the oracle of
test_group_scan)."""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox_fleet.measure import groups
from sandbox_fleet.measure.columns import frame_from_table

from .test_group_scan import _GROUP_SQL, random_table, sql


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 400), st.booleans(), st.sampled_from([0.5, 1.0]),
       st.sampled_from([1, 7, 64, 1 << 20]))
def test_model_table_in_blocks_matches_duckdb(seed, n, huge, threshold, block):
    table = random_table(seed, n, huge)
    fr = frame_from_table(table)
    with mock.patch.object(groups, "BLOCK_ROWS", block):
        rows = groups.model_table(fr, threshold)
    _, names = fr.model.labelled()
    got = {name: tuple(row.values()) for name, row in zip(names, rows)}
    expect = {row[0]: tuple(int(v) for v in row[1:]) for row in sql(table, _GROUP_SQL, [threshold])}
    assert got == expect


def test_the_summary_does_not_depend_on_how_many_lanes_ran_it(monkeypatch):
    # Two workers up to 12M rows, one above: each figure is one function on read-only inputs,
    # so forcing each on the same rollouts gives the same summary.
    import numpy as np

    from sandbox_fleet.measure import run

    from .helpers import telemetry

    rng = np.random.default_rng(21)
    n = 4000
    starts = np.sort(rng.uniform(0, 50_000, n)).round(3)
    holds = rng.lognormal(5, 1.5, n).round(3)
    exc = rng.random(n) < 0.3
    t = telemetry(
        starts.tolist(), (starts + holds).tolist(),
        task_id=[f"task-{int(k)}" for k in rng.integers(0, 300, n)],
        model=[["m-a", "m-b", None][int(k)] for k in rng.integers(0, 3, n)],
        job=[f"job-{int(k)}" for k in rng.integers(0, 4, n)],
        has_exception=exc.tolist(),
        exception_type=[["Timeout", "OOM"][int(k)] if e else None for k, e in zip(rng.integers(0, 2, n), exc)],
        reward=[None if u < 0.1 else float(v) for u, v in zip(rng.random(n), rng.integers(0, 2, n))],
        input_tokens=rng.integers(1000, 90_000, n).tolist(),
        output_tokens=rng.integers(10, 4000, n).tolist(),
        turns=rng.integers(1, 40, n).tolist(),
    )
    summaries = []
    for two in (10**9, 0):  # two workers, one
        monkeypatch.setattr(run, "TWO_LANES_ROWS", two)
        summaries.append(run.measure_telemetry(t, seed=3).to_json())
    assert summaries[0]["by_task"] is not None and summaries[0]["by_job"]
    assert summaries[0] == summaries[1]


class _Buf:
    """A value whose lifetime the tests watch (weakref)."""


def test_run_plan_frees_each_value_after_its_last_reader_and_keeps_what_is_asked():
    import weakref

    from sandbox_fleet.measure.lanes import Pass, run_plan

    alive = {}
    seen = []

    def make():
        b = _Buf()
        alive["buf"] = weakref.ref(b)
        return b

    def read(b):
        return 1

    def after_last_reader():
        seen.append(alive["buf"]() is None)  # the only reader finished before: freed already
        return 2

    passes = [Pass("buf", make), Pass("one", read, ("buf",)), Pass("later", after_last_reader, after=("one",))]
    got = run_plan(passes, {}, ["one", "later"])
    assert got == {"one": 1, "later": 2} and seen == [True]


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_run_plan_same_values_on_any_worker_count(workers):
    from sandbox_fleet.measure.lanes import Pass, run_plan

    passes = [
        Pass("x", lambda: 7),
        Pass("square", lambda x: x * x, ("x",)),
        Pass("parts", lambda x: [i * x for i in range(25)], ("x",)),
        Pass("total", lambda square, parts: square + sum(parts), ("square", "parts")),
    ]
    got = run_plan(passes, {}, ["parts", "total"], workers=workers)
    assert got["parts"] == [i * 7 for i in range(25)]
    assert got["total"] == 49 + 7 * sum(range(25))


def test_run_plan_after_orders_passes_across_workers():
    import time

    from sandbox_fleet.measure.lanes import Pass, run_plan

    order = []

    def slow():
        time.sleep(0.05)
        order.append("slow")

    passes = [Pass("slow", slow), Pass("next", lambda: order.append("next"), after=("slow",))]
    run_plan(passes, {}, [], workers=2)
    assert order == ["slow", "next"]


def test_run_plan_raises_a_pass_failure_unchanged():
    from sandbox_fleet.errors import InputError
    from sandbox_fleet.measure.lanes import Pass, run_plan

    def bad():
        raise InputError("rows: no usable interval")

    passes = [Pass("bad", bad), Pass("waits", lambda v: v, ("bad",)), Pass("end", lambda: 1)]
    with pytest.raises(InputError, match="no usable interval"):
        run_plan(passes, {}, ["waits"], workers=2)


def test_run_plan_refuses_a_pass_placed_before_what_it_reads():
    from sandbox_fleet.measure.lanes import Pass, run_plan

    passes = [Pass("a", lambda b: b, ("b",)), Pass("b", lambda: 1)]
    with pytest.raises(ValueError, match="'a' placed twice or before"):
        run_plan(passes, {}, ["a"])


def test_run_plan_frees_an_input_after_its_last_reader():
    import weakref

    from sandbox_fleet.measure.lanes import Pass, run_plan

    rows = _Buf()
    ref = weakref.ref(rows)
    inputs = {"rows": rows}
    del rows
    seen = []
    passes = [Pass("read", lambda r: 1, ("rows",)), Pass("later", lambda: seen.append(ref() is None), after=("read",))]
    run_plan(passes, inputs, [])
    assert seen == [True] and "rows" not in inputs
