"""Every example scenario runs and does what its comment says; docs/simulate.md documents
every scenario key and every summary key (and nothing that does not exist).

Expected values come from the example's own parameters (hand arithmetic, closed forms)
or from the written telemetry read back independently, never from the engine's summary
of itself.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pydantic import BaseModel

from sandbox_fleet import jsonio
from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate.engine import fast
from sandbox_fleet.simulate.scenario import run as S
from sandbox_fleet.simulate.scenario import spec as SPEC
from sandbox_fleet.simulate.scenario.calibrate import scenario_from_telemetry
from sandbox_fleet.simulate.scenario.run import build, load_scenario, run_scenario

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((ROOT / "examples" / "scenarios").glob("*.toml"))
DOC = ROOT / "docs" / "simulate.md"
MAX_EXAMPLE_ROLLOUTS = 400_000  # keeps this file fast; a bigger example belongs in benchmarks/
# Examples sized for benchmarks/ (millions of model calls): run here on the compiled closed loop
# (numba, a core dependency: ~10 s); where numba is unavailable, checked for their keys only.
BENCHMARK_SIZED = set() if fast.available() else {"closed_loop_rst.toml"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Each example run once, with its telemetry: name -> (summary, telemetry table)."""
    out = tmp_path_factory.mktemp("examples")
    res = {}
    for p in EXAMPLES:
        if p.name in BENCHMARK_SIZED:
            continue
        tel = out / f"{p.stem}.parquet"
        res[p.stem] = (run_scenario(p, telemetry_out=tel), pq.read_table(tel))
    return res


def _secs(table, col: str) -> np.ndarray:
    """A timestamp column as float seconds (null -> NaN), read back from the Parquet."""
    us = pc.cast(table.column(col), "int64").to_numpy(zero_copy_only=False)
    return np.asarray(us, dtype=float) / 1e6


def _peak(start: np.ndarray, finish: np.ndarray) -> int:
    """Most half-open intervals open at once (a finish before a start at equal times)."""
    t = np.concatenate((start, finish))
    d = np.concatenate((np.ones(start.size), -np.ones(finish.size)))
    order = np.lexsort((d, t))
    return int(np.cumsum(d[order]).max())


def _time_avg(start: np.ndarray, finish: np.ndarray, t0: float, t1: float) -> float:
    """Time-average number of open intervals over [t0, t1]."""
    return float(np.sum(np.clip(finish, t0, t1) - np.clip(start, t0, t1)) / (t1 - t0))


# --- every example -------------------------------------------------------------------
def test_there_are_examples():
    assert len(EXAMPLES) >= 8


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_is_small_enough_to_run_here(path):
    built = build(load_scenario(path), path.parent, str(path))
    assert sum(w.count for w in built.workloads) <= MAX_EXAMPLE_ROLLOUTS


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs_and_its_telemetry_adds_up(runs, path):
    if path.name in BENCHMARK_SIZED:
        pytest.skip("benchmark-sized and numba unavailable: run by benchmarks/bench_closed_loop.py")
    s, tel = runs[path.stem]
    o = s["outcomes"]
    assert o["completed"] + o["exceptions"] + o["timeouts"] + o["dropped"] == s["rollouts"]
    assert s["attempts"] == s["rollouts"] + o["retried_attempts"]
    # One telemetry row per attempt that held a sandbox: all attempts but the dropped.
    assert tel.num_rows == s["hold_s"]["rows"] == s["attempts"] - s["dropped"]
    hold = _secs(tel, "finished_at") - _secs(tel, "started_at")
    assert np.all(hold >= 0)
    assert s["sandbox_hours"] == pytest.approx(hold.sum() / 3600, rel=1e-6)
    assert s["concurrency"]["peak"] == _peak(_secs(tel, "started_at"), _secs(tel, "finished_at"))


# --- what each example claims ----------------------------------------------------------
def erlang_c_wait(lam: float, mu: float, c: int) -> float:
    a = lam / mu
    top = a**c / math.factorial(c) * c / (c - a)
    return top / (sum(a**k / math.factorial(k) for k in range(c)) + top) / (c * mu - lam)


