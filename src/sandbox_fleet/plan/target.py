"""The target concurrency to size for: measured peak, a number, an RL schedule, or a throughput.

``rl_schedule_target`` is kept apart on purpose: it is the one place the planner calls the
simulator, and the one place to rewire if the simulator's interface changes.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict
from statistics import NormalDist
from typing import TYPE_CHECKING, Optional

from sandbox_fleet.errors import InputError
from sandbox_fleet.plan import holdfit
from sandbox_fleet.plan.censored import censored_target
from sandbox_fleet.plan.holdfit import ClippedFit, clipped_fit
from sandbox_fleet.plan.interval import RL_REPLICATIONS, CapSearch, rep_seed, replicated_search
from sandbox_fleet.plan.model import HoldFit, ShapeAlternative, Target
from sandbox_fleet.plan.shape import SHAPE_SWING, SHAPES, auto_shape, mean_busy, measured_shape, smooth_shape
from sandbox_fleet.plan.summary import Figures
from sandbox_fleet.textout import progress_bar

if TYPE_CHECKING:  # NumPy is imported where it is used: a plan from a summary may not need it
    import numpy as np

    from sandbox_fleet.measure.model import MeasureSummary

_Z = NormalDist()
SOURCES = ("measured-peak", "censored-demand", "concurrency", "rl-schedule", "passing-per-hour")


def _positive(name: str, value: float | None) -> None:
    if value is not None and not (value > 0 and math.isfinite(value)):
        raise InputError(f"{name} must be a positive number, got {value!r}")


def resolve_target(
    fig: Figures,
    *,
    concurrency: Optional[int] = None,
    batch: Optional[int] = None,
    train_s: Optional[float] = None,
    passing_per_hour: Optional[float] = None,
    tolerance: float = 0.01,
    seed: int = 0,
    shape: str = "auto",
    max_wait_s: float = 60.0,
    keep_cap: bool = False,
) -> Target:
    """The plan's ``target`` block: concurrency (an int), which source set it, and how. ``keep_cap``:
    on a binding cap whose estimated demand is below it, buy the cap anyway (``plan/censored.py``)."""
    _positive("`concurrency`", concurrency)
    _positive("`batch`", batch)
    _positive("`passing_per_hour`", passing_per_hour)
    if train_s is not None and not (train_s >= 0 and math.isfinite(train_s)):
        raise InputError(f"`train_s` must be zero or positive, got {train_s!r}")
    chosen = [n for n, v in (("`concurrency`", concurrency), ("`batch`", batch), ("`passing_per_hour`", passing_per_hour)) if v is not None]
    if len(chosen) > 1:
        raise InputError(f"choose one target, got {' and '.join(chosen)}")
    if train_s is not None and batch is None:
        raise InputError("`train_s` needs `batch` (an RL schedule is a batch size and a trainer time)")

    if concurrency is not None:
        return Target(concurrency=int(concurrency), source="concurrency", detail=f"--concurrency {int(concurrency)}")
    if batch is not None:
        return rl_schedule_target(fig, int(batch), float(train_s or 0.0), tolerance=tolerance, seed=seed)
    if passing_per_hour is not None:
        if not fig.sandbox_hours_per_pass:
            raise InputError("`passing_per_hour` needs sandbox-hours per passing rollout; the input has no passed rollouts")
        if shape not in SHAPES + ("auto",):
            raise InputError(f"`shape` {shape!r}: expected one of auto, {', '.join(SHAPES)}")
        mean = mean_busy(passing_per_hour, fig.sandbox_hours_per_pass)
        shaped = _shaped(fig, mean, shape, max_wait_s=max_wait_s, seed=seed)
        shaped.detail = (f"Little's law: {passing_per_hour:g} passing/h x {fig.sandbox_hours_per_pass:.3f} sandbox-h per pass "
                         f"= {mean:,.1f} busy on average; {shaped.detail}")
        shaped.exact = shaped.mean_busy = mean
        shaped.passing_per_hour = float(passing_per_hour)
        return shaped
    if not fig.peak:
        raise InputError("input has no measured peak concurrency (concurrency.peak); pass `concurrency` N")
    censored = censored_target(fig, tolerance=tolerance, seed=seed, keep_cap=keep_cap)
    if censored is not None:
        return censored
    return Target(concurrency=round(fig.peak), source="measured-peak", detail="the measured peak concurrency")


def _one_shape(fig: Figures, mean: float, shape: str, *, max_wait_s: float, seed: int) -> Target:
    if shape == "measured":
        return measured_shape(mean, fig.duty)
    return smooth_shape(mean, fitted_holds(fig).sample, max_wait_s=max_wait_s, seed=seed)


def _shaped(fig: Figures, mean: float, shape: str, *, max_wait_s: float, seed: int) -> Target:
    """The named shape, or under ``auto`` the one the measured step structure implies, with the
    other shape's answer beside it when the two differ by more than ``SHAPE_SWING``."""
    if shape != "auto":
        named = _one_shape(fig, mean, shape, max_wait_s=max_wait_s, seed=seed)
        named.shape_basis = f"--shape {shape}"
        return named
    chosen, basis = auto_shape(fig.steps_detected, fig.duty)
    shaped = _one_shape(fig, mean, chosen, max_wait_s=max_wait_s, seed=seed)
    shaped.shape_basis = basis
    other_name = "smooth" if chosen == "measured" else "measured"
    try:
        other = _one_shape(fig, mean, other_name, max_wait_s=max_wait_s, seed=seed)
    except InputError:  # the other shape cannot be sized from this input: nothing to compare
        return shaped
    ratio = max(shaped.concurrency, other.concurrency) / min(shaped.concurrency, other.concurrency)
    if ratio > SHAPE_SWING:
        shaped.shape_alternative = ShapeAlternative(shape=other_name, concurrency=other.concurrency, ratio=ratio)
    return shaped


