"""The lifetime and timeout lint: per phase the budgets in force against the sandbox lifetime and the rollout timeout.

A rollout passes through ``PHASES``: queue (waiting for a slot), create (the provider's API call),
start (the sandbox boots), build (the environment and agent set up inside it), agent, verifier,
teardown. The sandbox lives from its start to its kill, so its lifetime must cover
``IN_LIFETIME`` = start + build + agent + verifier, with ``headroom`` on top. A harness's rollout
timeout runs over the phases it ``covers`` (default: create to verifier, its clock starting before boot).

Each phase's budget is, first found: the ``--budgets`` file's (the timeout in force), the tasks'
median timeout (``tasks.<phase>_timeout_s_median``, from task.toml), the measured p99 of the Harbor
phase that matches it (environment_setup -> start, agent_setup -> build, agent_execution -> agent,
verifier -> verifier), or the provider's cold start p99 (create). A phase with none is left out.

The three failure shapes the lint names (``LintFinding.shape``):

- ``timeout_equals_lifetime``: a phase's timeout reaches the lifetime by itself: the sandbox is killed
  (exit 137) before the timeout can fire, and the rollout ends as a crash, not a timeout;
- ``boot_outside_rollout_timeout``: the rollout timeout is shorter than the phases its clock covers: an
  agent that uses its whole timeout is cut, because boot and build came out of the same clock;
- ``verifier_past_lifetime``: start + build + agent fit in the lifetime but the verifier does not: it
  runs against a dying container.

and ``lifetime_below_budget`` when the in-lifetime sum (with headroom) exceeds the lifetime at all.
The share each budget would cut is read from the measured holds (the lifetime: the hold histogram)
or a lognormal through the phase's measured median and p99 (a phase budget), basis stated.
"""

import math
from pathlib import Path
from statistics import NormalDist
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sandbox_fleet.errors import InputError
from sandbox_fleet.measure.model import MeasureSummary
from sandbox_fleet.plan.model import LifetimeLint, LintFinding, PhaseBudget
from sandbox_fleet.plan.rent import Provider
from sandbox_fleet.safeparse import read_text, toml_loads

PHASES = ("queue", "create", "start", "build", "agent", "verifier", "teardown")
IN_LIFETIME = ("start", "build", "agent", "verifier")
DEFAULT_COVERS = ("create", "start", "build", "agent", "verifier")
#: The measured Harbor phase each lint phase reads its p99 from.
MEASURED_PHASE = {"start": "environment_setup", "build": "agent_setup", "agent": "agent_execution", "verifier": "verifier"}
#: The task.toml timeout each lint phase reads (median over tasks).
TASK_TIMEOUT = {"build": "build_timeout_s_median", "agent": "agent_timeout_s_median", "verifier": "verifier_timeout_s_median"}
_Z99 = NormalDist().inv_cdf(0.99)


def _no_phases() -> dict[str, float]:
    # a Python function, not ``dict``: Pydantic tokenizes a builtin factory's signature (plan/model.py)
    return {}


class Budgets(BaseModel):
    """``plan --budgets FILE``: the lifetime, the rollout timeout and per-phase budgets in force (s)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    lifetime_s: Optional[float] = Field(default=None, gt=0)
    rollout_timeout_s: Optional[float] = Field(default=None, gt=0)
    rollout_timeout_covers: tuple[str, ...] = DEFAULT_COVERS
    headroom: float = Field(default=0.1, ge=0)
    phases: dict[str, float] = Field(default_factory=_no_phases)

    @field_validator("phases")
    @classmethod
    def _known_phases(cls, v: dict[str, float]) -> dict[str, float]:
        for name, seconds in v.items():
            if name not in PHASES:
                raise ValueError(f"unknown phase {name!r}; expected one of {', '.join(PHASES)}")
            if not (seconds >= 0 and math.isfinite(seconds)):
                raise ValueError(f"phase {name!r}: seconds must be zero or positive, got {seconds!r}")
        return v

    @field_validator("rollout_timeout_covers")
    @classmethod
    def _known_covers(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        bad = [p for p in v if p not in PHASES]
        if bad:
            raise ValueError(f"unknown phase(s) {', '.join(bad)}; expected some of {', '.join(PHASES)}")
        return v


def load_budgets(path: str | Path) -> Budgets:
    """The ``--budgets`` TOML; a bad key or value is one InputError naming the file and the key."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: budgets file not found; expected a TOML file (lifetime_s, rollout_timeout_s, [phases])")
    doc = toml_loads(read_text(p, "budgets file"), f"budgets file {p}")
    try:
        return Budgets.model_validate(doc)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(x) for x in err["loc"]) or "?"
        raise InputError(f"{p}: key {key!r}: {err['msg']}") from None


def _lognormal_above(t: float, median: Optional[float], p99: Optional[float]) -> Optional[float]:
    """P(X > t) for the lognormal through (median, p99); None when they do not define one."""
    if not median or not p99 or p99 <= median or t <= 0:
        return None
    sigma = (math.log(p99) - math.log(median)) / _Z99
    return 1.0 - NormalDist().cdf((math.log(t) - math.log(median)) / sigma)


def holds_above(m: MeasureSummary, t: float) -> Optional[float]:
    """Share of measured holds longer than ``t`` s, from the hold histogram (log-linear within a bin)."""
    h = m.hold_s.histogram if m.hold_s else None
    if h is None or not h.edges_s or not h.counts:
        return None
    total = sum(h.counts) + (h.zero or 0)
    if not total:
        return None
    above = 0.0
    for lo, hi, n in zip(h.edges_s[:-1], h.edges_s[1:], h.counts):
        if t <= lo:
            above += n
        elif t < hi and lo > 0:
            above += n * (math.log(hi) - math.log(t)) / (math.log(hi) - math.log(lo))
    return above / total