def test_mmc_is_erlang_c(runs):
    s, _ = runs["mmc"]
    assert s["utilisation"] == pytest.approx(7.0 / 10, rel=0.01)
    # One seed of 200k rollouts wanders a few per cent (the theory tests average seeds).
    assert s["queue_wait_s"]["mean"] == pytest.approx(erlang_c_wait(7.0, 1.0, 10), rel=0.12)


def test_mginf_steady_state_is_rate_times_mean_hold(runs):
    s, tel = runs["mginf"]
    start, fin = _secs(tel, "started_at"), _secs(tel, "finished_at")
    t0 = start.min()
    # Arrivals span about count / rate = 200,000 s; skip the fill and the drain.
    mean = _time_avg(start - t0, fin - t0, 20_000.0, 180_000.0)
    assert mean == pytest.approx(0.5 * 1332 * math.exp(1.0 / 2), rel=0.03)
    assert s["queue_wait_s"]["p99"] == 0.0 and s["utilisation"] is None


def test_sync_rl_cap_does_not_bind(runs):
    s, tel = runs["sync_rl"]
    assert s["rollouts"] == 512 * 50 and s["steps"] == 50
    # Each step releases 512 at once into 3000 free slots: all start together.
    starts = _secs(tel, "started_at")
    _, per_start = np.unique(starts, return_counts=True)
    assert per_start.size == 50 and np.all(per_start == 512)
    assert s["concurrency"]["peak"] == 512 and s["concurrency"]["touches"] == 50
    assert s["queue_wait_s"]["p99"] == 0.0
    # The trainer trains 50 x 300 s of the span from the first release (t=0) to the end.
    assert s["trainer_idle_fraction"] == pytest.approx(1 - 50 * 300 / s["sim_time_s"], rel=1e-12)
    assert s["hold_s"]["min"] >= 3.0


def test_sync_rl_at_half_the_batch_queues_but_barely_slows(tmp_path, runs):
    # The docs' worked example: cap 256 instead of 3000.
    text = (ROOT / "examples" / "scenarios" / "sync_rl.toml").read_text()
    assert "cap = 3000" in text
    p = tmp_path / "sync_rl_256.toml"
    p.write_text(text.replace("cap = 3000", "cap = 256"))
    small, big = run_scenario(p), runs["sync_rl"][0]
    assert small["concurrency"]["peak"] == 256
    assert small["queue_wait_s"]["mean"] > 100 and big["queue_wait_s"]["mean"] == 0
    assert big["step_s"]["mean"] < small["step_s"]["mean"] < 1.05 * big["step_s"]["mean"]
    assert small["sandbox_hours"] == pytest.approx(big["sandbox_hours"], rel=1e-12)  # same draws


def test_two_pools_keep_each_cap_and_rl_never_waits(runs):
    s, tel = runs["two_pools"]
    job = np.asarray(tel.column("job").to_pylist())
    start, fin = _secs(tel, "started_at"), _secs(tel, "finished_at")
    assert _peak(start[job == "rl"], fin[job == "rl"]) == 512  # batch = cap
    assert _peak(start[job == "synth"], fin[job == "synth"]) == 128  # 325 slots of demand
    # Training (300 s) outlasts the 2 s refill: every batch finds all 512 slots free.
    assert s["workloads"]["rl"]["queue_wait_s"]["p99"] == 0.0
    assert s["workloads"]["synth"]["queue_wait_s"]["mean"] > 3600


def test_shared_pool_same_draws_other_waits(runs):
    shared, sep = runs["shared_pool"][0], runs["two_pools"][0]
    tel = runs["shared_pool"][1]
    assert _peak(_secs(tel, "started_at"), _secs(tel, "finished_at")) <= 640
    # Durations never depend on the pools (one stream per workload): same sandbox time.
    for w in ("rl", "synth"):
        assert shared["workloads"][w]["sandbox_hours"] == pytest.approx(sep["workloads"][w]["sandbox_hours"], rel=1e-12)
    assert shared["workloads"]["rl"]["queue_wait_s"]["mean"] > 0
    assert shared["workloads"]["synth"]["queue_wait_s"]["mean"] < sep["workloads"]["synth"]["queue_wait_s"]["mean"] / 100


