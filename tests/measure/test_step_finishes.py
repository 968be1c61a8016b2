"""Finishes sorted within steps (one packed key built a block at a time) against brute force:
each row's step found by a linear scan of the step starts, each step's finishes sorted in Python."""

from __future__ import annotations

import numpy as np
import pytest

from sandbox_fleet.measure import steps as steps_mod


def _brute(start_us, finish_us, first_us):
    per = [[] for _ in first_us]
    for s, f in zip(start_us.tolist(), finish_us.tolist()):
        g = max(i for i, first in enumerate(first_us.tolist()) if first <= s)
        per[g].append(f - int(first_us[g]))
    return [sorted(p) for p in per]


def _case(seed: int, wide: bool = False):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    scale = 2**61 if wide else 10**9
    start = np.sort(rng.integers(0, scale // 4, n)).astype(np.int64)
    finish = start + rng.integers(0, scale // 4, n)
    k = int(rng.integers(1, min(n, 12) + 1))
    first = np.unique(np.concatenate(([start[0]], rng.choice(start, k - 1))))
    perm = rng.permutation(n)  # rows in any order, not sorted by start
    return start[perm], finish[perm], first


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("block", [7, 1 << 20])
def test_finishes_by_step_equal_brute_force(monkeypatch, seed, block):
    monkeypatch.setattr(steps_mod, "_BLOCK", block)
    start, finish, first = _case(seed, wide=seed % 5 == 4)  # some too wide to pack: the fallback
    got, offsets = steps_mod._finishes_by_step(start, finish, first)
    want = _brute(start, finish, first)
    assert [got[offsets[g]:offsets[g + 1]].tolist() for g in range(first.size)] == want
    assert offsets[-1] == start.size
