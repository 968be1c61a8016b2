"""Agent timeouts and agent-phase exceptions beside an inference pool: the agent phase is the loop of model
calls and commands, so its length is not drawn up front; ``prepare`` draws only where a timeout or an
exception would cut it (from the agent phase's start), and the kernel cuts the loop there if it still runs
(``_inference_rules.agent_cut`` on an ``AGENT_CUT`` event): its call in flight is withdrawn, a timeout runs
its verifier, an exception ends the attempt.

Independent truth: hand-worked schedules (a timeout mid-decode with the withdrawn time and the replica it
frees; an exception mid-command), the oracle's own copy of the rule (``oracle/loop_state.on_agent_cut``)
compared byte for byte on random runs, plain and compiled, the conservation of calls, and the law of the
exception (a loop of fixed length ``L`` alone on a replica ends in an exception with probability
``1 - exp(-rate x L)``, and the drawn instants are exponential).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from tests.simulate.engine.inference.test_ended_early import (
    _bytes,
    _conserved,
    _three_ways,
    cases,
    compiled_matches_the_oracle,
    random_runs_match_the_oracle,
)

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate import Deterministic, Episode, Exponential, Fleet, LogNormal, Turns
from sandbox_fleet.simulate.engine.entities import AGENT, COMPLETED, EXCEPTION, NO_PHASE, RETRIED, TIMEOUT, RetryPolicy
from sandbox_fleet.simulate.engine.fast import admit_loop
from sandbox_fleet.simulate.engine.inference import Inference
from sandbox_fleet.simulate.engine.prepare import prepare
from sandbox_fleet.simulate.engine.workloads import AsyncRL, Closed, Replay

# one replica decoding 10 tokens/s, no prefill work (no new prompt tokens; the context is cached)
_ONE = Inference(replicas=1, prefill_tok_s=1000, decode_tok_s=10, kv_bytes_per_token=1.0)


def _ep(turns: int, command_s: float, **kw) -> Episode:
    """``turns`` calls of 100 decode tokens (10 s alone), each followed by a command of ``command_s``."""
    return Episode(turns=Turns(Deterministic(turns), None, Deterministic(command_s), Deterministic(0),
                               Deterministic(100)), **kw)


def test_hand_worked_timeout_mid_decode():
    """Two slots; ``a`` (2 turns, a command of 1 s, a verifier of 2 s, agent timeout 15 s) arrives at 0,
    ``b`` (1 turn, the same verifier, no timeout) at 12.

    - a: call 1 in [0, 10], command to 11, call 2 decodes alone from 11 (10 tokens by 12).
    - b's call joins at 12: the two share the replica, 5 tokens/s each, to 15 (a: 25 tokens, b: 15).
    - 15 is a's timeout (15 s after its agent phase started at 0): call 2 is withdrawn after 4 s in the
      pool, a's agent phase is 15 s, its verifier runs to 17 and it ends as a timeout.
    - b decodes alone from 15: 85 tokens to 23.5 (sojourn 11.5 s; had a's call stayed, 31), command to
      24.5, verifier to 26.5.
    """
    ver = Deterministic(2.0)
    wls = [Replay(arrivals_s=np.array([0.0]), episode=_ep(2, 1.0, verifier=ver, agent_timeout_s=15.0), name="a"),
           Replay(arrivals_s=np.array([12.0]), episode=_ep(1, 1.0, verifier=ver), name="b")]
    pure, pool, runs = _three_ways(Fleet(cap=2), wls, 1, _ONE, compiled=True)
    for out in (pure, *runs):
        f, sr = out.first, out.served
        assert list(f["start_s"]) == [0.0, 12.0]
        assert f["finish_s"][0] == 17.0 and f["finish_s"][1] == pytest.approx(26.5, abs=1e-9)
        assert f["state"].tolist() == [TIMEOUT, COMPLETED] and f["phase"].tolist() == [NO_PHASE, NO_PHASE]
        assert f["agent_s"][0] == 15.0 and f["agent_s"][1] == pytest.approx(12.5, abs=1e-9)
        assert list(f["verify_s"]) == [2.0, 2.0]
        assert out.extra["rollout"] == []  # a timeout is never retried
        assert sr.calls == 3 and list(sr.withdrawn_s) == [4.0]
        assert sr.sojourn_s[0] == 10.0 and sr.sojourn_s[1] == pytest.approx(11.5, abs=1e-9)
        assert list(sr.r_output) == [100, 100]  # the withdrawn call's tokens are not counted
        assert float(sr.area_sys.sum()) == pytest.approx(10 + 4 + 11.5, abs=1e-9)
        _conserved(out)
    _conserved(pure, pool)
    assert _bytes(runs[0]) == _bytes(pure) and _bytes(runs[1]) == _bytes(pure)


def test_hand_worked_exception_mid_command():
    """One rollout: 3 turns of a 10-s call then a 100-s command (loop: calls [0, 10], [110, 120],
    [220, 230], commands after each, to 330), agent exceptions at 0.004/s, a verifier of 5 s. The first
    seed whose drawn exception instant ``x`` (``prepare``'s draw, read back) falls in the second command
    (120, 220): the attempt ends at ``x`` as an agent exception, without its verifier, after 2 calls served
    and none withdrawn (no call in flight), and its third turn never sends its call."""
    ep = _ep(3, 100.0, verifier=Deterministic(5.0), exception_rate_per_s={"agent": 0.004})
    wls = [Replay(arrivals_s=np.array([0.0]), episode=ep)]
    seed = next(s for s in range(200) if 120 < prepare(Fleet(cap=1), wls, s, _ONE).agent[0] < 220)
    x = float(prepare(Fleet(cap=1), wls, seed, _ONE).agent[0])
    pure, pool, runs = _three_ways(Fleet(cap=1), wls, seed, _ONE, compiled=True)
    for out in (pure, *runs):
        f, sr = out.first, out.served
        assert f["state"].tolist() == [EXCEPTION] and f["phase"].tolist() == [AGENT]
        assert list(f["finish_s"]) == [x] and list(f["agent_s"]) == [x] and list(f["verify_s"]) == [0.0]
        assert sr.calls == 2 and list(sr.sojourn_s) == [10.0, 10.0] and sr.withdrawn_s.size == 0
        assert list(sr.r_output) == [200]
        _conserved(out)
    _conserved(pure, pool)
    assert _bytes(runs[0]) == _bytes(pure) and _bytes(runs[1]) == _bytes(pure)


def test_a_cut_after_the_loop_ended_changes_nothing():
    """A timeout drawn past the loop's end (one 10-s call, a 1-s command: the loop ends at 11; timeout
    11, the slot engine's ``agent > timeout`` is false at equality) leaves the attempt completed."""
    wls = [Replay(arrivals_s=np.array([0.0]), episode=_ep(1, 1.0, verifier=Deterministic(2.0), agent_timeout_s=11.0))]
    pure, _, (plain,) = _three_ways(Fleet(cap=1), wls, 1, _ONE)
    for out in (pure, plain):
        assert out.first["state"].tolist() == [COMPLETED] and list(out.first["finish_s"]) == [13.0]
        assert out.served.withdrawn_s.size == 0
    assert _bytes(plain) == _bytes(pure)


def test_the_exception_follows_its_law():
    """Rollouts alone on the replica (arrivals 1,000 s apart), a loop of fixed length L = 3 x (10 + 100)
    = 330 s, exceptions at 0.004/s: each ends in an agent exception with probability 1 - exp(-1.32)
    (= 0.733), and the drawn instants (``prepare``) are exponential of mean 250 s."""
    n, rate = 3000, 0.004
    ep = _ep(3, 100.0, exception_rate_per_s={"agent": rate})
    wls = [Replay(arrivals_s=np.arange(n) * 1000.0, episode=ep)]
    prep = prepare(Fleet(cap=1), wls, 11, _ONE)
    x = prep.agent
    assert np.mean(x) == pytest.approx(1 / rate, rel=4 / math.sqrt(n))
    out = admit_loop.run(prep, compiled=False)
    hit = out.first["state"] == EXCEPTION
    p = 1 - math.exp(-rate * 330.0)
    assert hit.mean() == pytest.approx(p, abs=4 * math.sqrt(p * (1 - p) / n))
    assert (out.first["phase"][hit] == AGENT).all() and (out.first["state"][~hit] == COMPLETED).all()
    assert np.array_equal(out.first["agent_s"][hit], x[hit]) and (x[~hit] >= 330.0).all()


_EP = Episode(turns=Turns(LogNormal(4, 0.5), None, Exponential(2.0), Exponential(20), Exponential(30)),
              verifier=Exponential(1.0), exception_p={"build": 0.1, "verifier": 0.15},
              exception_rate_per_s={"agent": 0.01}, agent_timeout_s=40.0)
_EP_T = Episode(turns=Turns(LogNormal(4, 0.5), None, Exponential(2.0), Exponential(20), Exponential(30)),
                exception_rate_per_s={"agent": 0.01}, agent_timeout_s=30.0)
# each way an attempt ends early (``test_ended_early.cases``), every episode with timeouts and exceptions
_case = cases(_EP, _EP_T, RetryPolicy(max_retries=2, on=("build", "agent", "verifier", "preemption")),
              lambda cap: Fleet(cap=cap))


test_kernel_matches_the_oracle_and_calls_are_conserved = random_runs_match_the_oracle(
    _case, ["retries", "node_preemption", "priority_preempt", "rl"])


@pytest.mark.parametrize("kind", ["retries", "node_preemption", "priority_preempt", "rl"])
def test_compiled_kernel_matches_and_the_cuts_happen(kind):
    pure = compiled_matches_the_oracle(_case, kind)
    states = np.concatenate((pure.first["state"], np.asarray(pure.extra.get("state", []), dtype=np.int8)))
    phases = np.concatenate((pure.first["phase"], np.asarray(pure.extra.get("phase", []), dtype=np.int8)))
    assert (states == TIMEOUT).any() and (np.isin(states, (EXCEPTION, RETRIED)) & (phases == AGENT)).any()


def test_what_is_still_refused_beside_the_pool():
    ep = lambda **kw: Episode(turns=Turns(Deterministic(2), None, None, Deterministic(10), Deterministic(10)), **kw)  # noqa: E731
    with pytest.raises(InputError, match="exception_p.agent"):
        prepare(Fleet(cap=1), [Closed(population=1, n=2, episode=ep(exception_p={"agent": 0.5}))], 1, _ONE)
    with pytest.raises(InputError, match="agent_timeout_s"):
        prepare(Fleet(cap=2, admission="timeout-ceiling"),
                [AsyncRL(batch=2, steps=1, train_s=1, staleness=1, episode=ep(agent_timeout_s=5.0))], 1, _ONE)


def test_example_times_out_and_retries_beside_the_pool(tmp_path):
    """``examples/scenarios/inference_timeouts.toml`` does what its comment says: loops time out (their
    verifier runs: a timed-out attempt's hold passes its build + 150 s agent phase), agent exceptions are
    retried, and the pool's Little's law counts the withdrawn calls."""
    from pathlib import Path

    import pyarrow.parquet as pq

    from sandbox_fleet.simulate.scenario.run import run_scenario

    path = Path(__file__).resolve().parents[4] / "examples" / "scenarios" / "inference_timeouts.toml"
    s = run_scenario(path, telemetry_out=tmp_path / "t.parquet")
    o = s["outcomes"]
    assert o["timeouts"] > 0 and o["retried_attempts"] > 0
    tel = pq.read_table(tmp_path / "t.parquet").to_pylist()
    timed_out = [row for row in tel if row["exception_type"] == "AgentTimeoutError"]
    assert len(timed_out) == o["timeouts"]
    for row in timed_out:  # cut 150 s after its agent phase started; its verifier ran after
        agent_s = (row["agent_execution_finished_at"] - row["agent_execution_started_at"]).total_seconds()
        assert agent_s == pytest.approx(150.0, abs=1e-5) and row["verifier_finished_at"] > row["verifier_started_at"]
    ll = s["inference"]["littles_law"]
    assert ll["mean_in_pool"] == pytest.approx(ll["arrival_rate_per_s"] * ll["mean_time_in_pool_s"], rel=1e-9)
