"""Draw attempt durations phase by phase (build, agent, verifier) in vectorised blocks.

Durations do not depend on when an attempt runs, so every first attempt of a
workload is drawn up front in one block; the engine only places them in time.
A retry re-runs the same task: it keeps the rollout's component (model), its agent
duration (turn count and per-turn draws) and its verifier duration, passed back in as
``fixed``, and re-draws only the build cache hit and the exception draws. (With
``retry.redraw = true`` a retry is a fresh draw of every phase instead: since
preemption hits long attempts more often, that makes retries shorter on average.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sandbox_fleet.simulate.distributions import Dist, mixture_of
from sandbox_fleet.simulate.entities import (
    AGENT,
    BUILD,
    COMPLETED,
    EXCEPTION,
    NO_PHASE,
    TIMEOUT,
    VERIFIER,
    Episode,
)


@dataclass
class Attempts:
    """Durations of a block of attempts (seconds) and how each ends if undisturbed."""

    build_s: np.ndarray
    agent_s: np.ndarray
    verify_s: np.ndarray
    state: np.ndarray  # int8: COMPLETED, EXCEPTION or TIMEOUT
    phase: np.ndarray  # int8: exception phase, NO_PHASE when none
    agent_raw: np.ndarray | None = None  # agent and verifier durations before any exception cut
    verify_raw: np.ndarray | None = None
    turn_draws: object = None  # inference.driver.TurnDraws when the model calls are served by a pool

    @property
    def hold_s(self) -> np.ndarray:
        return self.build_s + self.agent_s + self.verify_s


def _agent_raw(ep: Episode, rng: np.random.Generator, idx: np.ndarray, labels: np.ndarray | None):
    n = idx.size
    if isinstance(ep.agent, np.ndarray):
        return np.asarray(ep.agent, dtype=float)[idx], None
    if isinstance(ep.agent, Dist):
        mix = mixture_of(ep.agent)
        if labels is not None and mix is not None:
            # Keep each rollout's component (its model) on a retry.
            out = np.empty(n)
            for k, comp in enumerate(mix.components):
                sel = np.flatnonzero(labels == k)
                if sel.size:
                    out[sel] = comp.sample(rng, sel.size)
            return out, labels
        return ep.agent.sample_labeled(rng, n)
    t = ep.turns
    assert t is not None  # Episode takes exactly one of agent and turns, and agent is None here
    turns = np.maximum(np.rint(t.turns.sample(rng, n)), 1).astype(np.int64)
    total = int(turns.sum())
    if t.served:
        return _served_turns(t, rng, turns, total), None
    assert t.model_latency is not None  # not served
    per_turn = t.model_latency.sample(rng, total)
    if t.command is not None:
        per_turn = per_turn + t.command.sample(rng, total)
    starts = np.concatenate(([0], np.cumsum(turns)[:-1]))
    return np.add.reduceat(per_turn, starts) if n else np.zeros(0), None


def _served_turns(t, rng: np.random.Generator, turns: np.ndarray, total: int):
    """Per-turn draws for a pool-served agent phase; the agent time is the commands'
    (the model calls are placed by the pool at run time)."""
    from sandbox_fleet.simulate.inference.driver import TurnDraws

    cmd = t.command.sample(rng, total) if t.command is not None else np.zeros(total)
    new = np.maximum(np.rint(t.prefill_tokens.sample(rng, total)), 0).astype(np.int64)
    dec = np.maximum(np.rint(t.decode_tokens.sample(rng, total)), 0).astype(np.int64)
    return TurnDraws(turns, new, dec, cmd)


def draw_attempts(
    ep: Episode,
    rng: np.random.Generator,
    idx: np.ndarray,
    labels: np.ndarray | None = None,
    fixed: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[Attempts, np.ndarray | None]:
    """Draw attempts for the rollouts ``idx`` (indices within the workload).

    ``fixed``: the (agent, verifier) durations to re-run instead of drawing them.
    Returns the attempts and the component labels (models) when the agent
    distribution is a mixture.
    """
    n = idx.size
    draws = None
    if fixed is None:
        agent, labels = _agent_raw(ep, rng, idx, labels)
    else:  # a retry re-runs the task: same agent time (pool-served scenarios do not retry)
        agent = np.array(fixed[0], dtype=float)
    if not isinstance(agent, np.ndarray):
        draws = agent
        starts = draws.off
        agent = np.add.reduceat(draws.command_s, starts) if n and draws.command_s.size else np.zeros(n)
    build = np.zeros(n)
    if ep.build is not None:
        b = ep.build
        hit = rng.random(n) < b.hit_p
        if b.hit is not None:
            build = np.where(hit, b.hit.sample(rng, n), build)
        if b.miss is not None:
            build = np.where(hit, build, b.miss.sample(rng, n))
    if fixed is not None:
        verify = np.array(fixed[1], dtype=float)
    else:
        verify = ep.verifier.sample(rng, n) if ep.verifier is not None else np.zeros(n)
    mix = mixture_of(ep.agent) if isinstance(ep.agent, Dist) else None
    cuts = (ep.agent_timeout_s is not None or ep.exception is not None or bool(mix is not None and mix.exceptions)
            or any(v > 0 for v in ep.exception_rate_per_s.values()) or any(v > 0 for v in ep.exception_p.values()))
    # The durations before any cut: copies only when something below may cut them.
    agent_raw, verify_raw = (agent.copy(), verify.copy()) if cuts else (agent, verify)

    state = np.full(n, COMPLETED, dtype=np.int8)
    phase = np.full(n, NO_PHASE, dtype=np.int8)
    if ep.agent_timeout_s is not None:
        limit = ep.agent_timeout_s[idx] if isinstance(ep.agent_timeout_s, np.ndarray) else ep.agent_timeout_s
        cut = agent > limit
        agent = np.where(cut, limit, agent)
        state[cut] = TIMEOUT
    if ep.exception is not None:
        flag = np.asarray(ep.exception, dtype=bool)[idx]
        state[flag] = EXCEPTION
        phase[flag] = AGENT
    if mix is not None and mix.exceptions and labels is not None:
        flag = np.asarray(mix.exceptions, dtype=bool)[labels]
        state[flag] = EXCEPTION
        phase[flag] = AGENT

    alive = phase == NO_PHASE
    durs = {"build": build, "agent": agent, "verifier": verify}
    codes = {"build": BUILD, "agent": AGENT, "verifier": VERIFIER}
    for name in ("build", "agent", "verifier"):
        dur = durs[name]
        rate = ep.exception_rate_per_s.get(name, 0.0)
        p = ep.exception_p.get(name, 0.0)
        if rate > 0:
            at = rng.exponential(1.0 / rate, n)
            hit = alive & (at < dur)
            dur[hit] = at[hit]
            state[hit], phase[hit] = EXCEPTION, codes[name]
            alive &= ~hit
        if p > 0:
            u = rng.random(n)
            frac = rng.random(n)
            hit = alive & (u < p)
            dur[hit] = dur[hit] * frac[hit]
            state[hit], phase[hit] = EXCEPTION, codes[name]
            alive &= ~hit
    if cuts:  # a phase that failed ends the hold: later phases do not run
        agent[phase == BUILD] = 0.0
        verify[(phase == BUILD) | (phase == AGENT)] = 0.0
    return Attempts(build, agent, verify, state, phase, agent_raw, verify_raw, draws), labels
