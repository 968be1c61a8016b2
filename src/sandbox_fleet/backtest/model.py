"""What ``sandbox-fleet backtest --json`` writes: the typed model (``kind = "backtest"``).

To add a figure, add a nullable field here, fill it in ``backtest.run`` and regenerate
``docs/schemas/backtest.schema.json`` (``sandbox-fleet schema backtest``).
"""

from __future__ import annotations

from typing import ClassVar, Optional

from pydantic import ConfigDict, Field

from sandbox_fleet.contract import Block, Summary, TelemetryFilter
from sandbox_fleet.textout import number


class Figure(Block):
    """One figure of part B: the history's value, the median predicted run and the interval of runs."""

    actual: Optional[float] = None
    predicted: Optional[float] = None
    #: [low, high]: the central ``interval_level`` of single predicted runs (seeds x bootstrap of the calibration rows)
    interval: Optional[list[float]] = None
    #: predicted / actual - 1
    error: Optional[float] = None
    within_interval: Optional[bool] = None


class SplitInfo(Block):
    #: "fraction", "job" or "model"
    by: str
    fraction: Optional[float] = None
    #: the --split-at boundary was moved to the nearest RL step boundary
    moved_to_step: bool = False
    a_rows: int
    b_rows: int
    a_groups: list[str] = Field(default_factory=list)
    b_groups: list[str] = Field(default_factory=list)
    min_rows: int
    #: B's sandbox cap: its measured peak concurrency, as ``simulate --from`` calibrates
    b_cap: int
    a_cap: int


class DriftTest(Block):
    quantity: str
    model: Optional[str] = None
    test: str
    n_a: int
    n_b: int
    statistic: float
    p_value: float
    p_adjusted: float
    effect: float
    effect_name: str
    effect_floor: float
    a_value: float
    b_value: float
    value_name: str
    drifted: bool


class Drift(Block):
    detected: bool
    alpha: float
    correction: str
    tests: list[DriftTest]
    skipped: list[str] = Field(default_factory=list)
    #: models B runs that A does not: their rollouts are predicted from all of A's rows
    b_only_models: list[str] = Field(default_factory=list)
    #: share of B's rollouts of those models
    b_only_share: Optional[float] = None


class PredictedSeries(Block):
    """Concurrency of part B over time (seconds from B's first start): actual and predicted runs."""

    model_config = ConfigDict(title="Series")  # the published schema name

    t_s: list[float]
    actual: list[float]
    predicted: list[float]
    low: list[float]
    high: list[float]


class BacktestSummary(Summary):
    """``sandbox-fleet backtest PATH --json``."""

    KIND: ClassVar[str] = "backtest"
    VERSION: ClassVar[int] = 1

    sources: list[str]
    rows: int
    rejected: dict[str, int] = Field(default_factory=dict)
    split: SplitInfo
    seed: int
    seeds: int
    interval_level: float
    figures: dict[str, Figure]
    #: the same prediction calibrated on B itself: what is left is model error, not drift
    oracle: dict[str, Figure]
    drift: Drift
    series: Optional[PredictedSeries] = None
    #: one line: how far off the prediction was, and whether the constants moved
    verdict: str
    basis: str
    #: what the intervals cover of one more run exchangeable with the predicted ones: (n + 1 - 2k) / (n + 1)
    #: for the k-th lowest and highest of n runs (``interval_level`` when there are runs enough)
    interval_coverage: Optional[float] = None
    #: the telemetry filter the rollouts read were kept by (--model / --since / --until)
    telemetry_filter: Optional[TelemetryFilter] = None


#: the figures the headline leads with: what the replay leaves free to be wrong (label, figure)
LEAD = (("mean concurrency", "mean_concurrency"), ("mean hold", "hold_mean_s"), ("p99 hold", "hold_p99_s"),
        ("peak", "peak"))
#: why the makespan error says little: B's start times are replayed, so the last start is fixed
MAKESPAN_WHY = "B's start times are replayed, so only the holds after its last start move it"
#: a makespan error under this is called near zero by construction
MAKESPAN_NEAR_ZERO = 0.01


def headline(errors: dict[str, tuple[float | None, bool | None]], level: float) -> str:
    """``simulator error on this telemetry: ...``: the errors of the figures that carry information
    (mean concurrency, holds, peak; each with whether the actual fell in its interval), then the
    makespan's and why it is near zero. ``errors``: figure -> (error, within_interval); ``level``:
    the intervals' level. One place for ``backtest``'s verdict and ``plan --backtest``'s line."""
    def one(label: str, name: str, first: bool) -> str | None:
        err, inside = errors.get(name, (None, None))
        if err is None:
            return None
        where = "" if inside is None else f"{'within' if inside else 'outside'}" + (f" its {level:.0%} interval" if first else "")
        cap = "; B's peak is the replay's cap" if name == "peak" else ""
        return f"{label} {signed_pct(err)}" + (f" ({where}{cap})" if where or cap else "")

    parts: list[str] = []
    for label, name in LEAD:
        part = one(label, name, not parts)
        if part:
            parts.append(part)
    mk = errors.get("makespan_s", (None, None))[0]
    if mk is not None:
        near = "near zero by construction: " if abs(mk) < MAKESPAN_NEAR_ZERO else ""
        parts.append(f"makespan {signed_pct(mk)} ({near}{MAKESPAN_WHY})")
    return "simulator error on this telemetry: " + (", ".join(parts) or "n/a")


def signed_pct(x: float | None, none: str = "n/a") -> str:
    """A relative error as a signed percentage; ``none`` when there is none."""
    return number(x, "+.1%", none=none)
