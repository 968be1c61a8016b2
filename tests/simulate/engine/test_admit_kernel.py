"""The admission kernel (``simulate/engine/fast/admit_loop`` + ``_admit_kernel``) against the pure
event loop (``loop.run_events`` with ``oracle_policies``' queues), its oracle: the same attempts, phases, trainer steps and
time integrals, byte for byte, on every admission policy, start caps, queue timeouts, provisioning
delays, retries and evictions, compiled and (in fresh processes) as plain Python.

The theory checks of the policies (Cobham's two-class M/M/1, the preemptive M/M/c's top class as
Erlang C) live in ``test_policies.py`` and assert that they ran on this kernel.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tests.simulate.engine.builds import BOTH_BUILDS
from tests.simulate.engine.oracle_policies import run_oracle

from sandbox_fleet.simulate import Closed, Exponential, Fleet, LogNormal, Poisson, SyncRL
from sandbox_fleet.simulate.engine import fast
from sandbox_fleet.simulate.engine.dynamic_sampling import DynamicSampling
from sandbox_fleet.simulate.engine.entities import Build, Episode, RetryPolicy
from sandbox_fleet.simulate.engine.prepare import prepare
from sandbox_fleet.simulate.engine.run import place
from sandbox_fleet.simulate.engine.workloads import AsyncRL
from sandbox_fleet.simulate.scenario.run import build, load_scenario

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples" / "scenarios"


def _flaky_episode(mean_s: float, timeout_s: float | None = None) -> Episode:
    """Holds with build misses and exceptions in every phase (so retries happen)."""
    return Episode(agent=Exponential(mean_s), build=Build(hit_p=0.7, hit=Exponential(0.2), miss=Exponential(2.0)),
                   verifier=Exponential(0.5), exception_p={"build": 0.1, "verifier": 0.1},
                   exception_rate_per_s={"agent": 0.01}, agent_timeout_s=timeout_s)


RETRY = RetryPolicy(max_retries=2)

CASES = {
    "priority_quotas_preempt_provisioning": lambda: (
        Fleet(cap=6, admission="priority", preempt=True, provision_delay_s=0.5),
        [Poisson(rate_per_s=1.5, n=600, holds=Exponential(2.0), priority=2, nominal=2, borrow_limit=3, name="hi"),
         Poisson(rate_per_s=1.0, n=400, holds=Exponential(3.0), nominal=1, name="lo"),
         Closed(population=4, n=300, holds=Exponential(2.5), priority=1, name="mid")]),
    "priority_preempt_counted_with_retries": lambda: (
        Fleet(cap=5, admission="priority", preempt=True),
        [Poisson(rate_per_s=2.0, n=500, episode=_flaky_episode(1.5), retry=RETRY, priority=1, name="hi"),
         Closed(population=6, n=400, episode=_flaky_episode(2.0), retry=RETRY, name="lo")]),
    "priority_start_cap_queue_timeout": lambda: (
        Fleet(cap=4, admission="priority", start_cap=2, queue_timeout_s=4.0),
        [Poisson(rate_per_s=1.2, n=500, episode=_flaky_episode(2.0), retry=RETRY, priority=3, name="a"),
         Closed(population=5, n=300, holds=Exponential(2.0), name="b")]),
    "ceiling_rl_beside_closed": lambda: (
        Fleet(cap=10, admission="timeout-ceiling", provision_delay_s=0.3),
        [SyncRL(batch=6, steps=12, train_s=2.0, episode=_flaky_episode(2.0, timeout_s=6.0), retry=RETRY, name="rl"),
         Closed(population=8, n=400, episode=Episode(agent=LogNormal(1.0, 1.5), agent_timeout_s=9.0), name="synth")]),
    "fifo_start_cap_timeout_retries_two_pools": lambda: (
        [Fleet(cap=3, start_cap=1, queue_timeout_s=3.0, name="a"), Fleet(cap=None, provision_delay_s=1.0, name="b")],
        [Poisson(rate_per_s=1.0, n=400, episode=_flaky_episode(1.0), retry=RETRY, name="open"),
         AsyncRL(batch=5, steps=10, train_s=1.0, staleness=1, holds=Exponential(1.0), pool=1, name="async"),
         Closed(population=3, n=200, episode=_flaky_episode(1.0), retry=RETRY, pool=0, name="closed")]),
}


# Node preemption (``preempt_rate_per_node_s``: a node's attempts end as preempted exceptions, each
# followed by the pool's dispatch) and the shortest-timeout-first queue (per-rollout timeouts too).
CASES.update({
    "node_preemption_fifo_provisioning_retries": lambda: (
        Fleet(cap=12, slots_per_node=4, preempt_rate_per_node_s=0.02, node_replace_s=5.0, provision_delay_s=0.3),
        [Poisson(rate_per_s=3.0, n=600, episode=_flaky_episode(2.0), retry=RETRY, name="open"),
         Closed(population=5, n=300, episode=_flaky_episode(3.0), retry=RETRY, name="closed")]),
    "node_preemption_priority_evicting_start_cap_timeout": lambda: (
        Fleet(cap=8, slots_per_node=3, preempt_rate_per_node_s=0.03, node_replace_s=4.0, admission="priority",
              preempt=True, start_cap=3, queue_timeout_s=6.0),
        [Poisson(rate_per_s=1.5, n=500, episode=_flaky_episode(2.0), retry=RETRY, priority=2, nominal=3, name="hi"),
         Closed(population=6, n=400, holds=Exponential(2.5), nominal=2, name="lo")]),
    "node_preemption_ceiling_rl": lambda: (
        Fleet(cap=10, slots_per_node=5, preempt_rate_per_node_s=0.03, node_replace_s=8.0,
              admission="timeout-ceiling"),
        [SyncRL(batch=6, steps=10, train_s=2.0, episode=_flaky_episode(2.0, timeout_s=6.0), retry=RETRY, name="rl"),
         Closed(population=6, n=300, episode=Episode(agent=LogNormal(1.0, 1.5), agent_timeout_s=9.0), name="synth")]),
    "shortest_timeout_first_queue_timeout_retries": lambda: (
        Fleet(cap=4, admission="shortest-timeout-first", queue_timeout_s=8.0, start_cap=3),
        [Poisson(rate_per_s=1.8, n=500, retry=RETRY, name="varied",
                 episode=_flaky_episode(1.5, timeout_s=np.random.default_rng(3).choice([2.0, 5.0, 9.0], 500))),
         Closed(population=4, n=300, episode=_flaky_episode(2.0, timeout_s=5.0), retry=RETRY, name="five"),
         AsyncRL(batch=4, steps=20, train_s=1.0, staleness=1, holds=Exponential(1.0), name="untimed")]),
    "shortest_timeout_first_preempted_beside_fifo": lambda: (
        [Fleet(cap=6, slots_per_node=2, preempt_rate_per_node_s=0.02, node_replace_s=3.0, provision_delay_s=0.5,
               admission="shortest-timeout-first", queue_timeout_s=6.0, name="stf"),
         Fleet(cap=3, slots_per_node=1, preempt_rate_per_node_s=0.01, node_replace_s=2.0, queue_timeout_s=5.0,
               name="fifo")],
        [Poisson(rate_per_s=2.5, n=600, retry=RETRY, name="a",
                 episode=_flaky_episode(2.0, timeout_s=np.random.default_rng(4).uniform(1.0, 10.0, 600))),
         Poisson(rate_per_s=0.8, n=300, episode=_flaky_episode(3.0), retry=RETRY, pool=1, name="b"),
         Closed(population=3, n=200, episode=_flaky_episode(2.0, timeout_s=4.0), retry=RETRY, name="c")]),
    "ceiling_without_a_cap": lambda: (
        Fleet(cap=None, admission="timeout-ceiling", provision_delay_s=0.2),
        [SyncRL(batch=5, steps=8, train_s=2.0, episode=_flaky_episode(2.0, timeout_s=5.0), retry=RETRY, name="rl"),
         Poisson(rate_per_s=2.0, n=300, episode=Episode(agent=LogNormal(1.0, 1.0), agent_timeout_s=7.0), name="o")]),
})


# Dynamic sampling: a step's next round is released when the round before ends, inside the ending
# attempt's close and before its slot is freed (``LoopState.terminal``), beside retries, drops and nodes.
def _dynamic(**kw) -> DynamicSampling:
    return DynamicSampling(groups=3, group_size=4, task_pass=np.array([0.5, 0.1, 0.9, 0.0]), **kw)


CASES.update({
    "dynamic_sampling_fifo_queue_timeout_retries": lambda: (
        Fleet(cap=7, provision_delay_s=0.3, queue_timeout_s=9.0),
        [SyncRL(batch=12, steps=15, train_s=2.0, episode=_flaky_episode(1.5), retry=RETRY, name="ds",
                dynamic=_dynamic(valid_rate=0.9)),
         Closed(population=3, n=200, episode=_flaky_episode(2.0), retry=RETRY, name="closed")]),
    "dynamic_sampling_async_rounds_preemption_shortest_timeout_first": lambda: (
        Fleet(cap=8, slots_per_node=2, preempt_rate_per_node_s=0.02, node_replace_s=3.0,
              admission="shortest-timeout-first", queue_timeout_s=7.0),
        [AsyncRL(batch=12, steps=15, train_s=1.0, staleness=1, episode=_flaky_episode(1.0, timeout_s=4.0),
                 retry=RETRY, name="ds", dynamic=_dynamic(round_groups=2)),
         Poisson(rate_per_s=1.0, n=300, episode=_flaky_episode(2.0, timeout_s=6.0), retry=RETRY, name="open")]),
})


def _example(name: str):
    def make():
        path = EXAMPLES / f"{name}.toml"
        b = build(load_scenario(path), path.parent, str(path))
        return b.fleets, b.workloads
    return make


# RL on plain FIFO pools (what the FIFO executor ran before the trainer's rules were the kernel's alone):
# provisioning, a staleness of 2 with retries, and RL beside open arrivals on two pools.
CASES.update({
    "fifo_sync_rl_provisioning": lambda: (
        Fleet(cap=50, provision_delay_s=2.0), [SyncRL(batch=80, steps=12, train_s=40.0, holds=LogNormal(60.0, 1.0))]),
    "fifo_async_rl_staleness_retries": lambda: (
        Fleet(cap=30),
        [AsyncRL(batch=40, steps=10, train_s=100.0, staleness=2, episode=_flaky_episode(60.0), retry=RETRY)]),
    "fifo_rl_beside_open_two_pools": lambda: (
        [Fleet(cap=20, provision_delay_s=0.3, name="a"), Fleet(cap=None, name="b")],
        [SyncRL(batch=30, steps=8, train_s=20.0, episode=_flaky_episode(40.0), retry=RETRY, name="rl"),
         Poisson(rate_per_s=0.5, n=800, holds=Exponential(40.0), pool=1, name="o1"),
         Poisson(rate_per_s=0.2, n=300, episode=_flaky_episode(10.0), retry=RETRY, pool=0, name="o0")]),
})

CASES["example_shared_pool_priority"] = _example("shared_pool_priority")
CASES["example_timeout_ceiling"] = _example("timeout_ceiling")


def _digest(out) -> dict[str, str]:
    """Every array and figure of an ``ExecutorOutput``, as bytes (hex digests)."""
    import hashlib

    parts: dict[str, bytes] = {}
    for k, v in out.first.items():
        parts[f"first.{k}"] = np.ascontiguousarray(v).tobytes() + str(np.asarray(v).dtype).encode()
    for k, v in out.extra.items():
        parts[f"extra.{k}"] = repr(list(v)).encode()
    for w, st in out.rl.items():
        for k, v in st.arrays().items():
            parts[f"rl{w}.{k}"] = v.tobytes()
        parts[f"rl{w}.counters"] = repr((st.version, st.next_release, st.next_train, st.training, st.rem)).encode()
    parts["areas"] = repr((out.area_busy, out.area_wait, out.clock_monotonic, out.preemptions)).encode()
    return {k: hashlib.sha256(v).hexdigest()[:16] for k, v in parts.items()}


def _both(name: str, compiled: bool | None = None) -> tuple[dict[str, str], dict[str, str], int]:
    """The oracle's digest, the kernel's (``compiled``: numba's build, its plain-Python twin, or
    ``None``: as ``admit_loop`` chooses) and the kernel's retry rows."""
    from sandbox_fleet.simulate.engine.fast import admit_loop

    pools, wls = CASES[name]()
    pure = run_oracle(prepare(pools, wls, 7))
    prep = prepare(pools, wls, 7)
    assert admit_loop.refusal(prep) is None, name
    kernel = admit_loop.run(prep, compiled=compiled)
    return _digest(pure), _digest(kernel), len(kernel.extra["rollout"])