# --- RL schedule ------------------------------------------------------------------------


class HoldSampler:
    """Hold times fitted from a summary's percentiles.

    Empirical: piecewise lognormal through the known quantiles, i.e. log(hold) interpolated
    linearly in the normal score of the quantile. The min and max of ``rows`` holds sit at the
    quantiles 1/(2 rows) and 1 - 1/(2 rows), so a long maximum over many rows stays a rare tail
    instead of being spread evenly above p99. Needs min, median and max. Otherwise lognormal through
    the median and p99 (or p90); otherwise exponential with the mean.
    """

    def __init__(self, quantiles: dict[float, Optional[float]], mean: Optional[float], rows: Optional[float] = None):
        known = {q: v for q, v in quantiles.items() if v is not None and v > 0}
        self.kind: str
        self.knots_z: list[float] = []  # the knots in z and log seconds (none for the exponential)
        self.knots_log_s: list[float] = []
        # the fit's ends: the min and max of ``rows`` holds sit at the 1/(2 rows) quantiles
        n = max(float(rows or 1000), 2.0)
        self.clip_rows = n
        z_lo, z_hi = _Z.inv_cdf(1 / (2 * n)), _Z.inv_cdf(1 - 1 / (2 * n))
        if {0.0, 0.5, 1.0} <= set(known):
            invented = 0.9 not in known and bool(mean) and 0.99 in known
            if invented:
                assert mean is not None  # invented only with a mean
                known[0.9] = _p90_matching_mean(known, mean, n)
            # a quantile at or beyond the min's or max's own (few rows) is not a knot: say so, not "through" it
            used = {q: v for q, v in known.items() if q in (0.0, 1.0) or z_lo < _Z.inv_cdf(q) < z_hi}
            inner = {_Z.inv_cdf(q): v for q, v in used.items() if 0 < q < 1}
            knots = sorted({z_lo: known[0.0], **inner, z_hi: known[1.0]}.items())
            self.kind = "empirical"
            self.knots_z = [z for z, _ in knots]
            self.knots_log_s = [math.log(v) for v in itertools.accumulate((v for _, v in knots), max)]
            fit_mean = holdfit.mean_s(clipped_fit(self.knots_z, self.knots_log_s)) if invented else None
            self.spec = HoldFit(
                dist="piecewise-lognormal",
                quantiles={str(q): float(v) for q, v in sorted(used.items())},
                rows=n,
                basis=_empirical_basis(used, n, (mean, fit_mean) if mean is not None and fit_mean is not None else None,
                                       sorted(set(known) - set(used))),
            )
        elif 0.5 in known and (0.99 in known or 0.9 in known):
            q = 0.99 if 0.99 in known else 0.9
            self.kind = "lognormal"
            self.median = known[0.5]
            self.sigma = max(math.log(known[q] / known[0.5]) / _Z.inv_cdf(q), 1e-9)
            # expectations clip it where the empirical fit is clipped (its MGF diverges unclipped)
            self.knots_z = [z_lo, z_hi]
            self.knots_log_s = [math.log(self.median) + self.sigma * z_lo, math.log(self.median) + self.sigma * z_hi]
            self.spec = HoldFit(dist="lognormal", median_s=self.median, sigma=self.sigma,
                                basis=f"lognormal through the median {self.median:,.0f} s and p{q * 100:g} {known[q]:,.0f} s (sigma {self.sigma:.3f})")
        elif mean:
            self.kind = "exponential"
            self.mean = mean
            self.spec = HoldFit(dist="exponential", mean_s=mean,
                                basis=f"exponential with the mean {mean:,.0f} s (no hold percentiles measured)")
        else:
            raise InputError("input has no hold times (hold_s percentiles or mean) to fit an RL schedule to")

    def clipped(self) -> Optional[ClippedFit]:
        """The piecewise or (clipped) lognormal fit as segments for exact expectations; None for the exponential."""
        return clipped_fit(self.knots_z, self.knots_log_s) if self.kind != "exponential" else None

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        import numpy as np

        from sandbox_fleet import exact
        if self.kind == "empirical":
            z_knots = np.array(self.knots_z)
            z = np.clip(rng.standard_normal(n), z_knots[0], z_knots[-1])
            return exact.exp(np.interp(z, z_knots, np.array(self.knots_log_s)))
        if self.kind == "lognormal":
            return self.median * exact.exp(self.sigma * rng.standard_normal(n))
        return rng.exponential(self.mean, n)


