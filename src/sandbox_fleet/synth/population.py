"""Per-rollout attributes, drawn before the engine places anything in time.

One ``Population`` is the rows of one workload (one model), in release order:
whether it raised an exception, its hold, its reward, whether it reports tokens and
a trajectory, its turns and tokens. The attributes are drawn *jointly* (an
exception shortens the hold and almost never passes; a long hold has more turns;
input tokens grow quadratically in turns) from the parameters in ``calibration``.
The engine receives only ``hold_s`` (and the exception flags); everything else
travels with the rollout into the release.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sandbox_fleet import exact
from sandbox_fleet.synth import calibration as cal
from sandbox_fleet.synth.sampling import (
    exact_flags,
    exact_labels,
    ndtri,
    stratified_uniform,
    truncated_lognormal,
)


@dataclass
class Population:
    """Columnar attributes of ``n`` rollouts; nulls are NaN (reward) or -1 (counts)."""

    model: str
    hold_s: np.ndarray  # float64 seconds
    has_exception: np.ndarray  # bool
    reward: np.ndarray  # float64, NaN = no reward
    has_tokens: np.ndarray  # bool (turns and token counts present)
    has_trajectory: np.ndarray  # bool
    turns: np.ndarray  # int64, -1 where absent
    input_tokens: np.ndarray  # int64, -1 where absent
    output_tokens: np.ndarray  # int64, -1 where absent

    def __len__(self) -> int:
        return int(self.hold_s.size)


def draw_mixture(
    rng: np.random.Generator, n: int, components: tuple[cal.Component, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """Holds from a truncated-lognormal mixture: exact component counts, stratified within each.

    Returns the holds and each draw's normal score inside its component (for the copula).
    """
    hold = np.empty(n)
    score = np.empty(n)
    labels = exact_labels(rng, n, [c.weight for c in components])
    for k, comp in enumerate(components):
        idx = np.flatnonzero(labels == k)
        u = stratified_uniform(rng, idx.size)
        hold[idx], score[idx] = truncated_lognormal(u, comp.median_s, comp.sigma, cal.HOLD_MIN_S, cal.HOLD_MAX_S)
    return hold, score


def input_ratio(turns: np.ndarray) -> np.ndarray:
    """Median input tokens per n(n+1)/2 at each turn count (the calibrated knots, log-interpolated)."""
    n, r = zip(*cal.INPUT_RATIO_KNOTS)
    return np.interp(exact.log(np.maximum(turns, 1)), exact.log(np.asarray(n, float)), np.asarray(r))


def draw_turns(rng: np.random.Generator, hold_score: np.ndarray, passed: np.ndarray) -> np.ndarray:
    """Turn counts tied to the hold through a Gaussian copula; passing rows run fewer turns."""
    n = hold_score.size
    rho = cal.TURNS_HOLD_CORRELATION
    z = rho * hold_score + np.sqrt(1 - rho * rho) * ndtri(stratified_uniform(rng, n))
    median = np.where(passed, cal.TURNS_PASS_MEDIAN, cal.TURNS_FAIL_MEDIAN)
    turns = median * exact.exp(cal.TURNS_SIGMA * z)
    tail = exact_flags(rng, n, cal.TURNS_TAIL_WEIGHT)
    turns[tail] = cal.TURNS_TAIL_MEDIAN * exact.exp(cal.TURNS_TAIL_SIGMA * z[tail])
    return np.clip(np.rint(turns), 1, cal.TURNS_MAX).astype(np.int64)


def draw_tokens(rng: np.random.Generator, turns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Input tokens (quadratic in turns, context re-sent every turn) and output tokens."""
    n = turns.size
    tri = turns * (turns + 1) / 2.0
    sigma_in = cal.INPUT_SIGMA_ONE_TURN / np.sqrt(turns)
    inp = input_ratio(turns) * tri * exact.exp(sigma_in * ndtri(stratified_uniform(rng, n)))
    out = turns * cal.OUTPUT_PER_TURN * exact.exp(cal.OUTPUT_SIGMA * ndtri(stratified_uniform(rng, n)))
    return np.rint(inp).astype(np.int64), np.maximum(np.rint(out), 1).astype(np.int64)


def draw_population(rng: np.random.Generator, profile: cal.ModelProfile, n: int) -> Population:
    """Draw ``n`` rollouts of one model, already in a random (release) order."""
    exc = exact_flags(rng, n, profile.exception_rate)
    n_exc = int(exc.sum())
    hold = np.empty(n)
    score = np.empty(n)
    hold[~exc], score[~exc] = draw_mixture(rng, n - n_exc, profile.clean_hold)
    hold[exc], score[exc] = draw_mixture(rng, n_exc, profile.exception_hold)

    # Rewards: every clean row is verified; 15% of exception rows still are.
    reward = np.full(n, np.nan)
    clean_idx = np.flatnonzero(~exc)
    reward[clean_idx] = exact_flags(rng, clean_idx.size, profile.clean_pass).astype(float)
    exc_idx = np.flatnonzero(exc)
    rewarded = exc_idx[exact_flags(rng, exc_idx.size, cal.EXCEPTION_REWARDED)]
    reward[rewarded] = exact_flags(rng, rewarded.size, cal.EXCEPTION_PASS_GIVEN_REWARD).astype(float)

    # Coverage: counts are mostly missing on exception rows; trajectories only on those without counts.
    no_tok = np.zeros(n, dtype=bool)
    no_tok[exc_idx] = exact_flags(rng, exc_idx.size, cal.EXCEPTION_NO_TOKENS)
    no_tok[clean_idx] = exact_flags(rng, clean_idx.size, cal.CLEAN_NO_TOKENS)
    has_traj = np.ones(n, dtype=bool)
    nt_idx = np.flatnonzero(no_tok)
    has_traj[nt_idx] = ~exact_flags(rng, nt_idx.size, cal.NO_TRAJECTORY_GIVEN_NO_TOKENS)

    tok_idx = np.flatnonzero(~no_tok)
    turns = np.full(n, -1, dtype=np.int64)
    inp = np.full(n, -1, dtype=np.int64)
    out = np.full(n, -1, dtype=np.int64)
    turns[tok_idx] = draw_turns(rng, score[tok_idx], reward[tok_idx] == 1.0)
    inp[tok_idx], out[tok_idx] = draw_tokens(rng, turns[tok_idx])
    return Population(
        model=profile.name,
        hold_s=hold,
        has_exception=exc,
        reward=reward,
        has_tokens=~no_tok,
        has_trajectory=has_traj,
        turns=turns,
        input_tokens=inp,
        output_tokens=out,
    )
