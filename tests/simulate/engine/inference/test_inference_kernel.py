"""Runs with an inference pool on the admission kernel (``fast/admit_loop`` + ``_admit_kernel`` calling
``_inference_rules``) give the same bytes as the pure loop (``loop.run_events`` with ``inference/pool.py``,
the oracle in ``tests/``).

Every case runs twice in this process: on the oracle (the executor's ``run`` replaced by
``oracle_policies.run_oracle``) and on the kernel compiled by numba (a core dependency; ``MIN_ROLLOUTS``
lifted, these runs are small), and compares the summary JSON, the ``--telemetry`` Parquet file and the
pool's raw records bit for bit. The kernel's source run as plain Python (its twin, without numba, and
under ``NUMBA_DISABLE_JIT=1``) is compared on small cases in fresh processes. Beside the closed-loop
kernel's old feature set, the cases hold what only the pure loop ran beside an inference pool before:
start caps, queue timeouts and the shortest-timeout-first queue; and what neither ran before issue 36's
item 3: retries, node preemption, priority with quotas and preemption, timeout-ceiling.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.simulate.engine.oracle_policies import run_oracle

from sandbox_fleet.simulate import Deterministic, Episode, Exponential, Fleet, LogNormal, Turns, run_workloads
from sandbox_fleet.simulate.engine.inference import Inference
from sandbox_fleet.simulate.engine.run import place
from sandbox_fleet.simulate.engine.workloads import AsyncRL, Closed, Poisson, SyncRL
from sandbox_fleet.simulate.scenario.run import run_scenario

ROOT = Path(__file__).resolve().parents[4]


def require_numba() -> None:
    """numba is a core dependency: its absence (or ``NUMBA_DISABLE_JIT``) is a broken install here."""
    from sandbox_fleet.simulate.engine import fast

    if not fast.available():
        pytest.fail("the compiled kernel is unavailable: numba is a core dependency (pip install -e .), "
                    "and neither SANDBOX_FLEET_PURE_PYTHON nor NUMBA_DISABLE_JIT may be set for these tests")


def _oracle_run(prep, on_progress=None, compiled=None):  # in place of admit_loop.run
    return run_oracle(prep, on_progress)


@pytest.fixture
def paths(monkeypatch):
    """``paths(fn)``: ``fn()`` on the oracle, then on the compiled kernel (which must run it)."""
    require_numba()
    from sandbox_fleet.simulate.engine.fast import admit_loop

    monkeypatch.delenv("SANDBOX_FLEET_PURE_PYTHON", raising=False)
    monkeypatch.setattr(admit_loop, "MIN_ROLLOUTS", 0)  # every run here is small

    def both(fn):
        with monkeypatch.context() as m:
            m.setattr(admit_loop, "run", _oracle_run)
            pure = fn()
        real = admit_loop.run
        ran = []

        def compiled(prep, on_progress=None, compiled=None):
            ran.append(admit_loop.compiled_for(prep))
            return real(prep, on_progress, compiled=True)

        with monkeypatch.context() as m:
            m.setattr(admit_loop, "run", compiled)
            fast = fn()
        assert all(ran)  # the kernel ran compiled (a run the model refused never reaches it)
        return pure, fast

    return both


MVA = """
[fleet]
cap = 16
[workload]
kind = "closed"
population = 16
count = 6000
[turns]
turns = { dist = "deterministic", value_s = 4 }
command = { dist = "exponential", mean_s = 2.0 }
decode_tokens = { dist = "exponential", mean_s = 500 }
prefill_tokens = { dist = "deterministic", value_s = 0 }
[inference]
replicas = 1
decode_tok_s = 1000
prefill_tok_s = 10000
[run]
seed = 11
"""

TURNS = """
[turns]
turns = { dist = "lognormal", median_s = 5, sigma = 0.6 }
command = { dist = "exponential", mean_s = 3.0 }
prefill_tokens = { dist = "lognormal", median_s = 200, sigma = 0.9 }
decode_tokens = { dist = "exponential", mean_s = 150 }
"""

WL_TURNS = TURNS.replace("[turns]", "[workloads.turns]")  # the same, in a [[workloads]] entry

# A cache of ~3 contexts per replica in front of a host tier of ~4: evictions, offloads,
# host evictions and hits from both tiers.
SMALL_CACHE = 'kv_bytes_per_token = 1024\nkv_cache_gb = 0.004\nkv_offload_gb = 0.005\n'

CASES = {
    "mva": MVA,
    "sticky_seats_cache": f"""
