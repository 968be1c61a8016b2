"""Exception-rate checks: fleet-wide, per model, per job, per task and per node (the last two
with a chance filter: a count the fleet's own rate explains by chance does not count)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from sandbox_fleet.measure.model import ByTask, MeasureSummary, NodeHealth, Outcomes, Slice, TaskHealth
from sandbox_fleet.report.checks.result import (
    RANK,
    CheckResult,
    Status,
    band_above,
    hours,
    pct,
    skipped,
)
from sandbox_fleet.report.fields import as_num
from sandbox_fleet.report.thresholds import NodeRate, SliceRate, TaskRate, Thresholds

if TYPE_CHECKING:
    from sandbox_fleet.plan.model import PlanSummary


def exception_rate(m: MeasureSummary, plan: PlanSummary | None, t: Thresholds) -> CheckResult:
    name = "exception_rate"
    out = m.outcomes or Outcomes()
    rate = as_num(out.exception_rate)
    if rate is None:
        return skipped(name, "no 'outcomes.exception_rate'")
    status, bound = band_above(rate, t.exception_rate)
    wasted = as_num(out.exception_sandbox_hours)
    waste = f", {hours(wasted)} sandbox-hours" if wasted is not None else ""
    advice = "; exceptions almost never pass: alert per task and per node" if status != "pass" else ""
    return CheckResult(name, status, rate, bound, f"{pct(rate)} of rollouts raised an exception{waste}{advice}")


_SLICE_ADVICE = {
    "model": "filter the corpus by model before training on it",
    "job": "look for a bad image or a full disk in that job first",
}


def _slice_rates(slices: dict[str, Slice] | None, key: str, name: str, cfg: SliceRate, what: str) -> CheckResult:
    """The worst slice of ``slices`` (``m.by_model`` or ``m.by_job``, named ``key`` in messages)."""
    slices = slices or {}
    scored: list[tuple[int, float, str, float, float | None]] = []
    for label in sorted(slices, key=str):
        rate = as_num(slices[label].exception_rate)
        if rate is None:
            continue
        rows = as_num(slices[label].rows)
        status, _ = band_above(rate, cfg)
        if status == "fail" and rows is not None and rows < cfg.min_rows:
            status = "warn"  # too few rows to call it a rate
        scored.append((RANK[status], rate, str(label), rate, rows))
    if not scored:
        return skipped(name, f"no per-{what} exception rates ('{key}')")
    worst_rank = max(s[0] for s in scored)
    status = next(k for k, v in RANK.items() if v == worst_rank)
    worst = max(scored, key=lambda s: (s[0], s[1]))
    if status == "pass":
        return CheckResult(name, "pass", worst[1], cfg.warn_above,
                           f"every {what} within budget (highest: {worst[2]} at {pct(worst[1])})")
    bound = cfg.fail_above if status == "fail" else cfg.warn_above
    bad = [s for s in sorted(scored, key=lambda s: (-s[0], -s[1], s[2])) if s[0] >= RANK["warn"]]
    listed = ", ".join(f"{s[2]} {pct(s[3])}" + (f" (n={s[4]:,.0f})" if s[4] is not None else "") for s in bad)
    return CheckResult(name, status, worst[1], bound,
                       f"{what}s above budget: {listed}; {_SLICE_ADVICE[what]}")


def exception_rate_by_model(m: MeasureSummary, plan: PlanSummary | None, t: Thresholds) -> CheckResult:
    return _slice_rates(m.by_model, "by_model", "exception_rate_by_model", t.exception_rate_by_model, "model")


def exception_rate_by_job(m: MeasureSummary, plan: PlanSummary | None, t: Thresholds) -> CheckResult:
    return _slice_rates(m.by_job, "by_job", "exception_rate_by_job", t.exception_rate_by_job, "job")


#: Tasks named in the message at most.
TASKS_NAMED = 5


def _task_rows(entry: TaskHealth) -> float | None:
    """Rollouts a listed task's rate is over (flag known), else all its rollouts."""
    flagged = as_num(entry.exception_rate_rows)
    return flagged if flagged is not None else as_num(entry.rows)


