"""CI gates on a `measure --json` summary: one named check per failure mode of the source document.

Each check reads only the keys it needs; when they are absent it reports ``skip`` with the
reason, so a partial summary still gates on what it does carry.
"""

from __future__ import annotations

import math

from dataclasses import asdict, dataclass
from typing import Any, Callable, Literal

from sandbox_fleet.jsonio import to_jsonable
from sandbox_fleet.report.fields import as_num, flag, get, mapping, num
from sandbox_fleet.report.thresholds import Above, Below, Section, SliceRate, TaskRate, Thresholds

Status = Literal["pass", "warn", "fail", "skip"]
_RANK = {"skip": 0, "pass": 1, "warn": 2, "fail": 3}


@dataclass(frozen=True)
class CheckResult:
    """Outcome of one check: the value read, the bound it was held to, and what to do about it."""

    name: str
    status: Status
    value: float | None
    threshold: float | None
    message: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _pct(x: float) -> str:
    return f"{x:.1%}"


def _hours(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def _band_above(value: float, band: Above) -> tuple[Status, float | None]:
    """Status of ``value`` against an upper band and the bound that decided it."""
    if band.fail_above is not None and value > band.fail_above:
        return "fail", band.fail_above
    if band.warn_above is not None and value > band.warn_above:
        return "warn", band.warn_above
    return "pass", band.warn_above if band.warn_above is not None else band.fail_above


def _band_below(value: float, band: Below) -> tuple[Status, float | None]:
    if band.fail_below is not None and value < band.fail_below:
        return "fail", band.fail_below
    if band.warn_below is not None and value < band.warn_below:
        return "warn", band.warn_below
    return "pass", band.warn_below if band.warn_below is not None else band.fail_below


def _skip(name: str, why: str) -> CheckResult:
    return CheckResult(name, "skip", None, None, f"not measured: {why}")


# --- individual checks --------------------------------------------------------------------
def small_sample(m: dict, plan: dict | None, t: Thresholds) -> CheckResult:
    name, rows = "small_sample", num(m, "rows")
    if rows is None:
        return _skip(name, "no row count ('rows')")
    limit = t.small_sample.min_rows
    if rows < limit:
        return CheckResult(name, "warn", rows, limit,
                           f"only {rows:,.0f} rows: percentiles and rates over fewer than {limit} rows are noise")
    return CheckResult(name, "pass", rows, limit, f"{rows:,.0f} rows measured")


def prefix_cache_off(m: dict, plan: dict | None, t: Thresholds) -> CheckResult:
    name, cfg = "prefix_cache_off", t.prefix_cache_off
    input_tok, tok_rows = num(m, "tokens.input"), num(m, "tokens.rows")
    if input_tok is None or input_tok <= 0 or tok_rows == 0:
        return _skip(name, "no rows report input tokens")
    rows_txt = f"{tok_rows:,.0f} rows" if tok_rows is not None else "the rows"
    cached, frac = num(m, "tokens.cached"), num(m, "tokens.cached_fraction")
    if frac is None and cached is not None:
        frac = cached / input_tok
    if frac is None:
        return CheckResult(name, cfg.unreported, None, cfg.warn_below_cached_fraction,
                           f"cached tokens are not reported on {rows_txt} with input tokens: the cache hit "
                           "rate cannot be verified; scrape the serving pool's cache hit counter and alert on it")
    if frac == 0:
        return CheckResult(name, "fail", 0.0, cfg.warn_below_cached_fraction,
                           f"0 cached tokens across {rows_txt} and {input_tok:,.0f} input tokens: prefix caching "
                           "is off and every turn re-sends the transcript; caching is worth (turns+1)/2 on prefill")
    if frac < cfg.warn_below_cached_fraction:
        return CheckResult(name, "warn", frac, cfg.warn_below_cached_fraction,
                           f"only {_pct(frac)} of input tokens were cached: the harness may break the prefix "
                           "(timestamps, reordered tools, front truncation)")
    return CheckResult(name, "pass", frac, cfg.warn_below_cached_fraction, f"{_pct(frac)} of input tokens cached")


def exception_rate(m: dict, plan: dict | None, t: Thresholds) -> CheckResult:
    name = "exception_rate"
    rate = num(m, "outcomes.exception_rate")
    if rate is None:
        return _skip(name, "no 'outcomes.exception_rate'")
    status, bound = _band_above(rate, t.exception_rate)
    wasted = num(m, "outcomes.exception_sandbox_hours")
    waste = f", {_hours(wasted)} sandbox-hours" if wasted is not None else ""
    advice = "; exceptions almost never pass: alert per task and per node" if status != "pass" else ""
    return CheckResult(name, status, rate, bound, f"{_pct(rate)} of rollouts raised an exception{waste}{advice}")


_SLICE_ADVICE = {
    "model": "filter the corpus by model before training on it",
    "job": "look for a bad image or a full disk in that job first",
}


def _slice_rates(m: dict, key: str, name: str, cfg: SliceRate, what: str) -> CheckResult:
    slices = mapping(m, key)
    scored: list[tuple[int, float, str, float, float | None]] = []
    for label in sorted(slices, key=str):
        rate = num(slices[label], "exception_rate")
        if rate is None:
            continue
        rows = num(slices[label], "rows")
        status, _ = _band_above(rate, cfg)
        if status == "fail" and rows is not None and rows < cfg.min_rows:
            status = "warn"  # too few rows to call it a rate
        scored.append((_RANK[status], rate, str(label), rate, rows))
    if not scored:
        return _skip(name, f"no per-{what} exception rates ('{key}')")
    worst_rank = max(s[0] for s in scored)
    status: Status = next(k for k, v in _RANK.items() if v == worst_rank)
    worst = max(scored, key=lambda s: (s[0], s[1]))
    if status == "pass":
        return CheckResult(name, "pass", worst[1], cfg.warn_above,
                           f"every {what} within budget (highest: {worst[2]} at {_pct(worst[1])})")
    bound = cfg.fail_above if status == "fail" else cfg.warn_above
    bad = [s for s in sorted(scored, key=lambda s: (-s[0], -s[1], s[2])) if s[0] >= _RANK["warn"]]
    listed = ", ".join(f"{s[2]} {_pct(s[3])}" + (f" (n={s[4]:,.0f})" if s[4] is not None else "") for s in bad)
    return CheckResult(name, status, worst[1], bound,
                       f"{what}s above budget: {listed}; {_SLICE_ADVICE[what]}")


def exception_rate_by_model(m: dict, plan: dict | None, t: Thresholds) -> CheckResult:
    return _slice_rates(m, "by_model", "exception_rate_by_model", t.exception_rate_by_model, "model")


def exception_rate_by_job(m: dict, plan: dict | None, t: Thresholds) -> CheckResult:
    return _slice_rates(m, "by_job", "exception_rate_by_job", t.exception_rate_by_job, "job")


#: Tasks named in the message at most.
TASKS_NAMED = 5


def _task_rows(entry: dict) -> float | None:
    """Rollouts a listed task's rate is over (flag known), else all its rollouts."""
    flagged = as_num(entry.get("exception_rate_rows"))
    return flagged if flagged is not None else as_num(entry.get("rows"))


def _listed_tasks(m: dict, cfg: TaskRate) -> list[tuple[float, float, str, dict]]:
    """(rate, exceptions, task_id, entry) of the tasks ``by_task`` lists (``highest_rate`` and
    ``worst``) with enough rows, worst first: highest rate, most exceptions, then task_id."""
    found: dict[str, tuple[float, float, str, dict]] = {}
    for key in ("highest_rate", "worst"):
        listed = get(m, f"by_task.{key}")
        for entry in listed if isinstance(listed, list) else []:
            if not isinstance(entry, dict):
                continue
            rate, rows = as_num(entry.get("exception_rate")), _task_rows(entry)
            if rate is None or rows is None or rows < cfg.min_rows:
                continue
            task_id = str(entry.get("task_id"))
            found.setdefault(task_id, (rate, as_num(entry.get("exceptions")) or 0.0, task_id, entry))
    return sorted(found.values(), key=lambda s: (-s[0], -s[1], s[2]))


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), summed exactly (n is a task's rollout count)."""
    if k <= 0:
        return 1.0
    if p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    return min(1.0, sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1)))