[fleet]
cap = 20
provision_delay_s = 0.5
[workload]
kind = "closed"
population = 30
count = 1500
{TURNS}
[inference]
replicas = 3
decode_tok_s = 900
prefill_tok_s = 20000
iteration_base_ms = 4
max_num_seqs = 3
{SMALL_CACHE}
[run]
seed = 5
""",
    "least_loaded_cache": f"""
[fleet]
cap = 24
[workload]
kind = "closed"
population = 24
count = 1200
{TURNS}
[inference]
replicas = 4
decode_tok_s = 700
prefill_tok_s = 15000
routing = "least-loaded"
max_num_seqs = 4
{SMALL_CACHE}
[run]
seed = 8
""",
    "no_cache_rl": f"""
[fleet]
cap = 40
[workload]
kind = "async-rl"
batch = 32
steps = 12
staleness = 1
train_s = 20
build = {{ hit_p = 0.5, hit = {{ dist = "exponential", mean_s = 1 }}, miss = {{ dist = "exponential", mean_s = 8 }} }}
verifier = {{ dist = "exponential", mean_s = 2 }}
exceptions = {{ p = {{ build = 0.05, verifier = 0.05 }} }}
{TURNS}
[inference]
replicas = 2
decode_tok_s = 800
prefill_tok_s = 10000
kv_cache_gb = 0
[run]
seed = 2
""",
    "sync_rl_unlimited_cache": f"""
[fleet]
cap = 16
[workload]
kind = "sync-rl"
batch = 24
steps = 6
train_s = 30
{TURNS}
[inference]
replicas = 2
decode_tok_s = 500
prefill_tok_s = 8000
[run]
seed = 4
""",
    "open_unbounded": f"""
[fleet]
unbounded = true
[workload]
kind = "poisson"
rate_per_s = 3.0
count = 1500
{TURNS}
[inference]
replicas = 3
decode_tok_s = 1500
prefill_tok_s = 20000
routing = "least-loaded"
kv_bytes_per_token = 1024
kv_cache_gb = 0.01
[run]
seed = 9
""",
}

# What only the pure loop ran beside an inference pool before: a start cap, a queue timeout (rollouts
# dropped while waiting), the shortest-timeout-first queue, each with a provisioning delay or two pools.
CASES.update({
    "start_cap_provisioning": f"""
[fleet]
cap = 12
start_cap = 2
provision_delay_s = 0.4
[workload]
kind = "closed"
population = 16
count = 800
build = {{ hit_p = 0.6, hit = {{ dist = "exponential", mean_s = 0.5 }}, miss = {{ dist = "exponential", mean_s = 4 }} }}
exceptions = {{ p = {{ build = 0.05 }} }}
{TURNS}
[inference]
replicas = 2
decode_tok_s = 900
prefill_tok_s = 20000
max_num_seqs = 4
{SMALL_CACHE}
[run]
seed = 12
""",
    "queue_timeout_open_and_rl": f"""
[[fleets]]
name = "a"
cap = 6
queue_timeout_s = 20
[[fleets]]
name = "b"
cap = 8
queue_timeout_s = 60
start_cap = 3
[[workloads]]
name = "open"
kind = "poisson"
rate_per_s = 0.6
count = 600
pool = "a"
{WL_TURNS}
[[workloads]]
name = "rl"
kind = "sync-rl"
batch = 10
steps = 6
train_s = 15
pool = "b"
{WL_TURNS}
[inference]
replicas = 2
decode_tok_s = 600
prefill_tok_s = 10000
routing = "least-loaded"
[run]
seed = 21
""",
    "shortest_timeout_first_queue_timeout": f"""
