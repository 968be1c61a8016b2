"""The report, the checks, the Prometheus metrics and the terminal text read the stage models by attribute.

A consumer that names a figure the model lacks raises AttributeError the first time its code runs
(and a type checker flags it). These tests run every consumer on real producer output, so each
read runs once with its block present; then with each optional block removed in turn, with every
block present but every figure in it null, and with nothing measured at all, so every "not
measured" branch runs too. Sweep metrics stay user-chosen dotted paths (``contract.has_path``).
"""

from __future__ import annotations

import copy
import io
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from sandbox_fleet.contract import has_path
from sandbox_fleet.measure.model import MeasureSummary
from sandbox_fleet.plan.model import PlanSummary
from sandbox_fleet.simulate.model import SimulateSummary
from summaries import as_measure, as_plan, as_simulate


def _all_consumers(measure: MeasureSummary, plan: PlanSummary | None, sim: SimulateSummary | None) -> tuple:
    """Every reader of the summaries, run once: (check results, report HTML, metrics text, terminal text).

    The terminal text holds the purchase order's lines too when there is a plan."""
    from sandbox_fleet.plan.render import plan_lines
    from sandbox_fleet.report import build_report
    from sandbox_fleet.report.prometheus import metrics_text
    from sandbox_fleet.report.thresholds import Thresholds
    from summaries import checks_of

    results = checks_of(measure, plan)
    page = build_report(measure, plan, sim)
    text = _terminal_text(measure, sim) + ("" if plan is None else "\n".join(plan_lines(as_plan(plan))))
    return results, page, metrics_text(measure, plan, results, Thresholds.default()), text


def _terminal_text(measure: MeasureSummary | dict, sim: SimulateSummary | dict | None) -> str:
    """What ``measure`` and ``simulate`` print without ``--json``."""
    from rich.console import Console

    from sandbox_fleet.measure.render import render_summary as render_measure
    from sandbox_fleet.simulate.render import render_summary as render_sim

    console = Console(record=True, width=120, file=io.StringIO())
    render_measure(as_measure(measure), console)
    if sim is not None:
        render_sim(as_simulate(sim), console)
    return console.export_text()


def _value(text: str, label: str) -> str:
    """The rest of the first terminal line that starts with ``label`` (a table row's value cells)."""
    cells = (x.strip().strip("│").strip() for x in text.splitlines())
    line = next(x for x in cells if x.startswith(label))
    return line[len(label):].strip().strip("│").strip()


def _hollow(model: BaseModel, keep_blocks: bool) -> BaseModel:
    """``model`` with every optional figure null; optional blocks kept (their figures null) or dropped.

    Required fields keep their value (hollowed when a block), so the result is still valid.
    """
    update: dict[str, Any] = {}
    for name, field in type(model).model_fields.items():
        value = getattr(model, name)
        if isinstance(value, BaseModel) and (keep_blocks or field.is_required()):
            update[name] = _hollow(value, keep_blocks)
        elif isinstance(value, dict) and keep_blocks and value and all(isinstance(v, BaseModel) for v in value.values()):
            update[name] = {k: _hollow(v, keep_blocks) for k, v in value.items()}
        elif not field.is_required():
            update[name] = None
    return model.model_copy(update=update)


def _optional_paths(doc: Any, path: tuple = ()) -> Iterator[tuple]:
    """Paths (keys and list indices) to every object, and list of objects, in a summary's JSON.

    A map's or a list's first entry stands for the others; lists of numbers are left to the
    every-figure-null test.
    """
    items = list(doc.items()) if isinstance(doc, dict) else list(enumerate(doc)) if isinstance(doc, list) else []
    seen_map_entry = False
    for key, value in items:
        is_block = isinstance(value, dict) or (isinstance(value, list) and any(isinstance(v, dict) for v in value))
        if not is_block or not value:
            continue
        if isinstance(doc, list) or (isinstance(value, dict) and path and _is_map_entry(path)):
            if seen_map_entry:
                continue
            seen_map_entry = True
        yield (*path, key)
        yield from _optional_paths(value, (*path, key))


#: the maps of a summary (keyed by model, job, phase, provider name): their entries are alike
_MAPS = {"by_model", "by_job", "phases", "rent"}


def _is_map_entry(path: tuple) -> bool:
    return str(path[-1]) in _MAPS


def _without(doc: dict, path: tuple) -> dict:
    out = copy.deepcopy(doc)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = None
    return out


def _variants(model: type[BaseModel], doc: dict) -> Iterator[tuple[str, Any]]:
    """``doc`` with one optional block (or list) null at a time: the ones its model allows to be absent."""
    for path in _optional_paths(doc):
        try:
            yield ".".join(map(str, path)), model.model_validate(_without(doc, path))
        except ValidationError:
            continue  # required (plan.target, a map's entry): never absent in a valid summary


