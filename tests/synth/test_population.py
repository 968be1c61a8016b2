"""Per-rollout attribute draws: joint structure and the rates they are calibrated to."""

import numpy as np
import pytest

from sandbox_fleet.synth import calibration as cal
from sandbox_fleet.synth.population import draw_population, input_ratio


def _pop(name, n=20_000, seed=5):
    prof = next(m for m in cal.MODELS if m.name == name)
    return prof, draw_population(np.random.default_rng(seed), prof, n)


def test_published_model_slices():
    for name, pub in cal.PUBLISHED["by_model"].items():
        _prof, p = _pop(name)
        assert p.has_exception.mean() == pytest.approx(pub["exception_rate"], abs=1e-4)
        assert np.median(p.hold_s) == pytest.approx(pub["hold_median_s"], rel=0.05)


def test_joint_structure_of_a_row():
    _, p = _pop("Qwen3.5-27B")
    # Every clean row is rewarded; only exception rows may lack a reward.
    assert not np.isnan(p.reward[~p.has_exception]).any()
    assert set(np.unique(p.reward[~np.isnan(p.reward)])) <= {0.0, 1.0}
    # Turns and token counts are present on exactly the same rows.
    assert np.array_equal(p.turns >= 1, p.has_tokens)
    assert np.array_equal(p.input_tokens >= 0, p.has_tokens)
    # A missing trajectory only ever on a row without counts.
    assert not (~p.has_trajectory & p.has_tokens).any()
    assert p.hold_s.min() >= cal.HOLD_MIN_S and p.hold_s.max() <= cal.HOLD_MAX_S
    # Exception rows almost never pass (0.97%), clean ones do about a quarter of the time.
    assert (p.reward[p.has_exception] == 1).mean() == pytest.approx(0.0097, abs=0.001)


def test_input_ratio_reproduces_published_medians_at_knots():
    for n, median in cal.PUBLISHED["median_input_by_turns"].items():
        assert input_ratio(np.array([n]))[0] * n * (n + 1) / 2 == pytest.approx(median, rel=1e-4)


def test_input_tokens_grow_quadratically_in_turns():
    _, p = _pop("qwen35-27b-iter0000161-hf", n=60_000)
    t, x = p.turns[p.has_tokens], p.input_tokens[p.has_tokens]
    for n in (5, 11, 20):
        med = np.median(x[t == n])
        assert med / (n * (n + 1) / 2) == pytest.approx(cal.PUBLISHED["median_input_by_turns"][n] / (n * (n + 1) / 2), rel=0.05)


def test_passing_rollouts_take_fewer_turns():
    _, p = _pop("Qwen3.6-27B-base", n=40_000)
    tok = p.has_tokens
    assert np.median(p.turns[tok & (p.reward == 1)]) == 9
    assert np.median(p.turns[tok & (p.reward == 0)]) == 11


def test_same_seed_same_draws():
    _, a = _pop("gpt-oss-120b", n=3000, seed=9)
    _, b = _pop("gpt-oss-120b", n=3000, seed=9)
    assert np.array_equal(a.hold_s, b.hold_s) and np.array_equal(a.input_tokens, b.input_tokens)