_QUANTILE_NAMES = {0.0: "min", 0.5: "median", 0.9: "p90", 0.99: "p99", 1.0: "max"}


def fitted_holds(fig: Figures) -> HoldSampler:
    """The hold distribution fitted to a summary's figures (what the schedule samples and the spot
    rework takes its expectation over)."""
    return HoldSampler(fig.hold_quantiles, fig.hold_mean_s, fig.rows)


def _empirical_basis(known: dict[float, float], rows: float, means: Optional[tuple[float, float]],
                     dropped: Sequence[float] = ()) -> str:
    """The piecewise-lognormal fit in words: its knots, the quantiles too close to the ends for ``rows``
    to be knots, and, when p90 was invented, whether the fit's mean (``means`` = measured, fitted) matches."""
    name = lambda q: _QUANTILE_NAMES.get(q, f"q{q:g}")  # noqa: E731
    knots = ", ".join(f"{name(q)} {v:,.1f} s" if v < 10 else f"{name(q)} {v:,.0f} s" for q, v in sorted(known.items()))
    text = f"piecewise lognormal through {knots} (min and max at the 1/(2 x {rows:,.0f} rows) quantiles)"
    if dropped:
        text += (f"; {', '.join(name(q) for q in dropped)} {'not a knot' if len(dropped) == 1 else 'not knots'}: "
                 f"beyond the min's or max's quantile at {rows:,.0f} rows")
    if means is not None and 0.9 in known:
        measured, fitted = means
        if abs(fitted - measured) <= 1e-6 * measured:
            text += f"; p90 not measured: chosen so the fit's mean is the measured {measured:,.0f} s"
        else:
            text += (f"; p90 not measured and no p90 between the median and p99 gives the measured mean {measured:,.0f} s: "
                     f"set to {known[0.9]:,.0f} s, the fit's mean is {fitted:,.0f} s")
    return text


def _p90_matching_mean(known: dict[float, float], mean: float, rows: float) -> float:
    """A p90 knot, between median and p99, that gives the piecewise fit the measured mean.

    Summaries without p90 (the published one) otherwise leave the fit's body too light: its mean
    falls short of the measured one. Bisection on log p90 over the fit's exact mean
    (``holdfit.mean_s``, closed form; monotone in p90) until the bracket stops shrinking; an
    unreachable mean is clipped to the nearer end.
    """
    lo, hi = math.log(known[0.5]), math.log(known[0.99])
    for _ in range(P90_STEPS):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        fit = HoldSampler({**known, 0.9: math.exp(mid)}, None, rows).clipped()
        assert fit is not None  # a piecewise fit
        if holdfit.mean_s(fit) < mean:
            lo = mid
        else:
            hi = mid
    return math.exp((lo + hi) / 2)