def _broken_task_telemetry():
    """The healthy corpus (tests/producers.py) with every rollout of task-00 raising, and what a
    reader reports on the way (rejected rows, a warning): fills by_task.worst and coverage.rejected."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from producers import healthy_telemetry

    tel = healthy_telemetry()
    table = tel.rollouts
    broken = pc.equal(table["task_id"], "task-00")
    for name, value in (("has_exception", True), ("exception_type", "ImagePullError")):
        i = table.schema.get_field_index(name)
        column = pc.if_else(broken, pa.scalar(value, table.schema.field(i).type), table[name])
        table = table.set_column(i, table.schema.field(i), column)
    tel.rollouts = table
    tel.rejected = {"finished_before_started": 3, "unparseable_time": 2}
    tel.warnings = ["3 rows finished before they started"]
    return tel


@pytest.fixture(scope="module")
def summaries(produced):
    from sandbox_fleet.plan import PlanOptions
    from summaries import measure_json, plan_json

    measured = measure_json(_broken_task_telemetry())
    plan = plan_json(measured, PlanOptions(node_type="aws-m6id.24xlarge", price_tier="spot", prefix_break=0.1))
    # what plan --backtest adds (plan.backtest_line), so the purchase order's backtest line is read too
    plan["backtest"] = {"path": "bt.json", "makespan_error": -0.05, "within_interval": True, "drifted": False,
                        "drifted_quantities": [], "line": "simulator error on this telemetry: -5.0% (makespan), "
                                                          "constants drifted: no"}
    return (MeasureSummary.model_validate(measured), PlanSummary.model_validate(plan),
            SimulateSummary.model_validate(produced.simulate))


def test_producer_output_carries_every_block_the_consumers_read(summaries):
    m, plan, sim = summaries
    # nothing but the publication note (and slice_cut: set only past columns.TOP_SLICES models or jobs,
    # read by no consumer, its warning printed with the others) is absent, so every reader below
    # runs with its block present
    assert [k for k in MeasureSummary.model_fields if getattr(m, k) is None] == ["published", "slice_cut"]
    assert m.by_job and m.by_model and m.by_task.worst and m.phases and m.concurrency.series and m.hold_s.histogram
    assert m.coverage.rejected and m.warnings and m.exceptions.by_type and m.tasks.requests and m.hold_s.by_outcome.exception
    # warm_pool: set only for a released batch (this corpus is open arrivals); its one reader, --emit-k8s,
    # is run on a plan with it in tests/plan/test_k8s.py
    assert [k for k in PlanSummary.model_fields if getattr(plan, k) is None] == ["warm_pool"]
    assert plan.cost.rent and plan.nodes.alternatives and plan.caching.saving_by_turns_with_breaks
    assert sim.concurrency is not None and sim.queue_wait_s is not None and sim.lost_sandbox_hours is not None


def test_every_consumer_runs_on_full_summaries(summaries):
    from sandbox_fleet.plan.render import plan_lines

    m, plan, sim = summaries
    results, page, metrics, text = _all_consumers(m, plan, sim)
    assert {r.status for r in results} <= {"pass", "warn", "fail", "skip"}
    assert 'id="jobs"' in page and 'id="rent"' in page and 'id="simulate"' in page
    assert 'class="missing"' not in page  # every chart drawn
    assert "sandbox_fleet_plan_target_concurrency" in metrics and 'sandbox_fleet_job_rollouts{rl_job=' in metrics
    assert plan_lines(as_plan(plan)) == plan_lines(as_plan(plan.to_json()))  # the model and its JSON read the same
    # the terminal summaries: every block printed, and the model and its JSON print the same
    assert "Tasks with the most exceptions" in text and "Concurrency by job" in text and "rejected: " in text
    assert "queue wait mean / p50 / p99 (s)" in text
    assert text.startswith(_terminal_text(m.to_json(), sim.to_json()))
    assert text.endswith("\n".join(plan_lines(as_plan(plan.to_json()))))


def test_nothing_measured_skips_every_check_and_writes_no_metric():
    m = MeasureSummary.build()
    results, page, metrics, text = _all_consumers(m, None, None)
    assert [r.status for r in results] == ["skip"] * len(results)
    assert metrics == "\n"  # a figure not carried is left out, never written as 0
    from sandbox_fleet.report.charts import TITLES

    assert all(f"<strong>{title}</strong>: not measured" in page for key, title in TITLES.items())
    assert _value(text, "rollouts") == "-" and _value(text, "span") == "- s (- d)"  # dashes, never 0
    assert "steps: no burst structure (None)" in text
    assert "simulate:  (seed -)" in _terminal_text(m, SimulateSummary.build())
    # the blocks only some runs carry (RL steps, an inference pool, workloads), present and empty
    blocks = {name: {} for name in ("concurrency", "hold_s", "outcomes", "queue_wait_s", "lost_sandbox_hours",
                                    "step_s", "inference")}
    sim_text = _terminal_text(m, SimulateSummary.build(**blocks, workloads={"rl": {}}))
    assert _value(sim_text, "trainer idle") == "-" and _value(sim_text, "inference: replicas / GPUs / calls") == "- / - / -"
    assert "rl (pool None): -/- completed, mean wait - s, - sandbox-h" in sim_text


def test_blocks_present_with_every_figure_null(summaries):
    m, plan, sim = summaries
    hollow_m, hollow_p, hollow_s = (_hollow(x, keep_blocks=True) for x in summaries)
    assert hollow_m.concurrency is not None and hollow_m.concurrency.peak is None
    results, _page, _metrics, text = _all_consumers(hollow_m, hollow_p, hollow_s)
    assert {r.name for r in results if r.status != "skip"} <= {"plan_covers_peak", "cap_binding"}
    assert _value(text, "peak") == "-" and _value(text, "utilisation") == "-"  # null figures print "-"
    assert _value(text, "outcome: exception").split() == ["-"] * 5
    results, _page, _metrics, text = _all_consumers(_hollow(m, keep_blocks=False), _hollow(plan, keep_blocks=False),
                                                  _hollow(sim, keep_blocks=False))
    assert [r.status for r in results if r.name != "plan_covers_peak"] == ["skip"] * (len(results) - 1)


@pytest.fixture
def fast_html(monkeypatch):
    """The report without Plotly's styling and serialising (every figure is still built from the
    summary, its layout arguments computed): many reports per test."""
    import plotly.offline

    from sandbox_fleet.report import charts, html, plan_sections

    monkeypatch.setattr(html.pio, "to_html", lambda fig, **kw: "")
    monkeypatch.setattr(plotly.offline, "get_plotlyjs", lambda: "")
    for module in (charts, plan_sections):
        monkeypatch.setattr(module, "_layout", lambda fig, title, **axes: fig)


def test_each_measure_block_absent_in_turn(summaries, fast_html):
    m, plan, _ = summaries
    variants = list(_variants(MeasureSummary, m.to_json()))
    assert len(variants) > 30 and "concurrency.self_check" in dict(variants) and "hold_s.by_outcome" in dict(variants)
    for where, variant in variants:
        try:
            _all_consumers(variant, plan, None)
        except Exception as exc:
            pytest.fail(f"measure without {where}: {exc!r}")


def test_each_plan_and_simulate_block_absent_in_turn(summaries, fast_html):
    m, plan, sim = summaries
    for where, variant in _variants(PlanSummary, plan.to_json()):
        try:
            _all_consumers(m, variant, None)
        except Exception as exc:
            pytest.fail(f"plan without {where}: {exc!r}")
    for where, variant in _variants(SimulateSummary, sim.to_json()):
        try:
            _all_consumers(m, None, variant)
        except Exception as exc:
            pytest.fail(f"simulate without {where}: {exc!r}")


def test_plan_text_from_real_plans(produced):
    """The purchase order prints for the plans ``plan`` makes (default options, a GPU pool, rent)."""
    from sandbox_fleet.plan import PlanOptions
    from sandbox_fleet.plan.render import plan_lines
    from summaries import plan_json

    for measured in (produced.fleet, produced.mixed):
        for opts in (PlanOptions(), PlanOptions(price_tier="spot", prefix_break=0.2)):
            lines = plan_lines(as_plan(plan_json(measured, opts)))
            assert lines[0].startswith("PURCHASE ORDER") and any(x.startswith("Line 4: cost") for x in lines)


def test_default_sweep_metrics_are_simulator_figures():
    from sandbox_fleet.sweep.aggregate import DEFAULT_METRICS

    for metric in DEFAULT_METRICS:
        # lost_sandbox_hours.total is the sweep's own sum of the lost_sandbox_hours parts
        assert has_path(SimulateSummary, metric) or metric == "lost_sandbox_hours.total", metric


def test_has_path_refuses_what_drifted():
    assert not has_path(MeasureSummary, "concurrency.area_s")
    assert not has_path(MeasureSummary, "turns.median")
    assert not has_path(MeasureSummary, "tasks.bundle_bytes.median")
    assert has_path(MeasureSummary, "by_model.any-model.exception_rate")  # a map takes any key
    assert not has_path(MeasureSummary, "rows.more")  # a scalar ends the path
    assert has_path(MeasureSummary, "tasks.bundle_bytes_median")
