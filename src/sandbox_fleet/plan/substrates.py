"""The plan's substrates block: each catalog substrate's overhead priced on the user's workload.

At the target the fleet runs ``target x duty`` busy sandboxes, so by Little's law it completes
``target x duty / mean hold`` rollouts a second; each substrate's overhead (``sandbox_fleet.substrates``)
is priced on those.
"""

from __future__ import annotations

from typing import Optional

from sandbox_fleet.plan.model import SubstrateLine, Substrates
from sandbox_fleet.substrates import MILLION, S_PER_H, Substrate, load_substrates, overhead_s, worker_hours

__all__ = ["MILLION", "Substrate", "load_substrates", "overhead_s", "rent_overheads", "substrate_block",
           "worker_hours"]


def substrate_block(substrates: list[Substrate], *, target: int, duty: Optional[float],
                    hold_mean_s: Optional[float], turns_mean: Optional[float], turns_basis: Optional[str]) -> Substrates:
    """The plan's ``substrates`` block: each substrate's overhead per rollout and the worker-hours it adds."""
    per_h = target * duty * S_PER_H / hold_mean_s if duty and hold_mean_s else None
    rows: dict[str, SubstrateLine] = {}
    for s in substrates:
        extra_s = overhead_s(s.cold_start_s, s.per_action_s, turns_mean)
        rows[s.name] = SubstrateLine(
            kind=s.kind,
            provider=s.provider,
            cold_start_s=s.cold_start_s,
            per_action_s=s.per_action_s,
            overhead_s_per_rollout=extra_s,
            added_worker_hours_per_million=worker_hours(MILLION, extra_s),
            worker_hours_per_million=worker_hours(MILLION, hold_mean_s + extra_s) if hold_mean_s else None,
            added_worker_hours_per_h=worker_hours(per_h, extra_s) if per_h is not None else None,
            hold_factor=1.0 + extra_s / hold_mean_s if hold_mean_s else None,
            source=s.source,
            as_of=s.as_of,
        )
    turns = (f"{turns_mean:,.3g} turns a rollout ({turns_basis})" if turns_mean is not None
             else "no turn count measured: cold start only")
    return Substrates(
        rollouts_per_h=per_h,
        turns_mean=turns_mean,
        hold_mean_s=hold_mean_s,
        basis=(f"cold start once per rollout + per-action overhead x {turns}; rollouts at the target by "
               "Little's law (target x duty / mean hold); illustrative substrate figures (data/substrates.toml)"),
        by_substrate=rows,
    )


def rent_overheads(substrates: list[Substrate], turns_mean: Optional[float]) -> dict[str, float]:
    """Provider name -> seconds its substrate adds to each rented hold."""
    return {s.provider: overhead_s(s.cold_start_s, s.per_action_s, turns_mean)
            for s in substrates if s.provider is not None}
