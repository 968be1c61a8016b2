"""File-level entry points behind `sandbox-fleet report` and `sandbox-fleet check`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from sandbox_fleet.report.checks import CheckResult, run_checks
from sandbox_fleet.report.inputs import check_same_source, load_backtest, load_optimize, load_plan, load_simulate
from sandbox_fleet.report.thresholds import load_thresholds

if TYPE_CHECKING:  # Rich only to print the table (check --json prints none)
    from rich.console import Console

    from sandbox_fleet.measure.model import MeasureSummary


def report_files(
    measure: MeasureSummary,
    output: str | Path,
    plan: str | Path | None = None,
    simulate: str | Path | None = None,
    thresholds: str | Path | None = None,
    title: str | None = None,
    optimize: str | Path | None = None,
    allow_mismatch: bool = False,
    backtest: str | Path | None = None,
    previous: str | Path | None = None,
    command: str | None = None,
) -> Path:
    """Read the other stages' summaries, write the HTML report of ``measure`` (the model, e.g. from
    ``measure.load.load_measure``) to ``output``, return its path.

    Every input is read and validated before anything is written. ``title`` defaults to
    ``report.html.DEFAULT_TITLE``; ``backtest``: a ``backtest --json`` file (its section and the drift gate);
    ``previous``: an earlier ``plan --json`` (the decision block says what changed since);
    ``command``: the command line shown in the page's footer.
    A plan or optimize summary made from another measure summary is refused unless ``allow_mismatch``.
    """
    from sandbox_fleet.report.html import DEFAULT_TITLE, write_report  # Plotly: only when writing HTML

    t = load_thresholds(thresholds)
    plan_s = load_plan(plan) if plan is not None else None
    sim_s = load_simulate(simulate) if simulate is not None else None
    opt_s = load_optimize(optimize) if optimize is not None else None
    check_same_source(measure, {
        **({f"`plan` {plan}": plan_s.input.fingerprint if plan_s.input else None} if plan_s is not None else {}),
        **({f"`optimize` {optimize}": opt_s.input_fingerprint} if opt_s is not None else {}),
    }, allow_mismatch)
    bt = load_backtest(backtest) if backtest is not None else None
    old = load_plan(previous) if previous is not None else None
    return write_report(output, measure, plan_s, sim_s, DEFAULT_TITLE if title is None else title, t, opt_s, bt, old,
                        command)


def check_files(
    measure: MeasureSummary,
    plan: str | Path | None = None,
    thresholds: str | Path | None = None,
    *,
    metrics_out: str | Path | None = None,
    rules_out: str | Path | None = None,
    allow_mismatch: bool = False,
    backtest: str | Path | None = None,
    serving_rules: bool = False,
    simulate: str | Path | None = None,
    dashboard_out: str | Path | None = None,
) -> list[CheckResult]:
    """Run every check on ``measure`` (the model, e.g. from ``measure.load.load_measure``) and the
    other stages' summaries read from files; with ``simulate``, also ``simulation_steady`` on a
    ``simulate --json`` summary (an unstable run fails).

    With ``metrics_out`` / ``rules_out``, also write the figures as Prometheus metrics and the
    gates as alerting rules (see :mod:`sandbox_fleet.report.prometheus`), before returning;
    ``serving_rules`` adds the serving pool's rules (vLLM / SGLang metrics, the plan's thresholds);
    ``dashboard_out``: a Grafana dashboard over the metrics (the thresholds as its colour steps).
    A plan made from another measure summary is refused unless ``allow_mismatch``.
    ``backtest``: a ``backtest --json`` summary file; adds the ``backtest_drift`` gate.
    """
    t = load_thresholds(thresholds)
    bt = load_backtest(backtest) if backtest is not None else None
    plan_s = load_plan(plan) if plan is not None else None
    if plan_s is not None:
        check_same_source(measure, {f"`plan` {plan}": plan_s.input.fingerprint if plan_s.input else None}, allow_mismatch)
    sim_s = load_simulate(simulate) if simulate is not None else None
    results = run_checks(measure, plan_s, t, bt, simulate=sim_s)
    if metrics_out is not None or rules_out is not None or serving_rules or dashboard_out is not None:
        from sandbox_fleet.report.prometheus import write_outputs

        write_outputs(measure, plan_s, results, t, metrics_out=metrics_out, rules_out=rules_out,
                      thresholds_source=str(thresholds) if thresholds is not None else "sandbox_fleet/data/checks.toml",
                      serving_rules=serving_rules, dashboard_out=dashboard_out)
    return results


_STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red", "skip": "dim"}


def _cell(x: float | None, name: str) -> str:
    """A check's value or threshold as the report shows it (a share as a percentage: ``check_kinds``)."""
    from sandbox_fleet.report.check_kinds import check_figure

    return check_figure(x, name)


