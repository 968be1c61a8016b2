"""Issue 22's decision points, each against an independent computation: time-weighted mixes, context
over the turn distribution, creation ramps, spot re-runs in every cost, the hold fit and the
fingerprint a report or check compares."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest

from sandbox_fleet import contract
from sandbox_fleet.jsonio import to_jsonable
from sandbox_fleet.plan import PlanOptions
from sandbox_fleet.plan.render import plan_lines
from sandbox_fleet.plan.turns import lognormal_moments
from summaries import as_measure, as_plan, plan_json

from .conftest import PUBLISHED
from .independent import ffd_nodes, restart_interruptions, turn_expectations

SEED_96C = {"cpu": 96, "memory": 384 * 1024, "disk": 4096 * 1024}


def _published() -> dict:
    return json.loads(PUBLISHED.read_text())


def _plan(summary: dict, **kw) -> dict:
    return to_jsonable(plan_json(summary, PlanOptions(**kw)))


# --- item 2: a kind's share of concurrent sandboxes is its share of sandbox-time ------------------


def _two_kinds() -> dict:
    s = _published()
    s["tasks"]["requests"] = [
        {"cpus": 1.0, "memory_mb": 2048, "storage_mb": 1024, "tasks": 900, "rollouts": 900, "sandbox_hours": 900 * 600 / 3600},
        {"cpus": 8.0, "memory_mb": 2048, "storage_mb": 1024, "tasks": 100, "rollouts": 100, "sandbox_hours": 100 * 6000 / 3600},
    ]
    return s


def test_mix_is_weighted_by_sandbox_time_not_rollouts():
    p = _plan(_two_kinds(), concurrency=1000, node_type="seed-96c")
    n = p["nodes"]
    # 900 x 600 s = 540,000 s and 100 x 6,000 s = 600,000 s: 1,000 x 540/1,140 = 473.7 -> 474, 526.3 -> 526
    assert [m["concurrent"] for m in n["mix"]] == [474, 526]
    # cores: 474 x 1 + 526 x 8 = 4,682 over 96-core nodes: ceil(48.77) = 49, and FFD packs it there
    assert n["lower_bound"] == math.ceil(4682 / 96) == 49
    kinds = [({"cpu": 1, "memory": 2048, "disk": 1024}, 474), ({"cpu": 8, "memory": 2048, "disk": 1024}, 526)]
    assert n["count"] == ffd_nodes(kinds, SEED_96C) == 49
    # weighted by rollouts (900 / 100) it would be 900 + 800 = 1,700 cores: 18 nodes, a third of the need
    assert ffd_nodes([(kinds[0][0], 900), (kinds[1][0], 100)], SEED_96C) == 18
    assert n["mix_basis"].startswith("sandbox-hours per kind")
    assert "weighted by sandbox-hours per kind" in "\n".join(plan_lines(as_plan(p)))


def test_storage_and_rent_follow_the_time_weighted_mix():
    p = _plan(_two_kinds(), concurrency=1000, node_type="aws-m6id.24xlarge", rent_providers=["modal"])
    # scratch in use: 1,000 sandboxes x 1,024 MB whatever the split, so check the rent share instead:
    assert p["storage"]["scratch_at_target_gb"] == pytest.approx(1000 * 1024 / 1024)
    # modal per sandbox-hour: 474/1000 of a 1-vCPU sandbox and 526/1000 of an 8-vCPU one (2 GiB each)
    cpu_s, gib_s = 0.0000197, 0.00000672
    per_h = [3600 * (c * cpu_s + 2 * gib_s) for c in (1, 8)]
    assert p["cost"]["rent"]["modal"]["usd_per_sandbox_h"] == pytest.approx(0.474 * per_h[0] + 0.526 * per_h[1])


def test_k8s_warm_pools_split_by_the_time_weighted_mix():
    import yaml

    from sandbox_fleet.plan.k8s import K8sOptions, build_manifests

    s = _two_kinds()
    s["steps"] = {"detected": True, "batch_size": 100, "release_spread_s": 0.0, "step_period_s": 6000.0}
    # a cold start as long as the step: only a pool of the whole batch keeps the step within 5% (plan/warm_pool.py)
    p = _plan(s, concurrency=1000, node_type="aws-m6id.24xlarge", warm_cold_start_s=6000.0)
    assert p["warm_pool"]["size"] == 100
    pools = {d["metadata"]["name"].rsplit("-", 2)[-2]: d["spec"]["replicas"]
             for d in yaml.safe_load_all(build_manifests(as_plan(p), K8sOptions(cluster="c1"))["sandboxwarmpool.yaml"])}
    # the pool of 100, shared 526 : 474 -> 52.6 / 47.4 -> 53 / 47
    assert pools == {"8cpu": 53, "1cpu": 47}


def test_without_per_kind_hours_the_mix_says_it_assumes_equal_holds():
    s = _two_kinds()
    for r in s["tasks"]["requests"]:
        r["sandbox_hours"] = None
    p = _plan(s, concurrency=1000, node_type="seed-96c")
    assert [m["concurrent"] for m in p["nodes"]["mix"]] == [900, 100]
    assert "equal holds are assumed" in p["nodes"]["mix_basis"]
    assert any("equal holds are assumed" in x for x in p["notes"])


# --- item 3: context and caching over the turn distribution ---------------------------------------


def test_lognormal_turn_moments_match_numerical_integration():
    m1, m2 = turn_expectations(11, 21, upto=2000)
    got = lognormal_moments(11, 21)
    assert got.mean == pytest.approx(m1, rel=1e-9) and got.half_square == pytest.approx(m2, rel=1e-9)
    # a wider spread reaches the closed-form tail: still the integral
    w1, w2 = turn_expectations(11, 80, upto=5000)
    wide = lognormal_moments(11, 80)
    assert wide.mean == pytest.approx(w1, rel=1e-6) and wide.half_square == pytest.approx(w2, rel=1e-5)


def test_lognormal_moments_are_what_the_simulator_draws():
    """Monte Carlo of simulate's own draw, max(rint(lognormal), 1) (simulate/engine/episode.py)."""
    sigma = math.log(21 / 11) / 1.2816
    x = np.random.default_rng(3).lognormal(math.log(11), sigma, 2_000_000)
    n = np.maximum(np.rint(x), 1)
    got = lognormal_moments(11, 21)
    assert got.mean == pytest.approx(n.mean(), rel=2e-3)
    assert got.half_square == pytest.approx((n * (n + 1) / 2).mean(), rel=5e-3)


