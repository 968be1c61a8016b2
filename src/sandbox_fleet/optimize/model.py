"""What ``sandbox-fleet optimize --json`` writes: the cheapest configuration meeting a target.

To add a figure: add a nullable field here, fill it in ``optimize.search`` and regenerate
``docs/schemas/optimize.schema.json`` (``sandbox-fleet schema optimize``).
"""

from __future__ import annotations

from typing import ClassVar, Optional

from pydantic import ConfigDict

from sandbox_fleet.contract import Block, Summary


class OptimizeTarget(Block):
    """The target: passing trajectories per hour, or an RL step time at a batch."""

    model_config = ConfigDict(title="Target")  # the published schema name

    passing_per_hour: Optional[float] = None
    batch: Optional[int] = None
    train_s: Optional[float] = None
    max_step_s: Optional[float] = None
    pass_rate: float
    scale: float


class Point(Block):
    """One configuration, priced at its cheapest node type and tier."""

    sandbox_cap: int
    node_type: str
    nodes: int
    tier: str
    gpu: str
    replicas: int
    gpus_per_replica: int
    gpus: int
    caching: bool
    kv_offload_gb: float
    usd_per_h: float
    fleet_usd_per_h: float
    gpu_usd_per_h: float
    rework_usd_per_h: float
    passing_per_hour: float
    step_s: Optional[float] = None
    meets: bool


class SetAside(Point):
    """A cheaper feasible point whose re-evaluation did not meet the target with 95% confidence."""

    reevaluated: float  # its re-evaluated mean (passing/h, or step seconds with --batch)
    bound: float  # the confidence bound that missed


class RunnerUp(Point):
    """A cheaper point the screen put just below the target, re-run at confirmation length."""

    reevaluated: float
    bound: float
    bought: bool  # its bound met the target: it replaced the winner


class Winner(Point):
    """The winner re-simulated with more replications (common seeds run.seed + 0..n-1).

    Bought only if ``passing_per_hour_lower`` (``step_s_upper`` with ``--batch``), the 95% confidence
    bound of the re-evaluated mean, meets the target; ``stepped_up_from`` lists the cheaper points
    the search found that missed it.
    """

    replications: int
    passing_per_hour_sd: Optional[float] = None
    passing_per_hour_interval: list[float]
    step_s_interval: Optional[list[float]] = None
    meets_on_reevaluation: bool
    passing_per_hour_lower: Optional[float] = None
    step_s_upper: Optional[float] = None
    stepped_up_from: list[SetAside] = []  # noqa: RUF012 (pydantic copies a default per instance)
    #: rollouts of each confirmation run (the slice's with --scale)
    confirmation_rollouts: Optional[int] = None
    #: the fewest holds per sandbox in a confirmation run's steady window
    holds_per_sandbox: Optional[float] = None
    #: the cheaper near-miss re-run at confirmation length (null: none was near)
    runner_up: Optional[RunnerUp] = None
    #: root mean square of each replication's own standard error of passing/h over its steady window
    #: (batch means); the one-run interval uses the larger of it and ``passing_per_hour_sd``
    passing_per_hour_run_se: Optional[float] = None


class OptimizeSummary(Summary):
    """``sandbox-fleet optimize INPUT --json``."""

    KIND: ClassVar[str] = "optimize"
    VERSION: ClassVar[int] = 3  # 2: search_best, the winner's confidence bound and stepped_up_from; 3: input_fingerprint, confirmation length, runner_up

    input: str
    #: ``contract.fingerprint`` of the measure summary searched from; null for a scenario input
    input_fingerprint: Optional[str] = None
    target: OptimizeTarget
    best: Winner
    # The search's cheapest feasible point (its own replications), before confirmation; absent in version 1.
    search_best: Optional[Point] = None
    frontier: list[Point]
    frontier_axis: str
    evaluated: int
    simulations: int
    backend: str
    seed: int
    basis: list[str]
    pruned: dict[str, int]
