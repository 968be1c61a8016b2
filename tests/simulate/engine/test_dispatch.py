"""The one dispatch (``run.place``): the admission kernel runs every scenario, and a run where nothing
feeds back takes its closed form, one pass of ``fifo.place_stream`` (``engine = "fifo"`` forces it and
a run with feedback is refused, naming why); the typed result both return; what the one pass used to
share with the FIFO executor's heap loop (retries, several pools) on the kernel against the oracle; and
the trainer's rules (the admission kernel's, and the oracle's copy in
``tests/simulate/engine/oracle/trainer.py``) on cases worked by hand.

Expected paths and reasons are read off ``fifo.one_pass_refusal``'s documented conditions for each
hand-built scenario; placement and trainer cases are computed by hand in the comments."""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import textwrap

import numpy as np
import pytest
from tests.simulate.engine.builds import BOTH_BUILDS
from tests.simulate.engine.oracle.trainer import RLState
from tests.simulate.engine.oracle_policies import run_oracle

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate import (
    AsyncRL,
    Closed,
    Deterministic,
    Episode,
    Exponential,
    Fleet,
    Poisson,
    RetryPolicy,
    SyncRL,
)
from sandbox_fleet.simulate.engine import fifo
from sandbox_fleet.simulate.engine import run as engine_run
from sandbox_fleet.simulate.engine.prepare import prepare
from sandbox_fleet.simulate.engine.result import ExecutorOutput
from sandbox_fleet.simulate.engine.run import run_workloads

NUMBA = importlib.util.find_spec("numba") is not None


def _open(**fleet) -> tuple[Fleet, list]:
    return Fleet(cap=3, **fleet), [Poisson(rate_per_s=2.0, n=200, holds=Exponential(1.0))]


def _chosen(fleet, wls, engine="auto", inference=None) -> str:
    return run_workloads(fleet, wls, seed=1, engine=engine, inference=inference).engine


def _refusal(fleet, wls, inference=None) -> str | None:
    prep = prepare(fleet, wls, 1, inference)
    return fifo.one_pass_refusal(prep.pools, prep.workloads, prep.inference, prep.any_retry)


def test_the_paths_are_the_documented_names():
    assert (engine_run.ONE_PASS, engine_run.KERNEL) == ("fifo", "admission-kernel")
    assert engine_run.ENGINES == ("auto", "fifo", "events")


@pytest.mark.parametrize("pure", [False, True])
def test_open_arrivals_go_to_the_recursion_and_rl_to_the_kernel_with_or_without_pure_python(pure, monkeypatch):
    if pure:
        monkeypatch.setenv("SANDBOX_FLEET_PURE_PYTHON", "1")
    else:
        monkeypatch.delenv("SANDBOX_FLEET_PURE_PYTHON", raising=False)
    assert _chosen(*_open()) == "fifo"
    fleet, wls = Fleet(cap=4), [SyncRL(batch=8, steps=3, train_s=5.0, holds=Exponential(1.0), name="rl")]
    assert _chosen(fleet, wls) == "admission-kernel"
    assert _refusal(fleet, wls) == "workload rl is RL (its batches wait on the trainer)"


@pytest.mark.parametrize(("fleet", "reason"), [
    ({"start_cap": 1}, "the fleet has a start_cap"),
    ({"queue_timeout_s": 5.0}, "the fleet has a queue_timeout_s"),
    ({"admission": "shortest-timeout-first"}, "the fleet has admission 'shortest-timeout-first'"),
    ({"slots_per_node": 3, "preempt_rate_per_node_s": 1e-3, "node_replace_s": 1.0}, "the fleet has preemption"),
    ({"limits": {"creates_per_s": 5.0}}, "the fleet has [fleet.limits] (claimed by the admission kernel's place)"),
])
def test_pools_the_recursion_cannot_run_go_to_the_admission_kernel(fleet, reason, monkeypatch):
    from sandbox_fleet.simulate.engine.fast import admit_loop

    f, wls = _open(**fleet)
    for loaded in (False, True):  # compiled or its source as plain Python: the same executor
        monkeypatch.setattr(admit_loop, "loaded", lambda loaded=loaded: loaded)
        assert _chosen(f, wls) == "admission-kernel"
    assert _refusal(f, wls) == reason
    with pytest.raises(InputError) as err:  # forcing the recursion: the table's reason, in words
        run_workloads(f, wls, seed=1, engine="fifo")
    assert str(err.value) == f"engine 'fifo' cannot run this scenario ({reason}); use \"auto\" or \"events\""


