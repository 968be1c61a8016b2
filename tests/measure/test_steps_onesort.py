"""One sort of all starts serves every step pass (issue 12): the partitioned, partial-sort
path equals a brute-force pass that sorts each run's starts and every gap and ranks the
jumps with a full stable argsort, on Hypothesis-generated schedules and on random noise."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox_fleet.measure import steps as steps_mod
from sandbox_fleet.measure.steps import (
    MAX_CANDIDATES,
    _ranked_breaks,
    _sorted_top_gaps,
    group_rows,
    group_starts,
    measure_grouped_steps,
    measure_steps,
    sorted_starts,
)

S = 1_000_000


def brute_ranked(asc: np.ndarray, limit: int) -> list[tuple[int, float, int]]:
    """The ranking as first written: every jump, one full stable argsort, first ``limit``."""
    kmax = asc.size // 2
    if kmax < 1:
        return []
    desc = np.maximum(asc[asc.size - kmax - 1:][::-1], 1)
    jumps = desc[:kmax] / desc[1:kmax + 1]
    order = np.argsort(-jumps, kind="stable")[:limit]
    return [(int(i) + 1, float(jumps[i]), int(desc[i + 1])) for i in order]


def brute_measure_steps(start_us: np.ndarray, finish_us: np.ndarray) -> dict:
    """measure_steps with its ranking and gap selection replaced by the brute-force ones."""
    real_ranked, real_top = steps_mod._ranked_breaks, steps_mod._sorted_top_gaps
    steps_mod._ranked_breaks = lambda asc, limit, total=None: brute_ranked(asc, limit)
    steps_mod._sorted_top_gaps = lambda s: np.sort(np.diff(s))
    try:
        return measure_steps(start_us, finish_us)
    finally:
        steps_mod._ranked_breaks, steps_mod._sorted_top_gaps = real_ranked, real_top


@st.composite
def schedules(draw):
    """Starts of 1..4 runs, each in batches (some with queued stragglers), or plain noise."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n_runs = draw(st.integers(1, 4))
    starts, codes = [], []
    for run in range(n_runs):
        if draw(st.booleans()):
            steps = draw(st.integers(1, 8))
            batch = draw(st.integers(1, 40))
            period_s = draw(st.sampled_from([60, 600, 4600]))
            spread_s = draw(st.sampled_from([0, 1, 30, 300]))
            offset = int(rng.integers(0, period_s * S))
            s = (offset + np.repeat(np.arange(steps) * period_s * S, batch)
                 + rng.integers(0, spread_s * S + 1, steps * batch))
        else:
            n = draw(st.integers(0, 120))
            grain = draw(st.sampled_from([1, S, 60 * S]))  # coarse grains make ties
            s = rng.integers(0, 50, n) * grain
        starts.append(s.astype(np.int64))
        codes.append(np.full(s.size, run, dtype=np.int64))
    start = np.concatenate(starts)
    code = np.concatenate(codes)
    perm = rng.permutation(start.size)
    start, code = start[perm], code[perm]
    finish = start + rng.integers(0, 3000 * S, start.size)
    if draw(st.booleans()) and code.size:
        code = np.where(rng.random(code.size) < 0.1, -1, code)  # rows without a run (null job)
    return start, finish, code, n_runs


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 50), min_size=0, max_size=60), st.integers(1, 8))
def test_ranking_equals_full_stable_argsort(gaps, limit):
    asc = np.sort(np.asarray(gaps, dtype=np.int64))
    assert _ranked_breaks(asc, limit) == brute_ranked(asc, limit)
    # Only the largest half (plus one) of the gaps is needed, and the partial sort gives it.
    if asc.size >= 1:
        s = np.concatenate(([0], np.cumsum(np.asarray(gaps, dtype=np.int64))))
        top = _sorted_top_gaps(s)
        assert top.tolist() == asc[asc.size - top.size:].tolist()
        assert _ranked_breaks(top, limit, total=asc.size) == brute_ranked(asc, limit)


@settings(max_examples=150, deadline=None)
@given(schedules())
def test_one_sort_steps_equal_brute_force_per_run(data):
    start, finish, code, n_runs = data
    # The overall pass, fed the shared sort, equals the brute-force pass.
    s_all, (part,) = sorted_starts(start, [code])
    assert s_all.tolist() == np.sort(start).tolist()
    assert measure_steps(start, finish, starts_sorted=s_all) == brute_measure_steps(start, finish)
    # Per run: the partition of the one sort holds each run's starts sorted, and the per-run
    # results equal a brute-force pass over that run's rows alone.
    for g, got in enumerate(group_starts(s_all, part, n_runs)):
        assert got.tolist() == np.sort(start[code == g]).tolist()
    rows = group_rows(code, n_runs)
    names = [f"run{g}" for g in range(n_runs)]
    fast = measure_grouped_steps(start, finish, rows, names, (s_all, part))
    brute = {names[g]: brute_measure_steps(start[code == g], finish[code == g])
             for g in range(n_runs) if (code == g).any()}
    assert fast == brute


def test_two_groupings_share_one_sort():
    rng = np.random.default_rng(3)
    start = rng.integers(0, 10**9, 5000)
    models = rng.integers(0, 5, 5000)
    jobs = np.where(rng.random(5000) < 0.2, -1, rng.integers(0, 40, 5000))
    s_all, (by_model, by_job) = sorted_starts(start, [models, jobs])
    assert s_all.tolist() == np.sort(start).tolist()
    # 5 models are picked by masks, 40 jobs by one stable argsort: both give each group sorted.
    for codes, part, n in ((models, by_model, 5), (jobs, by_job, 40)):
        for g, got in enumerate(group_starts(s_all, part, n)):
            assert got.tolist() == np.sort(start[codes == g]).tolist()


def test_wide_codes_fall_back_to_one_sort_per_group():
    # Times spanning 61 bits leave no room for the codes (2 bits): each group is sorted alone.
    rng = np.random.default_rng(4)
    start = np.repeat(rng.integers(0, 2**61, 30), 10) + rng.integers(0, 1000, 300)
    codes = rng.integers(-1, 3, 300)
    s_all, (part,) = sorted_starts(start, [codes])
    assert s_all.tolist() == np.sort(start).tolist() and part is None
    finish = start + 5
    names = ["a", "b", "c"]
    got = measure_grouped_steps(start, finish, group_rows(codes, 3), names, (s_all, part))
    assert got == {n: brute_measure_steps(start[codes == g], finish[codes == g]) for g, n in enumerate(names)}


def test_candidates_keep_position_order_among_equal_jumps():
    # Nine gaps: the largest five, descending, are 10000, 1000, 1000, 100, 100, so the jumps
    # are 10, 1, 10, 1; the two 10x jumps tie and rank by position (k = 1, then k = 3).
    asc = np.array([1, 1, 10, 10, 100, 100, 1000, 1000, 10000], dtype=np.int64)
    assert _ranked_breaks(asc, MAX_CANDIDATES) == brute_ranked(asc, MAX_CANDIDATES)
    assert _ranked_breaks(asc, 2) == [(1, 10.0, 1000), (3, 10.0, 100)]