def _beyond_chance(listed: list[tuple[float, float, str, dict]], m: dict, cfg: TaskRate) -> list:
    """The listed tasks whose exception count the fleet-wide rate cannot explain."""
    fleet_rate = num(m, "outcomes.exception_rate")
    judged = num(m, "by_task.tasks_judged") or len(listed) or 1
    if fleet_rate is None:
        return listed
    keep = []
    for s in listed:
        rows = _task_rows(s[3])
        if rows is not None and binomial_tail(int(s[1]), int(rows), fleet_rate) * judged < cfg.max_chance:
            keep.append(s)
    return keep


def _task_text(rate: float, exc: float, task_id: str, entry: dict) -> str:
    rows = _task_rows(entry)
    kind, count = entry.get("top_exception_type"), as_num(entry.get("top_exception_count"))
    counts = f"{exc:,.0f}/{rows:,.0f}" if rows is not None else f"{exc:,.0f}"
    top = f", mostly {kind} ({count:,.0f})" if isinstance(kind, str) and count else ""
    return f"{task_id} {_pct(rate)} ({counts}{top})"


def exception_rate_by_task(m: dict, plan: dict | None, t: Thresholds) -> CheckResult:
    """Any task with >= min_rows rollouts at or above the rate fails / warns.

    The highest rate is ``by_task.max_exception_rate`` (over every task measure judged) when
    measure judged tasks on at least ``min_rows`` rollouts; else the listed tasks' rates.
    """
    name, cfg = "exception_rate_by_task", t.exception_rate_by_task
    if not mapping(m, "by_task"):
        return _skip(name, "no per-task exception rates ('by_task')")
    all_listed = _listed_tasks(m, cfg)
    if not all_listed:
        measured_min, highest = num(m, "by_task.min_rows"), num(m, "by_task.max_exception_rate")
        if measured_min is not None and measured_min >= cfg.min_rows and highest is not None \
                and highest < cfg.warn_at_or_above:
            return CheckResult(name, "pass", highest, cfg.warn_at_or_above,
                               f"no task with {cfg.min_rows}+ rollouts at or above {_pct(cfg.warn_at_or_above)} "
                               f"exceptions (highest: {_pct(highest)})")
        return _skip(name, f"no task with at least {cfg.min_rows} rollouts")
    listed = _beyond_chance(all_listed, m, cfg)
    if not listed:
        return CheckResult(name, "pass", max(s[0] for s in all_listed), cfg.warn_at_or_above,
                           f"no task's exceptions exceed what the fleet rate of "
                           f"{_pct(num(m, 'outcomes.exception_rate') or 0.0)} explains by chance "
                           f"(family-wise {cfg.max_chance:g} over the tasks judged)")
    value = max(s[0] for s in listed)
    status: Status
    if value >= cfg.fail_at_or_above:
        status, bound = "fail", cfg.fail_at_or_above
    elif value >= cfg.warn_at_or_above:
        status, bound = "warn", cfg.warn_at_or_above
    else:
        return CheckResult(name, "pass", value, cfg.warn_at_or_above,
                           f"no task with {cfg.min_rows}+ rollouts at or above {_pct(cfg.warn_at_or_above)} "
                           f"exceptions (highest: {_pct(value)})")
    bad = [s for s in listed if s[0] >= cfg.warn_at_or_above][:TASKS_NAMED]
    named = "; ".join(_task_text(*s) for s in bad) if bad else "none of them is listed in 'by_task'"
    msg = (f"a task with {cfg.min_rows}+ rollouts raised on {_pct(value)} of them (at or above "
           f"{_pct(bound)}); worst: {named}")
    broken, judged, at = num(m, "by_task.tasks_broken"), num(m, "by_task.tasks_judged"), num(m, "by_task.broken_rate")
    if broken is not None and judged is not None and at is not None:
        msg += f"; {broken:,.0f} of {judged:,.0f} tasks raise on {_pct(at)} or more of their rollouts"
    always, share = num(m, "by_task.tasks_all_exceptions"), num(m, "by_task.tasks_all_exceptions_share")
    if always:
        msg += f", {always:,.0f} on every one" + (f" ({_pct(share)} of exception sandbox-hours)" if share is not None else "")
    return CheckResult(name, status, value, bound,
                       msg + ": a task that raises whatever the model does is a bad image or a full disk; "
                       "rule out a model that raises everywhere (by_model), then fix or drop the task")