def test_published_context_kv_and_caching_over_the_distribution_not_the_median():
    m1, m2 = turn_expectations(11, 21, upto=2000)
    p = _plan(_published(), concurrency=374, gpu_memory_gb=80.0, gpu_prefill_tok_s=20_000, gpu_decode_tok_s=2_000,
              roofline=None)
    ctx = 824 * m2 / m1
    assert p["inference"]["context_tokens_mean"] == pytest.approx(ctx, rel=1e-9)
    assert ctx == pytest.approx(7054, abs=1) and ctx / (824 * 6) - 1 == pytest.approx(0.427, abs=0.001)
    # caching: E[n(n+1)/2] / E[n] (no breaks), not (11 + 1) / 2 = 6
    assert p["caching"]["saving_applied"] == pytest.approx(m2 / m1, rel=1e-9)
    assert "lognormal turns (median 11, p90 21" in p["caching"]["saving_basis"]
    text = "\n".join(plan_lines(as_plan(p)))
    assert "mean context per turn 7,054 tokens" in text


def test_live_kv_uses_the_distribution_context():
    from sandbox_fleet.plan.inference import Roofline

    m1, m2 = turn_expectations(11, 21, upto=2000)
    rl = Roofline(flops=989e12, hbm_bytes_s=3.35e12, params=27e9, kv_bytes_per_token=65536)
    p = _plan(_published(), concurrency=374, gpu_memory_gb=80.0, roofline=rl)
    assert p["inference"]["memory"]["kv_gb_live"] == pytest.approx(374 * 824 * m2 / m1 * 65536 / 2**30, rel=1e-9)


def test_a_histogram_is_used_as_measured():
    s = _published()
    s["tokens"]["turns_histogram"] = {"1": 1, "3": 1}
    p = _plan(s, concurrency=10)
    # contexts 824 | 824, 1,648, 2,472 -> 5,768 / 4 turns
    assert p["inference"]["context_tokens_mean"] == pytest.approx(5768 / 4)
    assert p["caching"]["saving_applied"] == pytest.approx((1 + 6) / (1 + 3))


