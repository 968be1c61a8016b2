"""What ``sandbox-fleet optimize --json`` writes: the cheapest configuration meeting a target.

To add a figure: add a nullable field here, fill it in ``optimize.search`` and regenerate
``docs/schemas/optimize.schema.json`` (``sandbox-fleet schema optimize``).
"""

from __future__ import annotations

from typing import ClassVar, Optional

from sandbox_fleet.contract import Block, Summary


class Target(Block):
    """The target: passing trajectories per hour, or an RL step time at a batch."""

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


class Winner(Point):
    """The winner re-simulated with more replications (common seeds run.seed + 0..n-1)."""

    replications: int
    passing_per_hour_sd: Optional[float] = None
    passing_per_hour_interval: list[float]
    step_s_interval: Optional[list[float]] = None
    meets_on_reevaluation: bool


class OptimizeSummary(Summary):
    """``sandbox-fleet optimize INPUT --json``."""

    KIND: ClassVar[str] = "optimize"
    VERSION: ClassVar[int] = 1

    input: str
    target: Target
    best: Winner
    frontier: list[Point]
    frontier_axis: str
    evaluated: int
    simulations: int
    backend: str
    seed: int
    basis: list[str]
    pruned: dict[str, int]