#: Bisection steps for the invented p90: enough to close the bracket to adjacent floats.
P90_STEPS = 64


def _fitted_mean(holds: HoldSampler, seed: int, n: int = 200_000) -> float:
    """Mean of the fitted hold distribution, sampled as the schedule's holds are (the lognormal
    unclipped); ``holdfit.mean_s`` is the clipped fit's exact one."""
    import numpy as np
    return float(holds.sample(np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(4, 2))), n).mean())


def _on_terminal() -> bool:
    import sys

    return sys.stderr.isatty()


def search_probes(batch: int, replications: int) -> int:
    """Most simulations the replicated cap search runs: each replication's uncapped run, a pooled
    bisection over 1..batch and its own refinement (each at most ceil(log2 batch) probes); the
    bar's total, known before the first probe (the search often stops short of it)."""
    return replications * (1 + 2 * max(1, math.ceil(math.log2(max(batch, 2)))))


StepTime = Callable[[int, int, float, HoldSampler, int], float]
"""``step_time(cap, batch, train_s, holds, seed)`` -> mean synchronous-RL step time in seconds."""


RL_STEPS = 20  # simulated steps per cap; enough for a stable mean step at common random numbers
#: Rollouts per probe beyond which the cap search is not simulated (about 2 GiB and minutes per probe).
RL_MAX_SIMULATED = 2_000_000


def _simulator_step_time() -> StepTime:
    """An adapter onto the simulator's synchronous-RL workload.

    This is the wiring point: ``run_workloads(Fleet(cap=), [SyncRL(batch=, steps=, train_s=,
    holds=array)], seed)`` returning per-step ``release_s``/``batch_end_s`` in ``.steps[0]``.
    Holds are drawn once per seed and reused at every cap (common random numbers), so the
    search compares caps, not draws.
    """
    import numpy as np

    from sandbox_fleet.simulate import Fleet, SyncRL, run_workloads  # plan -> simulate, for this search only

    def step_time(cap: int, batch: int, train_s: float, holds: HoldSampler, seed: int) -> float:
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(4, 1)))
        draws = holds.sample(rng, batch * RL_STEPS)
        res = run_workloads(Fleet(cap=cap), [SyncRL(batch=batch, steps=RL_STEPS, train_s=train_s, holds=draws)], seed)
        st = res.steps[0]
        return float(np.mean(np.asarray(st["batch_end_s"]) - np.asarray(st["release_s"])) + train_s)

    return step_time


def list_schedule_step_s(holds: np.ndarray, cap: int) -> float:
    """Mean makespan of synchronous steps (rows of ``holds``) on ``cap`` FIFO slots.

    The simulator's sync-RL semantics without builds or delays: a step releases its batch at once,
    the first ``cap`` start together, each later rollout takes the first slot to free up; each step
    placed by the engine's FIFO rule (``simulate.engine.fifo.batch_makespans``, compiled by numba when
    the search is large enough to pay its load). A test checks it against ``simulate``. Without the
    engine's events, checks and summary it is about ten times faster than a full simulation, which is
    what makes replications affordable."""
    from sandbox_fleet.simulate.engine.fifo import batch_makespans  # plan -> simulate, for this search only

    total = 0.0
    for end in batch_makespans(holds, cap).tolist():
        total += end
    return total / len(holds)


def _list_schedule_step_time() -> StepTime:
    """The default evaluator: ``RL_STEPS`` steps of fitted holds per seed, list-scheduled on the cap
    (``list_schedule_step_s``; the same answer as the simulator's sync-RL workload, checked in
    tests/plan/test_interval.py). Holds are drawn once per seed and reused at every cap."""
    import numpy as np
    drawn: dict[tuple[int, int], np.ndarray] = {}

    def step_time(cap: int, batch: int, train_s: float, holds: HoldSampler, seed: int) -> float:
        if (seed, batch) not in drawn:
            rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(4, 1)))
            drawn[(seed, batch)] = holds.sample(rng, batch * RL_STEPS).reshape(RL_STEPS, batch)
        return list_schedule_step_s(drawn[(seed, batch)], cap) + train_s

    return step_time


