"""``dynamic_sampling`` in a scenario file: the keys, their errors, and a round trip through measure.

The round trip is the issue's Monte Carlo on a corpus made with known per-task probabilities: a
simulation with known pass probabilities writes telemetry (each rollout's task and reward); measure
recovers the per-task counts; a scenario reading that measure summary draws each task at its posterior
mean, and its simulated over-sampling agrees with the plan's closed form at those probabilities
(``signal_oracle.point_shares`` in tests/, on ``measure.signal_math.group_shares``, the negative binomial's mean 1 / q per informative group).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from sandbox_fleet import jsonio
from sandbox_fleet.errors import InputError
from sandbox_fleet.measure.run import measure_paths
from sandbox_fleet.simulate.scenario.run import run_scenario
from signal_oracle import point_shares

ROOT = Path(__file__).resolve().parents[3]
KNOWN_P = [0.05, 0.2, 0.35, 0.5, 0.65, 0.8, 0.95, 0.5]

BASE = """
[fleet]
unbounded = true

[workload]
kind = "{kind}"
steps = {steps}
train_s = 60.0
{extra}
dynamic_sampling = {{ {ds} }}

[hold]
dist = "lognormal"
median_s = 300.0
sigma = 0.5

[run]
seed = {seed}
"""


def _write(tmp_path: Path, name: str = "s.toml", *, kind="sync-rl", steps=40, extra="", ds="", seed=3) -> Path:
    p = tmp_path / name
    p.write_text(BASE.format(kind=kind, steps=steps, extra=extra, ds=ds, seed=seed))
    return p


def test_the_table_runs_and_batch_defaults_to_b_times_g(tmp_path):
    s = run_scenario(_write(tmp_path, ds="groups = 4, group_size = 2, task_pass = [0.5], valid_rate = 1.0"))
    d = s["dynamic_sampling"]
    assert (d["groups"], d["group_size"], d["steps"], d["release"]) == (4, 2, 40, "rounds of the shortfall")
    assert d["groups_informative"] == 4 * 40 and d["groups_trimmed"] == 0
    assert s["rollouts"] == d["groups_released"] * 2
    assert d["first_round_rollouts"] == 8 == d["peak"]  # unbounded: the first round is the largest release


@pytest.mark.parametrize("extra,ds,msg", [
    ("batch = 10", "groups = 4, group_size = 2, task_pass = [0.5]", "batch must be that"),
    ("", "groups = 4, group_size = 2, task_pass = [0.5], colour = 1", "unknown key 'workload.dynamic_sampling.colour'"),
    ("", "groups = 4, group_size = 2, task_pass = [0.5, 0.2], task_weight = [1.0]", "2 tasks"),
    ("", "groups = 4, group_size = 2, task_pass = [0.0, 1.0]", "no group can be informative"),
    ("", "groups = 4, group_size = 2, task_pass = \"missing.json\"", "missing.json"),
    ("", "groups = 4, group_size = 2, task_pass = [1.2]", "workload.dynamic_sampling.task_pass"),
])
def test_bad_tables_are_one_line_naming_the_key(tmp_path, extra, ds, msg):
    with pytest.raises(InputError, match=msg.replace("[", r"\[").replace(".", r"\.")) as e:
        run_scenario(_write(tmp_path, extra=extra, ds=ds))
    assert "\n" not in str(e.value) and str(tmp_path / "s.toml") in str(e.value)


def test_it_applies_to_rl_workloads_only(tmp_path):
    p = tmp_path / "p.toml"
    p.write_text(BASE.format(kind="poisson", steps=1, extra="rate_per_s = 1.0\ncount = 10", ds="groups = 1, group_size = 2, task_pass = [0.5]",
                             seed=1).replace("steps = 1\ntrain_s = 60.0\n", ""))
    with pytest.raises(InputError, match="'dynamic_sampling' does not apply to kind 'poisson'"):
        run_scenario(p)


def test_a_summary_without_groups_is_refused_clearly(tmp_path):
    published = ROOT / "examples" / "rst-published.json"  # the published campaign: no task ids, no groups
    with pytest.raises(InputError, match="no per-task pass probabilities"):
        run_scenario(_write(tmp_path, ds=f"groups = 4, group_size = 2, task_pass = \"{published}\""))


def test_round_trip_known_probabilities_through_measure(tmp_path):
    # 1. a corpus with known per-task pass probabilities (8 tasks, valid 0.8), written as telemetry
    known = _write(tmp_path, "known.toml", steps=60,
                   ds=f"groups = 16, group_size = 8, task_pass = {KNOWN_P}, valid_rate = 0.8")
    run_scenario(known, telemetry_out=tmp_path / "known.parquet")
    # 2. measure recovers every task's counts (each task within 4 binomial s.e. of its known rate)
    m = measure_paths([str(tmp_path / "known.parquet")], progress=False)
    rg = m.rl_groups
    assert rg is not None and rg.task_counts is not None and len(rg.task_counts) == len(KNOWN_P)
    assert rg.valid_rate == pytest.approx(0.8, abs=4 * math.sqrt(0.16 / rg.rows))
    raw = sorted(passed / valid for rows, valid, passed, units in rg.task_counts)
    for got, p in zip(raw, sorted(KNOWN_P)):
        assert abs(got - p) < 4 * math.sqrt(p * (1 - p) / 400) + 0.01
    (tmp_path / "m.json").write_text(jsonio.dumps(m.to_json()))
    # 3. a scenario reading the summary: its over-sampling against the closed form at the posterior means
    steps, b, g = 400, 6, 4
    s = run_scenario(_write(tmp_path, "from_measure.toml", steps=steps,
                            ds=f"groups = {b}, group_size = {g}, task_pass = \"m.json\""))["dynamic_sampling"]
    counts = np.asarray(rg.task_counts, dtype=float)
    a, bb = rg.pass_prior.alpha, rg.pass_prior.beta
    post = (a + counts[:, 2]) / (a + bb + counts[:, 1])
    q = point_shares(post, np.full(post.size, rg.valid_rate), g, weights=counts[:, 3]).informative
    se = math.sqrt(b * (1 - q) / q**2 / steps) / b
    assert s["valid_rate"] == rg.valid_rate and s["tasks"] == len(KNOWN_P)
    assert abs(s["oversampling_factor"] - 1 / q) < 4 * se
    assert "posterior mean" in s["basis"]


def test_the_documented_example_by_hand_and_from_its_telemetry(tmp_path):
    # docs/simulate.md#worked-example-four-tasks-g--4: P = 1 - p^4 - (1 - p)^4 per task, tasks uniform
    q = sum(1 - p**4 - (1 - p) ** 4 for p in (0.5, 0.1, 0.9, 0.0)) / 4
    assert q == pytest.approx(0.390650, abs=1e-6)
    s = run_scenario(ROOT / "examples" / "scenarios" / "dynamic_sampling.toml", telemetry_out=tmp_path / "t.parquet")
    d = s["dynamic_sampling"]
    b, steps = 16, 200
    se = math.sqrt(b * (1 - q) / q**2 / steps) / b
    assert abs(d["oversampling_factor"] - 1 / q) < 4 * se
    assert d["peak"] == d["first_round_rollouts"] == 64 == s["concurrency"]["peak"]
    # the telemetry read back: rollouts in release order, four to a group of one task; a group is
    # informative when its non-null rewards hold a 1 and a 0
    import pyarrow.parquet as pq

    t = pq.read_table(tmp_path / "t.parquet")
    order = np.argsort([int(i.split("-")[1]) for i in t.column("id").to_pylist()])
    tasks = np.array(t.column("task_id").to_pylist(), dtype=object)[order].reshape(-1, 4)
    rewards = [t.column("reward").to_pylist()[i] for i in order]
    assert all(len(set(row)) == 1 for row in tasks.tolist())
    informative = sum({1.0, 0.0} <= {r for r in rewards[k:k + 4] if r is not None} for k in range(0, len(rewards), 4))
    assert informative == d["groups_informative"] == b * steps
    assert len(rewards) // 4 == d["groups_released"]