_MISSING_LABEL = {"reward": "reward", "tokens": "token counts", "turns": "turn count", "trajectory": "trajectory"}
_MISSING_WHY = {
    "reward": "completion is not success, so these rollouts cannot count as useful",
    "tokens": "token rates describe the other rows only",
    "turns": "the context-growth fit describes the other rows only",
    "trajectory": "these rollouts cannot be inspected or trained on",
}


def _missing(field: str) -> Callable[[dict, dict | None, Thresholds], CheckResult]:
    def check(m: dict, plan: dict | None, t: Thresholds) -> CheckResult:
        name = f"missing_{field}"
        count, rows = num(m, f"coverage.missing_{field}"), num(m, "rows")
        if count is None or not rows:
            return _skip(name, f"no 'coverage.missing_{field}' or row count")
        if field == "trajectory" and num(m, "coverage.unknown_trajectory") == rows:
            return _skip(name, "the telemetry does not say whether a trajectory is attached")
        share = count / rows
        status, bound = _band_above(share, getattr(t, name))
        return CheckResult(name, status, share, bound,
                           f"{count:,.0f} of {rows:,.0f} rows ({_pct(share)}) carry no {_MISSING_LABEL[field]}"
                           + (f": {_MISSING_WHY[field]}" if status != "pass" else ""))

    check.__name__ = f"missing_{field}"
    return check