def rl_schedule_target(
    summary: Figures | MeasureSummary,
    batch: int,
    train_s: float,
    *,
    tolerance: float = 0.01,
    seed: int = 0,
    step_time: Optional[StepTime] = None,
    replications: int = RL_REPLICATIONS,
    holds: Optional[HoldSampler] = None,
) -> Target:
    """Smallest sandbox cap whose mean synchronous step is within ``tolerance`` of the uncapped one.

    A synchronous step releases ``batch`` rollouts at once, so a cap of ``batch`` never holds a step
    back; a smaller cap queues the batch's tail. ``replications`` independent runs of ``RL_STEPS``
    steps (each with its own holds, reused at every cap: common random numbers) are searched
    together and one by one (``interval.replicated_search``): the pooled answer is ``concurrency``,
    its bootstrap 5th-95th percentile ``cap_interval``, the single runs' spread ``interval``.
    ``holds`` replaces the fit to the summary's hold percentiles (one run's own holds). The default evaluator list-schedules the
    steps exactly as the simulator's sync-RL workload does; an injected ``step_time`` replaces it.
    Past ``RL_MAX_SIMULATED`` rollouts per probe the closed-form bound (the batch) is the answer.
    """
    if batch < 1:
        raise InputError(f"`batch` must be a positive integer, got {batch!r}")
    if holds is None:
        holds = fitted_holds(summary if isinstance(summary, Figures) else Figures(summary))
    fn = step_time or _list_schedule_step_time()
    if step_time is None and batch * RL_STEPS > RL_MAX_SIMULATED:
        return Target(
            concurrency=batch, source="rl-schedule", batch=batch, train_s=train_s, hold_fit=holds.spec,
            method="closed-form",
            detail=f"closed-form bound: concurrency = batch = {batch}",
            note=(f"{batch:,} rollouts x {RL_STEPS} steps per probe is over the simulated search limit of "
                  f"{RL_MAX_SIMULATED:,} rollouts; sized by the closed-form bound (never short of sandboxes)"),
        )
    if step_time is None:  # every probe places RL_STEPS x batch on at most batch slots, with the engine's rule
        from sandbox_fleet.simulate.engine.fast import fifo_compiled  # plan -> simulate, for this search only

        fifo_compiled.load_if_pays(fifo_compiled.placements(RL_STEPS * batch, batch) * search_probes(batch, replications))
    # one bar from the uncapped run on (on a terminal), its total known up front
    with progress_bar(_on_terminal(), search_probes(batch, replications),
                      f"searching caps ({replications} x {RL_STEPS} steps)") as tick:
        uncapped = fn(batch, batch, train_s, holds, seed)  # counted when the search reads it back
        fit_mean = _fitted_mean(holds, seed)
        found = replicated_search(
            lambda cap, j: uncapped if (cap, j) == (batch, 0) else fn(cap, batch, train_s, holds, rep_seed(seed, j) if j else seed),
            batch, replications, tolerance, tick,
        )
    return Target(
        source="rl-schedule", batch=batch, train_s=train_s, hold_fit=holds.spec, **asdict(found),
        method="simulated",
        detail=(
            f"simulated: smallest cap with mean step within {tolerance:.1%} of uncapped over {replications} x {RL_STEPS} steps "
            f"({found.step_s_at_cap:,.0f} s vs {found.step_s_uncapped:,.0f} s); {interval_text(found)}"
        ),
        # busy sandboxes per step-second over the cap: the schedule's own duty cycle
        duty=batch * fit_mean / found.step_s_at_cap / found.concurrency,
        tolerance=tolerance,
    )


def interval_text(found: CapSearch) -> str:
    """The chosen cap's uncertainty, then the single runs' spread named as such (not a range of good caps)."""
    lo, hi = found.cap_interval
    single = found.interval
    excess = found.step_excess_at_interval_low
    at_low = f"; at {math.floor(single[0]):,} the pooled mean step is {excess:+.2%}" if excess is not None else ""
    return (f"cap {lo:,.0f}-{hi:,.0f} (5th-95th percentile over {found.bootstrap} bootstrap resamples of the "
            f"{found.replications} replications); single {RL_STEPS}-step runs alone would say "
            f"{single[0]:,.0f}-{single[1]:,.0f}, not a range of equally good caps{at_low}")
