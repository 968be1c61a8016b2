"""The plan's ``limits`` block: the order against each provider plan's quotas and the lifetime lint.

Every entry of the provider catalog (or those named with ``--rent-provider``) is fitted
(``quotas.provider_fit``); with ``--budgets FILE`` the lifetime and timeout lint runs
(``lifetime.lint``) against the lifetime of the first named provider, or the file's own.
"""

from __future__ import annotations

from typing import Optional

from sandbox_fleet.measure.model import MeasureSummary
from sandbox_fleet.plan.lifetime import lint, load_budgets
from sandbox_fleet.plan.model import PlanLimits, Starts
from sandbox_fleet.plan.quotas import provider_fits
from sandbox_fleet.plan.rent import Provider, load_providers


def limits_block(m: MeasureSummary, kinds: list[tuple[dict, float]], target: int, starts: Starts, *,
                 providers_file: Optional[str] = None, names: Optional[list[str]] = None,
                 budgets_file: Optional[str] = None) -> PlanLimits:
    """``limits``: the fits of every catalog entry (the named ones only, when named) and, with a budgets file, the lint."""
    catalog = load_providers(providers_file)
    chosen = [p for p in catalog if p.name in names] if names else catalog  # unknown names: rent.select refused them
    lifetime = None
    if budgets_file is not None:
        provider: Optional[Provider] = chosen[0] if names and chosen else None
        usd_s = sum(share * provider.usd_per_sandbox_h(req) for req, share in kinds) / 3600.0 if provider else None
        lifetime = lint(load_budgets(budgets_file), m, provider, usd_s)
    return PlanLimits(fits=provider_fits(chosen, kinds, target, starts), lifetime=lifetime)
