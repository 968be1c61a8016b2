"""Execution substrates: the cold start and per-action overhead each adds to a rollout, in worker-hours.

A rollout of ``n`` turns on a substrate with cold start ``c`` and per-action overhead ``a`` holds its
worker ``c + n a`` seconds longer than its own work. Over ``R`` rollouts that is ``R (c + E[n] a) / 3600``
worker-hours: linear in the turns, so the mean of the measured turn distribution is exact. (The scale
table of arXiv 2607.01415 is this formula: 1 s per rollout over a million rollouts is 278 h, 10 ms per
action over a million 150-action rollouts 417 h, 100 ms 4,167 h.)

At the target the fleet runs ``target x duty`` busy sandboxes, so by Little's law it completes
``target x duty / mean hold`` rollouts a second; each substrate's overhead is priced on those.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from sandbox_fleet.plan.toml_entries import load_entries

S_PER_H = 3600.0
MILLION = 1_000_000


class Substrate(BaseModel):
    """One execution substrate; figures illustrative (see data/substrates.toml)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    name: str = Field(min_length=1)
    kind: Literal["container", "kubernetes", "hosted", "vm"]
    description: str = ""
    #: the providers.toml entry a hosted substrate is rented from
    provider: Optional[str] = Field(default=None, min_length=1)
    cold_start_s: float = Field(ge=0)
    per_action_s: float = Field(ge=0)
    source: str = Field(min_length=1)
    as_of: str = Field(min_length=1)


def load_substrates(path: str | Path | None = None) -> list[Substrate]:
    """The bundled catalog, or ``path``; a bad entry is an InputError naming the file, entry and key."""
    return load_entries(path, "substrates.toml", "substrate", Substrate)


def overhead_s(cold_start_s: float, per_action_s: float, turns_mean: Optional[float]) -> float:
    """Seconds a rollout's worker is held beyond its work: cold start once, overhead per turn."""
    return cold_start_s + (turns_mean or 0.0) * per_action_s


def worker_hours(rollouts: float, overhead_per_rollout_s: float) -> float:
    """Worker-hours ``rollouts`` spend on ``overhead_per_rollout_s`` each."""
    return rollouts * overhead_per_rollout_s / S_PER_H


def substrate_block(substrates: list[Substrate], *, target: int, duty: Optional[float],
                    hold_mean_s: Optional[float], turns_mean: Optional[float], turns_basis: Optional[str]) -> dict:
    """The plan's ``substrates`` block: each substrate's overhead per rollout and the worker-hours it adds."""
    per_h = target * duty * S_PER_H / hold_mean_s if duty and hold_mean_s else None
    rows = {}
    for s in substrates:
        extra_s = overhead_s(s.cold_start_s, s.per_action_s, turns_mean)
        rows[s.name] = {
            "kind": s.kind,
            "provider": s.provider,
            "cold_start_s": s.cold_start_s,
            "per_action_s": s.per_action_s,
            "overhead_s_per_rollout": extra_s,
            "added_worker_hours_per_million": worker_hours(MILLION, extra_s),
            "worker_hours_per_million": worker_hours(MILLION, hold_mean_s + extra_s) if hold_mean_s else None,
            "added_worker_hours_per_h": worker_hours(per_h, extra_s) if per_h is not None else None,
            "hold_factor": 1.0 + extra_s / hold_mean_s if hold_mean_s else None,
            "source": s.source,
            "as_of": s.as_of,
        }
    turns = (f"{turns_mean:,.3g} turns a rollout ({turns_basis})" if turns_mean is not None
             else "no turn count measured: cold start only")
    return {
        "rollouts_per_h": per_h,
        "turns_mean": turns_mean,
        "hold_mean_s": hold_mean_s,
        "basis": (f"cold start once per rollout + per-action overhead x {turns}; rollouts at the target by "
                  "Little's law (target x duty / mean hold); illustrative substrate figures (data/substrates.toml)"),
        "by_substrate": rows,
    }


def rent_overheads(substrates: list[Substrate], turns_mean: Optional[float]) -> dict[str, float]:
    """Provider name -> seconds its substrate adds to each rented hold."""
    return {s.provider: overhead_s(s.cold_start_s, s.per_action_s, turns_mean)
            for s in substrates if s.provider is not None}