def _budget(phase: str, b: Budgets, m: MeasureSummary, provider: Optional[Provider]) -> Optional[PhaseBudget]:
    measured = (m.phases or {}).get(MEASURED_PHASE.get(phase, ""))
    median, p99 = (measured.median_s, measured.p99_s) if measured else (None, None)
    tasks_t = getattr(m.tasks, TASK_TIMEOUT[phase], None) if m.tasks is not None and phase in TASK_TIMEOUT else None
    if phase in b.phases:
        value, source = b.phases[phase], "budgets file"
    elif tasks_t:
        value, source = float(tasks_t), f"tasks' median {phase} timeout (task.toml)"
    elif p99 is not None:
        value, source = float(p99), f"measured {MEASURED_PHASE[phase]} p99 (a need, not a timeout)"
    elif phase == "create" and provider is not None and provider.cold_start_p99_s is not None:
        value, source = provider.cold_start_p99_s, f"{provider.name} cold start p99 (catalog)"
    else:
        return None
    cut = _lognormal_above(value, median, p99)
    return PhaseBudget(phase=phase, budget_s=value, source=source, cut_share=cut,
                       cut_basis=(f"lognormal through the measured {MEASURED_PHASE[phase]} median {median:,.1f} s and "
                                  f"p99 {p99:,.1f} s" if cut is not None else None))


def _findings(budgets: dict[str, float], lifetime: Optional[float], b: Budgets) -> list[LintFinding]:
    out: list[LintFinding] = []
    if lifetime is not None:
        for phase, seconds in budgets.items():
            if phase in IN_LIFETIME and seconds >= lifetime:
                out.append(LintFinding(shape="timeout_equals_lifetime", severity="fail",
                                       message=f"the {phase} budget of {seconds:,.0f} s reaches the sandbox lifetime of "
                                               f"{lifetime:,.0f} s by itself: the sandbox is killed (exit 137) before the "
                                               f"{phase} timeout can fire"))
        before = sum(budgets.get(p, 0.0) for p in ("start", "build", "agent"))
        with_verifier = before + budgets.get("verifier", 0.0)
        if "verifier" in budgets and before <= lifetime < with_verifier:
            out.append(LintFinding(shape="verifier_past_lifetime", severity="fail",
                                   message=f"start + build + agent take up to {before:,.0f} s and the verifier "
                                           f"{budgets['verifier']:,.0f} s more, past the {lifetime:,.0f}-s lifetime: "
                                           "the verifier runs against a dying container"))
        need = sum(budgets.get(p, 0.0) for p in IN_LIFETIME)
        if need * (1.0 + b.headroom) > lifetime:
            out.append(LintFinding(shape="lifetime_below_budget", severity="fail" if need > lifetime else "warn",
                                   message=f"lifetime {lifetime:,.0f} s < the {need:,.0f} s of "
                                           f"{' + '.join(p for p in IN_LIFETIME if p in budgets)}"
                                           + (f" with {b.headroom:.0%} headroom ({need * (1 + b.headroom):,.0f} s)"
                                              if need <= lifetime else "")))
    if b.rollout_timeout_s is not None:
        covered = [p for p in b.rollout_timeout_covers if p in budgets]
        total = sum(budgets[p] for p in covered)
        boot = [p for p in covered if p in ("queue", "create", "start", "build")]
        if total > b.rollout_timeout_s and boot:
            out.append(LintFinding(shape="boot_outside_rollout_timeout", severity="fail",
                                   message=f"the rollout timeout of {b.rollout_timeout_s:,.0f} s runs over "
                                           f"{' + '.join(covered)} = {total:,.0f} s: boot and build "
                                           f"({sum(budgets[p] for p in boot):,.0f} s) come out of the same clock, so an "
                                           "agent that uses its whole timeout is cut"))
    return out


def lint(b: Budgets, m: MeasureSummary, provider: Optional[Provider] = None,
         usd_per_sandbox_s: Optional[float] = None) -> LifetimeLint:
    """The lint of budgets ``b`` against the measured ``m`` (and ``provider``'s lifetime and billing)."""
    phases = [pb for p in PHASES if (pb := _budget(p, b, m, provider)) is not None]
    budgets = {pb.phase: float(pb.budget_s) for pb in phases if pb.phase and pb.budget_s is not None}
    lifetime, lsource = b.lifetime_s, "budgets file"
    if lifetime is None and provider is not None and provider.max_lifetime_s is not None:
        lifetime, lsource = provider.max_lifetime_s, f"{provider.name} maximum lifetime (catalog)"
    need = sum(budgets.get(p, 0.0) for p in IN_LIFETIME)
    cut = holds_above(m, lifetime) if lifetime is not None else None
    hold_mean = m.hold_s.mean if m.hold_s else None
    unused = None
    if lifetime is not None and provider is not None and provider.billing == "requested_lifetime" and hold_mean is not None:
        unused = max(0.0, lifetime - hold_mean)
    return LifetimeLint(
        phases=phases, lifetime_s=lifetime, lifetime_source=lsource if lifetime is not None else None,
        in_lifetime_s=need, headroom=b.headroom,
        lifetime_ok=None if lifetime is None else need * (1.0 + b.headroom) <= lifetime,
        rollout_timeout_s=b.rollout_timeout_s, rollout_timeout_covers=list(b.rollout_timeout_covers),
        lifetime_cut_share=cut,
        lifetime_cut_basis="share of the measured holds longer than the lifetime (hold histogram)" if cut is not None else None,
        unused_lifetime_s_per_rollout=unused,
        unused_lifetime_usd_per_rollout=unused * usd_per_sandbox_s if unused is not None and usd_per_sandbox_s else None,
        findings=_findings(budgets, lifetime, b),
    )
