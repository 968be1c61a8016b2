"""Rent vs buy: the busy sandbox-hours at the target priced on managed-sandbox providers.

Renting bills only running sandboxes, so each hour of the campaign costs
``target x duty`` busy sandboxes x (vCPUs x $/vCPU-s + GiB x $/GiB-s memory + GiB x $/GiB-s disk)
x 3600, against the bought fleet's $/h at the chosen tier, which is paid at peak whether busy or
not. A provider is usable only if every request fits its per-sandbox limits and the target
concurrency fits its account limit (hard limits); ``limits_hit`` names each one that does not.

A creation-rate limit is a ramp, not a wall. A synchronous step of ``b`` sandboxes is created over
at most ``b / c`` seconds at ``c`` creates/s (first come, first created), so no sandbox starts more
than ``b / c`` late and the step, which ends at its last finish, is at most ``b / c`` longer. That
is the worst case; the expected lengthening over the fitted holds (``ramp.py``: the rollout that
ends the step sits anywhere in the creation order) is about half of it with a long-tailed hold. The
provider is unusable only when the EXPECTED lengthening exceeds ``ramp_max_share`` of the step ``T``
(the plan passes its RL ``--tolerance``, 1%: the same slowdown the cap search accepts); the bound is
stated beside it, and judges the fit only when no hold fit is known. An open workload's sustained
start rate above ``c`` can never be kept up with, so that one stays a hard limit.
"""

import math
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, model_validator

from sandbox_fleet.errors import InputError
from sandbox_fleet.plan.model import Rent, Starts
from sandbox_fleet.plan.ramp import RAMP_MAX_BATCH, expected_ramp_delays_s, ramp_drawn

if TYPE_CHECKING:
    from sandbox_fleet.plan.target import HoldSampler
from sandbox_fleet.substrates import Substrate, load_substrates
from sandbox_fleet.toml_entries import load_entries

MB_PER_GIB = 1024.0


def _no_sources() -> dict[str, str]:
    # a Python function, not ``dict``: Pydantic tokenizes a builtin factory's signature (plan/model.py)
    return {}


def _no_claims() -> list[str]:
    return []


