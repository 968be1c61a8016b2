"""The C twins in ``measure/_select.c`` against their NumPy references: ``steps._step_finishes``
(makespans, straggler tails, carry-overs), ``steps.group_starts`` and ``tokens._grouped_medians``
give the same values, float bits included, with and without ``SANDBOX_FLEET_PURE_PYTHON=1`` on
Hypothesis inputs (empty groups, one row, ties, all-equal values, steps of one row, times and
tokens near the int64 limits), and ``measure --json`` prints the same bytes either way on the
fixtures and the 2.4M-row foreign file.

Skips when the module was not built (no C compiler at install); under ``CI=true`` a missing
module fails instead.
"""

from __future__ import annotations

import os
import struct
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from built import require_built
from sandbox_fleet.measure import steps, tokens
from sandbox_fleet.measure.stats import quantile_sorted

ROOT = Path(__file__).resolve().parents[2]
FOREIGN = Path("/work/benchdata/foreign/foreign-us-2400000.parquet")
I64 = np.iinfo(np.int64)


def require_select():
    return require_built("measure._select")


@pytest.fixture
def C():
    return require_select()


@contextmanager
def pure(on: bool):
    """The reference paths (on) or the compiled ones; ``speedups.compiled`` reads the switch each call."""
    old = os.environ.get("SANDBOX_FLEET_PURE_PYTHON")
    if on:
        os.environ["SANDBOX_FLEET_PURE_PYTHON"] = "1"
    else:
        os.environ.pop("SANDBOX_FLEET_PURE_PYTHON", None)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("SANDBOX_FLEET_PURE_PYTHON", None)
        else:
            os.environ["SANDBOX_FLEET_PURE_PYTHON"] = old


def bits(values) -> list[int | None]:
    """Each float's 64 bits (tells -0.0 from 0.0; None stays None)."""
    return [None if v is None else struct.unpack("<Q", struct.pack("<d", float(v)))[0] for v in values]


def both(fn, *args):
    require_select()
    with pure(True):
        want = fn(*args)
    with pure(False):
        got = fn(*args)
    return want, got


# --- step finishes -------------------------------------------------------------------------

@st.composite
def step_rows(draw):
    """Rows (in any order) and step first starts: each step opens at one row's start, the first
    at the earliest, so every step holds a row; finishes at or after starts, up to int64 max."""
    n = draw(st.integers(1, 120))
    base = draw(st.sampled_from([0, -(2**62), I64.min, I64.max - 10**6, 1_700_000_000 * 10**6]))
    spread = draw(st.sampled_from([0, 3, 10**3, 10**9, 2**62]))
    start = [min(max(base + draw(st.integers(0, spread)), I64.min), I64.max) for _ in range(n)]
    hold = draw(st.sampled_from([0, 5, 10**6, 2**62, 2**63]))
    finish = [min(s + draw(st.integers(0, hold)), I64.max) for s in start]
    distinct = sorted(set(start))
    extra = draw(st.lists(st.sampled_from(distinct), max_size=12))
    first = np.array(sorted({distinct[0], *extra}), dtype=np.int64)
    return np.array(start, dtype=np.int64), np.array(finish, dtype=np.int64), first


@settings(max_examples=400, deadline=None)
@given(step_rows())
def test_step_finishes_match_the_reference(rows):
    (want_m, want_t, want_c), (got_m, got_t, got_c) = both(steps._step_finishes, *rows)
    assert bits(got_m) == bits(want_m)
    assert bits(got_t) == bits(want_t)
    assert got_c.dtype == want_c.dtype and got_c.tolist() == want_c.tolist()


@settings(max_examples=200, deadline=None)
@given(step_rows(), st.sampled_from([0.0, 0.1, 0.5, 0.9, 0.99, 1.0]))
def test_step_order_statistics_are_those_of_each_sorted_step(rows, q):
    """The raw module: per step its rows' offsets, max, and the values at stats._ranks(size, q)
    of the step's sorted relative finishes (found by brute force), for any q."""
    from sandbox_fleet.measure.stats import _ranks

    C = require_select()
    start, finish, first = rows
    offsets, last, lower, upper, carried = C.step_finishes(start, finish, first, q)
    label = np.searchsorted(first, start, side="right") - 1
    for g in range(first.size):
        rel = np.sort(finish[label == g] - first[g])
        lo, _, hi = _ranks(rel.size, q)
        assert offsets[g + 1] - offsets[g] == rel.size
        assert (last[g], lower[g], upper[g]) == (rel[-1], rel[lo], rel[hi])
        if g + 1 < first.size:
            assert carried[g] == np.count_nonzero(rel > first[g + 1] - first[g])