def test_optimize_simulates_the_same_turn_fit(tmp_path):
    """optimize's turn draws are the lognormal the plan averages over (same median, same sigma)."""
    from sandbox_fleet.optimize.inputs import load_input

    f = tmp_path / "m.json"
    f.write_text(PUBLISHED.read_text())
    base = load_input(f, pass_rate=None, model_params_b=None, kv_bytes_per_token=None)
    turns = base.data["turns"]["turns"]
    assert turns["dist"] == "lognormal" and turns["median_s"] == 11
    assert turns["sigma"] == pytest.approx(math.log(21 / 11) / 1.2816, abs=1e-6)
    assert f"sigma {turns['sigma']:.3f}" in lognormal_moments(11, 21).basis


# --- item 4: a creation rate is a ramp per step ---------------------------------------------------


def _stepped(batch: int, step_s: float) -> dict:
    s = _published()
    s["steps"] = {"detected": True, "batch_size": batch, "release_spread_s": 0.0, "step_period_s": step_s}
    return s


def test_a_batch_of_90_on_30000_s_steps_rents_at_5_creates_per_s():
    p = _plan(_stepped(90, 30_000.0), concurrency=90, node_type="aws-m6id.24xlarge", price_tier="on_demand",
              rent_providers=["e2b"])
    e2b = p["cost"]["rent"]["e2b"]
    # 90 / 5 = 18 s of ramp, at most 18 s added to a 30,000-s step: 0.06% < the 1% tolerance
    assert e2b["ramp_s"] == pytest.approx(18.0) and e2b["ramp_step_share"] == pytest.approx(18 / 30_000)
    assert e2b["within_limits"] and e2b["limits_hit"] == []
    busy = 90 * p["cost"]["duty"]
    # each rented hold (published mean 2,102.6 s) carries e2b's substrate: 0.15 s + 0.05 s per turn over
    # the lognormal turns through median 11 and p90 21 (mean 11 e^(sigma^2 / 2), sigma = ln(21/11) / 1.2816)
    turns = 11 * math.exp((math.log(21 / 11) / 1.2816) ** 2 / 2)
    factor = 1 + (0.15 + 0.05 * turns) / 2102.631549349153
    assert e2b["usd_per_h"] == pytest.approx(busy * 3600 * (0.000014 + 2 * 0.0000045) * factor, rel=1e-6)
    assert p["cost"]["rent_verdict"].startswith("rent: renting on e2b")
    text = "\n".join(plan_lines(as_plan(p)))
    assert "a step's batch ramps over 18.0 s: expected +" in text and "at most 0.06% of the step" in text


def test_a_ramp_past_the_stated_share_of_the_step_is_a_limit():
    # 90 / 5 = 18 s at most; expected about half of it over the published holds (tests/plan/test_ramp_expected.py
    # checks the expectation against an integral). On a 1,000-s step the bound, 1.8%, is past 1% but the
    # expected ~0.9% is not: it fits (issue 38 item 7). On a 500-s step the expected ~1.8% > 1%: a limit
    p = _plan(_stepped(90, 1_000.0), concurrency=90, node_type="aws-m6id.24xlarge", rent_providers=["e2b"])
    e2b = p["cost"]["rent"]["e2b"]
    assert e2b["ramp_step_share"] == pytest.approx(0.018) and e2b["ramp_expected_step_share"] < 0.01
    assert e2b["within_limits"]
    p = _plan(_stepped(90, 500.0), concurrency=90, node_type="aws-m6id.24xlarge", rent_providers=["e2b"])
    (hit,) = p["cost"]["rent"]["e2b"]["limits_hit"]
    assert hit.startswith("a batch of 90 ramps over 18.0 s at 5 creates/s: expected +")
    assert hit.endswith("of the 500-s step > 1.00% (at most 3.60%)")
    p = _plan(_stepped(90, 500.0), concurrency=90, node_type="aws-m6id.24xlarge", rent_providers=["e2b"], rl_tolerance=0.02)
    assert p["cost"]["rent"]["e2b"]["within_limits"]