class Provider(BaseModel):
    """One managed-sandbox offer; prices in USD per second of use, limits optional."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    name: str = Field(min_length=1)
    description: str = ""
    source: str = Field(min_length=1)
    as_of: str = Field(min_length=1)
    vcpu_usd_s: float = Field(ge=0)
    memory_gib_usd_s: float = Field(ge=0)
    disk_gib_usd_s: float = Field(default=0.0, ge=0)
    max_vcpus: Optional[float] = Field(default=None, gt=0)
    max_memory_gib: Optional[float] = Field(default=None, gt=0)
    max_disk_gib: Optional[float] = Field(default=None, gt=0)
    max_concurrent: Optional[int] = Field(default=None, gt=0)
    max_creates_per_s: Optional[float] = Field(default=None, gt=0)
    # Issue 39's catalog (docs/providers.md): the plan the limits belong to, the rest of the account's
    # and the sandbox's limits, billing, start latencies, where each figure comes from, and which the
    # vendor claims rather than documents as a limit. A figure left out is not known, never zero.
    plan: Optional[str] = None
    max_creates_burst: Optional[int] = Field(default=None, gt=0)
    max_starting: Optional[int] = Field(default=None, gt=0)
    account_vcpus: Optional[float] = Field(default=None, gt=0)
    account_memory_gib: Optional[float] = Field(default=None, gt=0)
    account_disk_gib: Optional[float] = Field(default=None, gt=0)
    max_lifetime_s: Optional[float] = Field(default=None, gt=0)
    billing: Literal["per_second", "requested_lifetime"] = "per_second"
    billing_granularity_s: Optional[float] = Field(default=None, gt=0)
    cold_start_p50_s: Optional[float] = Field(default=None, ge=0)
    cold_start_p99_s: Optional[float] = Field(default=None, ge=0)
    claim_p50_s: Optional[float] = Field(default=None, ge=0)
    claim_p99_s: Optional[float] = Field(default=None, ge=0)
    warm_pool_refill_per_s: Optional[float] = Field(default=None, gt=0)
    figure_sources: dict[str, str] = Field(default_factory=_no_sources)
    vendor_claimed: list[str] = Field(default_factory=_no_claims)
    #: false: self-hosted (Kubernetes with agent-sandbox): its limits are planned against, never priced as a rental
    rented: bool = True
    #: false: priced only when named with --rent-provider (another plan of a provider already listed)
    default: bool = True

    @model_validator(mode="after")
    def _figures_named(self) -> "Provider":
        known = set(type(self).model_fields)
        for key in [*self.figure_sources, *self.vendor_claimed]:
            if key not in known:
                raise ValueError(f"figure_sources / vendor_claimed name {key!r}, which is no figure of a provider")
        return self

    def usd_per_sandbox_h(self, req: dict) -> float:
        """$ per hour of one running sandbox with request ``req`` (cpu cores, memory MB, disk MB)."""
        per_s = (req["cpu"] * self.vcpu_usd_s + req["memory"] / MB_PER_GIB * self.memory_gib_usd_s
                 + (req.get("disk") or 0.0) / MB_PER_GIB * self.disk_gib_usd_s)
        return per_s * 3600.0


def load_providers(path: str | Path | None = None, substrates_path: str | Path | None = None) -> list[Provider]:
    """The bundled catalog, or ``path``; a bad entry is an InputError naming the file, entry and key. A
    provider that gives no cold start takes its substrate's (``with_cold_starts``: the bundled substrate
    catalog, or ``substrates_path``), the one place cold starts are written."""
    return with_cold_starts(load_entries(path, "providers.toml", "provider", Provider), load_substrates(substrates_path))


def with_cold_starts(providers: list[Provider], substrates: list[Substrate]) -> list[Provider]:
    """Each provider without a cold start of its own, with that of the substrate naming it in ``provider``
    (p50 = ``cold_start_s``, p99 = ``cold_start_p99_s``), its source, and the vendor-claimed flag."""
    by_provider = {s.provider: s for s in substrates if s.provider is not None}
    out = []
    for p in providers:
        sub = by_provider.get(p.name)
        if sub is None or p.cold_start_p50_s is not None or p.cold_start_p99_s is not None:
            out.append(p)
            continue
        figures = {"cold_start_p50_s": sub.cold_start_s, "cold_start_p99_s": sub.cold_start_p99_s}
        named = [k for k, v in figures.items() if v is not None]
        where = f"substrates.toml {sub.name} ({sub.as_of}): {sub.cold_start_sources or sub.source}"
        out.append(p.model_copy(update={
            **figures,
            "figure_sources": {**p.figure_sources, **dict.fromkeys(named, where)},
            "vendor_claimed": p.vendor_claimed + [k for k in named if sub.cold_start_claimed and k not in p.vendor_claimed],
        }))
    return out


def select(providers: list[Provider], names: Optional[list[str]], source: str = "provider catalog") -> list[Provider]:
    """The named rentals (every default one when ``names`` is empty); an unknown name, or a
    self-hosted entry, is an InputError."""
    if not names:
        return [p for p in providers if p.rented and p.default]
    known = {p.name: p for p in providers}
    for name in names:
        if name not in known:
            raise InputError(f"`rent_provider` {name!r} is not in the {source}; expected one of: {', '.join(known)}")
        if not known[name].rented:
            raise InputError(f"`rent_provider` {name!r} in the {source} is self-hosted (rented = false): "
                             "its limits are planned against, it has no rental price")
    return [known[n] for n in dict.fromkeys(names)]


def _hard_limits(p: Provider, kinds: list[tuple[dict, float]], target: int) -> list[str]:
    hit = []
    for req, _ in kinds:
        if p.max_vcpus is not None and req["cpu"] > p.max_vcpus:
            hit.append(f"request {req['cpu']:g} vCPU > {p.max_vcpus:g} per sandbox")
        if p.max_memory_gib is not None and req["memory"] / MB_PER_GIB > p.max_memory_gib:
            hit.append(f"request {req['memory'] / MB_PER_GIB:g} GiB memory > {p.max_memory_gib:g} per sandbox")
        if p.max_disk_gib is not None and (req.get("disk") or 0) / MB_PER_GIB > p.max_disk_gib:
            hit.append(f"request {(req.get('disk') or 0) / MB_PER_GIB:g} GiB disk > {p.max_disk_gib:g} per sandbox")
    if p.max_concurrent is not None and target > p.max_concurrent:
        hit.append(f"target {target:,} concurrent > account limit {p.max_concurrent:,}")
    return hit


def creation_ramp(batch: float, step_s: Optional[float], creates_per_s: float) -> tuple[float, Optional[float]]:
    """The ramp one step's batch takes at ``creates_per_s`` (the most step time it adds, s) and its share of the step."""
    ramp_s = batch / creates_per_s
    return ramp_s, (ramp_s / step_s if step_s else None)


