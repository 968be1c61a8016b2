"""Priority, quotas, preemption and timeout-ceiling admission (``simulate.engine.policies``).

Theory: closed forms computed here (Erlang C for the top class of a preemptive M/M/c,
Cobham's formula for a non-preemptive two-class M/M/1), each checked against the run's own
99% batch-means confidence interval, seeds fixed. Hand cases: deterministic arrivals and
holds whose schedule is worked out by hand in each test.
"""

from __future__ import annotations

import math
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest
from tests.simulate.engine.test_theory import erlang_c_wait

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate import (
    Build,
    Deterministic,
    Episode,
    Exponential,
    Fleet,
    Poisson,
    Replay,
    RetryPolicy,
    SyncRL,
    run_workloads,
)
from sandbox_fleet.simulate.engine.entities import COMPLETED, PREEMPTION, RETRIED, TIMEOUT
from sandbox_fleet.simulate.engine.fifo import one_pass_refusal
from sandbox_fleet.simulate.engine.prepare import prepare
from sandbox_fleet.simulate.scenario import spec as SPEC
from sandbox_fleet.simulate.scenario.run import build, load_scenario

# Where the policy runs run: the admission kernel (compiled when numba runs and the run pays its load,
# else its source as plain Python)
ENGINE = "admission-kernel"
T_995_19 = 2.8609  # Student t, 0.995 quantile, 19 degrees of freedom (20 batch means)


def batch_means_ci(x: np.ndarray, batches: int = 20) -> tuple[float, float]:
    """Mean and 99% half-width of ``x`` (in arrival order) by the method of batch means."""
    m = x.size // batches
    means = x[: m * batches].reshape(batches, m).mean(axis=1)
    return float(x.mean()), T_995_19 * float(means.std(ddof=1)) / math.sqrt(batches)


def class_waits(res, w: int) -> np.ndarray:
    """Per rollout of workload ``w``, in arrival order: its total wait (every attempt's)."""
    sel = res.workload == w
    waits = np.where(res.started[sel], res.start_s[sel], res.finish_s[sel]) - res.arrival_s[sel]
    return np.bincount(res.index[sel], weights=waits)


def test_preemptive_top_class_sees_mmc_alone():
    c, lam_hi, lam_lo = 2, 1.2, 0.2
    res = run_workloads(Fleet(cap=c, admission="priority", preempt=True),
                        [Poisson(rate_per_s=lam_hi, n=30_000, holds=Exponential(1.0), priority=1, name="hi"),
                         Poisson(rate_per_s=lam_lo, n=5_000, holds=Exponential(1.0), name="lo")], seed=3)
    assert res.engine == ENGINE  # the compiled admission kernel (the same bits as the pure loop)
    mean, half = batch_means_ci(class_waits(res, 0))
    expected = erlang_c_wait(lam_hi, 1.0, c)  # M/M/2 at rho 0.6: 0.5625 s
    assert abs(mean - expected) <= half, (mean, half, expected)
    s = res.summary()["workloads"]
    assert s["hi"]["preempted_attempts"] == 0 and s["lo"]["preempted_attempts"] > 100
    # the low class pays: it waits longer than it would on a FIFO M/M/2 at the total load
    assert s["lo"]["queue_wait_s"]["mean"] > erlang_c_wait(lam_hi + lam_lo, 1.0, c)


def test_non_preemptive_two_class_mm1_matches_cobham():
    lam = (0.3, 0.8)
    mean_s = (1.0, 0.5)
    res = run_workloads(Fleet(cap=1, admission="priority"),
                        [Poisson(rate_per_s=lam[0], n=30_000, holds=Exponential(mean_s[0]), priority=1, name="hi"),
                         Poisson(rate_per_s=lam[1], n=80_000, holds=Exponential(mean_s[1]), name="lo")], seed=11)
    assert res.engine == ENGINE
    # Cobham: W0 = sum lam_i E[S_i^2] / 2 (E[S^2] = 2 mean^2), W_k = W0 / ((1 - sigma_{k-1})(1 - sigma_k))
    w0 = sum(lam_i * 2 * m**2 / 2 for lam_i, m in zip(lam, mean_s))
    rho = [lam_i * m for lam_i, m in zip(lam, mean_s)]
    expected = (w0 / (1 - rho[0]), w0 / ((1 - rho[0]) * (1 - rho[0] - rho[1])))  # 0.714 s, 2.381 s
    for w in (0, 1):
        mean, half = batch_means_ci(class_waits(res, w))
        assert abs(mean - expected[w]) <= half, (w, mean, half, expected[w])


