"""The settings a Harbor job needs to stay inside the plan's limits, as a job-config fragment.

Keys and nesting are Harbor's own ``JobConfig`` (the job ``config.json`` Harbor writes):
``n_concurrent_trials``, ``agents[].override_timeout_sec`` / ``override_setup_timeout_sec``,
``verifier.override_timeout_sec``. Merge it into your job config (``merge_into``: each agent entry
takes the agent keys). The values:

- ``n_concurrent_trials``: the plan's target concurrency, lowered to the account-wide
  ``max_concurrent`` of the one named provider: split over the accounts that quota needs, one job per
  account; a higher setting only queues at the provider, or fails with its "resource limit reached".
- the agent timeout: the agent budget in force, lowered so that start + build + agent + verifier
  with the lint's headroom fit in the sandbox lifetime (the three failure shapes of
  ``plan/lifetime.py``); the setup and verifier timeouts are their budgets in force.

``basis`` says where each value came from; the fragment itself holds Harbor keys only.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path

from sandbox_fleet.atomic import write_text
from sandbox_fleet.jsonio import dumps
from sandbox_fleet.plan.model import PlanSummary


def _budgets(plan: PlanSummary) -> dict[str, float]:
    lint = plan.limits.lifetime if plan.limits else None
    if lint is None:
        return {}
    return {pb.phase: float(pb.budget_s) for pb in (lint.phases or []) if pb.phase and pb.budget_s is not None}


def harbor_fragment(plan: PlanSummary) -> tuple[dict, list[str]]:
    """(the Harbor job-config fragment, one basis line per value) for ``plan``."""
    basis: list[str] = []
    n = int(plan.target.concurrency)
    fits = [f for f in (plan.limits.fits or []) if f.rented] if plan.limits else []
    named = fits[0] if len(fits) == 1 else None
    cap = (named.accounts_by_quota or {}).get("max_concurrent") if named else None
    trials = n
    if named is not None and cap is not None and cap > 1:
        trials = math.ceil(n / cap)  # cap = ceil(n / max_concurrent) accounts, so n / cap fits in one
        basis.append(f"n_concurrent_trials {trials}: the target {n:,} needs {cap} {named.provider} accounts by "
                      f"max_concurrent; one job per account at {trials}")
    else:
        basis.append(f"n_concurrent_trials {trials}: the plan's target concurrency")
    fragment: dict = {"n_concurrent_trials": trials}
    budgets = _budgets(plan)
    lint = plan.limits.lifetime if plan.limits else None
    agent: dict = {}
    if "agent" in budgets:
        timeout: float | None = budgets["agent"]
        if lint is not None and lint.lifetime_s is not None:
            room = lint.lifetime_s / (1.0 + float(lint.headroom or 0.0)) - sum(budgets.get(p, 0.0) for p in ("start", "build", "verifier"))
            if room <= 0:
                basis.append(f"agent timeout: none fits: start + build + verifier alone fill the {lint.lifetime_s:,.0f}-s lifetime")
                timeout = None
            elif timeout is not None and room < timeout:
                basis.append(f"agent timeout {math.floor(room):,} s: lowered from {timeout:,.0f} s so start + build + agent + "
                             f"verifier fit the {lint.lifetime_s:,.0f}-s lifetime with {float(lint.headroom or 0):.0%} headroom")
                timeout = math.floor(room)
            else:
                basis.append(f"agent timeout {budgets['agent']:,.0f} s: the budget in force fits the lifetime")
        if timeout is not None:
            agent["override_timeout_sec"] = float(timeout)
    if "build" in budgets:
        agent["override_setup_timeout_sec"] = budgets["build"]
        basis.append(f"agent setup timeout {budgets['build']:,.0f} s: the build budget in force")
    if agent:
        fragment["agents"] = [agent]
    if "verifier" in budgets:
        fragment["verifier"] = {"override_timeout_sec": budgets["verifier"]}
        basis.append(f"verifier timeout {budgets['verifier']:,.0f} s: the verifier budget in force")
    return fragment, basis


def merge_into(job_config: dict, fragment: dict) -> dict:
    """A copy of a Harbor ``job_config`` with ``fragment`` applied (every agent entry takes the agent keys;
    ``n_concurrent_trials`` goes where the config keeps it: top level, or ``orchestrator`` in older jobs)."""
    out = copy.deepcopy(job_config)
    if "n_concurrent_trials" in fragment:  # the legacy layout keeps it under ``orchestrator``
        legacy = isinstance(out.get("orchestrator"), dict) and "n_concurrent_trials" in out["orchestrator"]
        (out["orchestrator"] if legacy else out)["n_concurrent_trials"] = fragment["n_concurrent_trials"]
    for agent in out.get("agents") or []:
        agent.update((fragment.get("agents") or [{}])[0])
    if "verifier" in fragment:
        out.setdefault("verifier", {}).update(fragment["verifier"])
    return out


def fragment_document(plan: PlanSummary) -> dict:
    """What ``plan --emit-harbor FILE`` writes: the fragment under ``job_config`` and its basis."""
    fragment, basis = harbor_fragment(plan)
    return {"job_config": fragment, "basis": basis}



def write_fragment(plan: PlanSummary, path: str | Path) -> Path:
    """``plan --emit-harbor FILE``: the fragment document as JSON, written atomically."""
    return write_text(path, dumps(fragment_document(plan)) + "\n")
