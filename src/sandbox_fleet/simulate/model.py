"""The simulator's run summary as a typed model: what ``simulate`` writes and ``report``/``sweep`` read.

Keys reuse ``measure``'s names where the figure is the same; definitions are in
``simulate.engine.metrics`` and docs/simulate.md. Every figure is nullable: null means the run has no
such figure (``step_s`` without an RL workload), never zero. To add a figure, add a field here,
fill it in ``metrics.summarise`` and regenerate ``docs/schemas/simulate.schema.json``.
"""

from typing import Any, ClassVar, Optional

from pydantic import ConfigDict

from sandbox_fleet.contract import Block, Summary, TelemetryFilter

Num = Optional[float]
Count = Optional[int]


# shares contract.ConcurrencyFigures with measure's Concurrency (a docstring here would enter the schema)
class SimulatedConcurrency(Block):
    model_config = ConfigDict(title="Concurrency")  # the published schema name, as measure's

    mean: Num = None
    peak: Count = None
    touches: Count = None
    time_at_peak_s: Num = None
    span_s: Num = None


# shares contract.HoldFigures with measure's HoldStats (a docstring here would enter the schema)
class SimulatedHoldStats(Block):
    model_config = ConfigDict(title="HoldStats")  # the published schema name, as measure's

    rows: Count = None
    min: Num = None
    median: Num = None
    mean: Num = None
    p90: Num = None
    p99: Num = None
    max: Num = None


# shares contract.OutcomeFigures with measure's Outcomes (a docstring here would enter the schema)
class SimulatedOutcomes(Block):
    model_config = ConfigDict(title="Outcomes")  # the published schema name, as measure's

    rows: Count = None
    completed: Count = None
    exceptions: Count = None
    timeouts: Count = None
    dropped: Count = None
    retried_attempts: Count = None
    exception_rate: Num = None
    timeout_rate: Num = None
    completed_rate: Num = None


class Quantiles(Block):
    mean: Num = None
    p50: Num = None
    p99: Num = None


class LostHours(Block):
    exception: Num = None
    preemption: Num = None


class LittlesLaw(Block):
    mean_in_system: Num = None
    arrival_rate_per_s: Num = None
    mean_time_in_system_s: Num = None


class DynamicSamplingFigures(Block):
    """Dynamic sampling on an RL workload (``simulate.engine.dynamic_sampling``; docs/simulate.md#dynamic-sampling)."""

    workload: Optional[str] = None
    #: B informative groups a step trains on, G rollouts a group; ``round_groups`` null: rounds of the shortfall
    groups: Count = None
    group_size: Count = None
    round_groups: Count = None
    release: Optional[str] = None
    valid_rate: Num = None
    tasks: Count = None
    steps: Count = None
    groups_released: Count = None
    groups_informative: Count = None
    #: informative groups released past B (fixed rounds only; trimmed, not trained)
    groups_trimmed: Count = None
    groups_released_per_step_mean: Num = None
    groups_released_per_step_max: Count = None
    rounds_per_step_mean: Num = None
    rounds_per_step_max: Count = None
    rollouts_per_step_mean: Num = None
    rollouts_per_step_max: Count = None
    #: rollouts a step's first round releases at once (B x G, or round_groups x G)
    first_round_rollouts: Count = None
    #: informative groups / groups released, over the run
    informative_share: Num = None
    #: groups released / (B x steps), and its standard error over the steps
    oversampling_factor: Num = None
    oversampling_factor_se: Num = None
    #: the workload's sandboxes in use at once, at most (the sweep line over its attempts)
    peak: Count = None
    basis: Optional[str] = None


class WorkloadFigures(Block):
    pool: Count = None
    rollouts: Count = None
    completed: Count = None
    queue_wait_s: Optional[Quantiles] = None
    sandbox_hours: Num = None
    #: its class on a pool with ``admission = "priority"`` (null elsewhere)
    priority: Count = None
    #: attempts ended by a preemption: a spot node reclaimed, or evicted by a higher class
    preempted_attempts: Count = None
    #: an RL workload's trainer steps (null for the other kinds)
    step_s: Optional[Quantiles] = None
    #: an RL workload with ``dynamic_sampling``: its rounds, groups and peak
    dynamic_sampling: Optional[DynamicSamplingFigures] = None


