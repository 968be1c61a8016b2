"""What ``sandbox-fleet backtest --json`` writes: the typed model (``kind = "backtest"``).

To add a figure, add a nullable field here, fill it in ``backtest.run`` and regenerate
``docs/schemas/backtest.schema.json`` (``sandbox-fleet schema backtest``).
"""

from __future__ import annotations

from typing import ClassVar, Optional

from pydantic import ConfigDict, Field

from sandbox_fleet.contract import Block, Summary


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
