"""An attempt ended early beside an inference pool (a retried exception, a node preemption, a priority
eviction): its model call in flight is withdrawn from its replica and the rollout's next attempt starts
its episode over (``_inference_rules.end_episode``, called by the admission kernel after the event).

Independent truth: a hand-worked schedule (one replica, two rollouts, an eviction mid-decode), the pure
loop's own withdrawal (``oracle/pool.Pool.withdraw``, ``oracle/driver.Driver.end_episode``: written
apart from the kernel's) compared byte for byte on small random runs, the kernel's source run as plain
Python and compiled, and the conservation of calls (each call sent is served or withdrawn, once: the
oracle keeps every call's end, the kernel its counts).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.simulate.engine.oracle_policies import run_oracle

from sandbox_fleet.simulate import Deterministic, Episode, Exponential, Fleet, LogNormal, Turns, run_workloads
from sandbox_fleet.simulate.engine.entities import COMPLETED, PREEMPTION, RETRIED, RetryPolicy
from sandbox_fleet.simulate.engine.fast import admit_loop
from sandbox_fleet.simulate.engine.inference import Inference
from sandbox_fleet.simulate.engine.prepare import prepare
from sandbox_fleet.simulate.engine.workloads import AsyncRL, Closed, Poisson, Replay


def _bytes(out) -> dict:
    """Everything an executor returns, as comparable values."""
    d: dict = {f"first.{k}": np.asarray(v).tobytes() for k, v in out.first.items()}
    d.update({f"extra.{k}": list(v) for k, v in out.extra.items()})
    d["areas"] = (out.area_busy, out.area_wait, out.preemptions, out.clock_monotonic)
    for k, v in vars(out.served).items():
        d[f"pool.{k}"] = v.tobytes() if isinstance(v, np.ndarray) else v
    return d


def _three_ways(fleet, wls, seed, inf, compiled: bool = False):
    """The oracle's output (with its calls' ends) and the kernel's, run plain (and compiled)."""
    import tests.simulate.engine.oracle.pool as oracle_pool

    pools = []
    real = oracle_pool.Pool.__init__

    def keep(self, *a, **kw):
        real(self, *a, **kw)
        pools.append(self)

    oracle_pool.Pool.__init__ = keep  # type: ignore[method-assign]
    try:
        pure = run_oracle(prepare(fleet, wls, seed, inf))
    finally:
        oracle_pool.Pool.__init__ = real  # type: ignore[method-assign]
    runs = [admit_loop.run(prepare(fleet, wls, seed, inf), compiled=False)]
    if compiled:
        runs.append(admit_loop.run(prepare(fleet, wls, seed, inf), compiled=True))
    return pure, pools[0], runs


def _conserved(out, pool=None) -> None:
    """Each call sent ends once: served (a sojourn) or withdrawn; none is left in flight."""
    sr = out.served
    assert sr.calls == sr.sojourn_s.size + sr.withdrawn_s.size
    assert (sr.withdrawn_s >= 0).all()
    if pool is not None:  # the oracle names each call's end
        assert sorted(pool.ended) == list(range(pool.sent)), "a call never ended"
        ends = list(pool.ended.values())
        assert ends.count("served") == sr.sojourn_s.size and ends.count("withdrawn") == sr.withdrawn_s.size
        for rep in pool.reps:
            assert rep.n == 0 and not rep.prefill and not rep.waiting and not rep.done
            c = rep.cache  # the prefix cache's books: its bytes are its entries', within its tiers
            assert c.gpu_used == pytest.approx(sum(c.gpu.values()), abs=1e-6)
            assert c.host_used == pytest.approx(sum(c.host.values()), abs=1e-6)
            assert c.cap is None or c.gpu_used <= c.cap + 1e-6
            assert c.host_used <= c.host_cap + 1e-6