class MeanP99(Block):
    mean: Num = None
    p99: Num = None


class P50P99(Block):
    p50: Num = None
    p99: Num = None


class PoolLittlesLaw(Block):
    """Little's law on the inference pool: L (time-average calls in the pool) against lambda x W."""

    mean_in_pool: Num = None
    arrival_rate_per_s: Num = None
    mean_time_in_pool_s: Num = None


class InferenceFigures(Block):
    """The inference pool that served the model calls (``[inference]``); definitions in
    ``simulate.engine.inference.figures``."""

    replicas: Count = None
    gpus: Count = None
    calls: Count = None
    utilisation: Num = None
    mean_batch: Num = None
    queue_wait_s: Optional[MeanP99] = None
    ttft_s: Optional[P50P99] = None
    cache_hit_rate: Num = None
    evicted_gb: Num = None
    input_tokens: Count = None
    prefill_tokens_computed: Count = None
    decode_tokens: Count = None
    littles_law: Optional[PoolLittlesLaw] = None


class SteadyState(Block):
    """Whether the run reached a steady state, and its figures over the steady window (``simulate.engine.steady``)."""

    #: false: the offered work exceeds a resource's capacity or the time in system trends upward
    stable: Optional[bool] = None
    #: closed populations: the binding resource is busy at least 95% of the time (null for open workloads)
    saturated: Optional[bool] = None
    reason: Optional[str] = None
    warmup_s: Num = None
    window_end_s: Num = None
    window_s: Num = None
    warmup_method: Optional[str] = None
    #: offered work per unit of capacity (busy-seconds per second) of each resource fed only by open workloads,
    #: and of each open workload on a policy pool over the slots its policy leaves it
    offered_load: Optional[dict[str, float]] = None
    trend_ratio: Num = None
    trend_t: Num = None
    bottleneck: Optional[str] = None
    bottleneck_utilisation: Num = None
    completed: Count = None
    completed_per_hour: Num = None
    completed_per_hour_ci: Optional[list[float]] = None
    pass_rate: Num = None
    pass_model: Optional[str] = None
    passing_per_hour: Num = None
    passing_per_hour_ci: Optional[list[float]] = None
    hold_s_mean: Num = None
    hold_s_ci: Optional[list[float]] = None
    concurrency_mean: Num = None
    holds_per_sandbox: Num = None
    min_holds_per_sandbox: Count = None
    short_run: Optional[bool] = None
    ci_method: Optional[str] = None
    warnings: Optional[list[str]] = None


class PrepullWhatIf(Block):
    """The same run's builds had the ``prepull`` most-shared images been pre-pulled (same draws, same order)."""

    prepull: Count = None
    prepulled: Optional[list[str]] = None
    hit_rate: Num = None
    build_hours: Num = None
    #: the configured run's build hours less these (negative: this pre-pull costs build time)
    build_hours_saved: Num = None


class ImageFigures(Block):
    """The image layer cache (``[images]``; ``simulate.engine.images``): how often a build found its image."""

    catalog: Optional[str] = None
    distinct: Count = None
    nodes: Count = None
    cache_mb: Num = None
    pull_mb_per_s: Num = None
    #: images resident on every node from t = 0 (never evicted, outside cache_mb)
    prepulled: Optional[list[str]] = None
    #: first attempts' builds (retries build warm and are not counted)
    references: Count = None
    hits: Count = None
    hit_rate: Num = None
    #: warm draws plus the pulls of the misses, before exception cuts (a substrate's cold start not included)
    build_hours: Num = None
    #: what the misses added over a warm build
    miss_hours: Num = None
    prepull_whatif: Optional[list[PrepullWhatIf]] = None
    basis: Optional[str] = None