@BOTH_BUILDS
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_kernel_places_every_attempt_as_the_pure_loop(name, compiled):
    pure, kernel, retried = _both(name, compiled)
    assert kernel == pure
    if "retries" in name or "preempt" in name:
        assert retried > 0  # the case exercises the retry draw
    if name.startswith("dynamic_sampling"):  # steps released several rounds each, as rounds ended
        pools, wls = CASES[name]()
        prep = prepare(pools, wls, 7)
        assert max(len(r) for r in prep.workloads[0].groups_drawn.rounds) > 2


@pytest.mark.parametrize("name", sorted(n for n in CASES if n.startswith("node_preemption")
                                        or n == "shortest_timeout_first_preempted_beside_fifo"))
def test_the_preemption_cases_take_nodes_down_while_they_run(name):
    from sandbox_fleet.simulate.engine.fast import admit_loop

    pools, wls = CASES[name]()
    out = admit_loop.run(prepare(pools, wls, 7))
    assert out.preemptions >= 3  # several nodes failed (and the digests compare the counts)
    preempted = np.count_nonzero(np.asarray(out.extra["phase"]) == 4) + np.count_nonzero(out.first["phase"] == 4)
    assert preempted > 0  # some attempt was running on a failed node


def test_shortest_timeout_first_starts_the_shortest_timeout_waiting():
    """A hand-worked queue: one slot busy until t=10 while four rollouts arrive with timeouts 9, 3,
    7 and 3; the slot then serves 3 (the first), 3 (the second), 7, 9, one hold of 1 s each."""
    from sandbox_fleet.simulate.engine.fast import admit_loop
    from sandbox_fleet.simulate.engine.workloads import Replay

    timeouts = np.array([20.0, 9.0, 3.0, 7.0, 3.0])
    ep = Episode(agent=np.array([10.0, 1.0, 1.0, 1.0, 1.0]), agent_timeout_s=timeouts)
    wl = Replay(arrivals_s=np.array([0.0, 1.0, 2.0, 3.0, 4.0]), episode=ep)
    out = admit_loop.run(prepare(Fleet(cap=1, admission="shortest-timeout-first"), [wl], 1))
    assert out.first["start_s"].tolist() == [0.0, 13.0, 10.0, 12.0, 11.0]


