"""``[substrate]``: a substrate's cold start and per-action overhead added to the holds, checked against a
hand computation and against the plan side's worker-hours formula (``plan.substrates``) for the same workload."""

from __future__ import annotations

import textwrap

import pytest

from sandbox_fleet.plan.substrates import substrate_block
from sandbox_fleet.substrates import MILLION, load_substrates, overhead_s, worker_hours

BASE = """
[fleet]
cap = 50
[workload]
kind = "poisson"
rate_per_s = 0.2
count = 2000
[turns]
turns = {{ dist = "deterministic", value_s = 12 }}
model_latency = {{ dist = "exponential", mean_s = 4.0 }}
command = {{ dist = "exponential", mean_s = 1.0 }}
[run]
seed = 9
{extra}
"""


def _sim(tmp_path, name, extra):
    from sandbox_fleet.simulate.scenario.run import run_scenario

    path = tmp_path / name
    path.write_text(textwrap.dedent(BASE.format(extra=extra)))
    return run_scenario(path)


@pytest.mark.parametrize("name", ["kubernetes-pod", "cloud-vm", "e2b"])
def test_substrate_adds_cold_start_and_per_turn_overhead_to_the_holds(tmp_path, name):
    plain = _sim(tmp_path, "plain.toml", "")
    sub = next(s for s in load_substrates() if s.name == name)
    got = _sim(tmp_path, f"{name}.toml", f'[substrate]\nname = "{name}"\n')
    n, turns = 2000, 12
    # hand: every rollout holds c + 12 a longer (same draws, nothing cut: no timeout, no exceptions)
    per_rollout_s = sub.cold_start_s + turns * sub.per_action_s
    assert got["sandbox_hours"] - plain["sandbox_hours"] == pytest.approx(n * per_rollout_s / 3600, rel=1e-9)
    assert got["hold_s"]["mean"] - plain["hold_s"]["mean"] == pytest.approx(per_rollout_s, rel=1e-9)
    block = got["substrate"]
    assert block["added_sandbox_hours"] == pytest.approx(n * per_rollout_s / 3600, rel=1e-12)
    assert block["turns_mean"] == turns and "own turn count" in block["turns_basis"]
    assert block["source"] == sub.source and "illustrative" in block["basis"]
    # the plan side's figure for the same workload (cold start + mean turns x per-action, per million):
    # its substrates block for 12 turns a rollout
    plan_block = substrate_block([sub], target=50, duty=0.5, hold_mean_s=plain["hold_s"]["mean"],
                                 turns_mean=float(turns), turns_basis="test")
    plan_h = plan_block.by_substrate[name].added_worker_hours_per_million
    assert plan_h == worker_hours(MILLION, overhead_s(sub.cold_start_s, sub.per_action_s, float(turns)))
    assert block["added_worker_hours_per_million"] == pytest.approx(plan_h, rel=1e-12)
    # and the plan's total worker-hours per million (its hold + the overhead) is the simulated mean hold's
    assert plan_block.by_substrate[name].worker_hours_per_million == pytest.approx(
        got["hold_s"]["mean"] * MILLION / 3600, rel=1e-9)
    assert plan_h == pytest.approx(per_rollout_s * 1e6 / 3600, rel=1e-12)


def test_scale_table_of_the_study():
    """arXiv 2607.01415's own table: 1 s per rollout = 278 h per million; 10 ms per action over 150 actions = 417 h."""
    assert worker_hours(MILLION, overhead_s(1.0, 0.0, None)) == pytest.approx(277.78, abs=0.01)
    assert worker_hours(MILLION, overhead_s(0.0, 0.01, 150)) == pytest.approx(416.67, abs=0.01)


def test_hold_workload_uses_turns_per_rollout(tmp_path):
    text = ("[fleet]\ncap = 20\n[workload]\nkind = \"poisson\"\nrate_per_s = 0.1\ncount = 500\n"
            "[hold]\ndist = \"deterministic\"\nvalue_s = 100.0\n")
    from sandbox_fleet.simulate.scenario.run import run_scenario

    (tmp_path / "h.toml").write_text(text + "[substrate]\nname = \"cloud-vm\"\nturns_per_rollout = 150\n")
    (tmp_path / "c.toml").write_text(text + "[substrate]\nname = \"cloud-vm\"\n")
    h = run_scenario(tmp_path / "h.toml")
    assert h["hold_s"]["mean"] == pytest.approx(100.0 + 55.0 + 150 * 0.02, rel=1e-12)
    c = run_scenario(tmp_path / "c.toml")
    assert c["hold_s"]["mean"] == pytest.approx(155.0, rel=1e-12)
    assert c["substrate"]["turns_basis"] == "no turn count: cold start only"