def _replay(times, hold_s, name, **kw):
    return Replay(arrivals_s=np.asarray(times, dtype=float), holds=Deterministic(hold_s), name=name, **kw)


def test_higher_class_first_fifo_within_a_class():
    # One slot. lo0 (t=0) runs 0-10; waiting at 10: lo1 (t=1), hi0 (t=2), hi1 (t=3).
    # Higher first: hi0 10-20, hi1 20-30, then lo1 30-40 (FIFO would run lo1 first).
    res = run_workloads(Fleet(cap=1, admission="priority"),
                        [_replay([0, 1], 10, "lo"), _replay([2, 3], 10, "hi", priority=5)], seed=1)
    assert res.start_s.tolist() == [0.0, 30.0, 10.0, 20.0]


def test_quota_caps_a_workload_and_does_not_block_others():
    # Four slots; x may hold nominal 1 + borrow 1 = 2. Six x at t=0 and two y at t=1, holds 10:
    # x takes 2 slots at 0, y the other two at 1; x's next pair at 10, the last pair at 20.
    res = run_workloads(Fleet(cap=4, admission="priority"),
                        [_replay([0] * 6, 10, "x", nominal=1, borrow_limit=1), _replay([1, 1], 10, "y")], seed=1)
    assert res.start_s.tolist() == [0.0, 0.0, 10.0, 10.0, 20.0, 20.0, 1.0, 1.0]


def test_preemption_evicts_the_latest_lower_class_and_reruns_it():
    # Two slots: lo0 starts at 0, lo1 at 1 (holds 10). hi at 4 evicts lo1 (latest started):
    # lo1's first attempt 1-4 is lost, it re-runs when a slot frees: lo0 ends at 10 -> lo1 10-20.
    res = run_workloads(Fleet(cap=2, admission="priority", preempt=True),
                        [_replay([0, 1], 10, "lo"), _replay([4], 10, "hi", priority=1)], seed=1)
    rows = sorted(zip(res.workload.tolist(), res.index.tolist(), res.attempt.tolist(), res.start_s.tolist(),
                      res.finish_s.tolist(), res.state.tolist(), res.phase.tolist()))
    assert rows == [(0, 0, 0, 0.0, 10.0, COMPLETED, 0),
                    (0, 1, 0, 1.0, 4.0, RETRIED, PREEMPTION),  # re-ran although max_retries is 0
                    (0, 1, 1, 10.0, 20.0, COMPLETED, 0),
                    (1, 0, 0, 4.0, 14.0, COMPLETED, 0)]
    s = res.summary()
    assert s["lost_sandbox_hours"]["preemption"] == pytest.approx(3 / 3600)
    assert s["workloads"]["lo"]["preempted_attempts"] == 1


def test_evictions_spare_the_retry_budget():
    # lo is evicted once at 0.5, then its re-run fails in the verifier (p = 1): with max_retries = 1
    # it still gets its one real retry (which fails too), so three attempts in all.
    ep = Episode(agent=Deterministic(10), verifier=Deterministic(1.0), exception_p={"verifier": 1.0})
    res = run_workloads(Fleet(cap=1, admission="priority", preempt=True),
                        [Replay(arrivals_s=np.array([0.0]), episode=ep, retry=RetryPolicy(max_retries=1), name="lo"),
                         _replay([0.5], 2, "hi", priority=1)], seed=1)
    lo = res.workload == 0
    assert res.attempt[lo].tolist() == [0, 1, 2]
    assert res.phase[lo].tolist()[0] == PREEMPTION and res.state[lo].tolist()[-1] != RETRIED


