"""The backtest split at its edges (issue 42 s6): simultaneous starts, rows with no group, many groups."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from sandbox_fleet.backtest.split import split_table
from sandbox_fleet.errors import InputError

T0_US = 1_767_225_600 * 1_000_000  # 2026-01-01T00:00:00Z


def table(starts_s, jobs) -> pa.Table:
    st = T0_US + np.asarray(starts_s, dtype=np.int64) * 1_000_000
    ts = pa.timestamp("us", tz="UTC")
    return pa.table({"started_at": pa.array(st).cast(ts), "finished_at": pa.array(st + 60_000_000).cast(ts),
                     "job": pa.array(jobs, pa.string()), "model": ["m"] * len(jobs)})


def test_a_cut_inside_simultaneous_starts_is_refused():
    with pytest.raises(InputError, match="same instant"):
        split_table(table([0] * 12, ["a"] * 12))


def test_rows_without_a_job_never_merge_with_a_job_of_that_name():
    with pytest.raises(InputError, match=r"named '\(no job\)'"):
        split_table(table(range(12), ["(no job)"] * 6 + [None] * 6), split_by="job", min_rows=1)


def test_rows_without_a_job_are_their_own_group():
    sp = split_table(table(range(12), ["x"] * 6 + [None] * 6), split_by="job", min_rows=1)
    assert sp.a_groups == ("x",) and sp.b_groups == ("(no job)",) and sp.b.num_rows == 6


def test_group_order_is_first_start_then_name():
    # oracle: the rule written plainly (each group's earliest start, ties by name), on random groups
    rng = np.random.default_rng(7)
    starts = rng.integers(0, 50, size=400)
    jobs = [f"j{x}" for x in rng.integers(0, 60, size=400)]
    sp = split_table(table(starts, jobs), split_by="job", min_rows=1)
    first = {}
    for s, j in zip(starts.tolist(), jobs):
        first[j] = min(first.get(j, s), s)
    expect = sorted(first, key=lambda j: (first[j], j))
    assert (*sp.a_groups, *sp.b_groups) == tuple(expect)
    assert sp.b.num_rows == jobs.count(expect[-1])
