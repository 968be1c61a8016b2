"""The last stage's shared job queue (``measure.lanes``) and the per-model counts and sums
built as separate jobs, a block of rows at a time, on two threads: checked against counting
by hand and against DuckDB's GROUP BY (the oracle of test_group_scan)."""

from __future__ import annotations

import threading
from collections import Counter
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox_fleet.measure import groups
from sandbox_fleet.measure.columns import frame_from_table
from sandbox_fleet.measure.lanes import SharedJobs

from .test_group_scan import _GROUP_SQL, random_table, sql


def test_every_job_runs_once_and_results_keep_queue_order():
    ran = Counter()
    lock = threading.Lock()
    start = threading.Barrier(3)

    def job(i):
        def run():
            with lock:
                ran[i] += 1
            return i * i
        return run

    shared = SharedJobs([job(i) for i in range(200)])

    def lane():
        start.wait()
        shared.drain()

    workers = [threading.Thread(target=lane) for _ in range(2)]
    for w in workers:
        w.start()
    start.wait()
    got = shared.results()
    for w in workers:
        w.join()
    assert got == [i * i for i in range(200)]
    assert ran == Counter(dict.fromkeys(range(200), 1))


def test_a_failing_job_raises_on_the_thread_that_asks_for_results():
    def boom():
        raise ValueError("bad column")

    shared = SharedJobs([lambda: 1, boom, lambda: 3])
    t = threading.Thread(target=shared.drain)
    t.start()
    t.join()
    with pytest.raises(ValueError, match="bad column"):
        shared.results()


def test_no_jobs():
    assert SharedJobs([]).results() == []


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 400), st.booleans(), st.sampled_from([0.5, 1.0]),
       st.sampled_from([1, 7, 64, 1 << 20]))
def test_model_columns_in_blocks_on_two_threads_match_duckdb(seed, n, huge, threshold, block):
    table = random_table(seed, n, huge)
    fr = frame_from_table(table)
    with mock.patch.object(groups, "BLOCK_ROWS", block):
        jobs, n_models = groups.model_columns(fr, threshold)
        shared = SharedJobs(jobs)
        other = threading.Thread(target=shared.drain)
        other.start()
        cols = shared.results()
        other.join()
    _, names = fr.model.labelled()
    got = {name: tuple(row.values()) for name, row in zip(names, groups.group_rows_of(cols, n_models))}
    expect = {row[0]: tuple(int(v) for v in row[1:]) for row in sql(table, _GROUP_SQL, [threshold])}
    assert got == expect


def test_drain_until_stops_taking_jobs_once_the_future_is_done():
    from concurrent.futures import Future

    done = Future()
    ran = []

    def job(i):
        def run():
            ran.append(i)
            if i == 2:
                done.set_result(None)  # checked before the next job: 3 and 4 stay queued
            return i
        return run

    shared = SharedJobs([job(i) for i in range(5)])
    shared.drain(until=done)
    assert ran == [0, 1, 2]
    assert shared.results() == [0, 1, 2, 3, 4] and ran == [0, 1, 2, 3, 4]


def test_the_summary_does_not_depend_on_how_many_lanes_ran_it(monkeypatch):
    # Three lanes up to 4M rows, two up to 12M, one above: each figure is one function on
    # read-only inputs, so forcing each schedule on the same rollouts gives the same summary.
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
    for two in (10**9, 0):  # two lanes, one
        monkeypatch.setattr(run, "TWO_LANES_ROWS", two)
        summaries.append(run.measure_telemetry(t, seed=3).to_json())
    assert summaries[0]["by_task"] is not None and summaries[0]["by_job"]
    assert summaries[0] == summaries[1]


class _Buf:
    """A value whose lifetime the tests watch (weakref)."""


def test_run_plan_frees_each_value_after_its_last_reader_and_keeps_what_is_asked():
    import weakref

    from sandbox_fleet.measure.lanes import HERE, Pass, run_plan

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
    got = run_plan(passes, [("buf", HERE), ("one", HERE), ("later", HERE)], {}, ["one", "later"])
    assert got == {"one": 1, "later": 2} and seen == [True]


@pytest.mark.parametrize("lane", [0, 1, -1])
def test_run_plan_same_values_on_any_lane_with_fanout_in_queue_order(lane):
    from sandbox_fleet.measure.lanes import HERE, Pass, run_plan

    passes = [
        Pass("x", lambda: 7),
        Pass("square", lambda x: x * x, ("x",)),
        Pass("parts", lambda x: [lambda i=i: i * x for i in range(25)], ("x",), fanout=True),
        Pass("total", lambda square, parts: square + sum(parts), ("square", "parts")),
    ]
    plan = [("x", HERE), ("square", lane), ("parts", HERE), ("total", HERE)]
    got = run_plan(passes, plan, {}, ["parts", "total"])
    assert got["parts"] == [i * 7 for i in range(25)]
    assert got["total"] == 49 + 7 * sum(range(25))


def test_run_plan_after_orders_passes_across_lanes():
    import time

    from sandbox_fleet.measure.lanes import Pass, run_plan

    order = []

    def slow():
        time.sleep(0.05)
        order.append("slow")

    passes = [Pass("slow", slow), Pass("next", lambda: order.append("next"), after=("slow",))]
    run_plan(passes, [("slow", 1), ("next", 2)], {}, [])
    assert order == ["slow", "next"]


def test_run_plan_raises_a_pass_failure_unchanged_and_stops_the_lanes():
    from sandbox_fleet.errors import InputError
    from sandbox_fleet.measure.lanes import HERE, Pass, run_plan

    def bad():
        raise InputError("rows: no usable interval")

    passes = [Pass("bad", bad), Pass("waits", lambda v: v, ("bad",)), Pass("end", lambda: 1)]
    with pytest.raises(InputError, match="no usable interval"):
        run_plan(passes, [("bad", 1), ("waits", 2), ("end", HERE)], {}, ["waits"])


def test_run_plan_refuses_a_pass_placed_before_what_it_reads():
    from sandbox_fleet.measure.lanes import HERE, Pass, run_plan

    passes = [Pass("a", lambda b: b, ("b",)), Pass("b", lambda: 1)]
    with pytest.raises(ValueError, match="'a' placed twice or before"):
        run_plan(passes, [("a", HERE), ("b", HERE)], {}, ["a"])


@pytest.mark.parametrize("lanes", [1, 2, 3])
def test_every_measure_pass_is_placed_once_in_every_plan(lanes):
    from sandbox_fleet.measure import run

    names = [p.name for p in run._passes(1.0, 0, 3)]
    placed = [name for name, _ in run._plan(lanes)]
    assert sorted(placed) == sorted(names) and len(set(names)) == len(names)
    assert set(run.SUMMARY_VALUES) <= set(names)


def test_run_plan_frees_an_input_after_its_last_reader():
    import weakref

    from sandbox_fleet.measure.lanes import HERE, Pass, run_plan

    rows = _Buf()
    ref = weakref.ref(rows)
    inputs = {"rows": rows}
    del rows
    seen = []
    passes = [Pass("read", lambda r: 1, ("rows",)), Pass("later", lambda: seen.append(ref() is None), after=("read",))]
    run_plan(passes, [("read", HERE), ("later", HERE)], inputs, [])
    assert seen == [True] and "rows" not in inputs
