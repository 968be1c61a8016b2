"""Issue 40 items 1-2: the informative-group share and the over-sampling factor against independent truth.

Oracles here, written apart from ``measure.signal_math``: a brute-force enumeration of every outcome of
every rollout of small groups (and of every task choice for small releases), a Monte Carlo on corpora
made with known per-task probabilities (measured end to end through ``measure_telemetry``), scipy's Beta
quantiles and binomial tail, and hand-counted groups.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from scipy import stats

from sandbox_fleet.measure import measure_telemetry
from sandbox_fleet.measure.signal_math import (
    BetaPrior,
    beta_interval,
    fit_prior,
    groups_needed,
    posterior_shares,
)
from sandbox_fleet.telemetry.record import Telemetry, conform_rollouts
from signal_oracle import point_shares

PASS, FAIL, EXC, NONE = "pass", "fail", "exc", "none"


def _classify(outcomes: tuple[str, ...]) -> str:
    """The issue's definitions, by hand: valid = pass or fail; signal needs a valid pass and a valid fail."""
    p, f = outcomes.count(PASS), outcomes.count(FAIL)
    if p + f < 2:
        return "too_few_valid"
    if p and f:
        return "informative"
    return "all_pass" if p else "all_fail"


def _flips(outcomes: tuple[str, ...]) -> bool:
    """Exceptions scored as 0: the group's class changes from no signal to signal."""
    as_zero = tuple(FAIL if o == EXC else o for o in outcomes)
    return _classify(outcomes) != "informative" and _classify(as_zero) == "informative"


def _brute(tasks: list[tuple[float, float, float]], g: int) -> dict[str, float]:
    """Every outcome vector of a group of g, each task (p, v, exception share of invalid) equally likely."""
    out = dict.fromkeys(("informative", "all_pass", "all_fail", "too_few_valid", "flipped"), 0.0)
    for p, v, phi in tasks:
        prob = {PASS: v * p, FAIL: v * (1 - p), EXC: (1 - v) * phi, NONE: (1 - v) * (1 - phi)}
        for outcomes in itertools.product(prob, repeat=g):
            w = math.prod(prob[o] for o in outcomes) / len(tasks)
            out[_classify(outcomes)] += w
            out["flipped"] += w * _flips(outcomes)
    return out


@pytest.mark.parametrize("g", [2, 3, 4, 5])
@pytest.mark.parametrize("tasks", [
    [(0.3, 0.7, 1.0)],
    [(0.02, 0.9, 0.6), (0.5, 0.5, 0.6), (0.97, 0.8, 0.6)],
    [(0.0, 1.0, 1.0), (1.0, 0.4, 1.0)],
])
def test_binomial_expression_matches_brute_force(g, tasks):
    p, v = np.array([t[0] for t in tasks]), np.array([t[1] for t in tasks])
    sh = point_shares(p, v, g, tasks[0][2])
    want = _brute(tasks, g)
    for k in want:
        assert getattr(sh, k) == pytest.approx(want[k], abs=1e-12), k


def test_posterior_with_huge_counts_is_the_point_expression():
    # A task seen 10^7 times has its posterior at its rate: the expectation collapses to the point value.
    prior = BetaPrior(2.0, 3.0)
    sh = posterior_shares(np.array([1e7]), np.array([7e6]), np.array([2.1e6]), prior, prior, 6, 0.5)
    pt = point_shares(np.array([0.3]), np.array([0.7]), 6, 0.5)
    assert sh.informative == pytest.approx(pt.informative, abs=1e-5)
    assert sh.flipped == pytest.approx(pt.flipped, abs=1e-5)


def test_posterior_expectation_against_monte_carlo_over_the_posterior():
    # E over p ~ Beta, v ~ Beta of the point expression (drawn, not integrated) = the closed form.
    rng = np.random.default_rng(3)
    pp, vp = BetaPrior(0.4, 0.9), BetaPrior(3.0, 1.0)
    rows, valid, passed = np.array([5.0, 0.0, 12.0]), np.array([3.0, 0.0, 10.0]), np.array([1.0, 0.0, 9.0])
    closed = posterior_shares(rows, valid, passed, pp, vp, 8, 0.7)
    draws = 200_000
    acc = 0.0
    for r, v_, k in zip(rows, valid, passed):
        p = rng.beta(pp.alpha + k, pp.beta + v_ - k, draws)
        v = rng.beta(vp.alpha + v_, vp.beta + r - v_, draws)
        acc += float(np.mean(1 - (1 - v * p) ** 8 - (1 - v * (1 - p)) ** 8 + (1 - v) ** 8)) / 3
    assert closed.informative == pytest.approx(acc, abs=4e-3)