def test_rst_like_four_runs_share_the_cap(runs):
    s, tel = runs["rst_like"]
    assert s["rollouts"] == 4 * 2048 * 40 and s["steps"] == 4 * 40
    assert set(tel.column("job").to_pylist()) == {"run0", "run1", "run2", "run3"}
    # Staggered batches overlap past 3000: the cap binds, touched and left many times.
    assert s["concurrency"]["peak"] == 3000 and s["concurrency"]["touches"] > 1000
    assert s["queue_wait_s"]["mean"] > 0
    hold = _secs(tel, "finished_at") - _secs(tel, "started_at")
    assert hold.min() >= 3 - 1e-6 and hold.max() <= 26571 + 1e-6


def test_async_rl_full_every_phase(runs):
    s, tel = runs["async_rl_full"]
    assert s["rollouts"] == 512 * 30 and s["steps"] == 30
    assert s["outcomes"]["retried_attempts"] > 0 and s["outcomes"]["timeouts"] > 0
    types = set(tel.column("exception_type").to_pylist()) - {None}
    assert types == {"AgentError", "BuildError", "VerifierError", "AgentTimeoutError"}
    a0, a1 = _secs(tel, "agent_execution_started_at"), _secs(tel, "agent_execution_finished_at")
    agent = a1 - a0
    timed_out = np.asarray(tel.column("exception_type").to_pylist()) == "AgentTimeoutError"
    assert np.nanmax(agent) <= 7200 + 1e-6
    assert np.allclose(agent[timed_out], 7200, atol=1e-5)
    # The verifier runs after a timeout.
    assert not np.any(np.isnan(_secs(tel, "verifier_started_at")[timed_out]))
    # start_cap = 256: never more than 256 sandboxes in their build phase at once.
    b0, b1 = _secs(tel, "environment_setup_started_at"), _secs(tel, "environment_setup_finished_at")
    assert _peak(b0, b1) <= 256
    assert s["concurrency"]["peak"] <= 1024


def test_model_mix_labels_exceptions_and_drops(runs):
    s, tel = runs["model_mix"]
    models = np.asarray(tel.column("model").to_pylist())
    assert set(models.tolist()) == {"model-a", "model-b", "model-c"}
    etype = np.asarray(tel.column("exception_type").to_pylist())
    # The exception component (weight 0.15) gives agent errors, all of them model-c.
    agent_err = etype == "AgentError"
    assert set(models[agent_err].tolist()) == {"model-c"}
    started = s["rollouts"] - s["dropped"]
    share, sd = agent_err.sum() / started, math.sqrt(0.15 * 0.85 / started)
    assert abs(share - 0.15) < 4 * sd
    # 2% verifier failures, retried once; no rollout waits past the 1800 s queue timeout.
    assert s["outcomes"]["retried_attempts"] > 0 and np.any(etype == "VerifierError")
    assert s["dropped"] > 0 and s["queue_wait_s"]["p99"] <= 1800 + 1e-9
    hold = _secs(tel, "finished_at") - _secs(tel, "started_at")
    assert hold[models == "model-a"].max() <= 26571 + 30 + 1e-6  # clipped agent + verifier


def test_replay_burst_and_empirical_holds(runs):
    s, tel = runs["replay"]
    assert s["rollouts"] == s["completed"] == 18
    start = _secs(tel, "started_at") - _secs(tel, "started_at").min()
    assert np.count_nonzero(start == 0) == 4  # the burst of 12 meets 4 slots
    hold = np.rint((_secs(tel, "finished_at") - _secs(tel, "started_at")) * 1e6) / 1e6
    assert set(hold.tolist()) <= {95, 240, 310, 480, 530, 900, 1332, 2100}


# --- determinism and the --from workflow ------------------------------------------------
@pytest.mark.parametrize("name", ["async_rl_full", "model_mix"])
def test_same_seed_same_bytes(tmp_path, runs, name):
    p = ROOT / "examples" / "scenarios" / f"{name}.toml"
    a = run_scenario(p, telemetry_out=tmp_path / "a.parquet")
    b = run_scenario(p, telemetry_out=tmp_path / "b.parquet")
    a.pop("telemetry"), b.pop("telemetry")
    assert jsonio.dumps(a) == jsonio.dumps(b)
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()