def _listed_tasks(m: MeasureSummary, cfg: TaskRate) -> list[tuple[float, float, str, TaskHealth]]:
    """(rate, exceptions, task_id, entry) of the tasks ``by_task`` lists (``highest_rate`` and
    ``worst``) with enough rows, worst first: highest rate, most exceptions, then task_id."""
    found: dict[str, tuple[float, float, str, TaskHealth]] = {}
    bt = m.by_task or ByTask()
    for listed in (bt.highest_rate, bt.worst):
        for entry in listed or []:
            rate, rows = as_num(entry.exception_rate), _task_rows(entry)
            if rate is None or rows is None or rows < cfg.min_rows:
                continue
            task_id = str(entry.task_id)
            found.setdefault(task_id, (rate, as_num(entry.exceptions) or 0.0, task_id, entry))
    return sorted(found.values(), key=lambda s: (-s[0], -s[1], s[2]))


def _log_pmf(i: int, n: int, log_p: float, log_q: float) -> float:
    """ln P(X = i) for X ~ Binomial(n, p): log-gamma, so no factor overflows at any n."""
    return math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q


def _log_sum_from(start: int, step: int, stop: int, n: int, log_p: float, log_q: float) -> float:
    """ln of the pmf summed from ``start`` towards ``stop`` (inclusive) by ``step`` (+1 or -1), on the
    side of the mode where the terms fall. Each term is the last times its exact ratio
    ((n - i) / (i + 1) x p / q going up), so only the first takes log-gammas; the sum stops once a
    term is below 1e-17 of it, which the faster-than-geometric decay past that term cannot lift by a
    relative 1e-16."""
    ratio_pq = math.exp(log_p - log_q)
    total, term, i = 1.0, 1.0, start  # terms relative to the first
    while i != stop:
        term *= (n - i) / (i + 1) * ratio_pq if step > 0 else i / (n - i + 1) / ratio_pq
        i += step
        total += term
        if term < 1e-17 * total:
            break
    return _log_pmf(start, n, log_p, log_q) + math.log(total)


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p) (n is a task's or node's rollout count, any size up to 1e8 and
    past). The terms are taken in log space (``math.comb`` times a float overflows from n = 1,030);
    above the mean the upper tail is summed from k up, at or below it the lower tail P(X <= k - 1)
    from k - 1 down and subtracted from 1, so each sum runs down a falling side of the pmf and stops
    when its terms no longer count."""
    if k <= 0:
        return 1.0
    if k > n or p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    log_p, log_q = math.log(p), math.log1p(-p)
    if k > n * p:
        return min(1.0, math.exp(_log_sum_from(k, 1, n, n, log_p, log_q)))
    return max(0.0, -math.expm1(_log_sum_from(k - 1, -1, 0, n, log_p, log_q)))


def beyond_chance(exceptions: int, rows: int, fleet_rate: float, judged: float, max_chance: float) -> bool:
    """Whether ``exceptions`` of ``rows`` are more than the fleet's rate explains by chance: the
    binomial tail P(X >= exceptions | rows, fleet_rate) times the ``judged`` groups tested
    (Bonferroni, family-wise) is below ``max_chance``. One test for tasks and nodes alike."""
    return binomial_tail(exceptions, rows, fleet_rate) * judged < max_chance


def _beyond_chance(listed: list[tuple[float, float, str, TaskHealth]], m: MeasureSummary, cfg: TaskRate) -> list:
    """The listed tasks whose exception count the fleet-wide rate cannot explain."""
    fleet_rate = as_num((m.outcomes or Outcomes()).exception_rate)
    judged = as_num((m.by_task or ByTask()).tasks_judged) or len(listed) or 1
    if fleet_rate is None:
        return listed
    keep = []
    for s in listed:
        rows = _task_rows(s[3])
        if rows is not None and beyond_chance(int(s[1]), int(rows), fleet_rate, judged, cfg.max_chance):
            keep.append(s)
    return keep


def _task_text(rate: float, exc: float, task_id: str, entry: TaskHealth) -> str:
    rows = _task_rows(entry)
    kind, count = entry.top_exception_type, as_num(entry.top_exception_count)
    counts = f"{exc:,.0f}/{rows:,.0f}" if rows is not None else f"{exc:,.0f}"
    top = f", mostly {kind} ({count:,.0f})" if isinstance(kind, str) and count else ""
    return f"{task_id} {pct(rate)} ({counts}{top})"


def exception_rate_by_task(m: MeasureSummary, plan: PlanSummary | None, t: Thresholds) -> CheckResult:
    """Any task with >= min_rows rollouts at or above the rate fails / warns.

    The highest rate is ``by_task.max_exception_rate`` (over every task measure judged) when
    measure judged tasks on at least ``min_rows`` rollouts; else the listed tasks' rates.
    """
    name, cfg = "exception_rate_by_task", t.exception_rate_by_task
    bt = m.by_task
    if bt is None:
        return skipped(name, "no per-task exception rates ('by_task')")
    all_listed = _listed_tasks(m, cfg)
    if not all_listed:
        measured_min, highest = as_num(bt.min_rows), as_num(bt.max_exception_rate)
        if measured_min is not None and measured_min >= cfg.min_rows and highest is not None \
                and highest < cfg.warn_at_or_above:
            return CheckResult(name, "pass", highest, cfg.warn_at_or_above,
                               f"no task with {cfg.min_rows}+ rollouts at or above {pct(cfg.warn_at_or_above)} "
                               f"exceptions (highest: {pct(highest)})")
        return skipped(name, f"no task with at least {cfg.min_rows} rollouts")
    listed = _beyond_chance(all_listed, m, cfg)
    if not listed:  # no rate was held to the threshold: the value shown is none, the raw highest is in words
        top = all_listed[0]
        return CheckResult(name, "pass", None, cfg.warn_at_or_above,
                           f"no task's exceptions exceed what the fleet rate of "
                           f"{pct(as_num((m.outcomes or Outcomes()).exception_rate) or 0.0)} explains by chance "
                           f"(family-wise {cfg.max_chance:g} over the tasks judged), so no task's rate is held to "
                           f"the threshold; the highest, {_task_text(*top)}, is within chance")
    value = max(s[0] for s in listed)
    status: Status
    if value >= cfg.fail_at_or_above:
        status, bound = "fail", cfg.fail_at_or_above
    elif value >= cfg.warn_at_or_above:
        status, bound = "warn", cfg.warn_at_or_above
    else:
        return CheckResult(name, "pass", value, cfg.warn_at_or_above,
                           f"no task with {cfg.min_rows}+ rollouts at or above {pct(cfg.warn_at_or_above)} "
                           f"exceptions (highest: {pct(value)})")
    bad = [s for s in listed if s[0] >= cfg.warn_at_or_above][:TASKS_NAMED]
    named = "; ".join(_task_text(*s) for s in bad) if bad else "none of them is listed in 'by_task'"
    msg = (f"a task with {cfg.min_rows}+ rollouts raised on {pct(value)} of them (at or above "
           f"{pct(bound)}); worst: {named}")
    broken, judged, at = as_num(bt.tasks_broken), as_num(bt.tasks_judged), as_num(bt.broken_rate)
    if broken is not None and judged is not None and at is not None:
        msg += f"; {broken:,.0f} of {judged:,.0f} tasks raise on {pct(at)} or more of their rollouts"
    always, share = as_num(bt.tasks_all_exceptions), as_num(bt.tasks_all_exceptions_share)
    if always:
        msg += f", {always:,.0f} on every one" + (f" ({pct(share)} of exception sandbox-hours)" if share is not None else "")
    return CheckResult(name, status, value, bound,
                       msg + ": a task that raises whatever the model does is a bad image or a full disk; "
                       "rule out a model that raises everywhere (by_model), then fix or drop the task")


def tasks_at_or_above(m: MeasureSummary, cfg: TaskRate, rate: float) -> list[str]:
    """Task ids (listed in ``by_task``, with ``min_rows`` rollouts, beyond chance) at or above ``rate``.

    The count the per-task gate is exported as (``sandbox_fleet_tasks_failing``): the same
    selection :func:`exception_rate_by_task` judges.
    """
    return [s[2] for s in _beyond_chance(_listed_tasks(m, cfg), m, cfg) if s[0] >= rate]


#: Nodes named in the message at most.
NODES_NAMED = 5


def _judged_nodes(m: MeasureSummary, cfg: NodeRate) -> list[NodeHealth]:
    """The nodes of ``by_node`` with a rate over at least ``min_rows`` rollouts with a known flag."""
    out = []
    for entry in (m.by_node.per_node if m.by_node else None) or []:
        rows = as_num(entry.exception_rate_rows)
        if as_num(entry.exception_rate) is not None and rows is not None and rows >= cfg.min_rows \
                and as_num(entry.exceptions) is not None and entry.node is not None:
            out.append(entry)
    return out


def node_chance(m: MeasureSummary, cfg: NodeRate) -> dict[str, bool] | None:
    """Per judged node: whether its exceptions are beyond chance at the fleet's rate (the test the
    per-node gate and ``sandbox_fleet_node_beyond_chance`` both read); None without a fleet rate."""
    fleet_rate = as_num((m.outcomes or Outcomes()).exception_rate)
    if fleet_rate is None:
        return None
    judged = _judged_nodes(m, cfg)
    return {str(e.node): beyond_chance(int(e.exceptions or 0), int(e.exception_rate_rows or 0), fleet_rate,
                                       len(judged), cfg.max_chance) for e in judged}


def _node_text(e: NodeHealth) -> str:
    return f"{e.node} {pct(as_num(e.exception_rate) or 0.0)} ({e.exceptions:,}/{e.exception_rate_rows:,})"


def exception_rate_by_node(m: MeasureSummary, plan: PlanSummary | None, t: Thresholds) -> CheckResult:
    """A node above the rate band whose exceptions the fleet's own rate does not explain by chance."""
    name, cfg = "exception_rate_by_node", t.exception_rate_by_node
    if m.by_node is None:
        return skipped(name, "no per-node exception rates ('by_node': map a node column with --map node=COLUMN)")
    judged = sorted(_judged_nodes(m, cfg), key=lambda e: (-(as_num(e.exception_rate) or 0.0), str(e.node)))
    if not judged:
        return skipped(name, f"no node with at least {cfg.min_rows} rollouts")
    chance = node_chance(m, cfg)
    if chance is None:
        return skipped(name, "no fleet-wide 'outcomes.exception_rate' to test the nodes against")
    fleet_rate = as_num((m.outcomes or Outcomes()).exception_rate) or 0.0
    basis = (f"binomial tail at the fleet's {pct(fleet_rate)} times {len(judged):,} nodes judged "
             f"({cfg.min_rows}+ rollouts) below {cfg.max_chance:g}")
    over = [(e, band_above(as_num(e.exception_rate) or 0.0, cfg)) for e in judged if chance[str(e.node)]]
    over = [(e, band) for e, band in over if band[0] != "pass"]
    if not over:
        low = cfg.warn_above if cfg.warn_above is not None else cfg.fail_above
        above = f" above {pct(low)}" if low is not None else ""
        return CheckResult(name, "pass", as_num(judged[0].exception_rate), low,
                           f"no node{above} with exceptions beyond chance (highest: {_node_text(judged[0])}; {basis})")
    status, bound = max((band for _, band in over), key=lambda b: RANK[b[0]])
    named = "; ".join(_node_text(e) for e, _ in over[:NODES_NAMED])
    more = f" and {len(over) - NODES_NAMED:,} more" if len(over) > NODES_NAMED else ""
    return CheckResult(name, status, as_num(over[0][0].exception_rate), bound,
                       f"{len(over):,} of {len(judged):,} nodes raise beyond chance: {named}{more} ({basis}); "
                       "a node that raises whatever it hosts has a bad disk, runtime or image cache: drain it")
