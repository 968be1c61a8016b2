"""Load the report's inputs: stage summaries parsed into their models (the measure summary through
``measure.load.load_measure``, the one loader of measure input)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

from sandbox_fleet import contract
from sandbox_fleet.errors import InputError
from sandbox_fleet.measure.load import load_measure
from sandbox_fleet.measure.model import MeasureSummary

__all__ = ["check_same_source", "load_backtest", "load_measure", "load_optimize", "load_plan", "load_simulate"]

if TYPE_CHECKING:
    from sandbox_fleet.backtest.model import BacktestSummary
    from sandbox_fleet.optimize.model import OptimizeSummary
    from sandbox_fleet.plan.model import PlanSummary
    from sandbox_fleet.simulate.model import SimulateSummary


def load_plan(path: str | Path) -> PlanSummary:
    """A ``plan --json`` file as its model (InputError when it is not a plan)."""
    from sandbox_fleet.plan.model import PlanSummary  # each model is built only when its kind is read

    return contract.load(PlanSummary, path)


def load_optimize(path: str | Path) -> OptimizeSummary:
    """An ``optimize --json`` file as its model (InputError when it is not one)."""
    from sandbox_fleet.optimize.model import OptimizeSummary

    return contract.load(OptimizeSummary, path)


def load_simulate(path: str | Path) -> SimulateSummary:
    """A ``simulate --json`` file as its model (InputError when it is not one)."""
    from sandbox_fleet.simulate.model import SimulateSummary

    return contract.load(SimulateSummary, path)


def load_backtest(path: str | Path) -> BacktestSummary:
    """A ``backtest --json`` file as its model (InputError when it is not one)."""
    from sandbox_fleet.backtest.model import BacktestSummary

    return contract.load(BacktestSummary, path)


def check_same_source(measure: MeasureSummary, made_from: dict[str, Optional[str]], allow_mismatch: bool = False) -> None:
    """Refuse (InputError) an output made from another measure summary than ``measure``.

    ``made_from`` maps each output (``"`plan` p.json"``) to the fingerprint it carries; an output
    without one (older versions, a scenario-based optimize) cannot be compared and is accepted.
    """
    if allow_mismatch:
        return
    here = contract.fingerprint(measure)
    for what, theirs in made_from.items():
        if theirs is not None and theirs != here:
            raise InputError(f"{what}: made from another measure summary ({theirs}) than the input given here ({here}); "
                             "remake it from this input, or pass `allow_mismatch` to put them side by side")