def test_calibrate_change_cap_rerun_remeasure(tmp_path, runs):
    """The docs' workflow on the model_mix telemetry: --from, rerun, lower the cap, rerun."""
    measured = tmp_path / "measured.parquet"
    pq.write_table(runs["model_mix"][1], measured)
    scen = tmp_path / "calibrated.toml"
    fig = scenario_from_telemetry([str(measured)], scen)
    assert fig.peak == 64 and fig.rollouts == runs["model_mix"][1].num_rows
    same = run_scenario(scen, telemetry_out=tmp_path / "sim.parquet")
    assert same["concurrency"]["peak"] <= 64
    # Holds are bootstrapped by model and outcome: the exception share carries over.
    exc = np.asarray(runs["model_mix"][1].column("has_exception").to_pylist()).mean()
    assert same["outcomes"]["exception_rate"] == pytest.approx(exc, abs=0.02)
    sim = pq.read_table(tmp_path / "sim.parquet")
    assert set(sim.column("model").to_pylist()) == {"model-a", "model-b", "model-c"}
    text = scen.read_text()
    assert "cap = 64 " in text
    (tmp_path / "cap48.toml").write_text(text.replace("cap = 64 ", "cap = 48 "))
    smaller = run_scenario(tmp_path / "cap48.toml")
    assert smaller["concurrency"]["peak"] == 48
    assert smaller["queue_wait_s"]["mean"] > same["queue_wait_s"]["mean"]


# --- the documentation keeps up with the code --------------------------------------------
def _doc_tables(marker_re: str) -> dict[str, set[str]]:
    """Marker -> the backticked first cells of the table right after it."""
    lines = DOC.read_text(encoding="utf-8").splitlines()
    out: dict[str, set[str]] = {}
    for i, line in enumerate(lines):
        m = re.fullmatch(marker_re, line.strip())
        if not m:
            continue
        keys: set[str] = set()
        for row in lines[i + 1 :]:
            if not row.startswith("|"):
                break
            cell = row.split("|")[1].strip()
            k = re.fullmatch(r"`([^`]+)`", cell)
            if k:
                keys.add(k.group(1))
        assert keys, f"empty table after {line!r}"
        out[m.group(1) if m.groups() else line.strip()] = keys
    return out


def _scenario_models() -> list[type[BaseModel]]:
    """Every model defined in the schema module; the public ones also importable from ``scenario``."""
    models = [
        obj for obj in vars(SPEC).values()
        if isinstance(obj, type) and issubclass(obj, BaseModel) and obj.__module__ == SPEC.__name__ and obj.model_fields
    ]
    for m in models:
        if not m.__name__.startswith("_"):
            assert getattr(S, m.__name__, None) is m, f"{m.__name__} is not re-exported by {S.__name__}"
    return models


def test_doc_lists_every_scenario_key_of_every_model():
    documented = _doc_tables(r"<!-- keys: (\w+) -->")
    models = {m.__name__: m for m in _scenario_models()}
    assert set(documented) == set(models), "a scenario model is undocumented, or the doc names one that is gone"
    for name, model in models.items():
        inherited = set()
        for base in model.__mro__[1:]:
            if base.__name__ in documented and base.__name__ != name:
                inherited |= set(base.model_fields)
        own = set(model.model_fields) - inherited
        assert documented[name] == own, f"{name}: missing {sorted(own - documented[name])}, stale {sorted(documented[name] - own)}"


def _flat(d: dict, prefix: str = ""):
    """Dotted keys holding a value; null ones are figures this run does not have (another run does)."""
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            yield from _flat(v, key + ".")
        elif v is not None:
            yield key


def test_doc_lists_every_summary_key(runs):
    summaries = [s for s, _ in runs.values()]
    summaries.append(run_scenario(ROOT / "examples" / "scenarios" / "replay.toml", timing=True))
    produced = set()
    for s in summaries:
        for key in _flat(s):
            parts = key.split(".")
            if parts[0] == "workloads":
                parts[1] = "NAME"
            if parts[:2] == ["steady_state", "offered_load"]:  # keyed by resource
                parts[2] = "NAME"
            produced.add(".".join(parts))
    (documented,) = _doc_tables(r"<!-- summary-keys -->").values()
    assert produced == documented, f"undocumented {sorted(produced - documented)}, stale {sorted(documented - produced)}"


