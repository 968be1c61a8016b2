"""Dynamic sampling on RL workloads (``simulate/engine/dynamic_sampling.py``): the simulated informative
share and over-sampling factor against independent truth.

Oracles, none of them the engine's code:
- a brute-force enumeration of every outcome of a group (each rollout invalid, a valid pass or a valid
  fail: 3^G cases per task), written here;
- the plan's binomial closed form (``signal_oracle.point_shares`` in tests/, on ``measure.signal_math.group_shares``, what ``plan/signal.py`` uses) and
  its release size (``groups_needed``);
- the negative binomial: with rounds of the shortfall a step releases exactly the groups up to its B-th
  informative one, so groups per step ~ NegBin(B, q): mean B / q, variance B (1 - q) / q^2;
- for fixed rounds of R groups, the expected rounds by a dynamic program over the informative count;
- hand timing: deterministic holds on an unbounded fleet make a step (rounds x hold + train_s).
Monte Carlo bounds are 4 standard errors of the figure over the simulated steps (a false failure about
once in 16,000 runs; the seeds are fixed, so a run is reproducible).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.measure.signal_math import groups_needed
from sandbox_fleet.simulate import AsyncRL, Deterministic, DynamicSampling, Fleet, LogNormal, SyncRL
from sandbox_fleet.simulate.engine.dynamic_sampling import draw
from sandbox_fleet.simulate.engine.metrics import summarise
from sandbox_fleet.simulate.engine.prepare import prepare
from sandbox_fleet.simulate.engine.run import run_workloads
from signal_oracle import point_shares

SMALL_CASES = [  # (task pass probabilities, valid rate, G)
    ([0.5], 1.0, 2),
    ([0.1, 0.9], 1.0, 2),
    ([0.05, 0.3, 0.7], 0.8, 3),
    ([0.0, 0.2, 0.5, 1.0], 0.7, 4),
    ([0.15, 0.6], 0.55, 4),
]


def enumerate_share(p: list[float], v: float, g: int) -> float:
    """P(informative) by listing every outcome of a group: each rollout invalid (prob 1 - v), a valid pass
    (v p) or a valid fail (v (1 - p)); informative when some valid rollout passes and some valid one fails.
    Tasks drawn uniformly."""
    total = 0.0
    for pt in p:
        for outcome in itertools.product("xPF", repeat=g):
            prob = math.prod({"x": 1 - v, "P": v * pt, "F": v * (1 - pt)}[o] for o in outcome)
            if "P" in outcome and "F" in outcome:
                total += prob
    return total / len(p)


def expected_rounds_fixed(b: int, r: int, q: float, cap: int = 2000) -> float:
    """E[rounds] when every round releases r groups, each informative with q, until >= b informative:
    a dynamic program over the informative count so far (capped at b)."""
    pmf = np.array([math.comb(r, k) * q**k * (1 - q) ** (r - k) for k in range(r + 1)])
    state = np.zeros(b + 1)
    state[0] = 1.0
    expect = 0.0
    for k in range(1, cap):
        nxt = np.zeros(b + 1)
        for have in range(b):
            if state[have]:
                for add, pk in enumerate(pmf):
                    nxt[min(have + add, b)] += state[have] * pk
        expect += k * nxt[b]
        state = nxt
        state[b] = 0.0
        if state.sum() < 1e-15:
            break
    return expect


def _ds(p, v, g, b, **kw) -> DynamicSampling:
    return DynamicSampling(groups=b, group_size=g, task_pass=np.array(p), valid_rate=v, **kw)


@pytest.mark.parametrize("p,v,g", SMALL_CASES)
def test_enumeration_and_the_plans_closed_form_agree(p, v, g):
    assert point_shares(np.array(p), np.full(len(p), v), g).informative == pytest.approx(enumerate_share(p, v, g), abs=1e-12)


def test_degenerate_case_by_hand():
    # p = 0.5, every rollout valid, G = 2: the group differs in 2 of its 4 equally likely outcomes (PF, FP).
    assert enumerate_share([0.5, 0.5, 0.5], 1.0, 2) == 0.5
    dr = draw(_ds([0.5, 0.5, 0.5], 1.0, 2, 8), 4000, np.random.default_rng(11))
    released = sum(map(sum, dr.rounds))
    factor = released / (8 * 4000)
    # groups per step ~ NegBin(8, 1/2): mean 16 (factor 2), variance 8 x 0.5 / 0.25 = 16 per step
    se = math.sqrt(16 / 4000) / 8
    assert abs(factor - 2.0) < 4 * se
    assert abs(8 * 4000 / released - 0.5) < 4 * se * 0.25


@pytest.mark.parametrize("p,v,g", SMALL_CASES)
@pytest.mark.parametrize("b", [1, 6])
def test_shortfall_rounds_match_the_negative_binomial(p, v, g, b):
    q = enumerate_share(p, v, g)
    steps = 3000
    dr = draw(_ds(p, v, g, b), steps, np.random.default_rng(5))
    per_step = np.array([sum(r) for r in dr.rounds])
    factor = per_step.sum() / (b * steps)
    se = math.sqrt(b * (1 - q) / q**2 / steps) / b  # sd of groups per step / B, over the steps
    assert abs(factor - 1 / q) < 4 * se, (factor, 1 / q, se)
    # every step ends at its B-th informative group: exactly B informative, the last group one of them
    ends = np.cumsum(per_step)
    starts = ends - per_step
    for lo, hi in zip(starts, ends):
        assert dr.informative[lo:hi].sum() == b and dr.informative[hi - 1]
    # the share measured = B x steps / released; its 4-sigma band by the delta method
    share = b * steps / per_step.sum()
    assert abs(share - q) < 4 * se * q**2


@pytest.mark.parametrize("p,v,g", SMALL_CASES[1:4])
def test_fixed_rounds_match_the_dynamic_program_and_the_plans_release(p, v, g):
    b = 5
    q = enumerate_share(p, v, g)
    n_conf = groups_needed(b, q, 0.9)  # the plan's release: N groups hold B informative with 90%
    steps = 3000
    dr = draw(_ds(p, v, g, b, round_groups=n_conf), steps, np.random.default_rng(9))
    rounds = np.array([len(r) for r in dr.rounds])
    exp = expected_rounds_fixed(b, n_conf, q)
    sd = float(np.std(rounds, ddof=1))
    assert abs(rounds.mean() - exp) < 4 * sd / math.sqrt(steps) + 1e-12
    one = float(np.mean(rounds == 1))  # the plan says one round suffices with >= 90%
    assert one > 0.9 - 4 * math.sqrt(0.09 / steps)
    # B always reached; before the last round, never
    ends = np.cumsum(rounds * n_conf)
    for (lo, hi), k in zip(zip(ends - rounds * n_conf, ends), rounds):
        assert dr.informative[lo:hi].sum() >= b
        assert dr.informative[lo:hi - n_conf].sum() < b if k > 1 else True


def test_the_informative_flags_follow_the_rollouts():
    dr = draw(_ds([0.2, 0.5, 0.8], 0.6, 4, 3), 300, np.random.default_rng(2))
    valid = dr.rollout_valid.reshape(-1, 4)
    passed = dr.rollout_passed.reshape(-1, 4)
    assert not np.any(passed & ~valid)  # only a valid rollout passes
    rewards_differ = [len({bool(x) for x, ok in zip(pr, vr) if ok}) == 2 for pr, vr in zip(passed, valid)]
    assert dr.informative.tolist() == rewards_differ
    assert dr.valid.tolist() == valid.sum(axis=1).tolist()


def _sync(ds, *, hold=None, steps=40, train_s=50.0):
    return SyncRL(batch=ds.groups * ds.group_size, steps=steps, train_s=train_s,
                  holds=hold or Deterministic(100.0), dynamic=ds)


def test_a_step_is_its_rounds_back_to_back_then_training_by_hand():
    # Unbounded fleet, every hold 100 s: each round lasts 100 s and the next starts as it ends, so a step
    # with k rounds takes 100 k + train_s, and the next step is released when it is trained.
    wl = _sync(_ds([0.3, 0.6], 0.9, 3, 4))
    res = run_workloads(Fleet(unbounded=True), [wl], seed=3)
    rounds = np.array([len(r) for r in wl.groups_drawn.rounds])
    st = res.steps[0]
    np.testing.assert_allclose(st["batch_end_s"] - st["release_s"], 100.0 * rounds)
    np.testing.assert_allclose(st["train_end_s"] - st["release_s"], 100.0 * rounds + 50.0)
    np.testing.assert_allclose(st["release_s"][1:], st["train_end_s"][:-1])
    s = summarise(res).dynamic_sampling
    assert s.steps == 40 and s.rounds_per_step_max == rounds.max()
    assert s.peak == 4 * 3  # the first round, B x G, is the largest release at once
    assert s.rollouts_per_step_mean == pytest.approx(res.n_rollouts / 40)


@pytest.mark.parametrize("engine", ["auto", "events"])  # both the admission kernel, which runs RL
def test_a_binding_cap_runs_each_round_in_waves_by_hand(engine):
    # 5 slots, every hold 100 s: a round of n rollouts runs in ceil(n / 5) waves of 100 s, and the
    # next round waits for its last wave, so a step takes 100 x sum(ceil(n_k / 5)) + train_s.
    wl = _sync(_ds([0.3, 0.6], 0.9, 3, 4))
    res = run_workloads(Fleet(cap=5), [wl], seed=3, engine=engine)
    waves = np.array([sum(math.ceil(n * 3 / 5) for n in r) for r in wl.groups_drawn.rounds])
    st = res.steps[0]
    np.testing.assert_allclose(st["train_end_s"] - st["release_s"], 100.0 * waves + 50.0)
    assert summarise(res).dynamic_sampling.peak == 5


def test_fixed_rounds_release_more_at_once_and_the_peak_shows_it():
    ds = _ds([0.3, 0.6], 0.9, 3, 4, round_groups=9)
    res = run_workloads(Fleet(unbounded=True), [_sync(ds)], seed=3)
    s = summarise(res).dynamic_sampling
    assert s.first_round_rollouts == 27 and s.peak == 27
    assert s.groups_trimmed == s.groups_informative - 4 * 40 > 0


def _kernel_is_the_oracle(fleet, wls, seed: int) -> None:
    """The admission kernel's attempts and steps, compiled (where numba runs) and as plain Python, are
    the oracle's (the pure event loop in tests/simulate/engine/oracle/), bit for bit."""
    from tests.simulate.engine.oracle_policies import run_oracle

    from sandbox_fleet.simulate.engine import fast
    from sandbox_fleet.simulate.engine.fast import admit_loop

    want = run_oracle(prepare(fleet, wls, seed))
    for compiled in ([True, False] if fast.available() else [False]):
        got = admit_loop.run(prepare(fleet, wls, seed), compiled=compiled)
        for k, v in want.first.items():
            assert got.first[k].tobytes() == np.asarray(v, dtype=got.first[k].dtype).tobytes(), (compiled, k)
        for k, v in want.rl[0].arrays().items():
            assert got.rl[0].arrays()[k].tobytes() == v.tobytes(), (compiled, k)