def rejected_rows(m: dict, plan: dict | None, t: Thresholds) -> CheckResult:
    name = "rejected_rows"
    reasons = get(m, "coverage.rejected")
    rows = num(m, "rows")
    if not isinstance(reasons, dict) or rows is None:
        return _skip(name, "no 'coverage.rejected' or row count")
    counts = {str(k): as_num(v) or 0.0 for k, v in reasons.items()}
    total = sum(counts.values())
    share = total / (rows + total) if rows + total else 0.0
    status, bound = _band_above(share, t.rejected_rows)
    detail = ", ".join(f"{k} {v:,.0f}" for k, v in sorted(counts.items()) if v)
    return CheckResult(name, status, share, bound,
                       f"{total:,.0f} input rows rejected ({_pct(share)})" + (f": {detail}" if detail else ""))


def _conc(entry: dict, key: str) -> Any:
    """A concurrency figure of a job slice, nested under 'concurrency' or flat."""
    nested = get(entry, f"concurrency.{key}")
    return nested if nested is not None else get(entry, key)


def cap_binding(m: dict, plan: dict | None, t: Thresholds) -> CheckResult:
    name = "cap_binding"
    scopes = [("fleet", mapping(m, "concurrency"), num(m, "span_s"))]
    for job in sorted(mapping(m, "by_job"), key=str):
        entry = mapping(m, "by_job")[job]
        scopes.append((f"job {job}", {k: _conc(entry, k) for k in ("cap_detected", "time_at_peak_s", "peak", "touches")},
                       as_num(_conc(entry, "span_s"))))
    found: list[tuple[int, float, str, float, float | None]] = []
    for label, conc, span in scopes:
        detected, at_peak = conc.get("cap_detected"), as_num(conc.get("time_at_peak_s"))
        if detected is not True or at_peak is None or not span:
            continue
        share = at_peak / span
        status, _ = _band_above(share, t.cap_binding)
        found.append((_RANK[status], share, label, as_num(conc.get("peak")) or 0.0, as_num(conc.get("touches"))))
    if not found:
        if not any(isinstance(conc.get("cap_detected"), bool) for _, conc, _ in scopes):
            return _skip(name, "no 'concurrency.cap_detected'")
        if not any(conc.get("cap_detected") is True for _, conc, _ in scopes):
            return CheckResult(name, "pass", None, t.cap_binding.warn_above, "no cap detected: the fleet never sat at a ceiling")
        return _skip(name, "cap detected but time at cap or span not measured")
    worst = max(found, key=lambda s: (s[0], s[1]))
    status: Status = next(k for k, v in _RANK.items() if v == worst[0])
    bound = t.cap_binding.fail_above if status == "fail" else t.cap_binding.warn_above
    touches = f", reached {worst[4]:,.0f} separate times" if worst[4] is not None else ""
    msg = f"{worst[2]}: cap of {worst[3]:,.0f} held for {_pct(worst[1])} of the span{touches}"
    if status != "pass":
        msg += ": each time a released batch waits for slots, so the RL step waits"
    return CheckResult(name, status, worst[1], bound, msg)