def test_doc_example_files_exist():
    names = {Path(m).name for m in re.findall(r"`([\w/]+\.toml)`", DOC.read_text(encoding="utf-8"))}
    on_disk = {p.name for p in EXAMPLES}
    assert on_disk <= names, f"examples the doc does not mention: {sorted(on_disk - names)}"


# --- once-known bugs (fixed; each test pins its fix) ------------------------------------------
MIX_CLIPPED = """
[fleet]
unbounded = true
[workload]
kind = "poisson"
rate_per_s = 1.0
count = 2000
[hold]
dist = "mixture"
max_s = 1000
components = [
  {{ weight = 1, label = "m-ok", hold = {{ dist = "deterministic", value_s = 10 }} }},
  {{ weight = 1, label = "m-bad", exception = true, hold = {{ dist = "deterministic", value_s = 5 }} }},
]
"""


def test_clipping_a_mixture_keeps_exceptions_and_models(tmp_path):
    p = tmp_path / "mix.toml"
    p.write_text(MIX_CLIPPED.format())
    tel = tmp_path / "t.parquet"
    s = run_scenario(p, telemetry_out=tel)
    # Half the draws come from the exception component (about 1000 of 2000).
    assert 800 < s["outcomes"]["exceptions"] < 1200
    assert set(pq.read_table(tel).column("model").to_pylist()) == {"m-ok", "m-bad"}


REPLAY_START = """
[fleet]
cap = 2
[workload]
kind = "replay"
arrivals_s = [0.0, 1.0]
start_s = 100.0
[hold]
dist = "deterministic"
value_s = 5
"""


def test_replay_start_s_shifts_the_replayed_arrivals(tmp_path):
    p = tmp_path / "r.toml"
    p.write_text(REPLAY_START)
    tel = tmp_path / "t.parquet"
    s = run_scenario(p, telemetry_out=tel)
    # Arrivals 100 and 101, two free slots, 5 s holds: the last one ends at 106.
    assert s["sim_time_s"] == 106.0
    assert s["queue_wait_s"]["mean"] == 0.0
    t = pq.read_table(tel)
    starts = sorted(v.timestamp() for v in t.column("started_at").to_pylist())
    epoch = 1767225600.0  # run.epoch default, 2026-01-01T00:00:00Z
    assert [x - epoch for x in starts] == [100.0, 101.0]


def test_min_above_max_is_an_input_error(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text(REPLAY_START.replace("start_s = 100.0\n", "").replace("value_s = 5", "value_s = 5\nmin_s = 9\nmax_s = 2"))
    with pytest.raises(InputError, match="min_s") as exc:
        run_scenario(p)
    assert str(exc.value).startswith(f"{p}: key 'hold.max_s': ") and "\n" not in str(exc.value)


def test_engine_level_input_errors_name_the_file(tmp_path):
    p = tmp_path / "steps.toml"
    p.write_text('[fleet]\ncap = 2\n[workload]\nkind = "sync-rl"\nbatch = [2, 3]\nsteps = 3\n'
                 '[hold]\ndist = "exponential"\nmean_s = 1\n')
    with pytest.raises(InputError, match=re.escape(str(p))) as exc:
        run_scenario(p)
    assert str(exc.value).startswith(f"{p}: key 'workload.steps': ")


def test_cli_seed_without_from_overrides_the_scenario_seed(tmp_path):
    from typer.testing import CliRunner

    from sandbox_fleet.cli import app

    src = ROOT / "examples" / "scenarios" / "replay.toml"
    res = CliRunner().invoke(app, ["simulate", str(src), "--json", "--seed", "7"])
    assert res.exit_code == 0
    got = json.loads(res.stdout)
    assert got["seed"] == 7
    # The same run as the file with [run] seed = 7 written into it.
    text = src.read_text(encoding="utf-8")
    assert "seed = 1" in text
    copy = tmp_path / "replay.toml"
    copy.write_text(text.replace("seed = 1", "seed = 7"))
    assert got == run_scenario(copy)
    plain = json.loads(CliRunner().invoke(app, ["simulate", str(src), "--json"]).stdout)
    assert plain["seed"] == 1 and plain["queue_wait_s"] != got["queue_wait_s"]
