"""The C twins in ``measure/_groups.c`` against their NumPy references and exact Python sums:
``group_totals`` (``groups.reference_group_columns``),
``pack_events`` (``concurrency._packed_events``, the groups' counts and
``_group_hold_sums``), ``compact`` (``concurrency._compact``, also per group as
``grouped_sweeps``' reference loop makes it), ``area`` (``concurrency._reference_area``) and
``level_durations`` (``time_at_level``'s bincount); then whole ``measure --json`` runs."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox_fleet import speedups
from sandbox_fleet.measure import concurrency, groups
from sandbox_fleet.measure.columns import frame_from_table

from .test_group_scan import random_table

try:  # the module itself, whatever SANDBOX_FLEET_PURE_PYTHON says (the tests flip it per call)
    fast = importlib.import_module("sandbox_fleet.measure._groups")
except ImportError:
    fast = None
# Under CI=true a missing module fails (test_the_twins_are_built_under_ci_and_the_switch_turns_them_off) instead of skipping.
pytestmark = pytest.mark.skipif(fast is None and os.environ.get("CI") != "true",
                                reason="the C twin was not built (no C compiler at install)")


def test_the_twins_are_built_under_ci_and_the_switch_turns_them_off(monkeypatch):
    monkeypatch.delenv("SANDBOX_FLEET_PURE_PYTHON", raising=False)
    if speedups.compiled("measure._groups") is None:
        pytest.fail("sandbox_fleet.measure._groups was not built: .ci/run must install with a C compiler")
    monkeypatch.setenv("SANDBOX_FLEET_PURE_PYTHON", "1")
    assert speedups.compiled("measure._groups") is None


def _rechunked(table: pa.Table, name: str, sizes: list[int]) -> pa.Table:
    """``table`` with column ``name`` cut into chunks of ``sizes`` (the rest in one more)."""
    col = table.column(name).combine_chunks()
    parts, at = [], 0
    for size in sizes:
        parts.append(col.slice(at, size))
        at += size
    parts.append(col.slice(at))
    return table.set_column(table.column_names.index(name), name, pa.chunked_array(parts, type=col.type))


def _columns(fr, codes, n_groups, threshold, pure: bool, monkeypatch) -> list:
    if pure:
        monkeypatch.setenv("SANDBOX_FLEET_PURE_PYTHON", "1")
    else:
        monkeypatch.delenv("SANDBOX_FLEET_PURE_PYTHON", raising=False)
    try:
        return groups.group_rows_of([job() for job in groups.group_columns(fr, codes, n_groups, threshold)], n_groups)
    finally:
        monkeypatch.delenv("SANDBOX_FLEET_PURE_PYTHON", raising=False)


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 300), st.booleans(), st.sampled_from([0.5, 1.0]),
       st.lists(st.integers(0, 60), max_size=4), st.lists(st.integers(0, 60), max_size=4))
def test_group_totals_equal_the_reference_on_frames(seed, n, huge, threshold, in_chunks, out_chunks):
    # Token columns cut at different rows: each call of the twin must lie in one chunk of both.
    table = random_table(seed, n, huge)
    table = _rechunked(_rechunked(table, "input_tokens", in_chunks), "output_tokens", out_chunks)
    fr = frame_from_table(table)
    with pytest.MonkeyPatch.context() as mp:
        for codes, names in (fr.model.labelled(), fr.job.labelled()):
            assert _columns(fr, codes, len(names), threshold, False, mp) == _columns(fr, codes, len(names), threshold, True, mp)


def _exact(codes, n_groups, values, mask) -> list[int]:
    return [sum(int(v) for v, c, m in zip(values, codes, mask) if m and c == g) for g in range(n_groups)]


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 200), st.integers(1, 5),
       st.sampled_from([np.int32, np.int64, np.uint8]),
       st.sampled_from([(0, 10), (0, 2**62), (-(2**62), 2**62), (2**63 - 2**20, 2**63 - 1), (-(2**63), -(2**63) + 5)]))
def test_group_totals_are_exact_sums_and_counts(seed, n, n_groups, dtype, bounds):
    # Values near int64's ends: only a wide accumulator sums them exactly (NumPy's int64 sum wraps).
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, n_groups, n).astype(dtype)
    lo, hi = bounds
    hold, tok_in, tok_out = (rng.integers(lo, hi, n, dtype=np.int64, endpoint=True) for _ in range(3))
    masks = [rng.random(n) < p for p in (0.9, 0.5, 0.5, 0.3, 0.6)]
    flag_valid, flag_value, rewarded, passed, tok = masks
    got = fast.group_totals(codes, n_groups, hold, flag_valid, flag_value, rewarded, passed, tok, tok_in, tok_out)
    every = np.ones(n, dtype=bool)
    counts = [every, flag_valid, flag_valid & flag_value, rewarded, passed, tok]
    expect = [[int(((codes == g) & m).sum()) for g in range(n_groups)] for m in counts]
    expect.insert(1, _exact(codes, n_groups, hold, every))
    expect += [_exact(codes, n_groups, v, tok) for v in (hold, tok_in, tok_out)]
    assert got == expect
    assert all(type(v) is int for col in got for v in col)


def test_group_totals_of_no_rows_and_one_group():
    empty_i, empty_b = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
    assert fast.group_totals(empty_i.astype(np.int32), 3, empty_i, *[empty_b] * 5, empty_i, empty_i) == [[0] * 3] * 10
    one = np.array([7], dtype=np.int64)
    yes = np.ones(1, dtype=bool)
    assert fast.group_totals(np.zeros(1, dtype=np.int32), 1, one, *[yes] * 5, one, one) == [[1], [7]] + [[1]] * 5 + [[7]] * 3


def test_group_totals_refuse_codes_out_of_range_and_mismatched_lengths():
    n = 3
    ints, bools = np.arange(n, dtype=np.int64), np.ones(n, dtype=bool)
    with pytest.raises(ValueError, match="not in 0..1"):
        fast.group_totals(np.array([0, 2, 1], dtype=np.int32), 2, ints, *[bools] * 5, ints, ints)
    with pytest.raises(ValueError, match="not in"):
        fast.group_totals(np.array([0, -1, 1], dtype=np.int64), 2, ints, *[bools] * 5, ints, ints)
    with pytest.raises(ValueError, match="rows"):
        fast.group_totals(np.zeros(n, dtype=np.int32), 1, ints[:2], *[bools] * 5, ints, ints)
    with pytest.raises(TypeError):
        fast.group_totals(np.zeros(n, dtype=np.int32), 1, ints.astype(np.float64), *[bools] * 5, ints, ints)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 300), st.integers(1, 6),
       st.sampled_from([10**6, 2**40, 2**56]), st.booleans(), st.sampled_from([np.int32, np.int64]))
def test_pack_events_equal_the_reference(seed, n, n_groups, span, backwards, dtype):
    # backwards: finishes before starts (negative holds and keys) pack the same bits too.
    rng = np.random.default_rng(seed)
    start = 1_780_000_000_000_000 + rng.integers(0, 10**12, n)
    finish = start + rng.integers(-span if backwards else 0, span, n)
    codes = rng.integers(-1, n_groups, n).astype(dtype)
    base = int(start.min()) if n else 0
    key = np.empty(2 * n, dtype=np.int64)
    rows, sums = fast.pack_events(start, finish, codes, n_groups, base, n_groups.bit_length(), key)
    expect_key, group = concurrency._packed_events(start, finish, codes, n_groups, base)
    assert key.tobytes() == expect_key.tobytes()
    assert rows == np.bincount(group, minlength=n_groups + 1).tolist()
    assert sums == _exact(group, n_groups + 1, finish - start, np.ones(n, dtype=bool))
    assert sums == concurrency._group_hold_sums(start, finish, group, n_groups)


def test_pack_events_sum_holds_of_epochs_further_apart_than_int64():
    start, finish = np.array([-(2**63)], dtype=np.int64), np.array([2**63 - 1], dtype=np.int64)
    key = np.empty(2, dtype=np.int64)
    assert fast.pack_events(start, finish, np.zeros(1, dtype=np.int32), 1, 0, 1, key)[1] == [2**64 - 1, 0]


def test_pack_events_refuse_a_code_past_the_groups():
    one = np.zeros(1, dtype=np.int64)
    with pytest.raises(ValueError, match="not below 2"):
        fast.pack_events(one, one, np.array([2], dtype=np.int32), 2, 0, 2, np.empty(2, dtype=np.int64))


def _sorted_key(start, finish, codes, n_groups):
    """``grouped_sweeps``' sorted packed events (time - base, group, start bit) and its base."""
    bits = n_groups.bit_length()
    base = int(start.min())
    group = np.where(codes < 0, n_groups, codes).astype(np.int64)
    key = np.concatenate([(((start - base) << bits | group) << 1) | 1, ((finish - base) << bits | group) << 1])
    key.sort()
    return key, base, bits


