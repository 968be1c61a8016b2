"""Censored demand: a binding cap hides the demand behind it, and buying the old cap buys the old queue.

When ``measure`` finds a binding cap (``concurrency.cap_detected``), the peak is the cap, not the
demand. Two estimates of what the cap hid:

- with synchronous steps whose typical release is larger than the cap (``measure.batchcap.
  cut_release``): the release size, and the RL-schedule search (``target.rl_schedule_target``) fed
  with that release, the gap before the next one (median period less makespan) and the run's own
  holds. Both lines are priced by the same pooled list schedule: the mean step at the cap, and at
  the smallest cap within the tolerance of the uncapped step. The default buys the demand, above the
  cap or below it: a cap above the demand is loose (the release queued behind it, but the step's
  stragglers, not the cap, set the step), and rebuying it buys idle slots. ``keep_cap`` buys the cap.
- without them: the demand exceeded the cap each time the fleet sat at it, so it is at least
  cap + 1; by how much is not observed (no telemetry field records queue waits). The default buys
  the cap and states this lower bound beside it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from sandbox_fleet.plan.interval import rep_seed
from sandbox_fleet.plan.model import Censored, Target

if TYPE_CHECKING:
    from sandbox_fleet.measure.batchcap import CutRelease
    from sandbox_fleet.plan.summary import Figures
    from sandbox_fleet.plan.target import HoldSampler


def censored_target(fig: Figures, *, tolerance: float, seed: int, keep_cap: bool = False) -> Optional[Target]:
    """The default target on capped telemetry (a ``Target`` with its ``censored`` block), or None without a binding cap."""
    if not fig.cap_detected or not fig.peak:
        return None
    cap, touches = round(fig.peak), int(fig.touches or 0)
    if fig.cut is None:
        return _lower_bound(cap, touches, fig)
    return _from_steps(cap, touches, fig.cut, fig, tolerance=tolerance, seed=seed, keep_cap=keep_cap)


def _lower_bound(cap: int, touches: int, fig: Figures) -> Target:
    from sandbox_fleet.measure.batchcap import CAP_TOUCHES

    why = {None: "the input has no step figures", False: "no synchronous steps were detected"}.get(
        fig.steps_detected, "no run's typical release is larger than the cap")
    # a ceiling hit again and again held demand back; one reached a few times (a configured cap) may not have
    exceeded = touches >= CAP_TOUCHES
    demand = cap + 1 if exceeded else cap
    seen = (f"the fleet sat at the cap {times(touches)}, so demand exceeded {cap:,} then: at least {demand:,}"
            if exceeded else f"the fleet reached the cap {times(touches)}: demand at least {demand:,}, excess not shown")
    basis = f"{seen} (a lower bound; by how much is not observed: {why}, and no telemetry field records queue waits)"
    return Target(
        concurrency=cap,
        source="measured-peak",
        detail=f"the measured peak concurrency, which is a cap: demand at least {demand:,} (lower bound)",
        censored=Censored(
            cap=cap, touches=touches, demand=demand, demand_is_lower_bound=True,
            chosen="cap", basis=basis + f"; the cap is bought because {why} to estimate the demand from",
        ),
    )


def times(n: int) -> str:
    return "once" if n == 1 else f"{n:,} separate times"


def pooled_step_s(step_time, cap: int, batch: int, train_s: float, holds, seed: int, reps: int) -> float:
    """The mean step at ``cap`` over the same replications (and seeds) the RL search pooled."""
    return sum(step_time(cap, batch, train_s, holds, rep_seed(seed, j) if j else seed) for j in range(reps)) / reps


def _from_steps(cap: int, touches: int, cut: CutRelease, fig: Figures, *, tolerance: float, seed: int,
                keep_cap: bool = False) -> Target:
    from sandbox_fleet.plan.target import (
        RL_MAX_SIMULATED,
        RL_STEPS,
        HoldSampler,
        _list_schedule_step_time,
        rl_schedule_target,
    )

    if cut.batch * RL_STEPS > RL_MAX_SIMULATED:  # too large to search: the closed-form bound, as --batch does
        return _release_bound(cap, touches, cut, fig)
    holds = HoldSampler(cut.hold_quantiles, cut.hold_mean_s, cut.hold_rows)
    step_time = _list_schedule_step_time()
    found = rl_schedule_target(fig, cut.batch, cut.train_s, tolerance=tolerance, seed=seed,
                               step_time=step_time, holds=holds)
    reps = found.replications or 0
    at_demand, uncapped = found.step_s_at_cap, found.step_s_uncapped
    assert at_demand is not None and uncapped is not None  # a simulated search prices both
    at_cap = pooled_step_s(step_time, cap, cut.batch, cut.train_s, holds, seed, reps)
    demand = found.concurrency
    chosen = "cap" if keep_cap or demand == cap else "demand"
    n = cap if chosen == "cap" else demand
    who = f"run {cut.run}" if cut.run else "the run"
    basis = (f"{who} releases {cut.batch:,} rollouts a step (median; {cut.burst:,.0f} start at once, the rest queue), "
             f"then waits {cut.train_s:,.0f} s (median period less makespan); its holds: {_hold_text(holds)}; "
             f"steps list-scheduled over {reps} x {RL_STEPS} draws")
    why = _why(chosen, demand, cap, at_cap, at_demand, tolerance, keep_cap)
    # the search's figures stay; what it bought, and the block saying why, are the cap's
    found.source = "censored-demand" if chosen == "demand" else "measured-peak"
    if chosen == "demand":
        found.detail = (f"the demand the cap {cap:,} hid: {found.detail}" if demand > cap
                        else f"the demand below the loose cap {cap:,}: {found.detail}")
    else:
        found.detail = f"the measured peak concurrency, a cap that keeps the step within {tolerance:.1%} of uncapped"
    found.concurrency = n
    # the measured work spread over the target's slots (shorter steps raise it by at most the step ratio)
    found.duty = fig.concurrency_mean / n if fig.concurrency_mean else None
    found.censored = Censored(
        cap=cap, touches=touches, demand=demand, demand_is_lower_bound=False,
        run=cut.run, release=cut.batch, train_s=cut.train_s,
        step_s_at_cap=at_cap, step_s_at_demand=at_demand, step_s_uncapped=uncapped,
        chosen=chosen, basis=f"{basis}; {chosen} chosen: {why}",
        demand_below_cap=demand < cap,
    )
    return found


def _why(chosen: str, demand: int, cap: int, at_cap: float, at_demand: float, tolerance: float, keep_cap: bool) -> str:
    """Why the cap or the demand is bought: demand against the cap, and the step time between them."""
    if demand > cap:
        if chosen == "cap":
            return f"--keep-cap (the demand {demand:,} is above the cap; the cap's mean step is {at_cap / at_demand - 1:+.1%} longer)"
        return (f"demand {demand:,} > cap {cap:,}: buying the demand shortens the mean step by {at_cap - at_demand:,.0f} s "
                f"({at_cap / at_demand - 1:.1%})")
    if demand == cap:
        return f"demand {demand:,} = cap: the cap is exactly the fewest slots within {tolerance:.1%} of uncapped"
    cost = f"{cap - demand:,} fewer slots for a mean step {at_demand - at_cap:+,.0f} s ({at_demand / at_cap - 1:+.2%})"
    if chosen == "cap":
        return f"--keep-cap (demand {demand:,} < cap {cap:,}: buying the demand would be {cost})"
    return (f"demand {demand:,} < cap {cap:,}: the cap is loose (the step's stragglers, not the cap, set it), "
            f"so the demand is bought, {cost}, within {tolerance:.1%} of uncapped; --keep-cap buys the cap")


def _release_bound(cap: int, touches: int, cut: CutRelease, fig: Figures) -> Target:
    who = f"run {cut.run}" if cut.run else "the run"
    return Target(
        concurrency=cut.batch, source="censored-demand", batch=cut.batch, train_s=cut.train_s,
        method="closed-form",
        detail=f"the demand the cap {cap:,} hid: closed-form bound, concurrency = release = {cut.batch:,} (too large to search)",
        duty=fig.concurrency_mean / cut.batch if fig.concurrency_mean else None,
        censored=Censored(
            cap=cap, touches=touches, demand=cut.batch, demand_is_lower_bound=False,
            run=cut.run, release=cut.batch, train_s=cut.train_s, chosen="demand",
            basis=(f"{who} releases {cut.batch:,} rollouts a step (median), over the simulated search limit: "
                   "sized by the release itself (never short of sandboxes); demand chosen: steps detected"),
        ),
    )


def _hold_text(holds: HoldSampler) -> str:
    spec = holds.spec
    if spec.dist == "lognormal":
        return f"lognormal, median {spec.median_s:,.0f} s, sigma {spec.sigma:.2f}"
    if spec.dist == "exponential":
        return f"exponential, mean {spec.mean_s:,.0f} s"
    return f"piecewise lognormal through {len(spec.quantiles or {})} quantiles"