[fleet]
cap = 5
admission = "shortest-timeout-first"
queue_timeout_s = 40
[workload]
kind = "poisson"
rate_per_s = 0.5
count = 700
{TURNS}
[inference]
replicas = 1
decode_tok_s = 1000
prefill_tok_s = 20000
max_num_seqs = 3
[run]
seed = 33
""",
})

# Dynamic sampling beside an inference pool (the event loop's last production run before): rounds of
# the shortfall released as rounds end, beside drops of the shortest-timeout-first queue.
# Attempts ended early beside the inference pool (``_inference_rules.end_episode``): retried build and
# verifier exceptions and node preemptions (a call withdrawn from its seat line, prefill line or decode
# set, least-loaded keys of every replica forgotten); a priority pool's evictions with quotas; the
# timeout-ceiling pool's admission beside an RL workload.
CASES.update({
    "retries_node_preemption": f"""
[fleet]
cap = 8
slots_per_node = 2
preempt_rate_per_node_s = 0.01
node_replace_s = 20
[workload]
kind = "closed"
population = 10
count = 150
{TURNS}
[verifier]
dist = "exponential"
mean_s = 2
[exceptions]
p = {{ build = 0.05, verifier = 0.1 }}
[retry]
max_retries = 2
[inference]
replicas = 2
routing = "least-loaded"
max_num_seqs = 3
prefill_tok_s = 2000
decode_tok_s = 100
{SMALL_CACHE}
[run]
seed = 21
""",
    "priority_preempt_quotas": f"""
[fleet]
cap = 6
admission = "priority"
preempt = true
[[workloads]]
name = "rl"
kind = "sync-rl"
priority = 1
nominal = 3
batch = 6
steps = 4
train_s = 20
{WL_TURNS}
[[workloads]]
name = "synth"
kind = "poisson"
priority = 0
rate_per_s = 0.3
count = 60
{WL_TURNS}
[inference]
replicas = 1
max_num_seqs = 4
prefill_tok_s = 2000
decode_tok_s = 100
{SMALL_CACHE}
[run]
seed = 22
""",
    "timeout_ceiling_rl_and_open": f"""
