"""The knee of a sweep: the smallest value of a numeric key that does not hurt a target.

"What is the smallest fleet that does not slow my RL step?" For each combination of
the other varied keys, the reference is the target at ``unbounded`` when that was
swept (the uncapped run), else the best target over the swept values. A value
qualifies when its target is within ``within`` (relative) of the reference, or within
``within_abs`` (absolute: for targets whose best value is 0, such as a queue wait); the knee
is the smallest value from which on every larger swept value qualifies too, so a
lucky dip below the knee is not mistaken for it. A row with an unstable run (``unstable`` > 0:
no steady state, its figures grow with the run's length) never qualifies.
"""

from __future__ import annotations

import math
from typing import Any

from sandbox_fleet.errors import InputError
from sandbox_fleet.sweep.paths import UNBOUNDED

HIGHER_IS_BETTER = ("completed", "utilisation")


def default_goal(target: str) -> str:
    return "max" if target.split(".")[0] in HIGHER_IS_BETTER or target in HIGHER_IS_BETTER else "min"


def is_numeric(v: Any) -> bool:
    return v == UNBOUNDED or (isinstance(v, (int, float)) and not isinstance(v, bool))


def _rank(v: Any) -> float:
    return math.inf if v == UNBOUNDED else float(v)


def find_knee(rows: list[dict], keys: list[str], over: str, target: str, within: float | None, goal: str,
              within_abs: float | None = None) -> dict:
    """Knee of ``target`` over swept key ``over``; ``rows`` carry the ``keys`` settings and mean metrics."""
    if within is not None and within_abs is not None:
        raise InputError("give `within` (relative) or `within_abs` (absolute), not both")
    if within_abs is not None:
        if within_abs < 0 or not math.isfinite(within_abs):
            raise InputError(f"`within_abs` {within_abs}: expected a non-negative number in the target's units")
    elif within is None or within < 0 or not math.isfinite(within):
        raise InputError(f"`within` {within}: expected a non-negative fraction such as 0.01")
    if goal not in ("min", "max"):
        raise InputError(f"`goal` {goal!r}: expected min or max")
    if over not in keys:
        raise InputError(f"`knee_over` {over}: not a swept key ({', '.join(keys)})")
    for r in rows:
        if not is_numeric(r[over]):
            raise InputError(f"`knee_over` {over}: value {r[over]!r} is not a number; the knee needs a numeric key")
    others = [k for k in keys if k != over]
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault(tuple((k, r[k]) for k in others), []).append(r)
    out = []
    for fixed, members in groups.items():
        out.append({"fixed": dict(fixed), **_knee(members, over, target, within, goal, within_abs)})
    return {"target": target, "over": over, "within": within, "within_abs": within_abs, "goal": goal, "groups": out}


def _knee(members: list[dict], over: str, target: str, within: float | None, goal: str, within_abs: float | None = None) -> dict:
    pts = sorted(((_rank(r[over]), r[over], r[target], bool(r.get("unstable"))) for r in members), key=lambda p: p[0])
    known = [p for p in pts if p[2] is not None]
    if not known:
        return {"knee": None, "reference": None, "reference_from": None, "target_at_knee": None,
                "note": f"{target} is null for every value"}
    uncapped = [p for p in known if p[1] == UNBOUNDED]
    if uncapped:
        ref, ref_from = uncapped[0][2], UNBOUNDED
    else:
        ref = min(p[2] for p in known) if goal == "min" else max(p[2] for p in known)
        ref_from = "best"
    slack = within_abs if within_abs is not None else within * abs(ref)
    ok = [not p[3] and ((p[2] <= ref + slack) if goal == "min" else (p[2] >= ref - slack)) for p in known]
    knee = None
    for i in range(len(known) - 1, -1, -1):  # walk down from the largest value while all qualify
        if not ok[i]:
            break
        knee = known[i]
    if knee is None or knee[1] == UNBOUNDED:
        return {"knee": None, "reference": ref, "reference_from": ref_from, "target_at_knee": None,
                "note": f"no swept value of {over} is within {within_abs:g} of the reference" if within_abs is not None
                else f"no swept value of {over} is within {within:.2%} of the reference"}
    return {"knee": None if knee[1] == UNBOUNDED else knee[1], "reference": ref, "reference_from": ref_from,
            "target_at_knee": knee[2]}