class SubstrateFigures(Block):
    """The execution substrate whose overhead the holds include (``[substrate]``; data/substrates.toml)."""

    name: Optional[str] = None
    kind: Optional[str] = None
    cold_start_s: Num = None
    per_action_s: Num = None
    #: attempts that held a sandbox (each pays the cold start)
    attempts: Count = None
    #: actions (turns) per first attempt the per-action overhead was charged on
    turns_mean: Num = None
    turns_basis: Optional[str] = None
    #: cold starts of every attempt that held a sandbox + per-action overhead of the first attempts' turns,
    #: before timeout and exception cuts
    added_sandbox_hours: Num = None
    #: the same per rollout, over a million rollouts (the plan's worker-hours line)
    added_worker_hours_per_million: Num = None
    source: Optional[str] = None
    as_of: Optional[str] = None
    basis: Optional[str] = None


class LimitsFigures(Block):
    """A provider's limits in front of the fleet (``[fleet.limits]``; docs/providers.md)."""

    #: attempts killed at the sandbox lifetime (exceptions of phase ``lifetime``), and the lifetime
    killed_attempts: Count = None
    lifetime_s: Num = None
    #: first attempts claimed from the warm pool, and created cold (bucket, starting cap, cold start)
    warm_claims: Count = None
    cold_starts: Count = None
    #: first attempts' wait from their slot to their sandbox ready (0 when warm), seconds
    ready_wait_s: Optional[Quantiles] = None
    basis: Optional[str] = None


class EngineNodePool(Block):
    """One node pool of a pool made of nodes (``[[fleet.node_pools]]``), placed inside the engine: what it
    billed and the waits its provisioning caused (the attempts that waited for a node to join)."""

    pool: Optional[str] = None
    name: Optional[str] = None
    tier: Optional[str] = None
    #: billed launch to release (base nodes: the pool's first start to its last end)
    node_hours: Num = None
    usd: Num = None
    peak_nodes: Count = None
    #: nodes launched after the start (the min_nodes not counted)
    launched: Count = None
    #: attempts placed on its nodes
    attempts: Count = None
    #: attempts placed on a joining node, and their waits for it (seconds)
    waited: Count = None
    wait_s_total: Num = None
    wait_s_max: Num = None
    #: reclaims of its nodes (``reclaim_per_node_h``), and the attempts they ended (run again if retried)
    reclaims: Count = None
    sandboxes_lost: Count = None
    #: the fleet pool's reclaim trace (``reclaim_trace``): its rows for this node pool that found no node up
    trace_missed: Count = None


class EngineNodes(Block):
    """Pools made of nodes, placed inside the engine (the admission kernel): per node pool, and in all."""

    pools: Optional[list[EngineNodePool]] = None
    node_hours: Num = None
    usd: Num = None
    #: the $ over the pools' span (first start to last end), per hour
    usd_per_h: Num = None
    waited: Count = None
    wait_s_total: Num = None
    basis: Optional[str] = None
    #: allocatable on live nodes minus requested (stranded), over the nodes' billed time, in all
    #: (resource-hours) and as a share of the billed cpu; the series: per equal span of the billed time,
    #: the most nodes up per node pool ("pool/node pool") and the stranded resource-hours (the node replay's)
    stranded_cpu_h: Num = None
    stranded_memory_gb_h: Num = None
    stranded_disk_gb_h: Num = None
    stranded_cpu_share: Num = None
    series: Optional["ReplaySeries"] = None
    #: reclaim trace rows (``[fleet] reclaim_trace``) that found no node of their node pool up
    reclaim_trace_missed: Count = None


class ReplayPool(Block):
    """One node pool of ``simulate --replay``: its node type, limits and reclaim rate, and what it billed."""

    name: Optional[str] = None
    tier: Optional[str] = None
    node_type: Optional[str] = None
    #: allocatable per node (capacity after the system reserve)
    cpu: Num = None
    memory_gb: Num = None
    disk_gb: Num = None
    usd_per_node_h: Num = None
    min_nodes: Count = None
    #: null: unbounded
    max_nodes: Count = None
    reclaim_per_node_h: Num = None
    node_hours: Num = None
    usd: Num = None
    peak_nodes: Count = None
    #: nodes launched after the start (the min_nodes not counted; a reclaimed base node's replacement counted)
    launched: Count = None
    rollouts: Count = None
    #: billed allocatable no sandbox requested
    stranded_cpu_h: Num = None
    stranded_memory_gb_h: Num = None
    stranded_disk_gb_h: Num = None
    reclaims: Count = None
    sandboxes_lost: Count = None
    sandboxes_lost_per_reclaim: Num = None
    most_lost_in_one_reclaim: Count = None
    #: the sandbox-hours the reclaimed attempts had run: the work run again
    rerun_sandbox_h: Num = None


