"""Scenario files: the issue's shapes run, bad keys are one-line InputErrors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate.scenario.run import build, load_scenario, run_scenario

ROOT = Path(__file__).resolve().parents[3]

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
    assert s["rollouts"] == 3000 and s["events_per_s"] is None
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


# --- engine-level refusals are caught at build time, naming the file and the key ------------
RL = """
[fleet]
cap = 2
[workload]
kind = "sync-rl"
batch = [2, 3]
[hold]
dist = "exponential"
mean_s = 1
"""
REPLAY = """
[fleet]
cap = 2
[workload]
kind = "replay"
arrivals_s = [0.0, 1.0]
[hold]
dist = "deterministic"
value_s = 5
"""
TWO = """
[[fleets]]
name = "a"
cap = 2
[[fleets]]
name = "b"
unbounded = true
[[workloads]]
name = "x"
kind = "poisson"
rate_per_s = 1
count = 5
pool = "a"
hold = {{ dist = "exponential", mean_s = 1 }}
[[workloads]]
name = "{name}"
kind = "sync-rl"
batch = {batch}
pool = "{pool}"
hold = {{ dist = "exponential", mean_s = 1 }}
"""


@pytest.mark.parametrize("text,key", [
    (RL.replace("batch = [2, 3]", "batch = [2, 3]\nsteps = 3"), "workload.steps"),
    (RL.replace("batch = [2, 3]", "batch = 4"), "workload.steps"),
    (RL.replace("batch = [2, 3]", "batch = []"), "workload.batch"),
    (RL.replace("batch = [2, 3]", "batch = [2, 0]"), "workload.batch"),
    (RL.replace("cap = 2", "unbounded = true\npreempt_rate_per_node_s = 0.001"), "fleet.preempt_rate_per_node_s"),
    (RL.replace('dist = "exponential"\nmean_s = 1', 'dist = "empirical"\nvalues = []'), "hold.values"),
    (RL.replace('dist = "exponential"\nmean_s = 1', 'dist = "mixture"\ncomponents = [{ weight = 0, hold = { dist = "deterministic", value_s = 1 } }]'),
     "hold.components"),
    (RL.replace('dist = "exponential"\nmean_s = 1', 'dist = "mixture"\ncomponents = [{ weight = 1, hold = { dist = "deterministic", value_s = 1, min_s = 5, max_s = 4 } }]'),
     "hold.components.0.hold.max_s"),
    (RL + '[turns]\nturns = { dist = "deterministic", value_s = 3 }\nmodel_latency = { dist = "deterministic", value_s = 1 }\n', "turns"),
    (RL.replace("cap = 2", "cap = 2\nstart_cap = 1") + '[run]\nengine = "fifo"\n', "run.engine"),
    (REPLAY.replace("[0.0, 1.0]", "[]"), "workload.arrivals_s"),
    (REPLAY.replace("[0.0, 1.0]", "[-1.0, 1.0]"), "workload.arrivals_s.0"),
    (TWO.format(name="y", batch="[2, 3]\nsteps = 4", pool="a"), "workloads.1.steps"),
    (TWO.format(name="x", batch="[2, 3]", pool="a"), "workloads.1.name"),
    (TWO.format(name="y", batch="[2]", pool="b").replace("unbounded = true", "unbounded = true\npreempt_rate_per_node_s = 1.0"),
     "fleets.1.preempt_rate_per_node_s"),
])
def test_engine_refusals_name_file_and_key(tmp_path, text, key):
    p = write(tmp_path, text)
    with pytest.raises(InputError) as e:
        run_scenario(p)
    msg = str(e.value)
    assert msg.startswith(f"{p}: key '{key}': ") and "\n" not in msg


def test_engine_refusal_is_one_line_and_exit_2_on_the_cli(tmp_path):
    p = write(tmp_path, RL.replace("batch = [2, 3]", "batch = [2, 3]\nsteps = 3"))
    r = subprocess.run([sys.executable, "-m", "sandbox_fleet.cli", "simulate", str(p)], capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{p}: key 'workload.steps': steps = 3 but batch lists 2 sizes" in lines[0]


def test_min_equal_to_max_is_allowed(tmp_path):
    p = write(tmp_path, REPLAY.replace("value_s = 5", "value_s = 5\nmin_s = 2\nmax_s = 2"))
    assert run_scenario(p)["hold_s"]["max"] == 2.0


# --- clipping a mixture keeps each rollout's model and exception flag ----------------------
def test_clipped_mixture_retries_keep_model_and_clip(tmp_path):
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    p = write(tmp_path, """
[fleet]
cap = 4
[workload]
kind = "poisson"
rate_per_s = 0.01
count = 400
[hold]
dist = "mixture"
max_s = 1000
components = [
  { weight = 1, label = "short", hold = { dist = "deterministic", value_s = 10 } },
  { weight = 1, label = "long", hold = { dist = "deterministic", value_s = 5000 } },
]
[verifier]
dist = "deterministic"
value_s = 1
[exceptions]
p = { verifier = 0.5 }
[retry]
max_retries = 3
on = ["verifier"]
""")
    tel = tmp_path / "t.parquet"
    run_scenario(p, telemetry_out=tel)
    t = pq.read_table(tel)
    ids = t.column("id").to_pylist()
    models = t.column("model").to_pylist()
    agent = pc.subtract(t.column("agent_execution_finished_at"), t.column("agent_execution_started_at"))
    agent_s = [d.total_seconds() for d in agent.to_pylist()]
    by_rollout: dict[str, set] = {}
    for i, m, a in zip(ids, models, agent_s):
        by_rollout.setdefault(i.rsplit("-", 1)[0], set()).add(m)
        assert a == {"short": 10.0, "long": 1000.0}[m]  # every attempt, retries too, is clipped
    assert len(by_rollout) == 400 and all(len(ms) == 1 for ms in by_rollout.values())
    assert len(ids) > 500  # about half the attempts fail their verifier and are retried
    retried_models = {next(iter(by_rollout[i.rsplit("-", 1)[0]])) for i in ids if not i.endswith("-0")}
    assert retried_models == {"short", "long"}


def test_clipped_empirical_by_model_outcome_keeps_models_and_exceptions(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sandbox_fleet.telemetry.record import ROLLOUT_SCHEMA

    n = 4
    base = 1_700_000_000_000_000
    start = np.array([0, 10, 20, 30], dtype=np.int64) * 1_000_000 + base
    hold = np.array([100, 200, 3000, 4000], dtype=np.int64) * 1_000_000
    cols = {
        "id": pa.array([f"r{i}" for i in range(n)]),
        "started_at": pa.array(start).cast(pa.timestamp("us", tz="UTC")),
        "finished_at": pa.array(start + hold).cast(pa.timestamp("us", tz="UTC")),
        "model": pa.array(["a", "a", "b", "b"]),
        "has_exception": pa.array([False, False, True, True]),
    }
    pq.write_table(pa.table({k: cols[k] if k in cols else pa.nulls(n, ROLLOUT_SCHEMA.field(k).type)
                             for k in ROLLOUT_SCHEMA.names}), tmp_path / "measured.parquet")
    p = write(tmp_path, """