class _Ramp:
    """One provider's creation ramp: the bound, the expected delay (None without a hold fit), their
    shares of the step, and how the expected one was taken."""

    def __init__(self, bound_s: Optional[float] = None, bound_share: Optional[float] = None,
                 expected_s: Optional[float] = None, expected_share: Optional[float] = None, basis: Optional[str] = None):
        self.bound_s, self.bound_share = bound_s, bound_share
        self.expected_s, self.expected_share, self.basis = expected_s, expected_share, basis


def _ramp(batch: float, step_s: Optional[float], c: float, expected: Optional[tuple[dict[float, float], int, str]]) -> _Ramp:
    bound_s, bound_share = creation_ramp(batch, step_s, c)
    if expected is None:
        why = "no hold fit" if ramp_drawn(round(batch)) else f"a batch past {RAMP_MAX_BATCH:,} is not drawn"
        return _Ramp(bound_s, bound_share, basis=f"{why}: judged on the bound")
    delays, reps, dist = expected
    expected_s = delays[c]
    return _Ramp(bound_s, bound_share, expected_s, expected_s / step_s if step_s else None,
                 f"expected over the fitted holds ({dist}), {reps:,} batches of {batch:,.0f}, "
                 f"E[max(i/c + h)] - E[max h]; at most {bound_s:,.1f} s (B/c: the last created ends the step)")


def _expected_delays(providers: list[Provider], starts: Starts,
                     holds: "Optional[HoldSampler]") -> Optional[tuple[dict[float, float], int, str]]:
    """The expected ramp delay at each provider's creation rate, one set of draws for all (None
    without a batch, a hold fit or a creation limit)."""
    rates = [p.max_creates_per_s for p in providers if p.max_creates_per_s is not None]
    if holds is None or not starts.batch or not rates or not ramp_drawn(round(starts.batch)):
        return None
    delays, reps = expected_ramp_delays_s(round(starts.batch), rates, holds)
    return delays, reps, holds.spec.dist or holds.kind


def _creation_limit(p: Provider, starts: Starts, ramp_max_share: float,
                    expected: Optional[tuple[dict[float, float], int, str]] = None) -> tuple[list[str], _Ramp]:
    """(limits hit, the ramp) for the provider's creation rate at the target's starts: a batch's ramp
    is judged on its expected lengthening of the step, the bound stated."""
    c = p.max_creates_per_s
    if c is None:
        return [], _Ramp()
    batch, rate = starts.batch, starts.peak_per_s
    if not batch:  # an open workload: its start rate is sustained, so a slower provider falls behind for good
        if rate is not None and math.isfinite(rate) and rate > c:
            return [f"sustained start rate {rate:.3g}/s > {c:g} creates/s"], _Ramp()
        return [], _Ramp()
    r = _ramp(batch, starts.step_s, c, expected)
    head = f"a batch of {batch:,.0f} ramps over {r.bound_s:,.1f} s at {c:g} creates/s"
    if r.bound_share is None:
        return [f"{head}; no step time to judge it by"], r
    judged = r.expected_share if r.expected_share is not None else r.bound_share
    if judged > ramp_max_share:
        if r.expected_share is None:
            return [f"{head}, up to {r.bound_share:.2%} of the {starts.step_s:,.0f}-s step > {ramp_max_share:.2%}"], r
        assert r.expected_s is not None  # set with its share
        return [f"{head}: expected +{r.expected_s:,.1f} s, {r.expected_share:.2%} of the {starts.step_s:,.0f}-s step "
                f"> {ramp_max_share:.2%} (at most {r.bound_share:.2%})"], r
    return [], r