def _needed_brute(tasks: list[tuple[float, float]], g: int, b: int, confidence: float, n_max: int) -> int | None:
    """The least N with P(>= b informative of N groups) >= confidence, enumerating every task choice
    and every rollout outcome of every group (pass, fail, invalid)."""
    per_group = []
    for p, v in tasks:
        for outcomes in itertools.product((PASS, FAIL, EXC), repeat=g):
            w = math.prod({PASS: v * p, FAIL: v * (1 - p), EXC: 1 - v}[o] for o in outcomes) / len(tasks)
            per_group.append((w, _classify(outcomes) == "informative"))
    for n in range(b, n_max + 1):
        total = sum(math.prod(x[0] for x in combo) for combo in itertools.product(per_group, repeat=n)
                    if sum(x[1] for x in combo) >= b)
        if total >= confidence:
            return n
    return None


@pytest.mark.parametrize("b,confidence", [(1, 0.5), (1, 0.9), (1, 0.97), (2, 0.5), (2, 0.7)])
def test_oversampling_matches_brute_force_enumeration(b, confidence):
    tasks, g = [(0.5, 0.95), (0.35, 1.0)], 3
    share = point_shares(np.array([t[0] for t in tasks]), np.array([t[1] for t in tasks]), g).informative
    want = _needed_brute(tasks, g, b, confidence, n_max=3)
    got = groups_needed(b, share, confidence)
    assert want is not None and got == want


@pytest.mark.parametrize("b,share,confidence", [(13, 0.758, 0.95), (256, 0.3, 0.99), (1000, 0.05, 0.9), (1, 0.5, 0.95)])
def test_oversampling_is_scipys_binomial_quantile(b, share, confidence):
    n = groups_needed(b, share, confidence)
    assert stats.binom.sf(b - 1, n, share) >= confidence
    assert stats.binom.sf(b - 1, n - 1, share) < confidence


def test_oversampling_matches_monte_carlo_dynamic_sampling():
    # Dynamic sampling as a trainer runs it: draw a task, roll G, keep the group if it has signal, until B.
    rng = np.random.default_rng(11)
    p = np.array([0.01, 0.03, 0.25, 0.5, 0.9, 0.99])
    v, g, b, conf = 0.7, 8, 16, 0.9
    share = point_shares(p, np.full(p.size, v), g).informative
    n = groups_needed(b, share, conf)
    runs = 20_000
    task = rng.integers(0, p.size, size=(runs, 8 * n))
    valid = rng.random((runs, 8 * n, g)) < v
    passed = rng.random((runs, 8 * n, g)) < p[task][:, :, None]
    informative = (valid & passed).any(axis=2) & (valid & ~passed).any(axis=2)
    needed = np.argmax(np.cumsum(informative, axis=1) >= b, axis=1) + 1
    se = math.sqrt(conf * (1 - conf) / runs)
    assert np.mean(needed <= n) >= conf - 4 * se
    assert np.mean(needed <= n - 1) < conf + 4 * se


def test_beta_interval_against_scipy():
    for a, b in ((0.3, 0.7), (1.0, 9.0), (80.0, 220.0), (2.5, 0.4), (1.0, 1.0)):
        lo, hi = beta_interval(a, b)
        assert lo == pytest.approx(stats.beta.ppf(0.025, a, b), abs=1e-8)
        assert hi == pytest.approx(stats.beta.ppf(0.975, a, b), abs=1e-8)


def test_prior_recovers_a_known_beta():
    rng = np.random.default_rng(5)
    p = rng.beta(1.2, 2.8, size=20_000)  # mean 0.3, strength 4
    n = rng.integers(4, 30, size=p.size)
    k = rng.binomial(n, p)
    prior = fit_prior(k, n)
    assert prior is not None
    assert prior.mean == pytest.approx(0.3, abs=0.01)
    assert prior.strength == pytest.approx(4.0, rel=0.1)
    homogeneous = fit_prior(rng.binomial(10, 0.4, size=5000), np.full(5000, 10))
    assert homogeneous is not None and homogeneous.strength > 100


# --- the measured groups, end to end ----------------------------------------------------------

def _ts(seconds) -> pa.Array:
    return pa.array([round(s * 1e6) for s in seconds], pa.timestamp("us", tz="UTC"))


def _telemetry(rows: list[dict]) -> Telemetry:
    base = 1_780_000_000.0
    cols = {
        "id": [f"r{i}" for i in range(len(rows))],
        "task_id": [r["task"] for r in rows],
        "model": [r.get("model", "m") for r in rows],
        "job": [r.get("job", "j") for r in rows],
        "started_at": _ts([base + r["start"] for r in rows]),
        "finished_at": _ts([base + r["start"] + r["hold"] for r in rows]),
        "reward": [r["reward"] for r in rows],
        "has_exception": [r["exc"] for r in rows],
    }
    return Telemetry(conform_rollouts(pa.table(cols)), sources=["<groups>"])


