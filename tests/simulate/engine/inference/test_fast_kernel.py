"""The closed-loop kernel (``simulate/fast``) gives the same bytes as the pure loop.

Every case runs twice in this process, ``SANDBOX_FLEET_PURE_PYTHON=1`` (``loop.py``) and
default (the kernel, compiled by numba, a core dependency), and compares the summary JSON, the
``--telemetry`` Parquet file and the pool's raw records bit for bit. The kernel's runs assert
they did not fall back (``MIN_CALLS`` is lifted: these runs are smaller than the size the
kernel starts at). The same kernel source run as plain Python (without numba, and under
``NUMBA_DISABLE_JIT=1``) is compared on small cases in fresh processes.
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

from sandbox_fleet.simulate import Deterministic, Episode, Exponential, Fleet, LogNormal, Turns, run_workloads
from sandbox_fleet.simulate.engine import executors as engine_mod
from sandbox_fleet.simulate.engine.inference import Inference
from sandbox_fleet.simulate.engine.workloads import AsyncRL, Closed, Poisson, SyncRL
from sandbox_fleet.simulate.scenario.run import run_scenario

ROOT = Path(__file__).resolve().parents[4]


def require_numba() -> None:
    """numba is a core dependency: its absence (or ``NUMBA_DISABLE_JIT``) is a broken install here."""
    from sandbox_fleet.simulate.engine import fast

    if not fast.available():
        pytest.fail("the compiled kernel is unavailable: numba is a core dependency (pip install -e .), "
                    "and neither SANDBOX_FLEET_PURE_PYTHON nor NUMBA_DISABLE_JIT may be set for these tests")


@pytest.fixture
def paths(monkeypatch):
    """``paths(fn)``: ``fn()`` on the pure loop, then on the kernel (which must not fall back)."""
    require_numba()
    from sandbox_fleet.simulate.engine.fast import pool_loop

    monkeypatch.setattr(pool_loop, "MIN_CALLS", 0)  # every run here is small

    def both(fn):
        monkeypatch.setenv("SANDBOX_FLEET_PURE_PYTHON", "1")
        pure = fn()
        monkeypatch.delenv("SANDBOX_FLEET_PURE_PYTHON")
        real = engine_mod.run_events

        def no_fallback(*a, **k):
            raise AssertionError("the run fell back to the pure loop")

        monkeypatch.setattr(engine_mod, "run_events", no_fallback)
        try:
            fast = fn()
        finally:
            monkeypatch.setattr(engine_mod, "run_events", real)
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
    if name == "sticky_seats_cache":
        assert s["inference"]["queue_wait_s"]["p99"] > 0  # max_num_seqs made calls wait


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
)
def test_random_small_configurations(paths, replicas, routing, seats, base_s, cache, offload, population, cap,
                                     count, prefill_mean, decode_mean, seed):
    prefill = Deterministic(0) if prefill_mean == 0 else Exponential(prefill_mean)
    ep = Episode(turns=Turns(LogNormal(3, 0.7), None, Exponential(1.0), prefill, Exponential(decode_mean)))
    inf = Inference(replicas=replicas, prefill_tok_s=100, decode_tok_s=20, iteration_base_s=base_s, max_num_seqs=seats,
                    routing=routing, kv_cache_bytes=cache, kv_bytes_per_token=1.0 if cache else 0.0,
                    kv_offload_bytes=offload if cache else 0.0)

    def go():
        try:
            return _raw(run_workloads(Fleet(cap=cap), [Closed(population=population, n=count, episode=ep)], seed,
                                      inference=inf))
        except Exception as e:  # a refused input (a cache below one context) must be refused alike
            return type(e).__name__, str(e)

    pure, fast = paths(go)
    assert fast == pure


def test_small_runs_stay_pure_until_the_kernel_is_loaded(monkeypatch):
    require_numba()
    from sandbox_fleet.simulate.engine.fast import pool_loop
    from sandbox_fleet.simulate.engine.prepare import prepare

    ep = Episode(turns=_turns(Deterministic(10), Exponential(10)))
    inf = Inference(replicas=1, prefill_tok_s=100, decode_tok_s=20)
    prep = prepare(Fleet(cap=4), [Closed(population=4, n=50, episode=ep)], 1, inf)
    calls = int(prep.turn_draws.turns.sum())
    monkeypatch.setattr(pool_loop, "MIN_CALLS", calls + 1)
    monkeypatch.setattr(pool_loop, "_KERNEL", "not.loaded.yet")
    assert pool_loop.supported(prep) and not pool_loop.worth_it(prep)
    monkeypatch.setattr(pool_loop, "MIN_CALLS", calls)
    assert pool_loop.worth_it(prep)
    monkeypatch.setattr(pool_loop, "MIN_CALLS", calls + 1)
    monkeypatch.setattr(pool_loop, "_KERNEL", "sandbox_fleet.simulate.engine.fast._pool_loop_kernel")
    pool_loop.load()
    assert pool_loop.loaded() and pool_loop.worth_it(prep)


def test_unsupported_features_fall_back():
    from sandbox_fleet.simulate.engine.fast import pool_loop
    from sandbox_fleet.simulate.engine.prepare import prepare

    ep = Episode(turns=_turns(Deterministic(10), Exponential(10)))
    inf = Inference(replicas=1, prefill_tok_s=100, decode_tok_s=20)
    wl = [Closed(population=4, n=50, episode=ep)]
    assert pool_loop.supported(prepare(Fleet(cap=4), wl, 1, inf))
    for fleet in (Fleet(cap=4, start_cap=2), Fleet(cap=4, queue_timeout_s=5.0),
                  Fleet(cap=4, admission="shortest-timeout-first")):
        assert not pool_loop.supported(prepare(fleet, wl, 1, inf))
    assert not pool_loop.supported(prepare(Fleet(cap=4), [Closed(population=4, n=50, holds=Exponential(1))], 1))


def test_pausing_for_progress_and_growing_the_heap_change_nothing(paths, monkeypatch):
    # The kernel stops every PROGRESS_EVERY events (and whenever the event heap might
    # overflow) and resumes from its arrays; results must not depend on where it stopped.
    from sandbox_fleet.simulate.engine.fast import pool_loop

    ep = Episode(turns=_turns(Exponential(30), Exponential(20)))
    inf = Inference(replicas=2, prefill_tok_s=400, decode_tok_s=60, max_num_seqs=3)
    seen = []

    def go():
        return _raw(run_workloads(Fleet(cap=8), [Closed(population=10, n=120, episode=ep)], 5, inference=inf,
                                  on_progress=lambda done, n: seen.append((done, n))))

    monkeypatch.setattr(pool_loop, "PROGRESS_EVERY", 7)
    monkeypatch.setattr(pool_loop, "HEAP_SLACK", 1)
    pure, fast = paths(go)
    assert fast == pure
    assert len(seen) > 100 and seen[-1] == (120, 120)


# --- the kernel's source run as plain Python --------------------------------------------
PLAIN_CASES = ("sticky_seats_cache", "least_loaded_cache", "no_cache_rl")


def _plain_python_child() -> None:
    """In a fresh process whose numba is absent (``sys.modules["numba"] = None``) or switched off
    (``NUMBA_DISABLE_JIT=1``): each of ``PLAIN_CASES`` on the pure loop, then on the kernel run
    as plain Python; prints {case: [digest pure, digest kernel]} as JSON."""
    import tempfile

    from sandbox_fleet.simulate.engine import fast
    from sandbox_fleet.simulate.engine.fast import _jit, pool_loop
    from sandbox_fleet.simulate.engine.fast import _pool_loop_kernel as K

    assert not _jit.COMPILED and inspect.isfunction(K.run) and inspect.isfunction(K.hpush)
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in PLAIN_CASES:
            go = _scenario(Path(tmp), CASES[name], name)
            os.environ["SANDBOX_FLEET_PURE_PYTHON"] = "1"
            pure = go()
            del os.environ["SANDBOX_FLEET_PURE_PYTHON"]
            real_available, real_min, real_events = fast.available, pool_loop.MIN_CALLS, engine_mod.run_events
            fast.available = lambda: True  # type: ignore[assignment]  # the kernel although it is not compiled
            pool_loop.MIN_CALLS = 0

            def no_fallback(*a, **k):
                raise AssertionError("the run fell back to the pure loop")

            engine_mod.run_events = no_fallback  # type: ignore[assignment]
            try:
                kernel = go()
            finally:
                fast.available, pool_loop.MIN_CALLS, engine_mod.run_events = real_available, real_min, real_events
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
    code = (f"import sys; {block}from tests.simulate.engine.inference.test_fast_kernel import _plain_python_child; "
            "_plain_python_child()")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    digests = json.loads(run.stdout.strip().splitlines()[-1])
    assert sorted(digests) == sorted(PLAIN_CASES)
    for name, (pure, kernel) in digests.items():
        assert kernel == pure, name
    assert len({pure for pure, _ in digests.values()}) == len(PLAIN_CASES)  # the cases differ