def test_concurrency_and_sustained_start_rates_stay_hard_limits():
    p = _plan(_stepped(90, 30_000.0), concurrency=101, node_type="aws-m6id.24xlarge", rent_providers=["e2b"])
    assert p["cost"]["rent"]["e2b"]["limits_hit"] == ["target 101 concurrent > account limit 100"]
    # an open workload (no steps) whose Little's-law start rate exceeds 5/s: 100 x duty / hold > 5
    s = _published()
    s["hold_s"]["mean"] = 1.0
    s["hold_s"]["median"] = 1.0
    p = _plan(s, concurrency=100, node_type="aws-m6id.24xlarge", rent_providers=["e2b"])
    rate = 100 * p["cost"]["duty"] / 1.0
    assert rate > 5 and p["cost"]["rent"]["e2b"]["limits_hit"] == [f"sustained start rate {rate:.3g}/s > 5 creates/s"]


# --- item 5: spot re-runs in every cost -----------------------------------------------------------

SPOTTY = """
[[node]]
name = "spotty"
vcpus = 96
memory_gb = 384
disk_gb = 7000
reserved_usd_h = 2.0
on_demand_usd_h = 3.0
spot_usd_h = 1.0
spot_interruptions_per_node_h = 0.5
spot_interruptions_source = "test"
reserve_cpu = 0
reserve_memory_gb = 0
reserve_disk_gb = 0
"""


def test_exponential_holds_closed_form_rework_and_interruptions(tmp_path):
    """Holds exponential with mean m (only a mean measured): E[e^(r h)] = 1 / (1 - r m), so the expected
    reclaims per hold E[e^(r h) - 1] = r m / (1 - r m), and the re-run share E[(e^(rh) - 1)/r - h] / m is the same."""
    nodes = tmp_path / "n.toml"
    nodes.write_text(SPOTTY)
    s = _published()
    s["hold_s"] = {"mean": 2102.631549349153}
    p = _plan(s, concurrency=960, nodes_file=str(nodes), price_tier="spot", gpu_usd_h=2.0, trainer_gpus=4)
    rw, cost = p["cost"]["spot_rework"], p["cost"]
    rm = 0.5 * 2102.631549349153 / 3600
    closed = rm / (1 - rm)
    assert rw["mean_interruptions_per_hold"] == pytest.approx(closed, rel=1e-12)  # closed form now, no sample
    assert rw["rework_share"] == pytest.approx(closed, rel=1e-12)
    assert rw["basis"] == "expectation over the exponential hold fit, closed form (r m / (1 - r m))"
    assert rw["mean_interruptions_per_hold"] > rm * 1.3  # not rate x mean hold
    # the cost per pass carries the re-runs: 10 nodes x $1 x (1 + share) / (960 x duty) x sandbox-h per pass
    busy, shpp, share = 960 * cost["duty"], p["measured"]["sandbox_hours_per_pass"], rw["rework_share"]
    assert cost["spot_per_h"] == 10.0
    assert cost["per_passing_trajectory"] == pytest.approx(10.0 * (1 + share) / busy * shpp)
    assert cost["per_passing_trajectory_by_tier"]["spot"] == cost["per_passing_trajectory"]
    assert cost["per_passing_trajectory_by_tier"]["on_demand"] == pytest.approx(30.0 / busy * shpp)
    # all in: every part divides by the passes the spot fleet delivers, busy / (shpp x (1 + share))
    passes = busy / shpp / (1 + share)
    assert cost["passing_per_h"] == pytest.approx(passes)
    assert cost["per_passing_trajectory_parts"]["fleet"] == pytest.approx(cost["per_passing_trajectory"])
    assert cost["per_passing_trajectory_parts"]["trainer"] == pytest.approx(4 * 2.0 / passes)
    assert "spot re-runs included" in cost["per_pass_basis"]


def test_exponential_holds_past_one_reclaim_per_mean_hold_are_unbounded_and_said_so(tmp_path):
    """r x mean >= 1 (0.5 reclaims per node-h, a 2 h mean hold): E[e^(r h)] = 1 / (1 - r m) diverges, so no
    re-run share exists; the plan states it and leaves every spot figure per pass unpriced (the bare spot
    price would make more reclaims look cheaper), in the cost line, the mixed purchase and the rent verdict."""
    nodes = tmp_path / "n.toml"
    nodes.write_text(SPOTTY)
    s = _published()
    s["hold_s"] = {"mean": 7200.0}
    p = _plan(s, concurrency=960, nodes_file=str(nodes), price_tier="spot")
    rw, cost = p["cost"]["spot_rework"], p["cost"]
    assert rw["rework_share"] is None and rw["mean_interruptions_per_hold"] is None and rw["spot_per_h_with_rework"] is None
    assert rw["basis"].startswith("unbounded: under the exponential hold fit (mean 7,200 s) r x mean = 1 >= 1")
    assert cost["per_pass_basis"].startswith("spot not priced per pass: at 0.5 reclaims per node-h the re-runs")
    assert cost["per_passing_trajectory"] is None and cost["per_passing_trajectory_all_in"] is None
    assert cost["passing_per_h"] is None and cost["per_passing_trajectory_by_tier"]["spot"] is None
    assert cost["per_passing_trajectory_by_tier"]["on_demand"] is not None  # the other tiers stay priced
    assert cost["mixed"] is None  # bursting on spot has no price either
    assert "has no spot price to compare" in cost["rent_verdict"] or cost["rent_verdict"].startswith("buy: no rental provider")
    text = plan_lines(as_plan(p))
    assert f"  spot re-runs: {rw['basis']}" in text
    assert any("not costed (spot re-runs unbounded" in line for line in text)