class TierCost(Block):
    node_hours: Num = None
    usd: Num = None


class ReplaySeries(Block):
    """Equal spans of the billed time: the most nodes up per pool, and the allocatable billed but not
    requested (stranded) in each span, resource-hours."""

    t_h: Optional[list[float]] = None
    span_h: Num = None
    nodes_by_pool: Optional[dict[str, list[int]]] = None
    stranded_cpu_h: Optional[list[float]] = None
    stranded_memory_gb_h: Optional[list[float]] = None
    stranded_disk_gb_h: Optional[list[float]] = None


class ReplayCap(Block):
    """The cap the history ran under, and issue 38's censored demand (``plan/censored.py``): the
    replayed starts queued behind the cap wherever it bound."""

    cap_detected: Optional[bool] = None
    cap: Count = None
    touches: Count = None
    demand: Count = None
    demand_is_lower_bound: Optional[bool] = None
    basis: Optional[str] = None
    #: where the cap bound and synchronous steps were found (``measure.steps``): the same rollouts replayed
    #: un-queued, each at its step's release with its own hold (the demand the cap hid), on the same pools
    steps_detected: Optional[bool] = None
    rollouts_moved: Count = None
    demand_peak_nodes: Optional[dict[str, int]] = None
    demand_usd_per_h: Num = None
    demand_unplaced: Count = None
    demand_waited: Count = None


class NodeReplayFigures(Block):
    """``simulate --replay TELEMETRY``: the measured rollouts, as they ran (no draws), placed on a node
    configuration (``simulate.engine.nodes``)."""

    telemetry: Optional[list[str]] = None
    #: "plan" (the purchase order ``plan`` makes of the same telemetry) or "options" (overridden)
    configuration: Optional[str] = None
    placement: Optional[str] = None
    provision_s: Num = None
    scale_down_s: Num = None
    rollouts: Count = None
    rollouts_assumed_request: Count = None
    placed: Count = None
    #: rollouts (or re-runs) no pool could hold: every pool at its max, or a request above every node
    unplaced: Count = None
    span_h: Num = None
    node_hours: Num = None
    usd: Num = None
    usd_per_h: Num = None
    pools: Optional[list[ReplayPool]] = None
    by_tier: Optional[dict[str, TierCost]] = None
    #: waits caused by provisioning: rollouts placed on a node that had not joined yet
    waited: Count = None
    wait_s_total: Num = None
    wait_s_mean: Num = None
    wait_s_max: Num = None
    #: "none", "poisson" (each spot pool at its rate per node-h) or "trace" (a file of time, pool)
    reclaim_model: Optional[str] = None
    reclaim_trace: Optional[str] = None
    reclaim_trace_rows: Count = None
    #: trace reclaims that found no node of their pool up
    reclaim_trace_missed: Count = None
    reclaims: Count = None
    sandboxes_lost: Count = None
    sandboxes_lost_per_reclaim: Num = None
    rerun_sandbox_h: Num = None
    #: re-run sandbox-hours over the sandbox-hours the rollouts needed
    rerun_share: Num = None
    cap: Optional[ReplayCap] = None
    series: Optional[ReplaySeries] = None
    basis: Optional[str] = None
    #: trace rows whose time was an ISO timestamp (the rest: seconds from the first start), and of those
    #: the ones without a UTC offset, read as UTC
    reclaim_trace_timestamps: Count = None
    reclaim_trace_naive: Count = None