def rent_block(
    providers: list[Provider],
    kinds: list[tuple[dict, float]],
    *,
    target: int,
    duty: Optional[float],
    sandbox_hours_per_pass: Optional[float],
    starts: Starts,
    buy_usd_h: Optional[float],
    tier: str,
    node_label: str,
    ramp_max_share: float = 0.01,
    overhead_s: Optional[dict[str, float]] = None,
    hold_mean_s: Optional[float] = None,
    holds: "Optional[HoldSampler]" = None,
) -> tuple[dict[str, Rent], str]:
    """``cost.rent`` ({provider: Rent(usd_per_h, usd_per_pass, within_limits, limits_hit, ramp_*}}) and the verdict line.

    ``kinds`` are (request, share of the running sandboxes) pairs; shares sum to 1. ``overhead_s``
    (provider -> seconds) is the substrate's cold start and per-turn overhead, added to every rented
    hold of mean ``hold_mean_s``: the busy sandbox-hours, and so the bill, grow by ``1 + overhead / hold``.
    ``holds``: the fitted hold distribution a creation ramp's expected delay is taken over (None: judged on the bound).
    """
    busy = target * duty if duty else None
    out: dict[str, Rent] = {}
    expected = _expected_delays(providers, starts, holds)
    for p in providers:
        per_sandbox_h = sum(share * p.usd_per_sandbox_h(req) for req, share in kinds)
        created, ramp = _creation_limit(p, starts, ramp_max_share, expected)
        hit = _hard_limits(p, kinds, target) + created
        extra_s = (overhead_s or {}).get(p.name)
        factor = 1.0 + extra_s / hold_mean_s if extra_s is not None and hold_mean_s else 1.0
        out[p.name] = Rent(
            usd_per_h=per_sandbox_h * busy * factor if busy is not None else None,
            usd_per_sandbox_h=per_sandbox_h,
            usd_per_pass=per_sandbox_h * sandbox_hours_per_pass * factor if sandbox_hours_per_pass else None,
            within_limits=not hit,
            limits_hit=hit,
            ramp_s=ramp.bound_s,
            ramp_step_share=ramp.bound_share,
            source=p.source,
            as_of=p.as_of,
            overhead_s_per_rollout=extra_s if extra_s is not None and hold_mean_s else None,
            hold_factor=factor if extra_s is not None and hold_mean_s else None,
            ramp_expected_s=ramp.expected_s,
            ramp_expected_step_share=ramp.expected_share,
            ramp_basis=ramp.basis,
        )
    return out, verdict(out, buy_usd_h, tier, node_label)


def verdict(rent: dict[str, Rent], buy_usd_h: Optional[float], tier: str, node_label: str) -> str:
    """One line: the cheapest provider within its limits against buying at the tier."""
    usable = sorted(((v.usd_per_h, k) for k, v in rent.items() if v.within_limits and v.usd_per_h is not None))
    if not rent:
        return "no rental provider given"
    if not usable:
        priced = sorted((v.usd_per_h, k) for k, v in rent.items() if v.usd_per_h is not None)
        cheapest = f"; the cheapest, {priced[0][1]} at ${priced[0][0]:,.2f}/h, hits its limits" if priced else ""
        fleet = f"; {node_label} cost ${buy_usd_h:,.2f}/h on {tier.replace('_', '-')}" if buy_usd_h is not None else ""
        return f"buy: no rental provider fits the target within its limits{cheapest}{fleet}"
    cost, name = usable[0]
    if buy_usd_h is None:
        return f"rent on {name} at ${cost:,.2f}/h; the bought fleet has no {tier} price to compare"
    cheaper, ratio = ("rent", buy_usd_h / cost) if cost < buy_usd_h else ("buy", cost / buy_usd_h if buy_usd_h else math.inf)
    return (f"{cheaper}: renting on {name} costs ${cost:,.2f}/h for the busy sandbox-hours vs ${buy_usd_h:,.2f}/h for "
            f"{node_label} on {tier.replace('_', '-')} ({ratio:.1f}x cheaper to {cheaper})")
