"""Every figure a consumer reads by name exists in its producer's model.

The keys drifted once (``plan`` read ``tasks.bundle_bytes.median`` and ``turns.median``, a check read
``concurrency.area_s``: nothing wrote them, so they silently read as "not measured"). Here every
literal path the report reads from a measure summary, a plan or a simulation, and every default
sweep metric, is resolved against the model (``contract.has_path``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from sandbox_fleet.contract import has_path
from sandbox_fleet.measure.model import MeasureSummary, Steps
from sandbox_fleet.plan.model import PlanSummary
from sandbox_fleet.simulate.model import SimulateSummary

REPORT = Path(__file__).resolve().parents[1] / "src" / "sandbox_fleet" / "report"
#: the variable a report function keeps each input in -> its model
HOLDERS = {"m": MeasureSummary, "plan": PlanSummary, "sim": SimulateSummary}
ACCESSORS = {"get", "num", "mapping", "flag"}


def literal_reads() -> list[tuple[str, str, str]]:
    """(file, holder, dotted path) for every ``get/num/mapping/flag(HOLDER, "a.b")`` in report/."""
    out = []
    for f in sorted(REPORT.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ACCESSORS
                    and len(node.args) == 2 and isinstance(node.args[0], ast.Name) and node.args[0].id in HOLDERS
                    and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
                out.append((f.relative_to(REPORT).as_posix(), node.args[0].id, node.args[1].value))
    return out


def test_the_scan_finds_the_reads():
    reads = literal_reads()
    assert len(reads) > 60 and ("checks/capacity.py", "m", "concurrency.self_check.area_s") in reads


@pytest.mark.parametrize("where,holder,path", literal_reads())
def test_report_reads_only_keys_the_producer_writes(where, holder, path):
    assert has_path(HOLDERS[holder], path), f"report/{where} reads {holder}[{path!r}], which its model lacks"


def test_report_tables_name_real_keys():
    from sandbox_fleet.report import tables

    for _, path, _ in tables.PLAN_ROWS:
        assert has_path(PlanSummary, path), path
    for _, path, _ in tables.SIM_ROWS:
        assert has_path(SimulateSummary, path), path
    for _, path, _ in tables.STEP_ROWS:
        assert has_path(Steps, path), path


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