def test_within_nominal_reclaims_from_a_borrower_of_any_priority():
    # Two slots. b (priority 9, no quota: it borrows everything) fills both at 0; a (nominal 1)
    # arrives at 3 and reclaims one slot from b although b ranks higher; b's evicted rollout
    # waits behind a and never takes it back (a is within its nominal quota).
    res = run_workloads(Fleet(cap=2, admission="priority", preempt=True),
                        [_replay([3], 10, "a", nominal=1), _replay([0, 0], 10, "b", priority=9)], seed=1)
    a = res.workload == 0
    assert res.start_s[a].tolist() == [3.0]
    b_rows = sorted(zip(res.index[~a].tolist(), res.attempt[~a].tolist(), res.start_s[~a].tolist()))
    assert b_rows == [(0, 0, 0.0), (1, 0, 0.0), (1, 1, 10.0)]  # the latest-started (higher id on a tie) re-runs at 10


def test_timeout_ceiling_cuts_the_whole_hold_at_the_timeout():
    # Build 30 s + agent 50 s (timeout 60 s): FIFO cuts nothing (the agent phase is under 60 s);
    # the ceiling pool reclaims the sandbox at start + 60 s as a timeout.
    ep = Episode(agent=Deterministic(50), build=Build(hit_p=1.0, hit=Deterministic(30)), agent_timeout_s=60.0)
    rl = SyncRL(batch=1, steps=1, holds=Deterministic(5), name="rl")
    for admission, hold, state in (("fifo", 80.0, COMPLETED), ("timeout-ceiling", 60.0, TIMEOUT)):
        res = run_workloads(Fleet(cap=4, admission=admission),
                            [Replay(arrivals_s=np.array([0.0]), episode=ep, name="job"), rl], seed=1)
        job = res.workload == 0
        assert (res.hold_s[job].tolist(), res.state[job].tolist()) == ([hold], [state])


def test_timeout_ceiling_keeps_room_for_the_next_batch():
    # Cap 3, RL batch 2 (holds 10, train 5): batch 0 runs 0-10, trains 10-15, batch 1 at 15.
    # Jobs with a 100 s ceiling arrive at 1, 2, 3: one fits beside the next batch (3 - 2 = 1);
    # the other two wait until the last batch, released at 15, ends at 25. FIFO starts jobs 1
    # and 2 when batch 0 ends at 10, and batch 1 then waits for their slots until 101 and 110.
    job = Episode(agent=Deterministic(100), agent_timeout_s=100.0)
    rl = SyncRL(batch=2, steps=2, train_s=5, holds=Deterministic(10), name="rl")
    res = run_workloads(Fleet(cap=3, admission="timeout-ceiling"),
                        [rl, Replay(arrivals_s=np.array([1.0, 2.0, 3.0]), episode=job, name="job")], seed=1)
    j = res.workload == 1
    assert res.start_s[j].tolist() == [1.0, 25.0, 25.0]
    assert res.start_s[~j].tolist() == [0.0, 0.0, 15.0, 15.0]  # the batch never waits
    fifo = run_workloads(Fleet(cap=3), [rl, Replay(arrivals_s=np.array([1.0, 2.0, 3.0]), episode=job, name="job")],
                         seed=1)
    assert fifo.start_s[fifo.workload == 0].tolist() == [0.0, 0.0, 101.0, 110.0]