def test_the_cases_differ_and_exercise_what_they_name():
    from sandbox_fleet.simulate.engine.fast import admit_loop
    from sandbox_fleet.simulate.engine.run import run_workloads

    pools, wls = CASES["priority_start_cap_queue_timeout"]()

    admit_loop.load()  # loaded: small runs take the kernel too
    res = run_workloads(pools, wls, seed=7)
    assert res.engine == "admission-kernel"
    s = res.summary()
    assert s["dropped"] > 0 and s["attempts"] > s["rollouts"]  # queue timeouts struck, retries ran
    cases = ("ceiling_rl_beside_closed", "priority_quotas_preempt_provisioning")
    digests = {json.dumps(_both(n)[0], sort_keys=True) for n in cases}
    assert len(digests) == 2


def test_the_kernel_refuses_what_it_does_not_run():
    from sandbox_fleet.simulate.engine.fast import admit_loop

    wl = [Poisson(rate_per_s=1.0, n=50, holds=Exponential(1.0))]
    from sandbox_fleet.simulate.engine.sandbox_limits import SandboxLimits

    for fleet in (Fleet(cap=2, limits=SandboxLimits(creates_per_s=1.0)),  # [fleet.limits]: test_limits_kernel.py
                  Fleet(cap=2, admission="priority"), Fleet(cap=2, admission="shortest-timeout-first"),
                  Fleet(cap=3, slots_per_node=3, preempt_rate_per_node_s=1e-3, node_replace_s=1.0)):
        assert admit_loop.refusal(prepare(fleet, wl, 1)) is None