def cap_recorded(m: dict, plan: dict | None, t: Thresholds) -> CheckResult:
    name = "cap_recorded"
    detected = flag(m, "concurrency.cap_detected")
    if detected is None:
        return _skip(name, "no 'concurrency.cap_detected'")
    peak, cap = num(m, "concurrency.peak"), num(m, "concurrency.configured_cap")
    if not detected:
        return CheckResult(name, "pass", cap, None, "no cap detected in the data")
    if cap is None:
        return CheckResult(name, "warn", None, None,
                           f"the peak of {peak or 0:,.0f} behaves like a cap but no configured cap is recorded: "
                           "write it down, or it becomes an unexplained throughput plateau")
    return CheckResult(name, "pass", cap, None, f"configured cap {cap:,.0f} recorded")


def duty_cycle(m: dict, plan: dict | None, t: Thresholds) -> CheckResult:
    name = "duty_cycle"
    duty = num(m, "concurrency.duty")
    mean, peak = num(m, "concurrency.mean"), num(m, "concurrency.peak")
    if duty is None and mean is not None and peak:
        duty = mean / peak
    if duty is None:
        return _skip(name, "no 'concurrency.duty'")
    status, bound = _band_below(duty, t.duty_cycle)
    msg = f"mean concurrency is {_pct(duty)} of peak"
    if mean is not None and peak is not None:
        msg = f"mean concurrency {mean:,.1f} is {_pct(duty)} of peak {peak:,.0f}"
    if status != "pass":
        msg += (f": capacity bought at peak idles {_pct(1 - duty)} of the time; buy the peak on spot/"
                "preemptible capacity, not reserved, and never size the pool to the mean")
    return CheckResult(name, status, duty, bound, msg)


def hold_tail(m: dict, plan: dict | None, t: Thresholds) -> CheckResult:
    name = "hold_tail"
    median, p99 = num(m, "hold_s.median"), num(m, "hold_s.p99")
    if median is None or p99 is None or median <= 0:
        return _skip(name, "no 'hold_s.median' / 'hold_s.p99'")
    ratio = p99 / median
    status, bound = _band_above(ratio, t.hold_tail)
    msg = f"hold p99 {p99:,.0f} s is {ratio:.1f}x the median {median:,.0f} s"
    if status != "pass":
        msg += ": admission tuned to the median stalls batches; admit against the timeout ceiling and reclaim early"
    return CheckResult(name, status, ratio, bound, msg)


def sandbox_hours_per_pass(m: dict, plan: dict | None, t: Thresholds) -> CheckResult:
    name = "sandbox_hours_per_pass"
    value = num(m, "outcomes.sandbox_hours_per_pass")
    if value is None:
        passed, rewarded = num(m, "outcomes.passed"), num(m, "outcomes.rewarded")
        if passed == 0 and rewarded:
            return CheckResult(name, "fail", None, t.sandbox_hours_per_pass.fail_above,
                               f"no rollout passed out of {rewarded:,.0f} rewarded")
        return _skip(name, "no 'outcomes.sandbox_hours_per_pass'")
    status, bound = _band_above(value, t.sandbox_hours_per_pass)
    return CheckResult(name, status, value, bound, f"{_hours(value)} sandbox-hours per passing rollout")


def build_share(m: dict, plan: dict | None, t: Thresholds) -> CheckResult:
    name = "build_share"
    share = num(m, "phases.environment_setup.share_of_hold")
    if share is None:
        share = num(m, "phases.environment_setup.share")
    if share is None:
        return _skip(name, "no phase timings ('phases.environment_setup.share_of_hold')")
    status, bound = _band_above(share, t.build_share)
    msg = f"environment setup/build takes {_pct(share)} of the hold"
    if status != "pass":
        msg += ": pin base images and pre-pull them"
    return CheckResult(name, status, share, bound, msg)


