"""Load the report's inputs: stage summaries parsed into their models, or telemetry measured on the fly."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from sandbox_fleet import contract
from sandbox_fleet.errors import InputError
from sandbox_fleet.measure.model import MeasureSummary

if TYPE_CHECKING:
    from sandbox_fleet.backtest.model import BacktestSummary
    from sandbox_fleet.optimize.model import OptimizeSummary
    from sandbox_fleet.plan.model import PlanSummary
    from sandbox_fleet.simulate.model import SimulateSummary


def load_measure(paths: list[str | Path], **measure_options: Any) -> MeasureSummary:
    """A measure summary (its model): one ``.json`` file parsed, anything else measured.

    A ``.json`` file must be a measure summary (another kind, or a newer version, is an InputError);
    telemetry (Harbor folders, Parquet, a Harbor ``result.json`` inside a job...) goes through
    ``sandbox_fleet.measure.measure_paths`` with ``measure_options``.
    """
    if not paths:
        raise InputError("no input given: expected a measure --json summary or telemetry paths")
    if len(paths) == 1 and Path(paths[0]).suffix.lower() == ".json" and Path(paths[0]).is_file() \
            and Path(paths[0]).name not in ("result.json", "results.json"):
        return contract.load(MeasureSummary, paths[0])
    from sandbox_fleet.measure import measure_paths

    return contract.parse(MeasureSummary, measure_paths([str(p) for p in paths], **measure_options), "measure summary")


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