def _sweep_tuple(sw: concurrency.Sweep):
    return sw.times.tolist(), sw.level.tolist(), sw.times.dtype, sw.level.dtype, sw.times.base is not None


intervals = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 12), st.integers(-1, 4)), min_size=1, max_size=60)


def _intervals(rows, n_groups: int, far: bool, offset: int = 0):
    """(start, finish, codes) of ``rows``; ``far`` adds one interval reaching the last time the
    packed key holds (62 bits less the group and start bits)."""
    start = np.array([offset + a for a, _, _ in rows], dtype=np.int64)
    finish = start + np.array([d for _, d, _ in rows], dtype=np.int64)
    codes = np.array([min(c, n_groups - 1) for _, _, c in rows], dtype=np.int64)
    if far:
        first = int(start.min())
        start, finish = np.append(start, first), np.append(finish, first + (1 << (62 - n_groups.bit_length())) - 1)
        codes = np.append(codes, n_groups - 1)
    return start, finish, codes


@settings(max_examples=200, deadline=None)
@given(intervals, st.integers(1, 5), st.integers(1, 7), st.booleans())
def test_compact_equals_the_reference_overall_and_per_group(rows, n_groups, block, far):
    # Small reference blocks put ties across block edges.
    start, finish, codes = _intervals(rows, n_groups, far)
    key, base, bits = _sorted_key(start, finish, codes, n_groups)
    counts = [int((codes == g).sum()) for g in range(n_groups)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(concurrency, "BLOCK", block)
        label = (key >> 1) & ((1 << bits) - 1)
        expect_groups = [concurrency._compact(key[label == g], base, bits) if counts[g] else None for g in range(n_groups)]
        got_all, got_groups = concurrency._compiled_compact(fast, key.copy(), base, bits, counts)
        expect_all = concurrency._compact(key, base, bits)
    assert _sweep_tuple(got_all) == _sweep_tuple(expect_all)
    assert [g and _sweep_tuple(g) for g in got_groups] == [e and _sweep_tuple(e) for e in expect_groups]


@settings(max_examples=100, deadline=None)
@given(intervals, st.integers(1, 5), st.sampled_from([0, 1, 1_780_000_000_000_000]), st.booleans())
def test_grouped_sweeps_and_sweep_equal_the_pure_ones(rows, n_groups, offset, far):
    start, finish, codes = _intervals(rows, n_groups, far, offset)
    codes = codes.astype(np.int32)  # Codes' dtype

    def run():
        seen = {}
        overall = concurrency.grouped_sweeps(start, finish, codes, n_groups,
                                             lambda g, sw, r: seen.setdefault(g, (_sweep_tuple(sw), sw.holds_us, r)))
        one = concurrency.sweep(start, finish)
        return _sweep_tuple(overall), overall.holds_us, seen, _sweep_tuple(one), one.holds_us

    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("SANDBOX_FLEET_PURE_PYTHON", raising=False)
        got = run()
        mp.setenv("SANDBOX_FLEET_PURE_PYTHON", "1")
        assert got == run()


def test_compiled_sweep_keeps_the_self_check(monkeypatch):
    monkeypatch.delenv("SANDBOX_FLEET_PURE_PYTHON", raising=False)
    monkeypatch.setattr(concurrency, "_area", lambda times, level: 1)
    with pytest.raises(concurrency.SweepError):
        concurrency.grouped_sweeps(np.array([0, 2]), np.array([5, 3]), np.array([0, 1]), 2, lambda *a: None)


def test_compact_refuses_a_group_with_more_events_than_its_arrays():
    key = np.array([0b011, 0b110], dtype=np.int64)  # group 1 starts at 0 and finishes at 1
    level = np.empty(2, dtype=np.int32)
    with pytest.raises(ValueError, match="group 1"):
        fast.compact(key, 0, 1, level, [None, np.empty(1, dtype=np.int64)], [None, np.empty(1, dtype=np.int32)])



steps = st.lists(st.tuples(st.integers(1, 2**20), st.integers(0, 300)), min_size=1, max_size=80)


@settings(max_examples=200, deadline=None)
@given(steps, st.sampled_from([np.int32, np.int64]), st.integers(1, 9), st.sampled_from([0, 2**40]))
def test_area_equals_the_reference(segments, dtype, block, scale):
    # scale: products past 2**63, where both wrap the same way inside a block.
    times = np.cumsum([0] + [d * (1 + scale) for d, _ in segments]).astype(np.int64)
    level = np.array([lv << (20 if scale and dtype == np.int64 else 0) for _, lv in segments] + [0], dtype=dtype)
    assert fast.area(times, level, block) == concurrency._reference_area(times, level, block)
    if not scale:
        assert fast.area(times, level, block) == sum(int(lv) * (int(b) - int(a)) for lv, a, b in zip(level, times, times[1:]))


@settings(max_examples=200, deadline=None)
@given(steps, st.sampled_from([np.int32, np.int64]), st.sampled_from([1, 3, 2**40 + 1]))
def test_level_durations_equal_the_bincount(segments, dtype, scale):
    # Large durations make the float additions round: the same order gives the same bits.
    times = np.cumsum([0] + [d * scale for d, _ in segments]).astype(np.int64)
    level = np.array([lv for _, lv in segments] + [0], dtype=dtype)
    sw = concurrency.Sweep(times, level)
    peak = int(level[:-1].max())
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("SANDBOX_FLEET_PURE_PYTHON", raising=False)
        got = concurrency._level_durations(sw, peak)
        mp.setenv("SANDBOX_FLEET_PURE_PYTHON", "1")
        expect = concurrency._level_durations(sw, peak)
    assert got.dtype == expect.dtype and got.tobytes() == expect.tobytes()


def test_level_durations_refuse_a_level_out_of_range():
    times, level = np.array([0, 5, 9], dtype=np.int64), np.array([2, -1, 0], dtype=np.int32)
    with pytest.raises(ValueError, match="level"):
        fast.level_durations(times, level, np.zeros(3))
    with pytest.raises(ValueError, match="level"):
        fast.level_durations(times, np.array([3, 0, 0], dtype=np.int32), np.zeros(3))


# --- whole runs --------------------------------------------------------------------------
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
WHOLE_INPUTS = [*sorted(p for p in (FIXTURES / "harbor").iterdir() if p.is_dir()),
                *sorted(p for p in (FIXTURES / "harbor-layouts").iterdir() if p.is_dir()),
                *sorted((FIXTURES / "terminal_bench").iterdir()),
                *sorted((FIXTURES / "inspect").glob("*.eval"))]


def _both(run_cli, monkeypatch, path) -> tuple:
    monkeypatch.delenv("SANDBOX_FLEET_PURE_PYTHON", raising=False)
    compiled = run_cli("measure", path, "--json")
    monkeypatch.setenv("SANDBOX_FLEET_PURE_PYTHON", "1")
    pure = run_cli("measure", path, "--json")
    monkeypatch.delenv("SANDBOX_FLEET_PURE_PYTHON")
    return compiled, pure


@pytest.mark.parametrize("path", WHOLE_INPUTS, ids=lambda p: p.name)
def test_measure_json_is_the_same_bytes_with_and_without_the_twins(run_cli, monkeypatch, path):
    compiled, pure = _both(run_cli, monkeypatch, path)
    assert (compiled.code, compiled.out) == (pure.code, pure.out)


@pytest.mark.parametrize("seed", [1, 2])
def test_measure_json_of_a_many_job_many_model_table_is_the_same_bytes(run_cli, monkeypatch, tmp_path, seed):
    # Several jobs and models, nulls in both: the grouped sweep and every group column run.
    path = tmp_path / "rollouts.parquet"
    pq.write_table(random_table(seed, 3000), path, row_group_size=700)
    compiled, pure = _both(run_cli, monkeypatch, path)
    assert compiled.code == 0 and '"by_job"' in compiled.out
    assert compiled.out == pure.out