[fleet]
unbounded = true
[workload]
kind = "poisson"
rate_per_s = 1.0
count = 2000
[hold]
dist = "empirical"
telemetry = "measured.parquet"
by = ["model", "outcome"]
max_s = 2500
""")
    tel = tmp_path / "t.parquet"
    s = run_scenario(p, telemetry_out=tel)
    assert 800 < s["outcomes"]["exceptions"] < 1200
    t = pq.read_table(tel)
    hold_s = [(f - b).total_seconds() for f, b in zip(t.column("finished_at").to_pylist(), t.column("started_at").to_pylist())]
    for m, e, h in zip(t.column("model").to_pylist(), t.column("has_exception").to_pylist(), hold_s):
        assert (m == "b") == e
        assert h in ({100.0, 200.0} if m == "a" else {2500.0})


def test_replay_of_telemetry_starts_at_start_s(tmp_path):
    out = tmp_path / "measured.parquet"
    run_scenario(write(tmp_path, REPLAY.replace("[0.0, 1.0]", "[0.0, 10.0]"), "m.toml"), telemetry_out=out)
    p = write(tmp_path, '[fleet]\ncap = 2\n[workload]\nkind = "replay"\ntelemetry = "measured.parquet"\nstart_s = 50\n')
    s = run_scenario(p)
    # Measured starts 0 and 10 with 5 s holds, replayed from 50: the last ends at 65.
    assert s["sim_time_s"] == 65.0 and s["hold_s"]["max"] == 5.0