[fleet]
cap = 8
admission = "timeout-ceiling"
[[workloads]]
name = "rl"
kind = "async-rl"
batch = 4
steps = 6
train_s = 15
staleness = 1
{WL_TURNS}
[[workloads]]
name = "eval"
kind = "poisson"
rate_per_s = 0.2
count = 40
{WL_TURNS}
[inference]
replicas = 2
prefill_tok_s = 2000
decode_tok_s = 100
[run]
seed = 23
""",
})

# Agent timeouts and agent-phase exceptions beside the inference pool (``_inference_rules.agent_cut``), from
# the scenario's keys: a timeout from the agent phase's start, exceptions retried on the agent phase.
CASES["agent_timeouts_exceptions"] = f"""
[fleet]
cap = 6
[workload]
kind = "closed"
population = 8
count = 200
agent_timeout_s = 25
{TURNS}
[verifier]
dist = "exponential"
mean_s = 2
[exceptions]
rate_per_s = {{ agent = 0.01 }}
p = {{ verifier = 0.1 }}
[retry]
max_retries = 1
on = ["agent", "verifier"]
[inference]
replicas = 1
max_num_seqs = 3
decode_tok_s = 300
prefill_tok_s = 5000
{SMALL_CACHE}
[run]
seed = 36
"""

CASES["dynamic_sampling_shortest_timeout_first"] = f"""
[fleet]
cap = 6
admission = "shortest-timeout-first"
queue_timeout_s = 60
provision_delay_s = 0.3
[workload]
kind = "sync-rl"
steps = 12
train_s = 5.0
dynamic_sampling = {{ groups = 3, group_size = 4, task_pass = [0.5, 0.1, 0.9, 0.0], valid_rate = 0.9 }}
{TURNS}
[inference]
replicas = 2
decode_tok_s = 900
prefill_tok_s = 20000
max_num_seqs = 3
{SMALL_CACHE}
[run]
seed = 14
"""


def _scenario(tmp_path, toml: str, name: str):
    src = tmp_path / f"{name}.toml"
    src.write_text(textwrap.dedent(toml))

    def go():
        out = tmp_path / f"{name}.parquet"  # one path for both runs: the summary names it
        summary = run_scenario(src, telemetry_out=out)
        return json.dumps(summary, sort_keys=True), out.read_bytes()

    return go


@pytest.mark.parametrize("name", sorted(CASES))
def test_scenario_json_and_telemetry_identical(paths, tmp_path, name):
    (pure_json, pure_tel), (fast_json, fast_tel) = paths(_scenario(tmp_path, CASES[name], name))
    assert fast_json == pure_json
    assert fast_tel == pure_tel
    s = json.loads(fast_json)
    assert s["inference"]["calls"] > 0
    if name in ("sticky_seats_cache", "least_loaded_cache"):
        # the case exercises what it claims: evictions to the host tier and hits
        assert s["inference"]["evicted_gb"] > 0 and 0 < s["inference"]["cache_hit_rate"] < 1
    if name == "dynamic_sampling_shortest_timeout_first":  # steps took several rounds
        assert s["dynamic_sampling"]["rounds_per_step_max"] > 1
    if "queue_timeout" in name:
        assert s["dropped"] > 0  # rollouts waited past the queue timeout
    if name == "sticky_seats_cache":
        assert s["inference"]["queue_wait_s"]["p99"] > 0  # max_num_seqs made calls wait
    if name in ("retries_node_preemption", "priority_preempt_quotas"):
        assert s["outcomes"]["retried_attempts"] > 0  # attempts ended early and re-ran their episode


def _raw(res) -> dict:
    """Everything the summary, invariants and telemetry are computed from, as bytes."""
    out = {k: np.asarray(getattr(res, k)).tobytes() for k in ("start_s", "finish_s", "state", "hold_s")}
    out["areas"] = (res.area_busy, res.area_wait, res.end_s)
    sr = res.inference
    for k, v in vars(sr).items():
        out["pool." + k] = v.tobytes() if isinstance(v, np.ndarray) else v
    return out


def _turns(prefill, decode) -> Turns:
    return Turns(LogNormal(4, 0.5), None, Exponential(2.0), prefill, decode)


def test_two_pools_open_and_closed_with_zero_token_turns(paths):
    # Zero-token turns (decode mean 0.6 rounds to 0 often; no prefill) store empty
    # prefixes: OrderedDict's in-place update of a present key must be reproduced.
    ep = Episode(turns=_turns(Deterministic(0), Exponential(0.6)))
    ep2 = Episode(turns=_turns(Exponential(3), Exponential(2)), verifier=Exponential(1.0))
    inf = Inference(replicas=2, prefill_tok_s=50, decode_tok_s=5, kv_cache_bytes=40.0, kv_bytes_per_token=1.0,
                    kv_offload_bytes=24.0, max_num_seqs=2)

    def go():
        wls = [Closed(population=6, n=300, episode=ep, pool=0, name="c"),
               Poisson(rate_per_s=0.5, n=200, episode=ep2, pool=1, name="o")]
        return _raw(run_workloads([Fleet(cap=4, provision_delay_s=0.25), Fleet(cap=3)], wls, 3, inference=inf))

    pure, fast = paths(go)
    assert fast == pure


def test_sync_rl_on_library_api(paths):
    ep = Episode(turns=_turns(LogNormal(50, 1.0), Exponential(40)))
    inf = Inference(replicas=3, prefill_tok_s=4000, decode_tok_s=400, routing="least-loaded", iteration_base_s=0.01)

    def go():
        return _raw(run_workloads(Fleet(cap=10), [SyncRL(batch=16, steps=5, train_s=12, episode=ep),
                                                  AsyncRL(batch=8, steps=6, train_s=5, staleness=2, episode=ep, name="a")],
                                  7, inference=inf))

    pure, fast = paths(go)
    assert fast == pure


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    replicas=st.integers(1, 3),
    routing=st.sampled_from(["sticky", "least-loaded"]),
    seats=st.one_of(st.none(), st.integers(1, 3)),
    base_s=st.sampled_from([0.0, 0.003]),
    cache=st.sampled_from([None, 0.0, 60.0, 200.0]),
    offload=st.sampled_from([0.0, 50.0]),
    population=st.integers(1, 12),
    cap=st.integers(1, 12),
    count=st.integers(1, 60),
    prefill_mean=st.sampled_from([0.0, 2.0, 20.0]),
    decode_mean=st.sampled_from([0.5, 5.0, 30.0]),
    seed=st.integers(0, 2**31),
    start_cap=st.one_of(st.none(), st.integers(1, 3)),
    queue_timeout_s=st.sampled_from([None, 3.0, 30.0]),
    admission=st.sampled_from(["fifo", "shortest-timeout-first"]),
)
def test_random_small_configurations(paths, replicas, routing, seats, base_s, cache, offload, population, cap,
                                     count, prefill_mean, decode_mean, seed, start_cap, queue_timeout_s, admission):
    prefill = Deterministic(0) if prefill_mean == 0 else Exponential(prefill_mean)
    ep = Episode(turns=Turns(LogNormal(3, 0.7), None, Exponential(1.0), prefill, Exponential(decode_mean)))
    inf = Inference(replicas=replicas, prefill_tok_s=100, decode_tok_s=20, iteration_base_s=base_s, max_num_seqs=seats,
                    routing=routing, kv_cache_bytes=cache, kv_bytes_per_token=1.0 if cache else 0.0,
                    kv_offload_bytes=offload if cache else 0.0)

    def go():
        try:
            fleet = Fleet(cap=cap, start_cap=start_cap, queue_timeout_s=queue_timeout_s, admission=admission)
            return _raw(run_workloads(fleet, [Closed(population=population, n=count, episode=ep)], seed, inference=inf))
        except Exception as e:  # a refused input (a cache below one context) must be refused alike
            return type(e).__name__, str(e)

    pure, fast = paths(go)
    assert fast == pure


def test_small_runs_take_the_kernel_source_as_python_counting_their_model_calls(monkeypatch):
    """Rent or buy (``admit_loop.worth_it``) counts an inference run's model calls beside its rollouts."""
    from sandbox_fleet.simulate.engine.fast import admit_loop
    from sandbox_fleet.simulate.engine.prepare import prepare

    ep = Episode(turns=_turns(Deterministic(10), Exponential(10)))
    inf = Inference(replicas=1, prefill_tok_s=100, decode_tok_s=20)
    prep = prepare(Fleet(cap=4), [Closed(population=4, n=50, episode=ep)], 1, inf)
    calls = int(prep.turn_draws.turns.sum())
    assert calls > 50 and admit_loop.work(prep) == 50 + calls // admit_loop.CALLS_PER_ROLLOUT
    monkeypatch.setattr(admit_loop, "loaded", lambda: False)
    monkeypatch.setattr(admit_loop, "_spent", 0)
    monkeypatch.setattr(admit_loop, "MIN_ROLLOUTS", admit_loop.work(prep) + 1)
    assert not admit_loop.worth_it(prep)
    monkeypatch.setattr(admit_loop, "MIN_ROLLOUTS", admit_loop.work(prep))
    assert admit_loop.worth_it(prep)
    assert place(prep)[0] == "admission-kernel"