class SimulateSummary(Summary):
    """``sandbox-fleet simulate SCENARIO --json`` (and one sweep replicate)."""

    KIND: ClassVar[str] = "simulate"
    VERSION: ClassVar[int] = 6  # 3: inference, hold_stretch; 4: steady_state; 5: images, substrate, per-workload priority, preemptions, step_s; 6: nodes (--replay), limits ([fleet.limits]), dynamic_sampling

    scenario: Optional[str] = None
    seed: Count = None
    rollouts: Count = None
    attempts: Count = None
    completed: Count = None
    dropped: Count = None
    sim_time_s: Num = None
    concurrency: Optional[SimulatedConcurrency] = None
    hold_s: Optional[SimulatedHoldStats] = None
    outcomes: Optional[SimulatedOutcomes] = None
    queue_wait_s: Optional[Quantiles] = None
    utilisation: Num = None
    sandbox_hours: Num = None
    lost_sandbox_hours: Optional[LostHours] = None
    littles_law: Optional[LittlesLaw] = None
    events: Count = None
    step_s: Optional[Quantiles] = None
    trainer_idle_fraction: Num = None
    steps: Count = None
    #: per workload, when the scenario has more than one
    workloads: Optional[dict[str, WorkloadFigures]] = None
    #: the inference pool, when the scenario has ``[inference]``
    inference: Optional[InferenceFigures] = None
    #: mean hold over the mean hold of the same draws served unloaded (``[inference]`` only)
    hold_stretch: Num = None
    #: stability, warm-up, the steady window's figures with their intervals (``simulate.engine.steady``)
    steady_state: Optional[SteadyState] = None
    #: the per-node image cache, when the scenario has ``[images]``
    images: Optional[ImageFigures] = None
    #: the execution substrate added to the holds, when the scenario has ``[substrate]``
    substrate: Optional[SubstrateFigures] = None
    #: wall-clock figures, only with ``--timing`` (they vary run to run)
    wall_s: Num = None
    engine: Optional[str] = None
    events_per_s: Num = None
    rollouts_per_s: Num = None
    #: the per-rollout telemetry Parquet written with ``--telemetry``
    telemetry: Optional[str] = None
    #: a provider's limits in front of the fleet, when a pool has ``[fleet.limits]``
    limits: Optional[LimitsFigures] = None
    #: ``simulate --replay TELEMETRY``: the measured rollouts placed on nodes
    nodes: Optional[NodeReplayFigures] = None
    #: the RL workload with ``dynamic_sampling``, when exactly one has it (several: per workload)
    dynamic_sampling: Optional[DynamicSamplingFigures] = None
    #: pools made of nodes (``[[fleet.node_pools]]``): node-hours, $, peaks and provisioning waits
    node_pools: Optional[EngineNodes] = None
    #: the telemetry filter the rollouts read were kept by (``--replay``'s flags, a scenario's [filter])
    telemetry_filter: Optional[TelemetryFilter] = None


class InferenceCalibration(Block):
    """The turn curve and inference pool ``simulate --from --inference`` wrote (``scenario.calibrate_inference``)."""

    rows: Count = None
    skipped_rows: Count = None
    turn_tokens: Num = None
    decode_per_turn: Num = None
    prefill_per_turn: Num = None
    command_s: Num = None
    decode_demand_tok_s: Num = None
    replicas: Count = None
    reference_decode_tok_s: Num = None
    replica_decode_tok_s: Num = None
    replica_prefill_tok_s: Num = None
    target_utilisation: Num = None


class Calibration(Block):
    """What ``simulate --from`` prints: the scenario it wrote and the measured figures behind it
    (``calibrate.scenario_from_telemetry``; not a stage output, so no kind or schema version)."""

    scenario: Optional[str] = None
    rollouts: Count = None
    peak: Count = None
    touches: Count = None
    mean_concurrency: Num = None
    exception_rate: Num = None
    arrival_rate_per_s: Num = None
    hold_mean_s: Num = None
    #: only with ``--inference``: the JSON leaves the block out otherwise (not null)
    inference: Optional[InferenceCalibration] = None

    def to_json(self) -> dict[str, Any]:
        """JSON-native values in field order, without ``inference`` when it was not calibrated."""
        return self.model_dump(mode="json", exclude={"inference"} if self.inference is None else None)
