"""Scenario files: the issue's shapes run, bad keys are one-line InputErrors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate.scenario import build, load_scenario, run_scenario

ROOT = Path(__file__).resolve().parents[2]

POISSON = """
[fleet]
cap = 10                 # concurrent sandbox slots
[workload]
kind = "poisson"
rate_per_s = 7.0
count = {count}
[hold]
dist = "exponential"
mean_s = 1.0
[run]
seed = 1
"""

SYNC = """
[fleet]
cap = 600
[workload]
kind = "sync-rl"
batch = 512
steps = 5
train_s = 300
[hold]
dist = "lognormal"
median_s = 1332
sigma = 1.0
[run]
seed = 2
"""


def write(tmp_path: Path, text: str, name: str = "s.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_issue_poisson_shape(tmp_path):
    s = run_scenario(write(tmp_path, POISSON.format(count=20000)))
    assert s["rollouts"] == 20000 and s["completed"] == 20000
    assert s["concurrency"]["peak"] == 10
    assert s["utilisation"] == pytest.approx(0.7, abs=0.02)
    for key in ("schema_version", "sim_time_s", "queue_wait_s", "hold_s", "outcomes", "sandbox_hours",
                "lost_sandbox_hours", "events"):
        assert key in s


def test_issue_sync_rl_shape(tmp_path):
    s = run_scenario(write(tmp_path, SYNC))
    assert s["rollouts"] == 5 * 512 and s["steps"] == 5
    assert s["concurrency"]["peak"] == 512
    assert 0 < s["trainer_idle_fraction"] < 1
    assert set(s["step_s"]) == {"mean", "p50", "p99"}


def test_example_scenarios_parse():
    for p in sorted((ROOT / "examples" / "scenarios").glob("*.toml")):
        spec = load_scenario(p)
        build(spec, p.parent, str(p))


@pytest.mark.parametrize("text,needle", [
    (POISSON.format(count=10) + "\n[extra]\nx = 1\n", "unknown key 'extra'"),
    (POISSON.format(count=10).replace("mean_s = 1.0", "mean_s = 1.0\nmedian_s = 2"), "unknown key 'hold.median_s'"),
    (POISSON.format(count=10).replace("cap = 10", "cap = 10\ncpa = 3"), "unknown key 'fleet.cpa'"),
    (POISSON.format(count=10).replace('"exponential"', '"gamma"'), "hold.dist"),
    (POISSON.format(count=10).replace("rate_per_s = 7.0\n", ""), "needs 'rate_per_s'"),
    (POISSON.format(count=10).replace("cap = 10", "cap = -1"), "fleet.cap"),
    (POISSON.format(count=10).replace("count = 10", "count = 10\nbatch = 3"), "'batch' does not apply"),
    ("[fleet\ncap=1", "not valid TOML"),
])
def test_bad_scenarios_name_file_and_key(tmp_path, text, needle):
    p = write(tmp_path, text)
    with pytest.raises(InputError) as e:
        run_scenario(p)
    msg = str(e.value)
    assert needle in msg and str(p) in msg and "\n" not in msg


def test_two_workloads_separate_pools(tmp_path):
    text = """
[[fleets]]
name = "rollouts"
cap = 64
[[fleets]]
name = "synthesis"
cap = 16

[[workloads]]
name = "rl"
kind = "sync-rl"
pool = "rollouts"
batch = 64
steps = 4
train_s = 60
hold = { dist = "exponential", mean_s = 100 }

[[workloads]]
name = "synth"
kind = "poisson"
pool = "synthesis"
rate_per_s = 0.1
count = 200
hold = { dist = "mixture", components = [
  { weight = 1, label = "small", hold = { dist = "deterministic", value_s = 10 } },
  { weight = 1, label = "big", exception = true, hold = { dist = "weibull", shape = 1.5, scale_s = 90 } },
] }
retry = { max_retries = 1 }
"""
    s = run_scenario(write(tmp_path, text))
    assert set(s["workloads"]) == {"rl", "synth"}
    assert s["workloads"]["synth"]["pool"] == 1
    assert s["outcomes"]["exceptions"] > 0  # the mixture's exception component


def test_episode_tables(tmp_path):
    text = """