def test_what_the_model_refuses_beside_an_inference_pool():
    """Retries, node preemption and every policy pool run beside an inference pool (the kernel and the
    oracle both withdraw a call whose attempt ended early: ``test_ended_early.py``), and agent timeouts
    and agent-phase exceptions (``test_agent_cut.py``); a retry's fresh draw of its turns
    (``retry.redraw``) is refused by the model (``prepare``)."""
    from sandbox_fleet.errors import InputError
    from sandbox_fleet.simulate.engine.entities import RetryPolicy
    from sandbox_fleet.simulate.engine.prepare import prepare

    ep = Episode(turns=_turns(Deterministic(10), Exponential(10)))
    inf = Inference(replicas=1, prefill_tok_s=100, decode_tok_s=20)
    wl = [Closed(population=4, n=50, episode=ep)]
    for fleet, wls in (
            (Fleet(cap=4, slots_per_node=2, preempt_rate_per_node_s=1e-3, node_replace_s=1.0), wl),
            (Fleet(cap=4), [Closed(population=4, n=50, episode=ep, retry=RetryPolicy(max_retries=1))]),
            (Fleet(cap=4, admission="priority", preempt=True), wl),
            (Fleet(cap=4), [Closed(population=4, n=50, episode=Episode(
                turns=_turns(Deterministic(10), Exponential(10)), agent_timeout_s=30.0,
                exception_rate_per_s={"agent": 0.01}))])):
        assert prepare(fleet, wls, 1, inf).turn_draws is not None
    with pytest.raises(InputError, match="retry.redraw"):
        prepare(Fleet(cap=4), [Closed(population=4, n=50, episode=ep, retry=RetryPolicy(max_retries=1, redraw=True))],
                1, inf)