@pytest.mark.parametrize("fleet,wl,match", [
    (Fleet(cap=4), {"priority": 1}, "priority.*needs its pool's admission"),
    (Fleet(cap=4), {"nominal": 2}, "nominal.*needs its pool's admission"),
    (Fleet(cap=4, admission="priority"), {"nominal": 5}, "sum to 5 slots, over its cap of 4"),
    (Fleet(cap=4, admission="priority"), {"nominal": 2, "borrow_limit": 3}, "exceeds the cap"),
    (Fleet(cap=4, admission="priority"), {"borrow_limit": 3}, "needs a nominal quota"),
    (Fleet(cap=4, admission="timeout-ceiling"), {}, "no RL workload"),
])
def test_bad_policy_input_is_one_error(fleet, wl, match):
    with pytest.raises(InputError, match=match):
        prepare(fleet, [Poisson(rate_per_s=1, n=5, holds=Exponential(1.0), **wl)], seed=1)


@pytest.mark.parametrize("kw,line", [
    ({"admission": "lifo"},
     "fleet: key 'admission': expected a registered admission policy ('fifo', 'priority', 'timeout-ceiling', "
     "'shortest-timeout-first'), got 'lifo'"),
    ({"preempt": True}, "fleet: key 'preempt': preempt = true needs admission = \"priority\" (this pool admits by 'fifo')"),
    ({"cap": None, "preempt_rate_per_node_s": 0.1},
     "fleet: key 'preempt_rate_per_node_s': preemption needs a finite cap (nodes are cap / slots_per_node)"),
    ({"cap": 0}, "fleet: key 'cap': Input should be greater than or equal to 1"),
    ({"cap": True}, "fleet: key 'cap': expected a whole number, got true"),
])
def test_bad_fleet_is_one_error(kw, line):
    """Made in Python, the fleet model refuses in one InputError line naming the key, with the words a
    scenario file's [fleet] gets (one model, one set of rules)."""
    with pytest.raises(InputError) as info:
        Fleet(**{"cap": 4, **kw})
    assert str(info.value) == line


def test_a_fleet_is_validated_once_and_used_as_it_is(tmp_path):
    """The [fleet] table's model is the engine's fleet: the builder hands it over without building
    another (an unnamed pool gets its index as a name, the rest is the same object's data)."""
    from sandbox_fleet.simulate.scenario import build, load_scenario

    scen = tmp_path / "s.toml"
    scen.write_text(BASE.format(fleet="provision_delay_s = 2.5", wl=""))
    spec = load_scenario(scen)
    built = build(spec, tmp_path, str(scen))
    [pool] = built.fleets
    assert isinstance(pool, Fleet) and pool.name == "pool0"
    assert pool.model_dump(exclude={"name"}) == spec.fleet.model_dump(exclude={"name"})
    named = BASE.format(fleet='name = "gpu-pool"', wl="")
    scen.write_text(named)
    spec = load_scenario(scen)
    assert build(spec, tmp_path, str(scen)).fleets[0] is spec.fleet


def test_the_fifo_recursion_refuses_policy_pools():
    prep = prepare(Fleet(cap=4, admission="priority"), [Poisson(rate_per_s=1, n=5, holds=Exponential(1.0))], seed=1)
    assert one_pass_refusal(prep.pools, prep.workloads, prep.inference, prep.any_retry) is not None
    with pytest.raises(InputError, match=r"engine 'fifo'.*\(.*'priority'.*\)"):  # the refusal's reason
        run_workloads(Fleet(cap=4, admission="priority"), [Poisson(rate_per_s=1, n=5, holds=Exponential(1.0))],
                      seed=1, engine="fifo")


# --- the worked examples of docs/simulate.md ---------------------------------------------------
SCENARIOS = Path(__file__).resolve().parents[3] / "examples" / "scenarios"


def _run(path: Path, **edits: str):
    """Build and run a scenario file, with ``key = value`` lines of [fleet] replaced (``edits``)."""
    spec = load_scenario(path)
    if edits:
        text = path.read_text()
        for key, value in edits.items():
            text = re.sub(rf"(?m)^{key} = .*$", f"{key} = {value}", text)
        spec = SPEC.ScenarioSpec.model_validate(tomllib.loads(text))
    built = build(spec, path.parent)
    res = run_workloads(built.fleets, built.workloads, built.seed)
    return res, built.summary(res).to_json()