def test_auto_takes_the_kernel_compiled_for_large_runs_and_its_source_as_python_for_small_ones(monkeypatch):
    from sandbox_fleet.simulate.engine.fast import admit_loop

    monkeypatch.delenv("SANDBOX_FLEET_PURE_PYTHON", raising=False)
    pools, wls = CASES["priority_quotas_preempt_provisioning"]()
    prep = prepare(pools, wls, 1)
    assert place(prep)[0] == "admission-kernel"  # every event run without an inference pool
    monkeypatch.setattr(admit_loop, "loaded", lambda: False)
    monkeypatch.setattr(admit_loop, "_spent", 0)
    monkeypatch.setattr(admit_loop, "MIN_ROLLOUTS", 3000)
    monkeypatch.setattr(admit_loop, "cached", lambda: True)  # the buy is a load from numba's cache
    assert not admit_loop.compiled_for(prep)  # 1,300 rollouts: not worth a process's first load ...
    assert not admit_loop.compiled_for(prep)  # ... 2,600 run interpreted so far ...
    assert admit_loop.compiled_for(prep)  # ... and the third run's would reach it (rent or buy)
    monkeypatch.setattr(admit_loop, "_spent", 0)
    monkeypatch.setattr(admit_loop, "cached", lambda: False)  # the buy is a compile: 160 loads' worth
    monkeypatch.setattr(admit_loop, "MIN_ROLLOUTS", 10)  # 1,600 rollouts to buy it now
    assert not admit_loop.compiled_for(prep)  # 1,300 interpreted ...
    assert admit_loop.compiled_for(prep)  # ... 2,600 reach 1,600
    monkeypatch.setenv("SANDBOX_FLEET_PURE_PYTHON", "1")
    assert place(prep)[0] == "admission-kernel" and not admit_loop.compiled_for(prep)


