"""The default pricing tier, from the duty cycle the fleet will run at.

Capacity bought at peak and busy a small share of the time is a bad reserved purchase: below
``duty_cycle.warn_below`` in ``data/checks.toml`` (the same threshold ``check`` warns at) the
default is spot; at or above it, reserved; with no duty known, on-demand.
"""

from __future__ import annotations

import tomllib
from importlib import resources
from typing import Optional


def duty_warn_below() -> float:
    """``[duty_cycle] warn_below`` from the bundled checks.toml."""
    text = resources.files("sandbox_fleet").joinpath("data/checks.toml").read_text(encoding="utf-8")
    return float(tomllib.loads(text)["duty_cycle"]["warn_below"])


def default_tier(duty: Optional[float], warn_below: float) -> tuple[str, str]:
    """(tier, why) for a fleet that runs at ``duty``."""
    if duty is None:
        return "on_demand", "duty cycle unknown: on-demand"
    if duty < warn_below:
        return "spot", f"duty {duty:.1%} < {warn_below:.0%} (checks.toml duty_cycle.warn_below): spot"
    return "reserved", f"duty {duty:.1%} >= {warn_below:.0%} (checks.toml duty_cycle.warn_below): reserved"
