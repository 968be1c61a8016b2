"""A sweep's table as a typed model: what ``sweep --json`` (and ``-o FILE.json``) writes.

Rows are open by design: each carries ``variant``, the swept keys (their dotted scenario names),
each metric with its ``METRIC:sd`` spread and ``unstable`` (runs without a steady state), so their columns depend on the command line. To add a
figure, add a field here, fill it in ``sweep.run.run_sweep`` and regenerate
``docs/schemas/sweep.schema.json``.
"""

from typing import ClassVar, Optional, Union

from sandbox_fleet.contract import Block, Summary

#: a table cell: a swept setting (number, text, "unbounded", a flag) or a metric (null when not measured)
Cell = Union[bool, int, float, str, None]


class KneeGroup(Block):
    """The knee among rows sharing every other swept setting (``fixed``)."""

    fixed: dict[str, Cell]
    knee: Cell = None
    reference: Optional[float] = None
    reference_from: Optional[str] = None
    target_at_knee: Optional[float] = None
    note: Optional[str] = None


class Knee(Block):
    target: str
    over: str
    #: relative tolerance; null when ``within_abs`` is given
    within: Optional[float] = None
    #: absolute tolerance in the target's units (for targets whose best is 0); null when ``within`` is given
    within_abs: Optional[float] = None
    goal: str
    groups: list[KneeGroup]


class SweepSummary(Summary):
    """``sandbox-fleet sweep SCENARIO --vary ... --json``."""

    KIND: ClassVar[str] = "sweep"
    VERSION: ClassVar[int] = 4  # 4: rows' unstable, unstable_rule

    scenario: str
    vary: dict[str, list[Cell]]
    variants: int
    seeds: int
    seed_rule: str
    #: what a row's ``unstable`` counts, and that such a variant is infeasible
    unstable_rule: Optional[str] = None
    metrics: list[str]
    rows: list[dict[str, Cell]]
    knee: Optional[Knee] = None
