"""Issue 40 item 2: the plan's signal block against independent computations of the same questions.

The over-sampled release against scipy's binomial quantile; its nodes and $/h against a plan made for
that concurrency on the same node type and tier; the cost per informative group against the rows'
own mean hold, the plan's price of a busy sandbox-hour and the measured expected share; the measured
sandbox-hours per informative group against groups counted here in plain Python.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pyarrow as pa
import pytest
from scipy import stats

from sandbox_fleet.measure import measure_telemetry
from sandbox_fleet.plan import PlanOptions, make_plan
from sandbox_fleet.telemetry.record import Telemetry, conform_rollouts

BASE_S = 1_780_000_000.0


def _corpus(seed: int = 4) -> tuple[list[dict], np.ndarray]:
    """One synchronous run: 30 steps 3,000 s apart, each 24 of 80 tasks x 8 rollouts within 2 s."""
    rng = np.random.default_rng(seed)
    p = rng.choice([0.0, 0.1, 0.4, 0.8, 1.0], size=80)
    rows = []
    for step in range(30):
        for t in rng.choice(80, size=24, replace=False):
            for _ in range(8):
                exc = bool(rng.random() < 0.25)
                reward = None if exc and rng.random() < 0.7 else float(not exc and rng.random() < p[t])
                rows.append({"task": f"t{t:02d}", "step": step, "start": 3000.0 * step + 2 * rng.random(),
                             "hold": 200 + 1500 * rng.random(), "reward": reward, "exc": exc})
    return rows, p


def _telemetry(rows: list[dict]) -> Telemetry:
    ts = pa.timestamp("us", tz="UTC")
    cols = {
        "id": [f"r{i}" for i in range(len(rows))],
        "task_id": [r["task"] for r in rows],
        "model": ["m"] * len(rows),
        "started_at": pa.array([int((BASE_S + r["start"]) * 1e6) for r in rows], ts),
        "finished_at": pa.array([int((BASE_S + r["start"] + r["hold"]) * 1e6) for r in rows], ts),
        "reward": [r["reward"] for r in rows],
        "has_exception": [r["exc"] for r in rows],
    }
    return Telemetry(conform_rollouts(pa.table(cols)), sources=["<signal>"])


@pytest.fixture(scope="module")
def measured():
    rows, _ = _corpus()
    return rows, measure_telemetry(_telemetry(rows))


def test_release_is_the_binomial_quantile_and_its_nodes_a_plan_for_it(measured):
    _, m = measured
    opts = PlanOptions(groups_per_batch=40, signal_confidence=0.9)
    plan = make_plan(m, opts)
    sig = plan.signal
    assert sig is not None and sig.group_size == 8 and sig.groups_per_batch == 40
    share = sig.informative_share
    assert share == m.rl_groups.expected_informative_share  # same G: the same expression
    n = sig.groups_released
    assert stats.binom.sf(39, n, share) >= 0.9 > stats.binom.sf(39, n - 1, share)
    assert (sig.release_rollouts, sig.release_rollouts_without) == (8 * n, 8 * 40)
    assert sig.oversampling_factor == pytest.approx(n / 40)
    for rollouts, nodes, usd in ((sig.release_rollouts, sig.nodes_release, sig.usd_per_h_release),
                                 (sig.release_rollouts_without, sig.nodes_without, sig.usd_per_h_without)):
        other = make_plan(m, PlanOptions(concurrency=rollouts, node_type=plan.nodes.type, price_tier=plan.cost.tier))
        assert nodes == other.nodes.count
        assert usd == getattr(other.cost, f"{plan.cost.tier}_per_h")


def test_cost_per_informative_group_beside_cost_per_pass(measured):
    rows, m = measured
    plan = make_plan(m, PlanOptions(groups_per_batch=40))
    sig = plan.signal
    hold_mean_h = sum(r["hold"] for r in rows) / len(rows) / 3600
    want_h = 8 * hold_mean_h / sig.informative_share
    assert sig.sandbox_hours_per_informative_group == pytest.approx(want_h, rel=1e-6)
    assert sig.usd_per_informative_group == pytest.approx(want_h * plan.cost.per_busy_sandbox_hour, rel=1e-9)
    assert sig.usd_per_pass == plan.cost.per_passing_trajectory
    passes = sum(1 for r in rows if r["reward"] == 1.0)
    assert sig.sandbox_hours_per_pass == pytest.approx(sum(r["hold"] for r in rows) / 3600 / passes, rel=1e-6)


def test_measured_hours_per_informative_group_counted_by_hand(measured):
    rows, m = measured
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        groups[(r["step"], r["task"])].append(r)
    informative = sum(1 for g in groups.values()
                      if any(not r["exc"] and r["reward"] == 1.0 for r in g)
                      and any(not r["exc"] and r["reward"] == 0.0 for r in g))
    rg = m.rl_groups
    assert rg.groups == len(groups) and rg.informative == informative
    assert rg.sandbox_hours_per_informative_group == pytest.approx(sum(r["hold"] for r in rows) / 3600 / informative,
                                                                   rel=1e-6)
    flipped = sum(1 for g in groups.values()
                  if any(not r["exc"] and r["reward"] == 1.0 for r in g)
                  and not any(not r["exc"] and r["reward"] == 0.0 for r in g) and any(r["exc"] for r in g))
    assert rg.flipped == flipped
    plan = make_plan(m, PlanOptions(groups_per_batch=40))
    assert plan.signal.exception_zero_flipped_share_measured == pytest.approx(flipped / len(groups))
    assert "bias" in (plan.signal.bias or "")


def test_group_size_flag_recomputes_the_share_and_b_defaults_to_the_measured_batch(measured):
    _, m = measured
    plan = make_plan(m, PlanOptions(group_size=16))
    sig = plan.signal
    assert sig.group_size == 16 and sig.informative_share_measured is None  # no groups of 16 were recorded
    assert sig.informative_share > m.rl_groups.expected_informative_share  # more rollouts, more chance to differ
    # B from the measured step: 24 groups of 8 = 192 rollouts a step, / 16
    assert sig.groups_per_batch == 12 and "192" in sig.groups_per_batch_basis


def test_bad_signal_options_are_one_line_errors(measured):
    from sandbox_fleet.errors import InputError

    _, m = measured
    for opts in (PlanOptions(group_size=1), PlanOptions(groups_per_batch=0), PlanOptions(signal_confidence=1.0)):
        with pytest.raises(InputError):
            make_plan(m, opts)


def test_over_sampling_grows_as_signal_thins():
    # the mean factor is 1 / share; the confident one lies above it and converges to it as B grows
    from sandbox_fleet.measure.signal_math import groups_needed

    for share in (0.05, 0.3, 0.75):
        factors = [groups_needed(b, share, 0.95) / b for b in (4, 64, 4096)]
        assert factors[0] > factors[1] > factors[2] > 1 / share
        assert factors[2] == pytest.approx(1 / share, rel=0.08)
        assert math.isfinite(factors[0])
