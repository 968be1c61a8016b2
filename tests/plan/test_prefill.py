"""Measured cache hits reduce computed prefill; a planned cache never saves twice."""

from __future__ import annotations

import copy
import json

import pytest

from sandbox_fleet.plan import PlanOptions
from sandbox_fleet.plan.prefill import computed_prefill, mean_context, planned_cached_prefill
from sandbox_fleet.plan.turns import TurnMoments, histogram_moments
from summaries import plan_json

from .conftest import PUBLISHED


def test_computed_and_planned_prefill_by_hand():
    # 10,000 input tok/s, 80% cached: 2,000 computed. Planned with S = 6: min(1,667, 2,000) = 1,667.
    assert computed_prefill(10_000, 0.8) == pytest.approx(2_000)
    assert planned_cached_prefill(10_000, 6.0, 0.8) == pytest.approx(10_000 / 6)
    # 90% already cached beats the prefix cache's 1/6: keep 1,000, never 1,000 / 6
    assert planned_cached_prefill(10_000, 6.0, 0.9) == pytest.approx(1_000)
    assert computed_prefill(10_000, None) == 10_000


def test_turn_weighted_mean_context():
    # c = 100; 1 rollout of 1 turn and 1 of 3: contexts 100 | 100, 200, 300 -> 700 / 4 turns = 175
    assert mean_context(100, histogram_moments({1: 1, 3: 1}), 0) == pytest.approx(175)
    # one turn count alone (--turns 11): contexts 100 ... 1,100 -> 600
    assert mean_context(100, TurnMoments(11, 66, "--turns"), 0) == pytest.approx(600)
    assert mean_context(None, TurnMoments(11, 66, "--turns"), 32_768) == 32_768


def test_a_summary_with_80_percent_cached_plans_fewer_gpus_than_one_with_none():
    base = json.loads(PUBLISHED.read_text())
    hit = copy.deepcopy(base)
    hit["tokens"]["cached_fraction"] = 0.8
    opts = PlanOptions(concurrency=3000, gpu_prefill_tok_s=20_000, gpu_decode_tok_s=2_000)
    cold, warm = plan_json(base, opts)["inference"], plan_json(hit, opts)["inference"]
    # prefill 48.062 x 3,000 = 144,186 tok/s; decode 1.717 x 3,000 = 5,151 tok/s
    assert cold["prefill_tok_s_computed"] == pytest.approx(144_186, abs=1)
    assert warm["prefill_tok_s_computed"] == pytest.approx(0.2 * 144_186, abs=1)
    # cold: ceil((144,186 / 20,000 + 5,151 / 2,000) / 0.7) = ceil(9.785 / 0.7 = 13.98) = 14
    # warm: ceil((28,837 / 20,000 + 2.5755) / 0.7) = ceil(4.017 / 0.7 = 5.74) = 6
    assert (cold["gpus"], warm["gpus"]) == (14, 6)