#: Narrower than this, a table's message column is too thin to read: each check becomes a heading
#: line and its message folded under it.
CHECK_TABLE_MIN_WIDTH = 120


def _check_rows(results: list[CheckResult], width: int) -> list[tuple[CheckResult | None, str]]:
    """The narrow layout's lines: ``(result, heading)`` for a check's heading line (as it shows
    uncoloured) and ``(None, line)`` for each line of its message, folded to ``width``."""
    from sandbox_fleet.textout import printable, wrap_line

    rows: list[tuple[CheckResult | None, str]] = []
    for r in results:
        figures = ", ".join(x for x in (f"value {_cell(r.value, r.name)}" if r.value is not None else "",
                                        f"threshold {_cell(r.threshold, r.name)}" if r.threshold is not None else "") if x)
        rows.append((r, f"{r.status.upper():<4} {r.name}" + (f" ({figures})" if figures else "")))
        rows += [(None, line) for line in wrap_line(f"     {printable(r.message)}", width)]  # names in it: controls shown
    return rows


def _counts_line(results: list[CheckResult]) -> str:
    counts = {s: sum(r.status == s for r in results) for s in ("fail", "warn", "pass", "skip")}
    return ", ".join(f"{n} {s}" for s, n in counts.items())


def _check_lines(results: list[CheckResult], console: Console) -> None:
    from rich.markup import escape

    for r, text in _check_rows(results, console.width):
        if r is None:
            console.print(text, markup=False, highlight=False, soft_wrap=True)
        else:  # the status word in its colour, the rest as text
            status, rest = text[:4], text[5 + len(r.name):]
            console.print(f"[{_STYLE[r.status]}]{status}[/] {escape(r.name)}{rest}", highlight=False, soft_wrap=True)


def print_checks(results: list[CheckResult], console: Callable[[], Console]) -> None:
    """``render_checks`` on the console ``console()`` makes, or, where Rich would print the narrow
    layout without colour (stdout not a terminal: CI, a pipe, a file), the same bytes without
    importing Rich (~0.1 CPU-s of ``check``'s start-up); tests/test_terminal_width.py compares both."""
    from sandbox_fleet.textout import plain_safe, plain_stdout_width, print_lines

    width = plain_stdout_width()
    if width is not None and width < CHECK_TABLE_MIN_WIDTH:
        rows = _check_rows(results, width)
        counts = _counts_line(results)  # printed without soft wrap: Rich would fold it past the width
        # uncoloured, a heading shows its text unless it holds what Rich reads as markup
        if len(counts) <= width and all(plain_safe(text) and (r is None or "[" not in text) for r, text in rows):
            print_lines([text for _, text in rows] + [counts], console)
            return
    render_checks(results, console())


def render_checks(results: list[CheckResult], console: Console) -> None:
    """Check results as a terminal table, worst news first in each row's status column; on a
    terminal narrower than ``CHECK_TABLE_MIN_WIDTH``, one heading line per check and its message."""
    from rich.markup import escape as markup_escape

    from sandbox_fleet.termtable import grid
    from sandbox_fleet.textout import printable

    def escape(text: str) -> str:  # messages quote model and job names: controls shown, never markup
        return markup_escape(printable(text))

    if console.width < CHECK_TABLE_MIN_WIDTH:
        _check_lines(results, console)
        console.print(_counts_line(results))
        return
    table = grid(None, ("status", "check", "value", "threshold", "message"), left=("status", "check", "message"),
                 fold=("message",))
    for r in results:
        table.add_row(f"[{_STYLE[r.status]}]{r.status}[/]", escape(r.name), _cell(r.value, r.name),
                      _cell(r.threshold, r.name), escape(r.message))
    console.print(table)
    console.print(_counts_line(results))