def test_a_small_run_takes_the_kernel_source_as_python_without_importing_numba():
    """In a fresh process with numba installed: a 1,300-rollout policy run is the pure loop's bytes,
    on the kernel's plain-Python twin, and numba is never imported."""
    code = ("import sys, json; from tests.simulate.engine.test_admit_kernel import _both, CASES; "
            "from sandbox_fleet.simulate.engine.run import run_workloads; "
            "pools, wls = CASES['priority_quotas_preempt_provisioning'](); "
            "res = run_workloads(pools, wls, seed=7); pure, kernel, _ = _both('priority_quotas_preempt_provisioning'); "
            "print(json.dumps([res.engine, pure == kernel, 'numba' in sys.modules]))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("SANDBOX_FLEET_PURE_PYTHON", None)
    env.pop("NUMBA_DISABLE_JIT", None)
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == ["admission-kernel", True, False]


def test_progress_pauses_and_resumes_without_changing_a_bit(monkeypatch):
    from sandbox_fleet.simulate.engine.fast import admit_loop

    monkeypatch.setattr(admit_loop, "PROGRESS_EVERY", 97)
    pools, wls = CASES["priority_preempt_counted_with_retries"]()
    seen: list[tuple[int, int]] = []
    out = admit_loop.run(prepare(pools, wls, 7), lambda d, n: seen.append((d, n)))
    assert _digest(out) == _both("priority_preempt_counted_with_retries")[0]
    assert len(seen) > 5 and all(a[0] <= b[0] for a, b in itertools.pairwise(seen))


def _plain_child() -> None:
    """In a fresh process without compiled numba: every case on the pure loop and on the kernel's
    source run as plain Python; prints the cases whose digests differ (JSON)."""
    import inspect

    from sandbox_fleet.simulate.engine.fast import _admit_kernel as K
    from sandbox_fleet.simulate.engine.fast import _jit

    assert not _jit.COMPILED and inspect.isfunction(K.run)
    bad = [n for n in ("priority_preempt_counted_with_retries", "priority_start_cap_queue_timeout",
                       "ceiling_rl_beside_closed", "fifo_start_cap_timeout_retries_two_pools",
                       "node_preemption_priority_evicting_start_cap_timeout",
                       "shortest_timeout_first_preempted_beside_fifo", "dynamic_sampling_fifo_queue_timeout_retries",
                       "dynamic_sampling_async_rounds_preemption_shortest_timeout_first")
           if (lambda d: d[0] != d[1])(_both(n))]
    print(json.dumps(bad))


@pytest.mark.parametrize("mode", ["without_numba", "numba_disable_jit"])
def test_the_kernel_source_as_plain_python_gives_the_same_bytes(mode):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("SANDBOX_FLEET_PURE_PYTHON", None)
    block = "sys.modules['numba'] = None; " if mode == "without_numba" else ""
    if mode == "numba_disable_jit":
        env["NUMBA_DISABLE_JIT"] = "1"
    code = f"import sys; {block}from tests.simulate.engine.test_admit_kernel import _plain_child; _plain_child()"
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == []


@pytest.mark.skipif(not fast.available(), reason="numba may not run here")
@pytest.mark.parametrize("scenario", ["sync_rl.toml", "two_pools.toml", "shared_pool.toml", "images.toml"])
def test_rl_example_scenarios_give_the_same_bytes_compiled_and_as_plain_python(scenario, tmp_path, monkeypatch):
    """Every RL run is the kernel's: an example scenario's summary and telemetry, the kernel compiled
    and its source as plain Python, byte for byte (the form asked for is the form that ran)."""
    from sandbox_fleet.simulate.engine.fast import admit_loop
    from sandbox_fleet.simulate.scenario.run import run_scenario

    forms: list[bool] = []
    real = admit_loop.kernel
    monkeypatch.setattr(admit_loop, "kernel", lambda compiled: forms.append(compiled) or real(compiled))
    out = {}
    for compiled in (False, True):
        monkeypatch.setattr(admit_loop, "MIN_ROLLOUTS", 0 if compiled else 10**12)
        monkeypatch.setattr(admit_loop, "loaded", lambda compiled=compiled: compiled)
        tel = tmp_path / "telemetry.parquet"  # one path: the summary names it
        summary = run_scenario(EXAMPLES / scenario, timing=False, telemetry_out=tel)
        out[compiled] = (json.dumps(summary, sort_keys=True).encode(), tel.read_bytes())
        tel.unlink()
        assert forms[-1] is compiled
    assert out[False] == out[True]