def _known_corpus(p: np.ndarray, v: np.ndarray, g: int, steps: int, per_step: int, seed: int) -> list[dict]:
    """Synchronous steps 2,000 s apart; each releases ``per_step`` tasks x g rollouts within 2 s."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(steps):
        for t in rng.choice(p.size, size=per_step, replace=False):
            for _ in range(g):
                valid = rng.random() < v[t]
                exc = not valid and rng.random() < 0.8
                reward = None if (not valid and not exc) else float(valid and rng.random() < p[t])
                rows.append({"task": f"t{t:03d}", "start": 2000.0 * s + rng.random() * 2, "hold": 100 + 800 * rng.random(),
                             "reward": reward, "exc": exc})
    return rows


def test_measured_and_expected_shares_on_a_corpus_with_known_probabilities():
    rng = np.random.default_rng(7)
    tasks, g = 120, 8
    p = rng.choice([0.0, 0.05, 0.3, 0.6, 0.95, 1.0], size=tasks)
    v = rng.uniform(0.5, 0.95, size=tasks)
    rows = _known_corpus(p, v, g, steps=40, per_step=60, seed=8)
    rg = measure_telemetry(_telemetry(rows)).rl_groups
    assert rg is not None and rg.recorded and rg.groups == 40 * 60 and rg.group_size_median == g
    truth = point_shares(p, v, g, 0.8).informative  # every task is drawn equally often
    se = math.sqrt(truth * (1 - truth) / rg.groups)
    assert rg.informative_share == pytest.approx(truth, abs=4 * se)
    # the binomial expression over the posteriors (20 groups a task on average): within 0.03 of the truth
    assert rg.expected_informative_share == pytest.approx(truth, abs=0.03)
    assert rg.expected_flipped_share == pytest.approx(point_shares(p, v, g, 0.8).flipped, abs=0.02)


def test_hand_counted_groups_and_exceptions_scored_as_zero():
    # Three steps (runs by model "m"), tasks a and b; classes counted by hand below.
    R = []  # (step, task, reward, exception)
    R += [(0, "a", 1.0, False), (0, "a", 0.0, False), (0, "a", 0.0, True)]   # informative
    R += [(0, "b", 1.0, False), (0, "b", 1.0, False), (0, "b", 0.0, True)]   # all pass, flips (exception scored 0)
    R += [(1, "a", 0.0, False), (1, "a", None, False), (1, "a", None, True)]  # too few valid (one)
    R += [(1, "b", 0.0, False), (1, "b", 0.0, False), (1, "b", 0.0, False)]  # all fail
    R += [(2, "a", 1.0, False), (2, "a", None, True), (2, "a", 1.0, True)]   # too few valid, flips
    R += [(2, "b", 1.0, False), (2, "b", 0.0, False), (2, "b", 1.0, False)]  # informative
    rows = []
    for i, (step, task, reward, exc) in enumerate(R * 2):  # twice over: runs by model m1 and m2, 36 rows
        model = "m1" if i < len(R) else "m2"
        rows.append({"task": task, "model": model, "start": 3000.0 * step + 0.1 * (i % 9) + (0 if model == "m1" else 10_000),
                     "hold": 50.0, "reward": reward, "exc": exc})
    # pad each run past the 20 starts steps detection needs: add a fourth step of 6 one-row groups, all fail
    for model, off in (("m1", 0), ("m2", 10_000)):
        for k in range(6):
            rows.append({"task": f"c{k}", "model": model, "start": 9000.0 + off + 0.1 * k, "hold": 50.0, "reward": 0.0,
                         "exc": False})
    rg = measure_telemetry(_telemetry(rows)).rl_groups
    assert rg is not None and rg.recorded
    assert rg.groups == 2 * (6 + 6)
    # 12 groups of 3 rows and 12 of 1 (by hand): an even count, so the mean of the middle pair, 1 and 3
    assert (rg.group_size_median, rg.group_size_min, rg.group_size_max) == (2.0, 1, 3)
    assert (rg.informative, rg.all_pass, rg.all_fail) == (4, 2, 2)
    assert rg.too_few_valid == 2 * (2 + 6)
    assert rg.flipped == 4
    assert rg.exceptions == 2 * 5 and rg.no_reward == 2 * 1
    # exception rows with a reward: a/0 step0, b/0 step0, a/1.0 step2 -> scored 3, failing 2, per run
    assert (rg.exceptions_scored, rg.exceptions_scored_zero) == (6, 4)
    rewarded = sum(1 for r in rows if r["reward"] is not None)
    assert rg.exceptions_scored_zero_share == pytest.approx(4 / rewarded)


def test_no_group_structure_is_said_and_shares_are_expected_for_the_group_size():
    rows = [{"task": f"t{i}", "start": 37.0 * i, "hold": 30.0, "reward": float(i % 3 == 0), "exc": i % 7 == 0}
            for i in range(40)]
    rg = measure_telemetry(_telemetry(rows), group_size=4).rl_groups
    assert rg is not None and rg.recorded is False and "no group structure" in (rg.note or "")
    assert rg.informative_share is None and rg.group_size == 4 and rg.group_size_basis == "--group-size"
    assert rg.expected_informative_share is not None and 0 < rg.expected_informative_share < 1


def test_tasks_that_almost_never_or_always_pass_are_counted():
    # 30 tasks x 4 steps of 8: ten never pass, ten always pass, ten pass half the time (all valid).
    rows = []
    for step in range(4):
        for t in range(30):
            for k in range(8):
                reward = 0.0 if t < 10 else 1.0 if t < 20 else float(k % 2)
                rows.append({"task": f"t{t:02d}", "start": 5000.0 * step + 0.01 * (t * 8 + k), "hold": 60.0,
                             "reward": reward, "exc": False})
    rg = measure_telemetry(_telemetry(rows)).rl_groups
    assert rg is not None and rg.informative == 40 and rg.all_pass == 40 and rg.all_fail == 40
    # the prior is nearly flat (tasks spread far beyond binomial noise): 32 fails put a task's interval under 0.1
    assert rg.pass_prior is not None and rg.pass_prior.strength is not None and rg.pass_prior.strength < 1
    assert (rg.tasks_almost_never, rg.tasks_almost_always) == (10, 10)
    low = rg.lowest[0]
    assert low.pass_rate_raw == 0.0 and low.pass_prob_ci95 is not None
    a, b = rg.pass_prior.alpha, rg.pass_prior.beta
    assert low.pass_prob_ci95[1] == pytest.approx(stats.beta.ppf(0.975, a, b + 32), abs=1e-8)


def test_a_corpus_where_every_valid_rollout_passes_is_measured_without_error():
    # mean 1: the prior is a point mass at 1 (Beta(a, 0)); no group can be informative
    rows = [{"task": f"t{i % 5}", "start": 3000.0 * (i // 25) + 0.01 * i, "hold": 20.0, "reward": 1.0, "exc": i % 9 == 0}
            for i in range(100)]
    rg = measure_telemetry(_telemetry(rows)).rl_groups
    assert rg is not None and rg.informative == 0 and rg.expected_informative_share == 0.0
    assert rg.tasks_almost_always == rg.task_units and rg.tasks_almost_never == 0
    assert rg.highest and rg.highest[0].pass_prob_ci95 == [1.0, 1.0]


def test_the_docs_worked_example_by_hand():
    # docs/measure.md "A worked example you can check by hand": the figures are hand arithmetic
    # (fractions of powers of 2 and of 0.05 / 0.95), and the page shows them.
    a = point_shares(np.array([0.5]), np.array([0.75]), 4)
    assert a.informative == pytest.approx(0.2109375 * 0.5 + 0.421875 * 0.75 + 0.31640625 * 0.875, abs=1e-15)
    assert a.all_pass == pytest.approx(0.2109375 * 0.25 + 0.421875 * 0.125 + 0.31640625 * 0.0625, abs=1e-15)
    assert a.flipped == pytest.approx(0.046875 * 0.5 + 0.2109375 * 0.25 + 0.421875 * 0.125, abs=1e-15)
    b = point_shares(np.array([0.05]), np.array([0.75]), 4)
    assert b.informative == pytest.approx(0.2109375 * 0.095 + 0.421875 * 0.1425 + 0.31640625 * 0.1854875, abs=1e-12)
    both = point_shares(np.array([0.5, 0.05]), np.array([0.75, 0.75]), 4).informative
    assert (groups_needed(4, both, 0.9), groups_needed(4, both, 0.5)) == (14, 9)
    page = (Path(__file__).resolve().parents[2] / "docs" / "measure.md").read_text(encoding="utf-8")
    for shown in ("| 0.1425 |", "| 0.1854875 |", "**0.69873**", "**0.13885**", "**0.41879**", "**14**", "0.12891", "**4.78 sandbox-hours**"):
        assert shown in page
    assert f"{both:.5f}" == "0.41879" and f"{4 * 0.5 / both:.2f}" == "4.78"


def test_row_order_does_not_move_a_figure():
    rows = _known_corpus(np.array([0.0, 0.2, 0.5, 0.9, 1.0] * 4), np.full(20, 0.7), 4, steps=12, per_step=8, seed=9)
    perm = np.random.default_rng(1).permutation(len(rows))
    a = measure_telemetry(_telemetry(rows)).rl_groups
    b = measure_telemetry(_telemetry([rows[i] for i in perm])).rl_groups
    assert a is not None and a.model_dump() == b.model_dump()
