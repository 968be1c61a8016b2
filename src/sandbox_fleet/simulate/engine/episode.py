"""Draw attempt durations phase by phase (build, agent, verifier) in vectorised blocks.

Durations do not depend on when an attempt runs, so every first attempt of a
workload is drawn up front in one block; the engine only places them in time.
A retry re-runs the same task: it keeps the rollout's component (model), its agent
duration (turn count and per-turn draws) and its verifier duration, passed back in as
``fixed``, and re-draws only the build cache hit and the exception draws. (With
``retry.redraw = true`` a retry is a fresh draw of every phase instead: since
preemption hits long attempts more often, that makes retries shorter on average.)
With an inference pool the agent phase is the loop of model calls and commands (run time): an
attempt's drawn agent length is then where a timeout or an agent exception would cut that loop,
from the phase's start (inf: nowhere), and the kernel decides whether the loop still runs there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sandbox_fleet.simulate.engine.distributions import Dist, mixture_of
from sandbox_fleet.simulate.engine.entities import (
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
    turn_draws: object = None  # inference.turn_draws.TurnDraws when the model calls are served by a pool
    warm_s: np.ndarray | None = None  # with an image cache: each build if warm, and if it misses
    miss_s: np.ndarray | None = None
    turns_total: float = 0.0  # turns drawn for the block (a substrate's per-action overhead counts them)

    @property
    def hold_s(self) -> np.ndarray:
        return self.build_s + self.agent_s + self.verify_s


def _agent_raw(ep: Episode, rng: np.random.Generator, idx: np.ndarray, labels: np.ndarray | None):
    n = idx.size
    if ep.turns is None:
        out, labels = _hold_raw(ep, rng, idx, labels)
        sub = ep.substrate
        if sub is not None and sub.turns_mean:  # a [hold] workload: the given turns per rollout
            out = out + sub.turns_mean * sub.per_action_s
        return out, labels, (sub.turns_mean or 0.0) * n if sub is not None else 0.0
    t = ep.turns
    assert t is not None  # Episode takes exactly one of agent and turns, and turns is set here
    turns = np.maximum(np.rint(t.turns.sample(rng, n)), 1).astype(np.int64)
    total = int(turns.sum())
    per_action_s = ep.substrate.per_action_s if ep.substrate is not None else 0.0
    if t.served:
        return _served_turns(t, rng, turns, total, per_action_s), None, float(total)
    assert t.model_latency is not None  # not served
    per_turn = t.model_latency.sample(rng, total)
    if t.command is not None:
        per_turn = per_turn + t.command.sample(rng, total)
    if per_action_s:  # the substrate's round trip on every turn
        per_turn = per_turn + per_action_s
    starts = np.concatenate(([0], np.cumsum(turns)[:-1]))
    return np.add.reduceat(per_turn, starts) if n else np.zeros(0), None, float(total)


def _hold_raw(ep: Episode, rng: np.random.Generator, idx: np.ndarray, labels: np.ndarray | None):
    """The agent phase of a ``[hold]`` workload: a given array, or a draw (keeping a retry's component)."""
    n = idx.size
    if isinstance(ep.agent, np.ndarray):
        return np.asarray(ep.agent, dtype=float)[idx], None
    assert isinstance(ep.agent, Dist)  # Episode takes exactly one of agent and turns, and turns is None here
    mix = mixture_of(ep.agent)
    if labels is not None and mix is not None:
        # Keep each rollout's component (its model) on a retry.
        return mix.sample_given(rng, labels), labels
    return ep.agent.sample_labeled(rng, n)


def _served_turns(t, rng: np.random.Generator, turns: np.ndarray, total: int, per_action_s: float = 0.0):
    """Per-turn draws for a pool-served agent phase; the agent time is the commands'
    (the model calls are placed by the pool at run time), plus the substrate's round trip per turn."""
    from sandbox_fleet.simulate.engine.inference.turn_draws import TurnDraws

    cmd = t.command.sample(rng, total) if t.command is not None else np.zeros(total)
    if per_action_s:
        cmd = cmd + per_action_s
    new = np.maximum(np.rint(t.prefill_tokens.sample(rng, total)), 0).astype(np.int64)
    dec = np.maximum(np.rint(t.decode_tokens.sample(rng, total)), 0).astype(np.int64)
    return TurnDraws(turns, new, dec, cmd)


def draw_attempts(
    ep: Episode,
    rng: np.random.Generator,
    idx: np.ndarray,
    labels: np.ndarray | None = None,
    fixed: tuple[np.ndarray, np.ndarray] | None = None,
    hits: np.ndarray | None = None,
    images: np.ndarray | None = None,
) -> tuple[Attempts, np.ndarray | None]:
    """Draw attempts for the rollouts ``idx`` (indices within the workload).

    ``fixed``: the (agent, verifier) durations to re-run instead of drawing them.
    ``hits`` / ``images``: with an image cache, whether each build finds its image on its node and
    which image it is (``images.assign``); without them (a retry) every build is warm.
    Returns the attempts and the component labels (models) when the agent
    distribution is a mixture.
    """
    n = idx.size
    draws = None
    turns_total = 0.0
    if fixed is None:
        agent, labels, turns_total = _agent_raw(ep, rng, idx, labels)
    else:  # a retry re-runs the task: same agent time (a pool-served one re-runs its drawn turns)
        agent = np.array(fixed[0], dtype=float)
    if not isinstance(agent, np.ndarray):
        draws = agent
        starts = draws.off
        agent = np.add.reduceat(draws.command_s, starts) if n and draws.command_s.size else np.zeros(n)
    build = np.zeros(n)
    warm = miss = None
    if ep.build is not None and ep.build.images is not None:
        build, warm, miss = _cached_builds(ep.build, rng, n, hits, images)
    elif ep.build is not None:
        b = ep.build
        hit = rng.random(n) < b.hit_p
        if b.hit is not None:
            build = np.where(hit, b.hit.sample(rng, n), build)
        if b.miss is not None:
            build = np.where(hit, build, b.miss.sample(rng, n))
    if ep.substrate is not None and ep.substrate.cold_start_s:
        build = build + ep.substrate.cold_start_s  # a new sandbox on every attempt
    if fixed is not None:
        verify = np.array(fixed[1], dtype=float)
    else:
        verify = ep.verifier.sample(rng, n) if ep.verifier is not None else np.zeros(n)
    mix = mixture_of(ep.agent) if isinstance(ep.agent, Dist) else None
    cuts = (ep.agent_timeout_s is not None or ep.exception is not None or bool(mix is not None and mix.exceptions)
            or any(v > 0 for v in ep.exception_rate_per_s.values()) or any(v > 0 for v in ep.exception_p.values()))
    # The durations before any cut: copies only when something below may cut them.
    agent_raw, verify_raw = (agent.copy(), verify.copy()) if cuts else (agent, verify)
    served = ep.turns is not None and ep.turns.served
    if served:  # the agent phase lasts the loop of calls and commands (run time): drawn here is only
        agent = np.full(n, np.inf)  # where it is cut, from its start (``_inference_rules.agent_cut``)

    state = np.full(n, COMPLETED, dtype=np.int8)
    phase = np.full(n, NO_PHASE, dtype=np.int8)
    if ep.agent_timeout_s is not None:
        limit = ep.agent_timeout_s[idx] if isinstance(ep.agent_timeout_s, np.ndarray) else ep.agent_timeout_s
        cut = agent > limit
        agent = np.where(cut, limit, agent)
        if not served:  # served: a timeout only if the loop is still running then (``agent_cut``)
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
            if not (served and name == "agent"):  # served: the cut moves earlier, an exception only if the
                state[hit], phase[hit] = EXCEPTION, codes[name]  # loop still runs then (``agent_cut``): the
                alive &= ~hit  # verifier's draws see it alive
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
    return Attempts(build, agent, verify, state, phase, agent_raw, verify_raw, draws, warm, miss, turns_total), labels


def _cached_builds(b, rng: np.random.Generator, n: int, hits: np.ndarray | None, images: np.ndarray | None):
    """Builds against an image cache: the warm draw on a hit; on a miss the warm draw plus the image's
    pull (or the miss draw). Returns the builds and both alternatives (the pre-pull what-if reads them)."""
    warm = b.hit.sample(rng, n) if b.hit is not None else np.zeros(n)
    if hits is None or images is None:  # a retry: the first attempt pulled the image
        return warm, None, None
    pull = b.images.pull_s()
    if pull is not None:
        miss = warm + pull[images]
    else:
        miss = b.miss.sample(rng, n) if b.miss is not None else warm.copy()
    return np.where(hits, warm, miss), warm, miss
