"""Campaign planning: model rows, batch sizes, the expected-max formula, the pool."""


import numpy as np
import pytest

from sandbox_fleet.synth import calibration as cal
from sandbox_fleet.synth import campaign as cp
from sandbox_fleet.synth.population import draw_population


def test_rows_per_model_sum_exactly():
    assert sum(cp.rows_per_model(1.0).values()) == 327_189
    assert sum(cp.rows_per_model(0.05).values()) == round(327_189 * 0.05)


def test_hold_cdf_matches_drawn_population():
    prof = cp.profile("Qwen3.6-27B-base")
    p = draw_population(np.random.default_rng(2), prof, 50_000)
    for x in (100.0, 1023.0, 5000.0):
        assert cp.hold_cdf(prof, np.array([x]))[0] == pytest.approx((p.hold_s <= x).mean(), abs=0.005)


def test_expected_max_against_brute_force():
    prof = cp.profile("gpt-oss-120b")
    p = draw_population(np.random.default_rng(4), prof, 64_000)
    rng = np.random.default_rng(0)
    for b in (1, 16, 256):
        maxima = [rng.choice(p.hold_s, b, replace=False).max() for _ in range(400)]
        assert cp.expected_max_hold(prof, b) == pytest.approx(np.mean(maxima), rel=0.06)


def test_expected_max_of_one_is_the_mean():
    prof = cp.profile("Qwen3.5-27B")
    p = draw_population(np.random.default_rng(8), prof, 100_000)
    assert cp.expected_max_hold(prof, 1) == pytest.approx(p.hold_s.mean(), rel=0.01)


def test_plan_scales_batches_and_cap():
    pops = {m: draw_population(np.random.default_rng(i), cp.profile(m), n) for i, (m, n) in enumerate(cp.rows_per_model(0.1).items())}
    runs = cp.plan_runs(pops, 0.1)
    for r in runs:
        assert r.batch[0] == round(r.plan.prompts * 0.1) * cp.GROUP_SIZE
        assert r.batch.sum() == len(r.population)
        assert r.train_s >= 0
        assert r.start_s == pytest.approx(r.plan.start * cal.PUBLISHED["span_s"])
    f = cp.fleet(0.1)
    assert f.cap == 300 and f.provision_delay_s == pytest.approx(20.0)
    # The two Qwen3.5 runs release more than the cap per step: their steps saturate the pool.
    assert max(r.batch[0] for r in runs) > f.cap