@pytest.fixture(scope="module")
def shared_runs():
    return {name: _run(SCENARIOS / f"{name}.toml") for name in ("shared_pool_priority", "shared_pool", "two_pools")}


def test_priority_example_reproduces_the_doc(shared_runs):
    _, s = shared_runs["shared_pool_priority"]
    w = s["workloads"]
    figures = (round(w["rl"]["queue_wait_s"]["mean"], 2), w["rl"]["queue_wait_s"]["p99"],
               round(w["synth"]["queue_wait_s"]["mean"], 1), round(w["synth"]["queue_wait_s"]["p99"], 1),
               w["synth"]["preempted_attempts"], round(s["lost_sandbox_hours"]["preemption"], 2),
               round(s["step_s"]["mean"], 1))
    assert figures == (0.04, 2.0, 27.3, 598.8, 198, 30.86, 30607.6)  # docs/simulate.md, "Priority in the shared pool"


def test_priority_example_against_independent_truths(shared_runs):
    res, s = shared_runs["shared_pool_priority"]
    fifo = shared_runs["shared_pool"][1]
    sep = shared_runs["two_pools"][1]
    rl = res.workload == 0
    # An RL rollout starts at once or evicts; the evicted slot is re-provisioned in provision_delay_s.
    assert float(np.max(res.start_s[rl] - res.arrival_s[rl])) <= 2.0
    # The step is the separate pools' (the two_pools run is the FIFO recursion on other pools).
    assert s["step_s"] == sep["step_s"]
    # An evicted rollout re-runs the same task: the synthesis work done is FIFO's plus exactly the
    # time the evicted attempts ran (same draws), and nothing else is lost.
    extra_h = s["workloads"]["synth"]["sandbox_hours"] - fifo["workloads"]["synth"]["sandbox_hours"]
    evicted = (res.phase == PREEMPTION) & res.started
    assert extra_h == pytest.approx(float(np.sum(res.hold_s[evicted])) / 3600, rel=1e-9)
    assert s["workloads"]["synth"]["completed"] == fifo["workloads"]["synth"]["completed"] == 8000


def test_priority_without_preemption_is_fifo_here(shared_runs):
    # At each release no synthesis rollout waits (RL's slots are taken by running synthesis, not by a
    # queue ahead of it), and synthesis arriving later queues behind the batch under FIFO too.
    res, _ = _run(SCENARIOS / "shared_pool_priority.toml", preempt="false")
    fifo_res = shared_runs["shared_pool"][0]
    assert np.array_equal(res.start_s, fifo_res.start_s)


@pytest.fixture(scope="module")
def ceiling_runs():
    path = SCENARIOS / "timeout_ceiling.toml"
    return {"ceiling": _run(path), "fifo": _run(path, admission='"fifo"')}


def test_ceiling_example_reproduces_the_doc(ceiling_runs):
    out = {}
    for name, (_, s) in ceiling_runs.items():
        w = s["workloads"]
        out[name] = (round(s["step_s"]["mean"], 1), round(s["step_s"]["p99"], 1),
                     round(w["rl"]["queue_wait_s"]["mean"], 1), round(w["rl"]["queue_wait_s"]["p99"], 1),
                     round(w["synth"]["queue_wait_s"]["mean"], 1), round(s["sim_time_s"]))
    assert out == {"ceiling": (7500.0, 7500.0, 0.0, 0.0, 1854.5, 94863),  # docs/simulate.md, "Admitting against
                   "fifo": (7875.5, 8484.0, 106.5, 945.4, 70.5, 78755)}   # the timeout ceiling"