def test_hand_worked_eviction_mid_decode():
    """One replica decoding 10 tokens/s, no prefill work (no new prompt tokens; the context is
    cached), a command of 1 s after each call, no build or verifier; one slot, priority with
    preemption. ``lo`` (2 turns of 100 tokens) arrives at 0; ``hi`` (1 turn, a higher class) at 15.

    - lo: call 1 in [0, 10], command to 11, call 2 from 11 (10 s of work alone: to 21).
    - hi at 15 evicts lo (4 s into call 2): lo's attempt ends [0, 15] as a preemption, agent 15 s;
      call 2 is withdrawn after 4 s in the pool, so hi's call has the replica alone: [15, 25]
      (were lo's call left decoding, the two would share it and hi's would end at 31), command to 26.
    - lo's retry, queued at 15, starts at 26 from its first turn: calls [26, 36] and [37, 47],
      finish at 48; its second call finds its prefix cached (100 tokens), the first had none.
    """
    ep = lambda n: Episode(turns=Turns(Deterministic(n), None, Deterministic(1.0), Deterministic(0),  # noqa: E731
                                       Deterministic(100)))
    inf = Inference(replicas=1, prefill_tok_s=1000, decode_tok_s=10, kv_bytes_per_token=1.0)
    fleet = Fleet(cap=1, admission="priority", preempt=True)
    wls = [Replay(arrivals_s=np.array([0.0]), episode=ep(2), priority=0, name="lo"),
           Replay(arrivals_s=np.array([15.0]), episode=ep(1), priority=5, name="hi")]
    pure, pool, runs = _three_ways(fleet, wls, 1, inf, compiled=True)
    for out in (pure, *runs):
        f, x, sr = out.first, out.extra, out.served
        assert list(f["start_s"]) == [0.0, 15.0] and list(f["finish_s"]) == [15.0, 26.0]
        assert f["state"].tolist() == [RETRIED, COMPLETED] and int(f["phase"][0]) == PREEMPTION
        assert list(f["agent_s"]) == [15.0, 11.0] and list(f["verify_s"]) == [0.0, 0.0]
        assert x["rollout"] == [0] and x["attempt"] == [1]
        assert x["arrival_s"] == [15.0] and x["start_s"] == [26.0] and x["finish_s"] == [48.0]
        assert x["agent_s"] == [22.0]
        assert list(sr.sojourn_s) == [10.0, 10.0, 10.0, 10.0] and list(sr.withdrawn_s) == [4.0]
        assert sr.calls == 5
        assert list(sr.r_output) == [300, 100] and list(sr.r_input) == [100, 0] and list(sr.r_cached) == [100, 0]
        assert float(sr.area_sys.sum()) == 44.0  # 10 + 4 (withdrawn) + 10 + 10 + 10 s of calls in the pool
        _conserved(out)
    _conserved(pure, pool)
    assert _bytes(runs[0]) == _bytes(pure) and _bytes(runs[1]) == _bytes(pure)


_EP = Episode(turns=Turns(LogNormal(4, 0.5), None, Exponential(2.0), Exponential(20), Exponential(30)),
              verifier=Exponential(1.0), exception_p={"build": 0.1, "verifier": 0.15})
_EP_PLAIN = Episode(turns=Turns(LogNormal(4, 0.5), None, Exponential(2.0), Exponential(20), Exponential(30)))