def test_a_closed_population_and_a_named_pool_are_named_in_the_reason():
    wls = [Closed(population=2, n=20, holds=Exponential(1.0), name="pop")]
    assert _refusal(Fleet(cap=2), wls) == "workload pop is a closed population (its arrivals wait on finishes)"
    pools = [Fleet(cap=2, name="a"), Fleet(cap=2, start_cap=1, name="b")]
    assert fifo.one_pass_refusal(pools, [], None, False) == "several pools"
    assert fifo.one_pass_refusal([Fleet(cap=None)], [], None, False) == (
        "the fleet has no cap (the pass places on a heap of slots)")
    assert fifo.one_pass_refusal([Fleet(cap=2)], [], None, True) == (
        "retries (a retry enters the queue when its attempt ends)")


def test_an_unknown_engine_is_refused():
    with pytest.raises(InputError, match="engine must be auto, fifo or events, got 'fast'"):
        run_workloads(*_open(), seed=1, engine="fast")


def test_the_scenario_refusal_is_the_tables_text(tmp_path):
    from sandbox_fleet.simulate.scenario.run import run_scenario

    path = tmp_path / "s.toml"
    path.write_text(textwrap.dedent("""
        [fleet]
        cap = 2
        start_cap = 1
        [workload]
        kind = "poisson"
        rate_per_s = 1.0
        count = 10
        [hold]
        dist = "exponential"
        mean_s = 1.0
        [run]
        engine = "fifo"
    """))
    with pytest.raises(InputError) as err:
        run_scenario(path)
    assert str(err.value).startswith(f"{path}: key 'run.engine': ")
    assert "engine 'fifo' cannot run this scenario (the fleet has a start_cap); use \"auto\" or \"events\"" in str(err.value)


@pytest.mark.parametrize("engine", ["fifo", "events"])
def test_both_paths_return_the_typed_result(engine, monkeypatch):
    seen = []
    real = engine_run.place

    def spy(prep, eng="auto", on_progress=None):
        ran, out = real(prep, eng, on_progress)
        seen.append(out)
        return ran, out

    monkeypatch.setattr(engine_run, "place", spy)
    runs = [_open()]
    if engine == "events":  # RL runs on the admission kernel only
        runs.append((Fleet(cap=4), [SyncRL(batch=8, steps=3, train_s=5.0, holds=Exponential(1.0))]))
    for fleet, wls in runs:
        res = run_workloads(fleet, wls, seed=1, engine=engine)
        assert res.engine == {"fifo": "fifo", "events": "admission-kernel"}[engine]
    assert len(seen) == len(runs) and all(isinstance(out, ExecutorOutput) for out in seen)
    with pytest.raises(dataclasses.FrozenInstanceError):
        seen[0].preemptions = 1  # type: ignore[misc]


def test_the_run_names_the_path_that_ran(monkeypatch):
    monkeypatch.setenv("SANDBOX_FLEET_PURE_PYTHON", "1")
    assert run_workloads(*_open(), seed=1).engine == "fifo"
    assert run_workloads(*_open(start_cap=1), seed=1).engine == "admission-kernel"  # its source as Python
    assert run_workloads(*_open(), seed=1, engine="events").engine == "admission-kernel"


def _served_run():
    from sandbox_fleet.simulate import LogNormal, Turns
    from sandbox_fleet.simulate.engine.inference import Inference

    ep = Episode(turns=Turns(LogNormal(4, 0.5), None, Exponential(2.0), Exponential(30), Exponential(20)))
    return Fleet(cap=4), [Closed(population=4, n=40, episode=ep)], Inference(replicas=1, prefill_tok_s=400, decode_tok_s=60)


@pytest.mark.skipif(not NUMBA, reason="numba is not installed")
def test_the_kernel_is_named_when_it_ran_compiled_or_as_python(monkeypatch):
    from sandbox_fleet.simulate.engine.fast import admit_loop

    fleet, wls, inf = _served_run()
    monkeypatch.delenv("SANDBOX_FLEET_PURE_PYTHON", raising=False)
    monkeypatch.setattr(admit_loop, "MIN_ROLLOUTS", 0)
    assert run_workloads(fleet, wls, seed=1, inference=inf).engine == "admission-kernel"
    monkeypatch.setenv("SANDBOX_FLEET_PURE_PYTHON", "1")
    assert run_workloads(fleet, wls, seed=1, inference=inf).engine == "admission-kernel"


def test_timing_names_the_path_and_the_default_json_does_not(tmp_path, monkeypatch):
    from sandbox_fleet.simulate.scenario.run import run_scenario

    monkeypatch.setenv("SANDBOX_FLEET_PURE_PYTHON", "1")
    path = tmp_path / "s.toml"
    path.write_text('[fleet]\ncap = 2\nstart_cap = 1\n[workload]\nkind = "poisson"\nrate_per_s = 1.0\ncount = 30\n'
                    '[hold]\ndist = "exponential"\nmean_s = 1.0\n')
    plain = run_scenario(path)
    assert plain["engine"] is None  # the nullable field stays empty: the same bytes whichever path ran
    assert run_scenario(path, timing=True)["engine"] == "admission-kernel"