def test_step_finishes_large_steps_in_hard_orders(C):
    """Selections over big steps: ascending, descending, all equal, two values, organ pipe."""
    n = 50_000
    up = np.arange(n, dtype=np.int64)
    orders = [up, up[::-1].copy(), np.zeros(n, dtype=np.int64), up % 2,
              np.concatenate((up[: n // 2], up[: n // 2][::-1]))]
    for rel in orders:
        start = np.zeros(n, dtype=np.int64)
        start[n // 2:] = 10 * n  # two steps
        finish = start + rel
        first = np.array([0, 10 * n], dtype=np.int64)
        (want_m, want_t, want_c), (got_m, got_t, got_c) = both(steps._step_finishes, start, finish, first)
        assert bits(got_m) == bits(want_m) and bits(got_t) == bits(want_t)
        assert got_c.tolist() == want_c.tolist()
        for g, part in enumerate((rel[: n // 2], rel[n // 2:])):
            s = np.sort(part)
            assert got_m[g] == float(s[-1]) and got_t[g] == float(s[-1]) - quantile_sorted(s, steps.TAIL_QUANTILE)


def test_step_finishes_with_crowded_steps(C):
    """Steps packed together beside one far away (most share one bucket of the C step finder)."""
    rng = np.random.default_rng(5)
    first = np.concatenate((np.arange(200, dtype=np.int64), [10**15, 10**15 + 7]))
    start = np.concatenate((first, first[rng.integers(0, first.size, 5000)]))
    finish = start + rng.integers(0, 10**3, start.size)
    order = rng.permutation(start.size)
    (want_m, want_t, want_c), (got_m, got_t, got_c) = both(steps._step_finishes, start[order], finish[order], first)
    assert bits(got_m) == bits(want_m) and bits(got_t) == bits(want_t)
    assert got_c.tolist() == want_c.tolist()


def test_step_finishes_refuses_what_the_callers_never_pass(C):
    one = np.array([5], dtype=np.int64)
    with pytest.raises(ValueError, match="before the first step"):
        C.step_finishes(np.array([4], dtype=np.int64), one, one, 0.9)
    with pytest.raises(ValueError, match="a step without rows"):
        C.step_finishes(one, one, np.array([5, 6], dtype=np.int64), 0.9)
    with pytest.raises(ValueError):
        C.step_finishes(one, np.array([5, 6], dtype=np.int64), one, 0.9)
    with pytest.raises(ValueError):
        C.step_finishes(one, one, np.zeros(0, dtype=np.int64), 0.9)


# --- per-group starts ----------------------------------------------------------------------

@st.composite
def partitions(draw):
    n_groups = draw(st.integers(0, 40))  # past steps._MASK_GROUPS the reference argsorts
    dtype = draw(st.sampled_from([np.uint8, np.uint16, np.uint32, np.uint64]))
    n = draw(st.integers(0, 150))
    top = min(n_groups + 2, int(np.iinfo(dtype).max))  # codes past n_groups belong to no group
    part = np.array(draw(st.lists(st.integers(0, top), min_size=n, max_size=n)), dtype=dtype)
    values = np.sort(np.array(draw(st.lists(st.integers(I64.min, I64.max), min_size=n, max_size=n)),
                              dtype=np.int64))
    return values, part, n_groups


@settings(max_examples=400, deadline=None)
@given(partitions())
def test_group_starts_match_the_reference(case):
    want, got = both(lambda *a: [g.tolist() for g in steps.group_starts(*a)], *case)
    assert got == want


def test_group_starts_from_sorted_starts(C):
    """As measure calls it: the partitions ``sorted_starts`` builds, two groupings."""
    rng = np.random.default_rng(3)
    start = rng.integers(0, 10**12, 20_000)
    models = rng.integers(-1, 5, start.size)
    jobs = rng.integers(-1, 40, start.size)
    s_all, parts = steps.sorted_starts(start, [models, jobs])
    for part, codes, n_groups in zip(parts, (models, jobs), (5, 40)):
        want, got = both(lambda *a: [g.tolist() for g in steps.group_starts(*a)], s_all, part, n_groups)
        assert got == want
        assert got == [np.sort(start[codes == g]).tolist() for g in range(n_groups)]


# --- per-turn medians ----------------------------------------------------------------------

@st.composite
def turn_groups(draw):
    n_groups = draw(st.integers(0, 30))
    n = draw(st.integers(0, 150)) if n_groups else 0
    dtype = draw(st.sampled_from([np.uint8, np.uint16, np.uint32, np.int64]))
    codes = np.array(draw(st.lists(st.integers(0, max(n_groups - 1, 0)), min_size=n, max_size=n)), dtype=dtype)
    lo = draw(st.sampled_from([I64.min, -(10**6), 0, I64.max - 1000]))
    hi = draw(st.sampled_from([0, 3, 10**6, I64.max]))
    values = draw(st.lists(st.integers(lo, max(lo, hi)), min_size=n, max_size=n))
    return codes, np.array(values, dtype=np.int64), n_groups


@settings(max_examples=400, deadline=None)
@given(turn_groups())
def test_grouped_medians_match_the_reference(case):
    (want_n, want_m), (got_n, got_m) = both(tokens._grouped_medians, *case)
    assert got_n.tolist() == want_n.tolist()
    assert bits(got_m) == bits(want_m)


def test_grouped_medians_refuse_codes_out_of_range(C):
    with pytest.raises(ValueError, match="outside"):
        C.group_medians(np.array([0, 2], dtype=np.uint8), np.array([1, 2], dtype=np.int64), 2)


def test_grouped_medians_by_hand(C):
    codes = np.array([1, 0, 1, 1, 1, 3], dtype=np.uint8)
    values = np.array([4, 7, 1, 3, 2, 9], dtype=np.int64)
    with pure(False):
        n_in, medians = tokens._grouped_medians(codes, values, 4)
    assert n_in.tolist() == [1, 4, 0, 1]
    assert medians == [7.0, 2.5, None, 9.0]


# --- whole command -------------------------------------------------------------------------

FIXTURES = ["harbor/terminus2-n3", "harbor/oracle-n2", "terminal_bench/2025-06-01__12-00-00",
            "inspect/queue4.eval", "inspect/mock-local.eval", "inspect/faulty.eval",
            "harbor-layouts/per-agent", "harbor-layouts/atif"]


class Counting:
    """The compiled module, counting the calls of each function (to show the C path ran)."""

    def __init__(self, module) -> None:
        self.module, self.calls = module, {}

    def __getattr__(self, name):
        fn = getattr(self.module, name)

        def counted(*args):
            self.calls[name] = self.calls.get(name, 0) + 1
            return fn(*args)

        return counted


def measure_both(run_cli, monkeypatch, path) -> tuple[str, str, dict]:
    from sandbox_fleet import speedups

    counting = Counting(require_select())
    real = speedups.compiled

    def compiled(name):
        module = real(name)
        return counting if module is not None and name == "measure._select" else module

    monkeypatch.setattr(steps, "compiled", compiled)
    monkeypatch.setattr(tokens, "compiled", compiled)
    out = []
    for on in (True, False):
        with pure(on):
            res = run_cli("measure", path, "--json")
        assert res.code == 0, res.err
        out.append(res.out)
    return out[0], out[1], counting.calls


@pytest.mark.parametrize("fixture", FIXTURES)
def test_measure_json_bytes_equal_with_and_without_on_fixtures(run_cli, monkeypatch, fixture):
    want, got, _ = measure_both(run_cli, monkeypatch, ROOT / "tests" / "fixtures" / fixture)
    assert got == want


@pytest.mark.skipif(not FOREIGN.exists(), reason="the 2.4M-row foreign file is not on this machine")
def test_measure_json_bytes_equal_with_and_without_on_the_foreign_file(run_cli, monkeypatch):
    want, got, calls = measure_both(run_cli, monkeypatch, FOREIGN)
    assert got == want
    # the file has steps per job, several models and jobs, and turn counts: every twin ran
    assert calls.get("step_finishes", 0) >= 1 and calls.get("group_starts", 0) >= 2
    assert calls.get("group_medians", 0) == 1