def cases(main: Episode, other: Episode, retry: RetryPolicy, rl_fleet):
    """``case(kind, cap, n)``: (fleet, workloads) of each way an attempt ends early beside the pool: retries
    and node preemption (``main`` episodes retried by ``retry``), a priority pool's evictions and an RL
    workload beside an open one on ``rl_fleet(cap)`` (``other`` episodes, never retried)."""

    def case(kind: str, cap: int, n: int):
        if kind == "retries":
            return Fleet(cap=cap), [Closed(population=cap + 2, n=n, episode=main, retry=retry)]
        if kind == "node_preemption":
            return (Fleet(cap=cap, slots_per_node=2, preempt_rate_per_node_s=0.02, node_replace_s=5.0),
                    [Closed(population=cap + 2, n=n, episode=main, retry=retry)])
        if kind == "priority_preempt":
            return (Fleet(cap=cap, admission="priority", preempt=True),
                    [Poisson(rate_per_s=0.15, n=n, episode=other, priority=0, name="lo"),
                     Poisson(rate_per_s=0.08, n=n // 2, episode=other, priority=5, nominal=1, name="hi")])
        return (rl_fleet(cap), [AsyncRL(batch=2, steps=4, train_s=10, staleness=1, episode=other, name="rl"),
                                Poisson(rate_per_s=0.1, n=n, episode=other, name="o")])

    return case


_case = cases(_EP, _EP_PLAIN, RetryPolicy(max_retries=2), lambda cap: Fleet(cap=cap, admission="timeout-ceiling"))


# The random runs' pool and fleet (``test_agent_cut`` draws the same), and the compiled cases' pool: two
# replicas of three seats, a small cache with a host tier.
POOL_DRAWS = {"replicas": st.integers(1, 3), "routing": st.sampled_from(["sticky", "least-loaded"]),
              "seats": st.one_of(st.none(), st.integers(1, 3)), "cache": st.sampled_from([None, 0.0, 1200.0]),
              "offload": st.sampled_from([0.0, 600.0]), "cap": st.integers(2, 6), "n": st.integers(5, 40),
              "seed": st.integers(0, 2**31)}
BUSY = Inference(replicas=2, prefill_tok_s=100, decode_tok_s=20, max_num_seqs=3, routing="least-loaded",
                 kv_cache_bytes=1200.0, kv_bytes_per_token=1.0, kv_offload_bytes=600.0)


def plain_matches_the_oracle(case, kind, replicas, routing, seats, cache, offload, cap, n, seed) -> None:
    """One random run of ``case(kind, cap, n)``: the kernel run plain gives the oracle's bytes, and every
    call sent ends once in both."""
    inf = Inference(replicas=replicas, prefill_tok_s=100, decode_tok_s=20, max_num_seqs=seats, routing=routing,
                    kv_cache_bytes=cache, kv_bytes_per_token=1.0 if cache else 0.0, kv_offload_bytes=offload if cache else 0.0)
    fleet, wls = case(kind, cap, n)
    pure, pool, (plain,) = _three_ways(fleet, wls, seed, inf)
    assert _bytes(plain) == _bytes(pure)
    _conserved(pure, pool)
    _conserved(plain)


def compiled_matches_the_oracle(case, kind):
    """``case(kind, 4, 60)`` on ``BUSY``: plain and compiled give the oracle's bytes, calls conserved;
    the oracle's output."""
    from tests.simulate.engine.inference.test_inference_kernel import require_numba

    require_numba()
    fleet, wls = case(kind, 4, 60)
    pure, pool, (plain, compiled) = _three_ways(fleet, wls, 5, BUSY, compiled=True)
    assert _bytes(plain) == _bytes(pure) and _bytes(compiled) == _bytes(pure)
    _conserved(pure, pool)
    return pure


def random_runs_match_the_oracle(case, kinds: list[str]):
    """The test of ``case``'s ``kinds`` on random pools (``POOL_DRAWS``): ``plain_matches_the_oracle``."""

    @settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(kind=st.sampled_from(kinds), **POOL_DRAWS)
    def random_runs(kind, replicas, routing, seats, cache, offload, cap, n, seed):
        plain_matches_the_oracle(case, kind, replicas, routing, seats, cache, offload, cap, n, seed)

    return random_runs


test_kernel_matches_the_oracle_and_calls_are_conserved = random_runs_match_the_oracle(
    _case, ["retries", "node_preemption", "priority_preempt", "timeout_ceiling"])


@pytest.mark.parametrize("kind", ["retries", "node_preemption", "priority_preempt", "timeout_ceiling"])
def test_compiled_kernel_matches_and_the_cases_end_attempts_early(kind):
    pure = compiled_matches_the_oracle(_case, kind)
    sr = pure.served
    if kind in ("node_preemption", "priority_preempt"):
        assert sr.withdrawn_s.size > 0  # calls were withdrawn mid-flight
    if kind != "timeout_ceiling":
        assert len(pure.extra["rollout"]) > 0  # attempts re-ran


def test_invariants_hold_with_withdrawn_calls():
    """The pool's Little's law counts a withdrawn call's time in the pool (``invariants``), on a run
    checked end to end (``run_workloads`` checks its invariants)."""
    inf = Inference(replicas=1, prefill_tok_s=100, decode_tok_s=20, max_num_seqs=2)
    fleet, wls = _case("node_preemption", 4, 40)
    res = run_workloads(fleet, wls, 9, inference=inf)
    assert res.inference.withdrawn_s.size > 0
    assert float(res.inference.area_sys.sum()) == pytest.approx(
        float(res.inference.sojourn_s.sum()) + float(res.inference.withdrawn_s.sum()), rel=1e-9)


def test_a_redrawn_retry_is_refused_beside_the_pool():
    from sandbox_fleet.errors import InputError

    inf = Inference(replicas=1, prefill_tok_s=100, decode_tok_s=20)
    wl = Closed(population=2, n=4, episode=_EP, retry=RetryPolicy(max_retries=1, redraw=True))
    with pytest.raises(InputError, match="retry.redraw"):
        prepare(Fleet(cap=2), [wl], 1, inf)


def test_example_evicts_and_retries_beside_the_pool(tmp_path):
    """``examples/scenarios/inference_retries_priority.toml`` does what its comment says: the RL class
    evicts synthesis rollouts (never the reverse), verifier exceptions are retried, the pool's cap holds
    (from the telemetry), and the pool's Little's law counts the withdrawn calls."""
    from pathlib import Path

    import pyarrow.parquet as pq

    from sandbox_fleet.simulate.scenario.run import run_scenario

    path = Path(__file__).resolve().parents[4] / "examples" / "scenarios" / "inference_retries_priority.toml"
    s = run_scenario(path, telemetry_out=tmp_path / "t.parquet")
    tel = pq.read_table(tmp_path / "t.parquet")
    assert s["workloads"]["synth"]["preempted_attempts"] > 0 and s["workloads"]["rl"]["preempted_attempts"] == 0
    assert s["outcomes"]["retried_attempts"] > s["workloads"]["synth"]["preempted_attempts"]  # verifier retries too
    start = tel.column("started_at").cast("int64").to_numpy(zero_copy_only=False).astype(float)
    end = tel.column("finished_at").cast("int64").to_numpy(zero_copy_only=False).astype(float)
    t = np.concatenate((start, end))
    d = np.concatenate((np.ones(start.size), -np.ones(end.size)))
    assert int(np.cumsum(d[np.lexsort((d, t))]).max()) <= 40  # the cap
    ll = s["inference"]["littles_law"]
    assert ll["mean_in_pool"] == pytest.approx(ll["arrival_rate_per_s"] * ll["mean_time_in_pool_s"], rel=1e-9)


def test_calls_are_withdrawn_from_every_place_alike():
    """Calls withdrawn from the seat line, the prefill line (its head mid-prefill, and behind it) and
    the decode set, on runs where the kernel gives the oracle's bytes (the places seen in the oracle)."""
    import tests.simulate.engine.oracle.pool as oracle_pool

    seen: set[str] = set()
    real = oracle_pool.Pool.withdraw

    def where(self, r, now):
        for rep in self.reps:
            if any(q[oracle_pool.ROLL] == r for q in rep.waiting):
                seen.add("seat line")
            elif rep.prefill and rep.prefill[0][oracle_pool.ROLL] == r:
                seen.add("prefill head")
            elif any(q[oracle_pool.ROLL] == r for q in rep.prefill):
                seen.add("prefill line")
            elif any(e[2][oracle_pool.ROLL] == r for e in rep.done):
                seen.add("decoding")
        real(self, r, now)

    ep = Episode(turns=Turns(LogNormal(4, 0.5), None, Exponential(2.0), Exponential(400), Exponential(30)))
    inf = Inference(replicas=1, prefill_tok_s=200, decode_tok_s=20, max_num_seqs=2)
    fleet = Fleet(cap=6, slots_per_node=3, preempt_rate_per_node_s=0.03, node_replace_s=5.0)
    oracle_pool.Pool.withdraw = where  # type: ignore[method-assign]
    try:
        for seed in range(6):
            wls = [Closed(population=8, n=40, episode=ep, retry=RetryPolicy(max_retries=3))]
            pure, pool, (plain,) = _three_ways(fleet, wls, seed, inf)
            assert _bytes(plain) == _bytes(pure)
            _conserved(pure, pool)
    finally:
        oracle_pool.Pool.withdraw = real  # type: ignore[method-assign]
    assert seen == {"seat line", "prefill head", "prefill line", "decoding"}
