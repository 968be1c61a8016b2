"""The plan's ``limits`` block: the order against each provider plan's quotas and the lifetime lint.

Every entry of the provider catalog (or those named with ``--rent-provider``) is fitted
(``quotas.provider_fit``); with ``--budgets FILE`` the lifetime and timeout lint runs
(``lifetime.lint``) against the lifetime of the first named provider, or the file's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from sandbox_fleet.measure.model import MeasureSummary
from sandbox_fleet.plan.lifetime import lint, load_budgets
from sandbox_fleet.plan.model import PlanLimits, PlanSummary, Starts
from sandbox_fleet.plan.quotas import provider_fits
from sandbox_fleet.plan.rent import Provider, load_providers

if TYPE_CHECKING:
    from sandbox_fleet.plan.target import HoldSampler


def limits_block(m: MeasureSummary, kinds: list[tuple[dict, float]], target: int, starts: Starts, *,
                 providers_file: Optional[str] = None, names: Optional[list[str]] = None,
                 budgets_file: Optional[str] = None, holds: Optional[HoldSampler] = None,
                 substrates_file: Optional[str] = None) -> PlanLimits:
    """``limits``: the fits of every catalog entry (the named ones only, when named) and, with a budgets file, the lint."""
    catalog = load_providers(providers_file, substrates_file)
    chosen = [p for p in catalog if p.name in names] if names else catalog  # unknown names: rent.select refused them
    lifetime = None
    if budgets_file is not None:
        provider: Optional[Provider] = chosen[0] if names and chosen else None
        usd_s = sum(share * provider.usd_per_sandbox_h(req) for req, share in kinds) / 3600.0 if provider else None
        lifetime = lint(load_budgets(budgets_file), m, provider, usd_s)
    return PlanLimits(fits=provider_fits(chosen, kinds, target, starts, holds), lifetime=lifetime)


def limit_lines(p: PlanSummary) -> list[str]:
    """The terminal lines of ``limits``: accounts and ramp per provider plan, the lint's findings."""
    lim = p.limits
    warm = [f"  warm pool ({p.warm_pool.provider}): {p.warm_pool.basis}"] if p.warm_pool is not None else []
    if lim is None or (not lim.fits and lim.lifetime is None):
        return ["", "Provider limits (docs/providers.md)", *warm] if warm else []
    L = ["", "Provider limits (data/providers.toml; sources and vendor claims in the JSON, docs/providers.md)"]
    for f in lim.fits or []:
        ramp = ""
        if f.ramp is not None and f.ramp.bound_s:
            ramp = f"; batch ramp {f.ramp.mean_delay_s:,.1f} s mean, {f.ramp.bound_s:,.1f} s at most"
        L.append(f"  {f.basis}{ramp}")
    lint = lim.lifetime
    if lint is not None:
        life = f"{lint.lifetime_s:,.0f} s ({lint.lifetime_source})" if lint.lifetime_s is not None else "not known"
        L.append(f"  lifetime {life}; start to verifier {lint.in_lifetime_s or 0:,.0f} s, headroom {lint.headroom or 0:.0%}")
        L.extend(f"  {(x.severity or '').upper()} {x.shape}: {x.message}" for x in lint.findings or [])
        if not lint.findings:
            L.append("  the budgets fit the lifetime and the rollout timeout")
    return L + warm