def plan_covers_peak(m: dict, plan: dict | None, t: Thresholds) -> CheckResult:
    name = "plan_covers_peak"
    if plan is None:
        return _skip(name, "no plan given")
    target = num(plan, "target.concurrency")
    peak, mean = num(m, "concurrency.peak"), num(m, "concurrency.mean")
    if target is None or peak is None:
        return _skip(name, "no 'target.concurrency' in the plan or no measured peak")
    source = get(plan, "target.source")
    via = f" ({source})" if isinstance(source, str) else ""
    if mean is not None and target < mean:
        return CheckResult(name, "fail", target, mean,
                           f"planned concurrency {target:,.0f}{via} is below the measured mean {mean:,.1f}: "
                           "the fleet cannot keep up")
    if target < peak:
        return CheckResult(name, "warn", target, peak,
                           f"planned concurrency {target:,.0f}{via} is below the measured peak {peak:,.0f}: a pool "
                           "built below peak turns every batched step into a queue")
    return CheckResult(name, "pass", target, peak, f"planned concurrency {target:,.0f}{via} covers the peak {peak:,.0f}")


def sweep_self_check(m: dict, plan: dict | None, t: Thresholds) -> CheckResult:
    name = "sweep_self_check"
    verdict = get(m, "concurrency.self_check")
    if isinstance(verdict, dict):
        verdict = verdict.get("ok")
    if isinstance(verdict, bool):
        return CheckResult(name, "pass" if verdict else "fail", None, None,
                           "area under the concurrency curve equals the sum of holds" if verdict
                           else "area under the concurrency curve differs from the sum of holds: a sweep bug")
    area, holds = num(m, "concurrency.area_s"), num(m, "sandbox_s")
    if area is None or holds is None:
        return _skip(name, "no 'concurrency.self_check' or 'concurrency.area_s'")
    rel = abs(area - holds) / max(abs(holds), 1e-12)
    tol = t.sweep_self_check.rel_tolerance
    ok = rel <= tol
    return CheckResult(name, "pass" if ok else "fail", rel, tol,
                       f"area {area:,.1f} s vs sum of holds {holds:,.1f} s (relative difference {rel:.2e})")


#: Every check, in report order; the thresholds section of each has the same name.
CHECKS: tuple[Callable[[dict, dict | None, Thresholds], CheckResult], ...] = (
    small_sample,
    prefix_cache_off,
    exception_rate,
    exception_rate_by_model,
    exception_rate_by_job,
    exception_rate_by_task,
    _missing("reward"),
    _missing("tokens"),
    _missing("turns"),
    _missing("trajectory"),
    rejected_rows,
    cap_binding,
    cap_recorded,
    duty_cycle,
    hold_tail,
    sandbox_hours_per_pass,
    build_share,
    plan_covers_peak,
    sweep_self_check,
)


def run_checks(measure: dict, plan: dict | None = None, thresholds: Thresholds | None = None) -> list[CheckResult]:
    """Run every check on a `measure --json` summary (and a `plan --json` one if given).

    Missing inputs give ``skip``, never an exception; a check disabled in the thresholds also skips.
    """
    t = thresholds if thresholds is not None else Thresholds.default()
    # In-memory summaries may hold NumPy scalars/arrays: read them as their JSON values.
    m = to_jsonable(measure) if isinstance(measure, dict) else {}
    p = to_jsonable(plan) if isinstance(plan, dict) else None
    results = []
    for check in CHECKS:
        section: Section = getattr(t, check.__name__)
        if not section.enabled:
            results.append(CheckResult(check.__name__, "skip", None, None, "disabled in thresholds"))
        else:
            results.append(check(m, p, t))
    return results


def exit_code(results: list[CheckResult], strict: bool = False) -> int:
    """0 when nothing fails (warnings allowed unless ``strict``), else 1."""
    statuses = {r.status for r in results}
    if "fail" in statuses or (strict and "warn" in statuses):
        return 1
    return 0


def worst_status(results: list[CheckResult]) -> Status:
    """The most severe status among ``results`` (``skip`` when empty)."""
    return max((r.status for r in results), key=_RANK.__getitem__, default="skip")