def test_spot_never_gets_cheaper_per_pass_as_reclaims_rise(tmp_path):
    """Across the unbounded boundary (r x mean = 1 at 0.5 per node-h for a 2 h mean) the spot cost per
    pass rises with the rate and then is not priced: never a bare spot price below the bounded one."""
    s = _published()
    s["hold_s"] = {"mean": 7200.0}
    bounded = []
    for rate in (0.1, 0.3, 0.45, 0.49, 0.5, 0.8):
        nodes = tmp_path / f"n{rate}.toml"
        nodes.write_text(SPOTTY.replace("spot_interruptions_per_node_h = 0.5", f"spot_interruptions_per_node_h = {rate}"))
        per_pass = _plan(s, concurrency=960, nodes_file=str(nodes), price_tier="spot")["cost"]["per_passing_trajectory_by_tier"]["spot"]
        x = rate * 7200.0 / 3600.0
        if x < 1:
            bounded.append((per_pass, x))
        else:
            assert per_pass is None
    # closed form for exponential holds: 1 + share = 1 / (1 - x), so per pass x (1 - x) is the bare price per pass
    assert [p for p, _ in bounded] == sorted(p for p, _ in bounded)
    bare = [p * (1 - x) for p, x in bounded]
    assert bare == pytest.approx([bare[0]] * len(bare), rel=1e-12)


def test_published_holds_interruptions_by_monte_carlo_and_rent_verdict_with_re_runs(tmp_path):
    from sandbox_fleet.plan.summary import Figures
    from sandbox_fleet.plan.target import fitted_holds

    nodes = tmp_path / "n.toml"
    nodes.write_text(SPOTTY)
    s = _published()
    p = _plan(s, concurrency=960, nodes_file=str(nodes), price_tier="spot")
    rw, cost = p["cost"]["spot_rework"], p["cost"]
    # 100,000 holds drawn from the fitted distribution (the fit is an input here, its expectation under test)
    holds_h = fitted_holds(Figures(as_measure(s))).sample(np.random.default_rng(20_261_201), 100_000) / 3600
    mc_reclaims, mc_share = restart_interruptions(holds_h, 0.5)
    assert rw["mean_interruptions_per_hold"] == pytest.approx(mc_reclaims, rel=0.02)
    assert rw["rework_share"] == pytest.approx(mc_share, rel=0.02)
    # the figures: 0.411 reclaims per hold (not 0.5 x mean hold = 0.292), $14.05/h with re-runs on $10/h
    assert rw["mean_interruptions_per_hold"] == pytest.approx(0.411, abs=0.002)
    assert 0.5 * 2102.631549349153 / 3600 == pytest.approx(0.292, abs=0.001)
    assert rw["spot_per_h_with_rework"] == pytest.approx(14.05, abs=0.01)
    # the verdict compares renting with the spot fleet WITH its re-runs
    modal = cost["rent"]["modal"]["usd_per_h"]
    assert cost["rent_verdict"] == (
        f"buy: renting on modal costs ${modal:,.2f}/h for the busy sandbox-hours vs ${rw['spot_per_h_with_rework']:,.2f}/h for "
        f"10 x spotty with spot re-runs (+{rw['rework_share'] * 100:.3g}% sandbox-hours) on spot ({modal / rw['spot_per_h_with_rework']:.1f}x cheaper to buy)")
    assert f"{rw['mean_interruptions_per_hold']:.3f} reclaims per hold (E[e^(r h) - 1]" in "\n".join(plan_lines(as_plan(p)))