# --- the trainer's rules, by hand --------------------------------------------------------------
def _kernel_and_oracle(fleet, wls, compiled: bool) -> list:
    """The trainer's steps of workload 0 as the admission kernel leaves them (compiled or its plain
    twin) and as the oracle's (``oracle/trainer.RLState``), both checked below against the hand."""
    from sandbox_fleet.simulate.engine.fast import admit_loop

    kernel = admit_loop.run(prepare(fleet, wls, 1), compiled=compiled).rl[0]
    oracle = run_oracle(prepare(fleet, wls, 1)).rl[0]
    return [kernel.arrays(), oracle.arrays()]




@BOTH_BUILDS
def test_trainer_steps_by_hand(compiled):
    # Two batches of 2, staleness 0, train 10 s, every slot free (no cap). Batch 0's rollouts hold 4
    # and 3 s: the batch ends at 4 (its last), step 0 trains 4 -> 14 and batch 1 goes out at 14
    # (staleness 0: it waits for step 0). Its rollouts hold 6 and 5: it ends at 20, step 1 trains
    # 20 -> 30 (its batch, not the step before, is the later).
    wl = SyncRL(batch=2, steps=2, train_s=10.0, holds=np.array([4.0, 3.0, 6.0, 5.0]))
    for st in _kernel_and_oracle(Fleet(cap=None), [wl], compiled):
        assert st["release_s"].tolist() == [0.0, 14.0]
        assert st["batch_end_s"].tolist() == [4.0, 20.0]
        assert st["train_start_s"].tolist() == [4.0, 20.0]
        assert st["train_end_s"].tolist() == [14.0, 30.0]


@BOTH_BUILDS
def test_a_step_waits_for_the_step_before(compiled):
    # Staleness 1, batches of 1, train 10 s: both batches go out at 0 (batch 1 <= version 0 + 1).
    # Batch 0 ends at 4, step 0 trains 4 -> 14; batch 1 ends at 5 while step 0 still trains: step 1
    # starts at 14 (the step before), ends at 24; batch 2 goes out at 14 (2 <= version 1 + 1).
    wl = AsyncRL(batch=1, steps=3, staleness=1, train_s=10.0, holds=np.array([4.0, 5.0, 1.0]))
    for st in _kernel_and_oracle(Fleet(cap=None), [wl], compiled):
        assert st["release_s"].tolist() == [0.0, 0.0, 14.0]
        assert st["batch_end_s"].tolist() == [4.0, 5.0, 15.0]
        assert st["train_start_s"].tolist() == [4.0, 14.0, 24.0]
        assert st["train_end_s"].tolist() == [14.0, 24.0, 34.0]


def test_the_oracles_trainer_by_hand():
    # The oracle's own record, fed ends out of order: batch 0's rollouts end at 4 then 3 (batch end
    # 4, step 0 trains 4 -> 14); batch 1 (released at 14) at 20 then 19: step 1 starts at 20.
    st = RLState(0, np.array([2, 2]), 0, 10.0, 0)
    assert [list(r) for r in st.take_releasable(0.0)] == [[0, 1]]  # staleness 0: batch 1 waits for step 0
    assert st.rollout_ended(0, 4.0) is False
    assert st.rollout_ended(0, 3.0) is True
    assert st.batch_end_s[0] == 4.0 and st.can_train()
    assert st.start_step() == 14.0
    st.end_train(14.0)
    assert [list(r) for r in st.take_releasable(14.0)] == [[2, 3]]
    st.rollout_ended(1, 20.0)
    assert st.rollout_ended(1, 19.0) and st.start_step() == 30.0
    assert st.train_start_s == [4.0, 20.0] and math.isnan(st.train_end_s[1])


@pytest.mark.parametrize("engine", ["auto", "events"])
def test_deterministic_sync_rl_steps_by_hand(engine):
    # Batch 2 on cap 1, holds 3 s, train 10 s: step j's batch runs 0-6 + 16j, trains 6-16 + 16j.
    res = run_workloads(Fleet(cap=1), [SyncRL(batch=2, steps=3, train_s=10.0, holds=Deterministic(3.0))],
                        seed=1, engine=engine)
    assert res.engine == "admission-kernel"
    st = res.steps[0]
    assert st["batch_end_s"].tolist() == [6.0, 22.0, 38.0]
    assert st["train_start_s"].tolist() == [6.0, 22.0, 38.0]
    assert st["train_end_s"].tolist() == [16.0, 32.0, 48.0]


