"""The per-step and per-turn order statistics against brute force: ``steps._step_finishes``
(makespans, straggler tails, carry-overs), ``steps.group_starts`` and ``tokens._grouped_medians``
equal each group's values sorted on their own (empty groups, one row, ties, all-equal values)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox_fleet.measure import steps, tokens
from sandbox_fleet.measure.stats import quantile_sorted


def brute_step_finishes(start, finish, first):
    label = np.searchsorted(first, start, side="right") - 1
    makespans, tails, carried = [], [], []
    for g in range(first.size):
        rel = sorted(int(f) - int(first[g]) for f, lab in zip(finish, label) if lab == g)
        makespans.append(float(rel[-1]))
        tails.append(float(rel[-1]) - quantile_sorted(np.array(rel, dtype=np.int64), steps.TAIL_QUANTILE))
        if g + 1 < first.size:
            carried.append(sum(1 for r in rel if r > int(first[g + 1]) - int(first[g])))
    return makespans, tails, carried


@st.composite
def step_rows(draw):
    """Rows in any order and step first starts: each step opens at one row's start, the first at
    the earliest, so every step holds a row; finishes at or after starts."""
    n = draw(st.integers(1, 120))
    base = draw(st.sampled_from([0, 1_700_000_000 * 10**6]))
    spread = draw(st.sampled_from([0, 3, 10**3, 10**9]))
    start = [base + draw(st.integers(0, spread)) for _ in range(n)]
    hold = draw(st.sampled_from([0, 5, 10**6, 10**12]))
    finish = [s + draw(st.integers(0, hold)) for s in start]
    distinct = sorted(set(start))
    extra = draw(st.lists(st.sampled_from(distinct), max_size=12))
    first = np.array(sorted({distinct[0], *extra}), dtype=np.int64)
    return np.array(start, dtype=np.int64), np.array(finish, dtype=np.int64), first


@settings(max_examples=300, deadline=None)
@given(step_rows())
def test_step_finishes_equal_each_sorted_step(rows):
    makespans, tails, carried = steps._step_finishes(*rows)
    assert (makespans, tails, carried.tolist()) == brute_step_finishes(*rows)


def test_step_finishes_large_steps_in_hard_orders():
    """Big steps: ascending, descending, all equal, two values, organ pipe."""
    n = 50_000
    up = np.arange(n, dtype=np.int64)
    for rel in [up, up[::-1].copy(), np.zeros(n, dtype=np.int64), up % 2,
                np.concatenate((up[: n // 2], up[: n // 2][::-1]))]:
        start = np.zeros(n, dtype=np.int64)
        start[n // 2:] = 10 * n  # two steps
        first = np.array([0, 10 * n], dtype=np.int64)
        makespans, tails, carried = steps._step_finishes(start, start + rel, first)
        for g, part in enumerate((rel[: n // 2], rel[n // 2:])):
            s = np.sort(part)
            assert makespans[g] == float(s[-1]) and tails[g] == float(s[-1]) - quantile_sorted(s, steps.TAIL_QUANTILE)
        assert carried.tolist() == [0]


def test_group_starts_from_sorted_starts():
    """As measure calls it: the partitions ``sorted_starts`` builds, two groupings (5 groups: by
    mask; 40: past ``_MASK_GROUPS``, by one stable partition)."""
    rng = np.random.default_rng(3)
    start = rng.integers(0, 10**12, 20_000)
    models = rng.integers(-1, 5, start.size)
    jobs = rng.integers(-1, 40, start.size)
    s_all, parts = steps.sorted_starts(start, [models, jobs])
    for part, codes, n_groups in zip(parts, (models, jobs), (5, 40)):
        got = [g.tolist() for g in steps.group_starts(s_all, part, n_groups)]
        assert got == [np.sort(start[codes == g]).tolist() for g in range(n_groups)]


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 30), st.data())
def test_grouped_medians_equal_each_groups_median(n_groups, data):
    n = data.draw(st.integers(0, 150))
    codes = np.array(data.draw(st.lists(st.integers(0, n_groups - 1), min_size=n, max_size=n)), dtype=np.int64)
    values = np.array(data.draw(st.lists(st.integers(0, 10**9), min_size=n, max_size=n)), dtype=np.int64)
    n_in, medians = tokens._grouped_medians(codes, values, n_groups)
    assert n_in.tolist() == [int((codes == g).sum()) for g in range(n_groups)]
    assert medians == [float(np.median(values[codes == g])) if (codes == g).any() else None for g in range(n_groups)]


def test_grouped_medians_by_hand():
    codes = np.array([1, 0, 1, 1, 1, 3], dtype=np.uint8)
    values = np.array([4, 7, 1, 3, 2, 9], dtype=np.int64)
    n_in, medians = tokens._grouped_medians(codes, values, 4)
    assert n_in.tolist() == [1, 4, 0, 1]
    assert medians == [7.0, 2.5, None, 9.0]