def test_pausing_for_progress_and_growing_the_heap_change_nothing(paths, monkeypatch):
    # The kernel stops every PROGRESS_EVERY heap events (and whenever the event heap might
    # overflow) and resumes from its arrays; results must not depend on where it stopped.
    from sandbox_fleet.simulate.engine.fast import admit_loop

    ep = Episode(turns=_turns(Exponential(30), Exponential(20)))
    inf = Inference(replicas=2, prefill_tok_s=400, decode_tok_s=60, max_num_seqs=3)
    seen = []

    def go():
        return _raw(run_workloads(Fleet(cap=8), [Closed(population=10, n=120, episode=ep)], 5, inference=inf,
                                  on_progress=lambda done, n: seen.append((done, n))))

    monkeypatch.setattr(admit_loop, "PROGRESS_EVERY", 7)
    pure, fast = paths(go)
    assert fast == pure
    assert len(seen) > 100 and seen[-1] == (120, 120)


# --- the kernel's source run as plain Python --------------------------------------------
PLAIN_CASES = ("sticky_seats_cache", "least_loaded_cache", "no_cache_rl", "start_cap_provisioning",
               "shortest_timeout_first_queue_timeout", "dynamic_sampling_shortest_timeout_first",
               "retries_node_preemption", "priority_preempt_quotas", "timeout_ceiling_rl_and_open")


def _plain_python_child() -> None:
    """In a fresh process whose numba is absent (``sys.modules["numba"] = None``) or switched off
    (``NUMBA_DISABLE_JIT=1``): each of ``PLAIN_CASES`` on the oracle, then on the kernel's source run
    as plain Python; prints {case: [digest oracle, digest kernel]} as JSON."""
    import tempfile

    from sandbox_fleet.simulate.engine.fast import _admit_kernel as K
    from sandbox_fleet.simulate.engine.fast import _jit, admit_loop

    assert not _jit.COMPILED and inspect.isfunction(K.run) and inspect.isfunction(K.push)
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in PLAIN_CASES:
            go = _scenario(Path(tmp), CASES[name], name)
            real = admit_loop.run
            admit_loop.run = _oracle_run  # type: ignore[assignment]
            try:
                pure = go()
            finally:
                admit_loop.run = real  # type: ignore[assignment]
            ran = []
            real_run = admit_loop.run

            def plain(prep, on_progress=None, compiled=None, ran=ran, real_run=real_run):
                ran.append(admit_loop.compiled_for(prep))
                return real_run(prep, on_progress, compiled=compiled)

            admit_loop.run = plain  # type: ignore[assignment]
            try:
                kernel = go()
            finally:
                admit_loop.run = real_run  # type: ignore[assignment]
            assert ran == [False], ran
            out[name] = [hashlib.sha256(repr(r).encode()).hexdigest() for r in (pure, kernel)]
    print(json.dumps(out))


@pytest.mark.parametrize("mode", ["without_numba", "numba_disable_jit"])
def test_kernel_source_as_plain_python_matches_the_pure_loop(mode):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("SANDBOX_FLEET_PURE_PYTHON", None)
    block = ""
    if mode == "without_numba":
        block = "sys.modules['numba'] = None; "  # what a machine without numba sees: ImportError
    else:
        env["NUMBA_DISABLE_JIT"] = "1"
    code = (f"import sys; {block}from tests.simulate.engine.inference.test_inference_kernel import _plain_python_child; "
            "_plain_python_child()")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    digests = json.loads(run.stdout.strip().splitlines()[-1])
    assert sorted(digests) == sorted(PLAIN_CASES)
    for name, (pure, kernel) in digests.items():
        assert kernel == pure, name
    assert len({pure for pure, _ in digests.values()}) == len(PLAIN_CASES)  # the cases differ