# --- item 9: the hold fit in the text; outputs carry their summary's fingerprint ------------------


def test_rl_plan_states_its_hold_fit_and_the_p90_it_chose():
    p = _plan(_published(), batch=64, train_s=300.0)
    fit = p["target"]["hold_fit"]
    text = "\n".join(plan_lines(as_plan(p)))
    assert f"hold fit: {fit['basis']}" in text
    assert "piecewise lognormal through min 3.8 s, median 1,332 s, p90" in fit["basis"]
    assert "p90 not measured: chosen so the fit's mean is the measured 2,103 s" in fit["basis"]
    # independently: log-linear interpolation in the normal score through the stated knots has that mean
    from statistics import NormalDist

    z = NormalDist()
    rows = 327_189
    q = {float(k): v for k, v in fit["quantiles"].items()}
    knots = sorted([(z.inv_cdf(1 / (2 * rows)), q[0.0]), (z.inv_cdf(0.5), q[0.5]), (z.inv_cdf(0.9), q[0.9]),
                    (z.inv_cdf(0.99), q[0.99]), (z.inv_cdf(1 - 1 / (2 * rows)), q[1.0])])
    g = np.linspace(-8, 8, 400_001)
    pdf = np.exp(-g * g / 2) / math.sqrt(2 * math.pi)
    zc = np.clip(g, knots[0][0], knots[-1][0])
    holds = np.exp(np.interp(zc, [k[0] for k in knots], np.log([k[1] for k in knots])))
    assert float(np.trapezoid(holds * pdf, g)) == pytest.approx(2102.63, rel=0.01)


def test_plan_carries_the_fingerprint_of_its_summary():
    s = _published()
    p = _plan(s, concurrency=100)
    assert p["input"]["fingerprint"] == contract.fingerprint(contract.parse(_measure_model(), s))
    changed = copy.deepcopy(s)
    changed["rows"] += 1
    assert _plan(changed, concurrency=100)["input"]["fingerprint"] != p["input"]["fingerprint"]


def _measure_model():
    from sandbox_fleet.measure.model import MeasureSummary

    return MeasureSummary


def test_check_and_report_refuse_a_plan_from_another_summary(run_cli, tmp_path):
    other = _published()
    other["rows"] += 1
    (tmp_path / "other.json").write_text(json.dumps(other))
    plan = tmp_path / "plan.json"
    assert run_cli("plan", tmp_path / "other.json", "--concurrency", "100", "-o", plan).code == 0
    res = run_cli("check", PUBLISHED, "--plan", plan)
    assert res.code == 2 and len(res.err.strip().splitlines()) == 1
    assert f"--plan {plan}: made from another measure summary" in res.err and "--allow-mismatch" in res.err
    assert run_cli("check", PUBLISHED, "--plan", plan, "--allow-mismatch").code in (0, 1)
    assert run_cli("check", tmp_path / "other.json", "--plan", plan).code in (0, 1)
    res = run_cli("report", PUBLISHED, "--plan", plan, "-o", tmp_path / "r.html")
    assert res.code == 2 and "made from another measure summary" in res.err and not (tmp_path / "r.html").exists()


def test_report_refuses_an_optimize_summary_from_another_summary(tmp_path):
    from sandbox_fleet.errors import InputError
    from sandbox_fleet.measure.model import MeasureSummary
    from sandbox_fleet.report.inputs import check_same_source

    m = contract.load(MeasureSummary, PUBLISHED)
    check_same_source(m, {"--optimize o.json": contract.fingerprint(m), "--plan old.json": None})  # same, or unknown
    with pytest.raises(InputError, match="--optimize o.json: made from another measure summary"):
        check_same_source(m, {"--optimize o.json": "sha256:0000000000000000"})
    check_same_source(m, {"--optimize o.json": "sha256:0000000000000000"}, allow_mismatch=True)


def test_optimize_records_the_fingerprint_of_its_measure_summary(tmp_path):
    from sandbox_fleet.measure.model import MeasureSummary
    from sandbox_fleet.optimize.inputs import load_input

    f = tmp_path / "m.json"
    f.write_text(PUBLISHED.read_text())
    base = load_input(f, pass_rate=None, model_params_b=None, kv_bytes_per_token=None)
    assert base.fingerprint == contract.fingerprint(contract.load(MeasureSummary, PUBLISHED))