def test_the_kernel_runs_it_as_the_oracle():
    ds = _ds([0.1, 0.4, 0.9], 0.8, 4, 6)
    wl = _sync(ds, hold=LogNormal(300.0, 1.0), steps=25)
    _kernel_is_the_oracle(Fleet(cap=10), [wl], 21)  # B x G = 24 rollouts queue at 10 slots


def test_async_rl_rounds_overlap_the_next_steps_release():
    # staleness 1: step j + 1 is out while step j's later rounds run; the kernel is the oracle, invariants hold
    wl = AsyncRL(batch=12, steps=30, train_s=40.0, staleness=1, holds=LogNormal(200.0, 0.7),
                 dynamic=_ds([0.2, 0.7], 0.9, 3, 4))
    _kernel_is_the_oracle(Fleet(cap=20), [wl], 4)
    a = run_workloads(Fleet(cap=20), [wl], seed=4)
    st = a.steps[0]
    assert st["release_s"][0] == st["release_s"][1] == 0.0 < st["batch_end_s"][0]  # 1 <= 0 finished + staleness 1
    assert np.all(st["batch_end_s"] > st["release_s"]) and np.all(np.diff(st["train_end_s"]) >= 40.0)


def test_the_telemetry_carries_each_groups_task_and_rewards():
    ds = _ds([0.25, 0.75], 0.7, 4, 3)
    wl = _sync(ds, steps=10)
    res = run_workloads(Fleet(unbounded=True), [wl], seed=8)
    tel = res.to_telemetry().sort_by("started_at")
    dr = wl.groups_drawn
    # rollout ids are in release order: "<workload>-<index>-0"
    idx = np.array([int(i.split("-")[1]) for i in tel.column("id").to_pylist()])
    reward = np.array([np.nan if r is None else r for r in tel.column("reward").to_pylist()])[np.argsort(idx)]
    task = np.array(tel.column("task_id").to_pylist(), dtype=object)[np.argsort(idx)]
    np.testing.assert_array_equal(np.isnan(reward), ~dr.rollout_valid)
    np.testing.assert_array_equal(reward[dr.rollout_valid] == 1.0, dr.rollout_passed[dr.rollout_valid])
    assert task.reshape(-1, 4).tolist() == [[f"task-{t}"] * 4 for t in dr.task]


