"""The warm pool's size (plan/warm_pool.py) checked by brute force and by the simulator: the bisection
finds the least size a linear scan finds; the sized pool keeps the simulated RL step within the stated
lengthening and one sandbox fewer does not (the simulator places every claim, warm or cold through the
bucket, starting cap and cold start, event by event: an independent computation on independent draws)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from sandbox_fleet.plan.model import Starts
from sandbox_fleet.plan.ramp import creation_delays_s
from sandbox_fleet.plan.rent import Provider
from sandbox_fleet.plan.target import HoldSampler
from sandbox_fleet.plan.warm_pool import Lengthening, smallest_warm, warm_pool_block
from sandbox_fleet.simulate import Fleet, SyncRL, run_workloads
from sandbox_fleet.simulate.engine.sandbox_limits import SandboxLimits

B, TRAIN_S, COLD_S, RATE, BURST, REFILL = 64, 20.0, 30.0, 1.0, 8, 1.0
HOLDS = HoldSampler({0.5: 100.0, 0.99: 100.0 * float(np.exp(0.25 * 2.326348))}, mean=None)


def provider(**kw) -> Provider:
    base = {"name": "k8s", "source": "test", "as_of": "2026", "vcpu_usd_s": 0.0, "memory_gib_usd_s": 0.0, "rented": False,
                "max_creates_per_s": RATE, "max_creates_burst": BURST, "warm_pool_refill_per_s": REFILL,
                "cold_start_p50_s": COLD_S}
    return Provider(**{**base, **kw})


def steps_s(warm: int, holds: np.ndarray, steps: int, limits: bool = True) -> np.ndarray:
    lim = SandboxLimits(creates_per_s=RATE, creates_burst=BURST, cold_start_s=COLD_S, warm_pool_size=warm,
                        warm_pool_refill_per_s=REFILL) if limits else None
    res = run_workloads(Fleet(cap=None, limits=lim), [SyncRL(batch=B, steps=steps, train_s=TRAIN_S, holds=holds)],
                        seed=1)
    st = res.steps[0]
    return st["batch_end_s"] - st["release_s"]


def test_bisection_finds_what_a_scan_finds():
    f = Lengthening(B, creation_delays_s(B, RATE, BURST, None, COLD_S), HOLDS)
    vals = [f(w) for w in range(B + 1)]
    assert all(a >= b for a, b in itertools.pairwise(vals))  # common draws: falls with the pool
    for budget in (0.0, 1.0, 5.0, 10.0, 30.0, 1e9):
        assert smallest_warm(B, budget, f) == next(w for w, v in enumerate(vals) if v <= budget)


def test_sized_pool_keeps_the_simulated_step_within_the_share():
    rng = np.random.default_rng(2026)
    n_steps = 1500
    holds = HOLDS.sample(rng, n_steps * B)
    plain = steps_s(0, holds, n_steps, limits=False)
    step_s = float(plain.mean()) + TRAIN_S  # release to release, as measure reports it
    wp = warm_pool_block(Starts(batch=B, step_s=step_s), provider(), HOLDS)
    assert wp is not None and wp.size is not None and 0 < wp.size < B, wp
    budget = 0.05 * step_s
    f = Lengthening(B, creation_delays_s(B, RATE, BURST, None, COLD_S), HOLDS)
    for warm in (0, B // 2, wp.size - 1, wp.size):
        extra = (steps_s(warm, holds, n_steps) - plain)[1:]  # the first step finds the pool full whatever the refill
        se = float(extra.std(ddof=1) / np.sqrt(extra.size))
        assert abs(extra.mean() - f(warm)) <= 3 * se + 0.02 * f(warm), (warm, extra.mean(), f(warm), se)
        if warm == wp.size:
            assert extra.mean() <= budget + 3 * se, (warm, extra.mean(), budget, se)
        if warm == wp.size - 1:
            assert extra.mean() >= budget - 3 * se, (warm, extra.mean(), budget, se)
    assert f(wp.size) <= budget < f(wp.size - 1)


def test_a_short_refill_is_named_not_sized():
    wp = warm_pool_block(Starts(batch=B, step_s=40.0), provider(warm_pool_refill_per_s=0.05), HOLDS)
    assert wp is not None and wp.size is None and wp.needed is not None and wp.needed > 0.05 * 40
    assert "no pool size keeps the step" in (wp.basis or "")


def test_without_a_hold_fit_the_worst_case_decides():
    # d_k = 30 + max(0, k - 8): within 5% of 800 s (40 s) are the cold ones with d_k <= 40: k <= 18
    wp = warm_pool_block(Starts(batch=B, step_s=800.0), provider(), None)
    assert wp is not None and wp.size == B - 18
    assert "worst case" in (wp.basis or "")


@pytest.mark.parametrize("missing", ["warm_pool_refill_per_s", "cold_start_p50_s"])
def test_not_sized_without_its_inputs(missing):
    wp = warm_pool_block(Starts(batch=B, step_s=800.0), provider(**{missing: None}), HOLDS)
    assert wp is not None and wp.size is None and (wp.basis or "").startswith("not sized")
