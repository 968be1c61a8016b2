"""Context model, caching savings (with broken prefixes) and GPU sizing, against hand arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

from sandbox_fleet.plan.inference import Roofline, cache_saving, gpus_needed, mix_saving, model_error


def per_turn_cost(n: int, broken: set[int], c: float = 1.0) -> tuple[float, float]:
    """(uncached, cached) prefill by walking turns: turn k sends k*c tokens; cached pays c unless broken."""
    uncached = sum(k * c for k in range(1, n + 1))
    cached = sum((k * c if k in broken else c) for k in range(1, n + 1))
    return uncached, cached


@pytest.mark.parametrize("n, expected", [(1, 1.0), (5, 3.0), (11, 6.0), (21, 11.0), (50, 25.5)])
def test_saving_is_turns_plus_one_over_two(n, expected):
    u, c = per_turn_cost(n, set())
    assert cache_saving(n) == pytest.approx(u / c) == pytest.approx(expected)


def test_saving_with_every_turn_broken_is_one_and_expectation_matches_walks():
    assert cache_saving(11, 1.0) == pytest.approx(1.0)
    # expected cached cost over random break patterns, by sampling walks (independent of the formula)
    rng = np.random.default_rng(7)
    n, f = 11, 0.3
    costs = [per_turn_cost(n, {k for k in range(1, n + 1) if rng.random() < f})[1] for _ in range(20_000)]
    assert cache_saving(n, f) == pytest.approx(66.0 / np.mean(costs), rel=0.01)
    # and exactly: 66 / (0.7 * 11 + 0.3 * 66) = 66 / 27.5
    assert cache_saving(n, f) == pytest.approx(2.4)


def test_mix_saving_is_ratio_of_sums():
    # 2 rollouts of 1 turn (1 vs 1) and 1 of 3 turns (6 vs 3): 8 / 5
    assert mix_saving({1: 2, 3: 1}) == pytest.approx(1.6)
    # half the turns broken: cached 3-turn cost = 0.5*3 + 0.5*6 = 4.5, 1-turn = 1 -> 8 / 6.5
    assert mix_saving({1: 2, 3: 1}, 0.5) == pytest.approx(8 / 6.5)
    assert mix_saving({}) is None


def test_model_error_matches_the_document_at_two_turns():
    # 824 * 3 / 3207 - 1
    assert model_error({2: 3207}, 824)[2] == pytest.approx(2472 / 3207 - 1)


def test_roofline_hand_computed():
    r = Roofline(flops=1e15, hbm_bytes_s=3e12, params=1e10, kv_bytes_per_token=1e5, utilisation=0.5,
                 bytes_per_param=2, decode_batch=100, context_tokens=1000)
    assert r.prefill_tok_s() == pytest.approx(25_000)  # 0.5e15 / 2e10
    assert r.decode_tok_s() == pytest.approx(5_000)  # 1.5e12 / (2e8 + 1e8)


def test_gpus_shared_between_prefill_and_decode():
    g = gpus_needed(100_000, 5_000, 25_000, 5_000)
    assert (g.gpus, g.binding) == (5, "prefill")  # 4 + 1
    g = gpus_needed(10_000, 9_000, 25_000, 5_000)
    assert (g.gpus, g.binding) == (3, "decode")  # ceil(0.4 + 1.8)