def test_the_admission_kernel_runs_it_and_the_fifo_executor_refuses_it():
    prep = prepare(Fleet(cap=10), [_sync(_ds([0.5], 1.0, 2, 2))], 1)
    from sandbox_fleet.simulate.engine.fast import admit_loop
    from sandbox_fleet.simulate.engine.fifo import one_pass_refusal
    from sandbox_fleet.simulate.engine.run import place

    assert "is RL" in (one_pass_refusal(prep.pools, prep.workloads, prep.inference, prep.any_retry) or "")
    assert admit_loop.refusal(prep) is None
    assert place(prep)[0] == "admission-kernel"
    assert place(prep, "events")[0] == "admission-kernel"  # engine = "events": the kernel


@pytest.mark.parametrize("kw,msg", [
    ({"task_pass": np.array([0.0, 1.0])}, "passes always or never"),
    ({"group_size": 1}, "group_size 1"),
    ({"valid_rate": 0.0}, "valid_rate 0"),
    ({"task_pass": np.array([1.5])}, "each in [0, 1]"),
    ({"task_weight": np.array([1.0])}, "one per task"),
])
def test_a_step_that_could_never_end_is_refused(kw, msg):
    base = {"groups": 2, "group_size": 3, "task_pass": np.array([0.2, 0.6]), "valid_rate": 1.0}
    with pytest.raises(InputError, match=msg.replace("[", r"\[").replace("]", r"\]")):
        DynamicSampling(**{**base, **kw})