def test_ceiling_example_against_independent_truths(ceiling_runs):
    res, s = ceiling_runs["ceiling"]
    cap, batch, train_s, timeout_s = 640, 512, 300.0, {0: 7200.0, 1: 14400.0}
    # Every sandbox is reclaimed by its ceiling.
    for w, t in timeout_s.items():
        sel = (res.workload == w) & res.started
        assert float(np.max(res.hold_s[sel])) <= t * (1 + 1e-12)  # finish - start, rounded
    # At each release the synthesis rollouts still running leave room for the whole batch.
    synth = (res.workload == 1) & res.started
    for t in res.steps[0]["release_s"]:
        running = int(np.count_nonzero(synth & (res.start_s <= t) & (res.finish_s > t)))
        assert running <= cap - batch, (t, running)
    # P(an RL hold passes 7,200 s) = P(Z > ln(7200/1332)) ~ 4.6%: every batch of 512 has one
    # (1 - 0.954^512 ~ 1), so an undelayed step is exactly the timeout plus training.
    p_over = 0.5 * math.erfc(math.log(7200 / 1332) / math.sqrt(2))
    assert 1 - (1 - p_over) ** batch > 1 - 1e-9
    assert s["step_s"]["mean"] == pytest.approx(7200 + train_s, abs=1e-6)
    assert ceiling_runs["fifo"][1]["step_s"]["mean"] > 7200 + train_s + 100
    # The same draws: the same work is done either way, only its order differs.
    assert s["sandbox_hours"] == pytest.approx(ceiling_runs["fifo"][1]["sandbox_hours"], rel=1e-12)


# --- bad scenario input: one line, exit 2 --------------------------------------------------
BASE = """
[fleet]
cap = 4
{fleet}
[[workloads]]
name = "a"
kind = "poisson"
rate_per_s = 1.0
count = 10
hold = {{ dist = "exponential", mean_s = 1.0 }}
{wl}
"""


@pytest.mark.parametrize("fleet,wl,says", [
    ("", "priority = 1", "key 'workloads.0.priority': 'priority' needs its pool's admission = \"priority\""),
    ('admission = "priority"', "nominal = 5",
     "key 'workloads.0.nominal': the nominal quotas on pool pool0 sum to 5 slots, over its cap of 4"),
    ('admission = "lifo"', "", "key 'fleet.admission': expected a registered admission policy ('fifo', "),
    ("preempt = true", "", "key 'fleet.preempt': preempt = true needs admission = \"priority\""),
    ('admission = "timeout-ceiling"', "", "key 'fleet.admission': 'timeout-ceiling' keeps room for an RL"),
])
def test_cli_refuses_bad_policy_input_in_one_line(tmp_path, run_cli, fleet, wl, says):
    scen = tmp_path / "bad.toml"
    scen.write_text(BASE.format(fleet=fleet, wl=wl))
    r = run_cli("simulate", scen)
    assert r.code == 2 and "Traceback" not in r.err
    assert len(r.err.strip().splitlines()) == 1 and says in r.err, r.err


def test_invariants_catch_a_broken_quota_or_ceiling():
    from sandbox_fleet.simulate.engine.invariants import InvariantError, check_invariants

    res = run_workloads(Fleet(cap=4, admission="priority"),
                        [_replay([0] * 6, 10, "x", nominal=1, borrow_limit=1), _replay([1, 1], 10, "y")], seed=1)
    res.start_s = res.start_s.copy()
    res.start_s[2] = 5.0  # x's third rollout now overlaps the first two: 3 slots over a quota of 2
    res.finish_s = res.finish_s.copy()
    res.finish_s[2] = 15.0
    with pytest.raises(InvariantError, match="quota_respected"):
        check_invariants(res, n_expected=8)
    job = Episode(agent=Deterministic(100), agent_timeout_s=100.0)
    rl = SyncRL(batch=2, steps=2, train_s=5, holds=Deterministic(10), name="rl")
    res = run_workloads(Fleet(cap=3, admission="timeout-ceiling"),
                        [rl, Replay(arrivals_s=np.array([1.0]), episode=job, name="job")], seed=1)
    res.finish_s = res.finish_s.copy()
    res.finish_s[res.workload == 1] += 1.0
    with pytest.raises(InvariantError, match="ceiling_respected"):
        check_invariants(res, n_expected=5)