[fleet]
cap = 20
start_cap = 5
provision_delay_s = 1.0
preempt_rate_per_node_s = 1e-4
slots_per_node = 4
node_replace_s = 30
[workload]
kind = "async-rl"
batch = 32
steps = 4
train_s = 50
staleness = 1
agent_timeout_s = 200
[turns]
turns = { dist = "lognormal", median_s = 11, sigma = 0.5 }
model_latency = { dist = "exponential", mean_s = 5 }
command = { dist = "deterministic", value_s = 2 }
[build]
hit_p = 0.8
hit = { dist = "deterministic", value_s = 3 }
miss = { dist = "lognormal", median_s = 60, sigma = 0.5 }
[verifier]
dist = "exponential"
mean_s = 10
[exceptions]
rate_per_s = { agent = 1e-4 }
p = { build = 0.05 }
[retry]
max_retries = 2
[run]
seed = 4
"""
    s = run_scenario(write(tmp_path, text))
    assert s["rollouts"] == 128
    assert s["outcomes"]["timeouts"] > 0 and s["outcomes"]["retried_attempts"] > 0


def test_cli_json_telemetry_measure_roundtrip(tmp_path):
    scen = write(tmp_path, POISSON.format(count=3000))
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "sandbox_fleet.cli", "simulate", str(scen), "--json", "--telemetry", str(out / "t.parquet")]
    a = subprocess.run(cmd, capture_output=True, text=True, check=True)
    b = subprocess.run(cmd, capture_output=True, text=True, check=True)
    assert a.stdout == b.stdout  # byte-identical: no wall-clock figures without --timing
    s = json.loads(a.stdout)
    assert s["rollouts"] == 3000 and "events_per_s" not in s
    m = subprocess.run([sys.executable, "-m", "sandbox_fleet.cli", "measure", str(out / "t.parquet"), "--json"],
                       capture_output=True, text=True, check=True)
    assert json.loads(m.stdout)["concurrency"]["peak"] == 10


def test_cli_bad_key_exits_2_with_one_line(tmp_path):
    scen = write(tmp_path, POISSON.format(count=10) + "\n[run2]\n")
    r = subprocess.run([sys.executable, "-m", "sandbox_fleet.cli", "simulate", str(scen)], capture_output=True, text=True)
    assert r.returncode == 2
    assert "unknown key 'run2'" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_from_telemetry_calibrates_and_changed_cap_runs(tmp_path):
    # Measured data: a capped sync-RL fleet with exceptions on one model.
    src = write(tmp_path, """
[fleet]
cap = 40
[workload]
kind = "sync-rl"
batch = 100
steps = 6
train_s = 30
[hold]
dist = "mixture"
components = [
  { weight = 3, label = "a", hold = { dist = "lognormal", median_s = 100, sigma = 0.7 } },
  { weight = 1, label = "b", exception = true, hold = { dist = "exponential", mean_s = 20 } },
]
""", "measured.toml")
    tel = tmp_path / "measured.parquet"
    run_scenario(src, telemetry_out=tel)
    cal = tmp_path / "calibrated.toml"
    r = subprocess.run([sys.executable, "-m", "sandbox_fleet.cli", "simulate", str(cal), "--from", str(tel), "--json"],
                       capture_output=True, text=True, check=True)
    fig = json.loads(r.stdout)
    assert fig["peak"] == 40 and fig["rollouts"] == 600
    assert fig["exception_rate"] == pytest.approx(0.25, abs=0.06)
    text = cal.read_text()
    assert "cap = 40" in text
    replayed = run_scenario(cal)
    assert replayed["rollouts"] == 600
    assert replayed["outcomes"]["exception_rate"] == pytest.approx(fig["exception_rate"], abs=0.06)
    # The user's next step: another cap.
    halved = write(tmp_path, text.replace("cap = 40", "cap = 20"), "halved.toml")
    s = run_scenario(halved)
    assert s["concurrency"]["peak"] == 20
    assert s["queue_wait_s"]["mean"] > replayed["queue_wait_s"]["mean"]
