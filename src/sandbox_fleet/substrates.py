"""The execution-substrate catalog: each substrate's cold start and per-action overhead, and the worker-hours
they add (a leaf: plan prices them, simulate adds them to holds; one loader and model for both).

A rollout of ``n`` turns on a substrate with cold start ``c`` and per-action overhead ``a`` holds its
worker ``c + n a`` seconds longer than its own work. Over ``R`` rollouts that is ``R (c + E[n] a) / 3600``
worker-hours: linear in the turns, so the mean of the measured turn distribution is exact. (The scale
table of arXiv 2607.01415 is this formula: 1 s per rollout over a million rollouts is 278 h, 10 ms per
action over a million 150-action rollouts 417 h, 100 ms 4,167 h.)
"""

from pathlib import Path
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from sandbox_fleet.toml_entries import load_entries

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
    #: the slow tail of the cold start (a hosted provider's cold_start_p99_s: the lint's create budget)
    cold_start_p99_s: Optional[float] = Field(default=None, ge=0)
    #: the cold start is the vendor's own claim, not a documented limit or an outside measurement
    cold_start_claimed: bool = False
    #: where each cold-start figure comes from, when not from ``source``
    cold_start_sources: Optional[str] = None


def load_substrates(path: str | Path | None = None) -> list[Substrate]:
    """The bundled catalog, or ``path``; a bad entry is an InputError naming the file, entry and key."""
    return load_entries(path, "substrates.toml", "substrate", Substrate)


def overhead_s(cold_start_s: float, per_action_s: float, turns_mean: Optional[float]) -> float:
    """Seconds a rollout's worker is held beyond its work: cold start once, overhead per turn."""
    return cold_start_s + (turns_mean or 0.0) * per_action_s


def worker_hours(rollouts: float, overhead_per_rollout_s: float) -> float:
    """Worker-hours ``rollouts`` spend on ``overhead_per_rollout_s`` each."""
    return rollouts * overhead_per_rollout_s / S_PER_H