def test_the_fifo_executor_refuses_rl():
    wls = [SyncRL(batch=2, steps=3, train_s=10.0, holds=Deterministic(3.0), name="b")]
    with pytest.raises(InputError, match=r"engine 'fifo' cannot run this scenario \(workload b is RL"):
        run_workloads(Fleet(cap=1), wls, seed=1, engine="fifo")


RETRYING = Episode(agent=Exponential(1.0), verifier=Exponential(0.1), exception_rate_per_s={"verifier": 3.0})

#: what the FIFO executor's heap loop (``run_fifo``, gone) placed: open arrivals with retries, several pools,
#: an unbounded pool; now the admission kernel's, checked against the oracle (the pure event loop)
FEEDBACK = {
    "retries": lambda: (Fleet(cap=5), [Poisson(rate_per_s=4, n=3000, episode=RETRYING, retry=RetryPolicy(max_retries=3))]),
    "retries_provisioning": lambda: (Fleet(cap=5, provision_delay_s=0.3),
                                     [Poisson(rate_per_s=3, n=3000, episode=RETRYING, retry=RetryPolicy(max_retries=2))]),
    "two_pools": lambda: ([Fleet(cap=3, name="x"), Fleet(cap=None, name="y")],
                         [Poisson(rate_per_s=2, n=2000, episode=RETRYING, retry=RetryPolicy(max_retries=2), name="a"),
                          Poisson(rate_per_s=2, n=2000, holds=Exponential(1.0), pool=1, name="c")]),
    "unbounded": lambda: (Fleet(cap=None), [Poisson(rate_per_s=3, n=2000, holds=Exponential(1.0))]),
}


@BOTH_BUILDS
@pytest.mark.parametrize("case", sorted(FEEDBACK))
def test_what_the_fifo_heap_loop_ran_is_the_kernels_and_the_oracles(case, compiled):
    # Retries enter the queue when their attempt ends, so the one pass refuses them (forcing it names
    # why); the kernel places every attempt as the oracle does, byte for byte.
    from sandbox_fleet.simulate.engine.fast import admit_loop

    fleet, wls = FEEDBACK[case]()
    prep = prepare(fleet, wls, 3)
    why = fifo.one_pass_refusal(prep.pools, prep.workloads, prep.inference, prep.any_retry)
    assert why is not None
    with pytest.raises(InputError, match=r"engine 'fifo' cannot run this scenario"):
        run_workloads(fleet, wls, seed=3, engine="fifo")
    a = run_oracle(prepare(fleet, wls, 3))
    b = admit_loop.run(prep, compiled=compiled)
    if case.startswith("retries"):
        assert len(b.extra["rollout"]) > 0  # retries happened
    for k in ("arrival_s", "start_s", "finish_s", "state", "phase", "build_s"):
        assert np.array_equal(a.first[k], b.first[k], equal_nan=True), k
        assert a.extra[k] == b.extra[k], k
    assert a.extra["rollout"] == b.extra["rollout"] and a.extra["attempt"] == b.extra["attempt"]
    assert (a.area_busy, a.area_wait, a.clock_monotonic) == (b.area_busy, b.area_wait, b.clock_monotonic)


def test_dynamic_sampling_beside_an_inference_pool_runs_on_the_admission_kernel():
    """Dynamic sampling (a step's rounds released as rounds end) beside an inference pool: the admission
    kernel runs it (its bytes against the event loop: test_inference_kernel.py); in a priority pool
    no executor does."""
    from sandbox_fleet.simulate.engine.dynamic_sampling import DynamicSampling

    fleet, wls, inf = _served_run()
    ep = wls[0].episode
    dyn = SyncRL(batch=8, steps=3, train_s=5.0, episode=ep,
                 dynamic=DynamicSampling(groups=2, group_size=4, task_pass=np.array([0.5, 0.2])))
    from sandbox_fleet.simulate.engine.fast import admit_loop

    assert _refusal(fleet, [dyn], inf) is not None and admit_loop.refusal(prepare(fleet, [dyn], 1, inf)) is None
    assert run_workloads(fleet, [dyn], seed=1, inference=inf).engine == "admission-kernel"
    dyn = SyncRL(batch=8, steps=3, train_s=5.0, holds=Exponential(1.0),
                 dynamic=DynamicSampling(groups=2, group_size=4, task_pass=np.array([0.5, 0.2])))
    prep = prepare(Fleet(cap=4, admission="priority"), [dyn], 1)
    assert "dynamic_sampling in a pool with admission 'priority'" in (admit_loop.refusal(prep) or "")
    assert _refusal(Fleet(cap=4, admission="priority"), [dyn]) is not None
    with pytest.raises(InputError, match=r"the admission kernel cannot run this scenario \(dynamic_sampling"):
        engine_run.place(prep)