def test_max_rounds_is_a_clear_error_and_batch_must_be_b_times_g():
    ds = _ds([0.02], 1.0, 2, 50, max_rounds=2)
    with pytest.raises(InputError, match="max_rounds = 2"):
        prepare(Fleet(cap=10), [_sync(ds)], 1)
    with pytest.raises(InputError, match="batch must be that"):
        SyncRL(batch=10, steps=3, holds=Deterministic(1.0), dynamic=_ds([0.5], 1.0, 2, 4))


def test_same_seed_same_draw_another_seed_another():
    wl = _sync(_ds([0.3, 0.6], 0.9, 3, 4))
    a = run_workloads(Fleet(cap=8), [wl], seed=3).to_telemetry()
    b = run_workloads(Fleet(cap=8), [wl], seed=3).to_telemetry()
    c = run_workloads(Fleet(cap=8), [wl], seed=4).to_telemetry()
    assert a.equals(b) and not a.equals(c)


def test_the_invariant_catches_a_round_released_early():
    import copy

    from sandbox_fleet.simulate import InvariantError
    from sandbox_fleet.simulate.engine.invariants import _dynamic_rounds, check_invariants

    wl = _sync(_ds([0.3, 0.6], 0.9, 3, 4), steps=5)
    res = run_workloads(Fleet(unbounded=True), [wl], seed=3)
    check_invariants(res, res.n_rollouts)
    second = next(j for j, r in enumerate(wl.groups_drawn.rounds) if len(r) > 1)
    lo = sum(sum(r) for r in wl.groups_drawn.rounds[:second]) * 3 + wl.groups_drawn.rounds[second][0] * 3
    bad = copy.copy(res)
    bad.rollout_arrival_s = res.rollout_arrival_s.copy()
    bad.rollout_arrival_s[lo : lo + wl.groups_drawn.rounds[second][1] * 3] -= 1.0  # the 2nd round a second early
    with pytest.raises(InvariantError):
        check_invariants(bad, res.n_rollouts)  # (Little's law sees the extra second in the system first)

    def fail(name, detail):
        raise InvariantError(f"{name}: {detail}")

    _dynamic_rounds(res, fail)
    with pytest.raises(InvariantError, match="dynamic_rounds: workload 0 step .*not when the round before ended"):
        _dynamic_rounds(bad, fail)
