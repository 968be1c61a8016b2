"""The order against each provider plan's quotas: how many accounts it takes, and a batch's creation ramp.

Account-wide quotas divide: ``max_concurrent`` sandboxes, ``account_vcpus`` / ``account_memory_gib`` /
``account_disk_gib`` drawn by every running sandbox. The target of ``n`` concurrent sandboxes with
the mixed request ``sum(share x request)`` needs ``ceil(n / max_concurrent)`` accounts by the first and
``ceil(n x mean request / pool)`` by each pool; the largest binds. A per-sandbox maximum the request
exceeds is no matter of accounts: it is named in ``per_sandbox_hit``.

The creation ramp: a batch of ``B`` released at once through a token bucket of rate ``r`` and
burst ``b`` starts its k-th rollout (k = 1..B) at ``max(0, (k - b) / r)``, so the last starts
``max(0, B - b) / r`` late (``bound_s``, the most the step can lengthen) and the mean start delay is
``(B - b)(B - b + 1) / (2 r B)`` (``mean_delay_s``). The mean would be the lengthening if the
rollout that finishes the step last were equally likely to be any of the batch; the expected
lengthening itself is taken over the fitted holds by ``ramp.expected_ramp_delays_s`` (the one place
it is computed; rent vs buy reads it too) when the plan has a hold fit. With
``a`` accounts the batch is split over ``a`` buckets: rate ``a x r``, burst ``a x b``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Optional

from sandbox_fleet.plan.model import CreationRampFit, ProviderFit, Starts
from sandbox_fleet.plan.ramp import creation_delays_s, expected_ramp_delays_s, ramp_drawn
from sandbox_fleet.plan.rent import MB_PER_GIB, Provider

if TYPE_CHECKING:
    from sandbox_fleet.plan.target import HoldSampler

#: The account-wide quotas: (Provider field, the request's per-sandbox draw on it).
_POOLS = (("account_vcpus", "cpu", 1.0), ("account_memory_gib", "memory", 1.0 / MB_PER_GIB),
          ("account_disk_gib", "disk", 1.0 / MB_PER_GIB))


def ramp_delays(batch: float, creates_per_s: float, burst: float = 1.0, max_starting: Optional[int] = None,
                cold_start_s: float = 0.0) -> tuple[float, float]:
    """(bound s, mean start delay s) of a batch of ``batch`` through a bucket (rate, burst); see the module.
    With a cap of ``max_starting`` starting at once (each for ``cold_start_s``): the delays past a lone cold
    start of ``ramp.creation_delays_s``, the last and the mean."""
    if max_starting is not None and cold_start_s > 0 and 0 < max_starting < batch:
        late = creation_delays_s(round(batch), creates_per_s, burst, max_starting, cold_start_s) - cold_start_s
        return float(late[-1]), float(late.mean())
    over = max(0.0, batch - burst)
    if batch <= 0 or over == 0:
        return 0.0, 0.0
    return over / creates_per_s, over * (over + 1.0) / (2.0 * creates_per_s * batch)


def _mean_draw(kinds: list[tuple[dict, float]], key: str, scale: float) -> float:
    return sum(share * float(req.get(key) or 0.0) * scale for req, share in kinds)


def _accounts(p: Provider, kinds: list[tuple[dict, float]], target: int) -> dict[str, int]:
    need: dict[str, int] = {}
    if p.max_concurrent is not None:
        need["max_concurrent"] = max(1, math.ceil(target / p.max_concurrent))
    for field, key, scale in _POOLS:
        pool = getattr(p, field)
        if pool is not None:
            need[field] = max(1, math.ceil(target * _mean_draw(kinds, key, scale) / pool - 1e-9))
    return need


def _per_sandbox(p: Provider, kinds: list[tuple[dict, float]]) -> list[str]:
    hit = []
    for req, _ in kinds:
        for field, key, scale, unit in (("max_vcpus", "cpu", 1.0, "vCPU"), ("max_memory_gib", "memory", 1 / MB_PER_GIB, "GiB memory"),
                                        ("max_disk_gib", "disk", 1 / MB_PER_GIB, "GiB disk")):
            cap, want = getattr(p, field), float(req.get(key) or 0.0) * scale
            if cap is not None and want > cap:
                hit.append(f"request {want:g} {unit} > {cap:g} per sandbox")
    return hit


def creation_ramp_fit(p: Provider, starts: Starts, accounts: int,
                      holds: Optional[HoldSampler] = None) -> Optional[CreationRampFit]:
    """A released batch through ``accounts`` of the provider's buckets; None without a rate or a batch.
    With ``holds`` (the plan's hold fit) the expected lengthening of the step is stated too."""
    if p.max_creates_per_s is None or not starts.batch:
        return None
    rate = p.max_creates_per_s * accounts
    burst = float(p.max_creates_burst or 1) * accounts
    # the starting-at-once cap, per account, with the catalog's cold start (a cap without one is no wait)
    starting = p.max_starting * accounts if p.max_starting is not None and p.cold_start_p50_s else None
    cold = float(p.cold_start_p50_s or 0.0) if starting is not None else 0.0
    bound, mean = ramp_delays(starts.batch, rate, burst, starting, cold)
    step = starts.step_s
    expected = None
    if holds is not None and bound > 0 and ramp_drawn(round(starts.batch)):
        expected = expected_ramp_delays_s(round(starts.batch), [rate], holds, burst=burst, max_starting=starting,
                                          cold_start_s=cold)[0][rate]
    elif bound == 0:
        expected = 0.0
    capped = f", {starting:,} starting at once ({cold:g}-s cold start)" if starting is not None else ""
    basis = (f"a batch of {starts.batch:,.0f} through {accounts} account(s) at {rate:g} creates/s, burst {burst:g}{capped}: "
             f"the last starts {bound:,.1f} s late, {mean:,.1f} s on average"
             + (f", the step {expected:,.1f} s longer expected over the fitted holds" if expected is not None else ""))
    return CreationRampFit(batch=starts.batch, creates_per_s=rate, burst=burst, bound_s=bound, mean_delay_s=mean,
                           step_s=step, bound_step_share=bound / step if step else None,
                           mean_step_share=mean / step if step else None,
                           expected_lengthening_s=expected,
                           expected_step_share=expected / step if step and expected is not None else None,
                           basis=basis + (f", {mean / step:.2%} to {bound / step:.2%} of the {step:,.0f}-s step" if step else
                                          "; no step time to judge it by"))


def provider_fit(p: Provider, kinds: list[tuple[dict, float]], target: int, starts: Starts,
                 holds: Optional[HoldSampler] = None) -> ProviderFit:
    """The accounts of plan ``p`` the target needs, the binding quota, and the ramp across them."""
    need = _accounts(p, kinds, target)
    accounts = max(need.values()) if need else 1
    binding = max(need, key=lambda k: (need[k], k)) if need else None
    hit = _per_sandbox(p, kinds)
    if hit:
        basis = f"{p.name}: no number of accounts helps: {'; '.join(hit)}"
    elif not p.rented and not need:
        basis = f"{p.name}: self-hosted: the fleet is this plan's order; creation and claims at the catalog's rates"
    elif not need:
        basis = f"{p.name}: no account-wide quota known: put yours in your --providers file"
    else:
        basis = (f"{p.name} ({p.plan or 'plan not named'}): {target:,} concurrent need {accounts} account(s), "
                 f"bound by {binding} (" + ", ".join(f"{k} {v}" for k, v in sorted(need.items())) + ")")
    claimed = [f for f in p.vendor_claimed if getattr(p, f, None) is not None]
    return ProviderFit(provider=p.name, plan=p.plan, rented=p.rented, accounts_by_quota=need or None,
                       accounts=None if hit else accounts, binding=binding, per_sandbox_hit=hit or None,
                       ramp=creation_ramp_fit(p, starts, accounts, holds), max_lifetime_s=p.max_lifetime_s,
                       sources=dict(p.figure_sources) or None, vendor_claimed=claimed or None, basis=basis)


def provider_fits(providers: list[Provider], kinds: list[tuple[dict, float]], target: int, starts: Starts,
                  holds: Optional[HoldSampler] = None) -> list[ProviderFit]:
    """``provider_fit`` for every entry of the catalog, in its order."""
    return [provider_fit(p, kinds, target, starts, holds) for p in providers]
