"""The simulated campaign: synchronous RL runs sharing one capped pool.

The document's fleet is bursty by construction ("a synchronous RL step releases a
whole batch of rollouts at once"), peaks at a configured cap of 3,000 and averages
467.6. We reproduce that with one synchronous RL run per model, each in its own
window of the 17-day span, all drawing slots from one pool of ``3000 * scale``:

- a step releases ``prompts x 8`` rollouts (GRPO-style groups of 8 on one task), waits
  until all of them finished, then the trainer works for ``train_s``;
- the two Qwen3.5 runs release 3,584 rollouts a step (448 prompts), more than the
  cap: every one of their steps saturates the pool, the excess queues, and each
  finishing sandbox is refilled after the pool's provisioning delay, so concurrency
  dips below the cap and touches it again, thousands of times over the campaign;
  the Qwen3.6-base (2,048) and gpt-oss (1,536) runs overlap them and add collisions;
- ``train_s`` is the one free parameter of a run: it is set so that the run's
  expected steps fill its window, ``steps * (E[max of B holds] + train_s) = window``.
  E[max of B holds] = integral (1 - F(x)^B) dx over the model's hold mixture.

Rows per model follow the model shares; the mean concurrency is then sandbox time
over span, and the span is whatever the engine's placement gives (the windows are
planned on expectations, the realised steps vary).

Scale: ``S`` multiplies rows, prompts per step (so batch sizes) and the cap; windows
stay, so span and duty stay. The provisioning delay is ``2 s / S``: while the pool
is saturated, slots free at a rate proportional to the pool size, and the share of
that time spent exactly at the cap is exp(-rate * delay); holding rate * delay
constant keeps the time-at-cap share as published at every scale.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sandbox_fleet import exact
from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate import Fleet, SyncRL
from sandbox_fleet.synth import calibration as cal
from sandbox_fleet.synth.population import Population
from sandbox_fleet.synth.sampling import exact_counts, ndtr

GROUP_SIZE = 8
CAP = 3_000
#: The document's 10,248 s at the cap over 5,000 touches is ~2 s a touch: a freed slot
#: takes about that long to be handed to the next queued rollout.
PROVISION_DELAY_S = 2.0


@dataclass(frozen=True)
class RunPlan:
    """One synchronous RL run: its model, prompts per step (scale 1), window (fractions of the span)."""

    model: str
    prompts: int
    start: float
    end: float


# Windows (fractions of the span): the Qwen3.5 base run, then its RL checkpoint; the
# Qwen3.6 base run across the middle, overlapping both; the gpt-oss baseline inside it.
# With these windows every run's trainer step comes out at 2,800-3,300 s. Found by
# simulating candidate plans at scale 1 (seeds 1-3): 0.75-0.77% of the span at the cap
# over 5,100-5,900 touches, ~2 s a touch; batches at or below the cap (collisions
# only) gave 0.02-0.3%, and longer overlapping windows needed 5-13 h trainer steps.
PLANS: tuple[RunPlan, ...] = (
    RunPlan("Qwen3.5-27B", 448, 0.00, 0.34),
    RunPlan("qwen35-27b-iter0000161-hf", 448, 0.64, 1.00),
    RunPlan("Qwen3.6-27B-base", 256, 0.20, 0.80),
    RunPlan("gpt-oss-120b", 192, 0.36, 0.58),
)


def profile(name: str) -> cal.ModelProfile:
    for m in cal.MODELS:
        if m.name == name:
            return m
    raise InputError(f"unknown model {name!r}")


def rows_per_model(scale: float) -> dict[str, int]:
    """Rollouts of each model: the shares of round(327,189 x scale), exactly."""
    total = max(len(cal.MODELS), round(cal.PUBLISHED["rollouts"] * scale))
    counts = exact_counts(total, [m.share for m in cal.MODELS])
    return {m.name: int(c) for m, c in zip(cal.MODELS, counts)}


def hold_cdf(prof: cal.ModelProfile, x: np.ndarray) -> np.ndarray:
    """CDF of a model's hold (its clean and exception mixtures, truncated) at ``x``."""
    lo, hi = math.log(cal.HOLD_MIN_S), math.log(cal.HOLD_MAX_S)
    lx = exact.log(np.clip(x, cal.HOLD_MIN_S, cal.HOLD_MAX_S))
    out = np.zeros_like(x, dtype=float)
    erfc = np.frompyfunc(math.erfc, 1, 1)
    for weight, comps in ((1 - prof.exception_rate, prof.clean_hold), (prof.exception_rate, prof.exception_hold)):
        total = sum(c.weight for c in comps)
        for c in comps:
            mu = math.log(c.median_s)
            f_lo, f_hi = ndtr((lo - mu) / c.sigma), ndtr((hi - mu) / c.sigma)
            f = 0.5 * np.asarray(erfc(-(lx - mu) / (c.sigma * math.sqrt(2)))).astype(float)
            out += weight * c.weight / total * (f - f_lo) / (f_hi - f_lo)
    return np.clip(out, 0.0, 1.0)


def expected_max_hold(prof: cal.ModelProfile, batch: int) -> float:
    """E[max of ``batch`` holds] = integral of 1 - F(x)^B (trapezoid on a fine grid)."""
    x = np.linspace(0.0, cal.HOLD_MAX_S, 20_001)
    surv = 1.0 - exact.power(hold_cdf(prof, x), batch)
    return float(np.sum((surv[1:] + surv[:-1]) * np.diff(x)) / 2)


@dataclass
class Run:
    """A planned run at one scale: the engine workload plus what the release needs."""

    plan: RunPlan
    batch: np.ndarray  # per-step sizes
    train_s: float
    start_s: float
    population: Population


def plan_runs(populations: dict[str, Population], scale: float) -> list[Run]:
    """Turn each model's drawn rows into a synchronous RL run filling its window."""
    span = cal.PUBLISHED["span_s"]
    runs = []
    for plan in PLANS:
        pop = populations[plan.model]
        n = len(pop)
        b = max(1, round(plan.prompts * scale)) * GROUP_SIZE
        steps = max(1, math.ceil(n / b))
        sizes = np.full(steps, b, dtype=np.int64)
        sizes[-1] = n - b * (steps - 1)
        window = (plan.end - plan.start) * span
        e_max = expected_max_hold(profile(plan.model), b)
        train = max(0.0, window / steps - e_max)
        runs.append(Run(plan, sizes, train, plan.start * span, pop))
    return runs


def fleet(scale: float) -> Fleet:
    """The shared pool: ``3000 x scale`` slots, refilled after ``2 s / scale``."""
    return Fleet(cap=max(1, round(CAP * scale)), provision_delay_s=PROVISION_DELAY_S / scale)


def workloads(runs: list[Run]) -> list[SyncRL]:
    """Engine workloads; each consumes its population's holds in release order."""
    return [
        SyncRL(
            batch=r.batch,
            train_s=r.train_s,
            start_s=r.start_s,
            holds=r.population.hold_s,
            exception=r.population.has_exception,
            name=r.plan.model,
        )
        for r in runs
    ]
