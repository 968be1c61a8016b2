"""The plan as a typed model: what ``plan`` writes and ``report``/``check`` read.

Every figure is nullable: null means not sized (an input figure was missing), never zero. To add a
figure, add a field to its block here, fill it where ``plan.build`` assembles that block, and
regenerate ``docs/schemas/plan.schema.json`` (``sandbox-fleet schema plan``).
"""

from typing import ClassVar, Literal, Optional, Union

from pydantic import ConfigDict, Field

from sandbox_fleet.contract import Block, Summary

Num = Optional[float]
Count = Optional[int]


class Input(Block):
    source: Optional[list[str]] = None
    rows: Count = None
    path: Optional[str] = None
    #: ``contract.fingerprint`` of the measure summary the plan was made from (report/check compare it)
    fingerprint: Optional[str] = None


class HoldFit(Block):
    """The hold-time distribution an RL-schedule search drew from."""

    dist: Optional[str] = None
    #: knot quantile (as a string, e.g. "0.99") -> seconds
    quantiles: Optional[dict[str, float]] = None
    rows: Num = None
    median_s: Num = None
    sigma: Num = None
    mean_s: Num = None
    #: the fit in words, as the plan's text states it
    basis: Optional[str] = None


class Censored(Block):
    """The demand a binding cap hid (plan/censored.py): the cap, and what buying past it buys."""

    cap: Count = None
    touches: Count = None
    #: slots the hidden demand needs: the RL search on the cut release, or a lower bound (``demand_is_lower_bound``)
    demand: Count = None
    demand_is_lower_bound: Optional[bool] = None
    #: the run whose release the cap cut, its median release size and the gap before the next release
    run: Optional[str] = None
    release: Count = None
    train_s: Num = None
    step_s_at_cap: Num = None
    step_s_at_demand: Num = None
    step_s_uncapped: Num = None
    #: "demand" or "cap": what the target buys
    chosen: Optional[str] = None
    basis: Optional[str] = None
    #: the estimated demand is below the cap: the cap was loose (it hid no demand); the default buys the demand
    demand_below_cap: Optional[bool] = None
    #: the trade-off between the two lines at the plan's tier: sandbox nodes (CPU pool plus GPU pools) and $/h
    #: bought at the cap and at the demand (null where a line is not priced)
    nodes_at_cap: Count = None
    nodes_at_demand: Count = None
    usd_per_h_at_cap: Num = None
    usd_per_h_at_demand: Num = None
    #: the order form both lines are priced on, the signed order's ("spot", "mixed_spot", ...: plan/censored_order.py)
    lines_form: Optional[str] = None
    #: a mixed form's split at each line: R reserved and up to that many burst nodes (null on a single tier)
    reserved_at_cap: Count = None
    burst_at_cap: Count = None
    reserved_at_demand: Count = None
    burst_at_demand: Count = None
    #: each line's form and the history it was replayed on (as it ran, or re-queued on the demand's slots)
    lines_basis: Optional[str] = None


class ShapeAlternative(Block):
    """The throughput target under the shape not chosen, shown when the two differ by more than 1.5x."""

    shape: Optional[str] = None
    concurrency: Count = None
    ratio: Num = None


class Target(Block):
    concurrency: int
    source: str
    detail: Optional[str] = None
    exact: Num = None
    batch: Count = None
    train_s: Num = None
    hold_fit: Optional[HoldFit] = None
    method: Optional[str] = None
    step_s_uncapped: Num = None
    step_s_at_cap: Num = None
    duty: Num = None
    tolerance: Num = None
    evaluations: Count = None
    note: Optional[str] = None
    #: --passing-per-hour: ``measured`` (capacity = mean busy / measured duty) or ``smooth`` (simulated queue wait)
    shape: Optional[str] = None
    passing_per_hour: Num = None
    #: Little's law: passing/h x sandbox-h per pass
    mean_busy: Num = None
    #: --shape smooth: the simulated mean queue wait at the chosen cap and the allowed one, seconds
    mean_wait_s: Num = None
    max_wait_s: Num = None
    #: RL schedule: the spread of single runs, the 5th-95th percentile of the per-replication answers
    interval: Optional[list[float]] = None
    #: RL schedule: the uncertainty of the chosen cap, 5th-95th percentile over bootstrap resamples of the replications
    cap_interval: Optional[list[float]] = None
    bootstrap: Count = None
    #: the pooled mean step's excess over the uncapped one at the low end of ``interval``
    step_excess_at_interval_low: Num = None
    #: a binding cap and the demand it hid (the default target on capped telemetry)
    censored: Optional[Censored] = None
    #: --passing-per-hour: why this shape, and the other shape's answer when they differ by more than 1.5x
    shape_basis: Optional[str] = None
    shape_alternative: Optional[ShapeAlternative] = None
    per_replication: Optional[list[int]] = None
    replications: Count = None
    #: why the price tier was chosen when --price-tier was not given
    tier_basis: Optional[str] = None


class Measured(Block):
    """Figures carried over from the input summary."""

    concurrency_mean: Num = None
    peak: Num = None
    duty: Num = None
    pass_rate: Num = None
    sandbox_hours_per_pass: Num = None
    sandbox_hours: Num = None
    span_days: Num = None
    hold_mean_s: Num = None
    exception_rate: Num = None
    prefill_per_sandbox_s: Num = None
    decode_per_sandbox_s: Num = None


class Resources(Block):
    cpu: Num = None
    memory_mb: Num = None
    disk_mb: Num = None


class Request(Block):
    cpu: Num = None
    memory: Num = None
    disk: Num = None
    gpu: Num = None


class MixEntry(Request):
    weight: Num = None
    concurrent: Count = None


class Alternative(Block):
    """Another node type that fits, with its price at the plan's tier (the other tiers null)."""

    type: str
    count: Count = None
    binding: Optional[str] = None
    per_node: Count = None
    reserved_per_h: Num = None
    on_demand_per_h: Num = None
    spot_per_h: Num = None
    priced: Optional[bool] = None


class TooSmall(Block):
    type: str
    reason: str


class NodeReserve(Resources):
    """The per-node system reserve and where it came from (flag, catalog or the default formula)."""

    source: Optional[str] = None


class Unplaced(Request):
    """A request no node type holds, with its share of the rollouts and of the sandbox-hours."""

    rollouts_share: Num = None
    sandbox_hours_share: Num = None
    reason: Optional[str] = None


class NodeCapacity(Block):
    """The chosen node type's whole capacity (before the reserve), as the catalog lists it."""

    cpu: Num = None
    memory_gb: Num = None
    disk_gb: Num = None
    gpus: Count = None


class Nodes(Block):
    type: str
    count: int
    binding: Optional[str] = None
    #: slots per node by resource (cpu, memory, disk, gpu); null where the request asks for none
    slots_per_node: Optional[dict[str, Optional[int]]] = None
    per_node: Count = None
    lower_bound: Count = None
    lower_bound_by_resource: Optional[dict[str, int]] = None
    stranded: Optional[Resources] = None
    reserve: Optional[NodeReserve] = None
    request: Optional[Request] = None
    mix: Optional[list[MixEntry]] = None
    packing: Optional[str] = None
    #: what the mix's weights are: sandbox-hours per kind (Little's law) or, when not measured, rollouts / tasks
    mix_basis: Optional[str] = None
    #: the cloud and its name for the chosen type (``plan --emit-k8s``); null for a generic type
    provider: Optional[str] = None
    instance_type: Optional[str] = None
    node_capacity: Optional[NodeCapacity] = None
    alternatives: Optional[list[Alternative]] = None
    too_small: Optional[list[TooSmall]] = None
    #: requests no catalog type holds (the rest is still planned)
    unplaced: Optional[list[Unplaced]] = None
    #: with telemetry that carries requests (plan/mixed_replay.py): ``count`` follows the nodes the measured
    #: rollouts need at their peaks (each placed at its start, never migrated, packed, no delays); the
    #: count the slot sizing gives (the mix at its mean shares) is kept as the lower bound it is, with the
    #: rollouts that many nodes could not place at their start
    replayed_peak: Count = None
    slot_count: Count = None
    slot_count_short: Count = None
    count_basis: Optional[str] = None


class NodePool(Nodes):
    """A pool packed on its own (GPU requests on their cheapest GPU type): the ``nodes`` shape, priced at the plan's tier."""

    reserved_per_h: Num = None
    on_demand_per_h: Num = None
    spot_per_h: Num = None
    #: concurrent sandboxes the pool holds at the target
    concurrent: Count = None


class Storage(Block):
    scratch_gb: Num = None
    scratch_at_target_gb: Num = None
    per_node_gb: Num = None
    cache_gb_per_node: Num = None
    rollouts_per_day: Num = None
    trajectory_gb_per_day: Num = None
    trajectory_gb_per_day_upper: Num = None
    bundle_store_gb: Num = None
    bundle_store_basis: Optional[str] = None
    bundle_max_mb: Num = None


class Context(Block):
    turn_tokens: Num = None
    model_error_by_turns: Optional[dict[str, float]] = None
    #: the turn distribution context and caching average over: its mean and what it is
    turns_mean: Num = None
    turns_basis: Optional[str] = None


class Caching(Block):
    saving_by_turns: Optional[dict[str, float]] = None
    saving_measured_mix: Num = None
    prefix_break: Num = None
    saving_by_turns_with_breaks: Optional[dict[str, float]] = None
    saving_measured_mix_with_breaks: Num = None
    cached_fraction_measured: Num = None
    saving_applied: Num = None
    saving_basis: Optional[str] = None


class PerGpu(Block):
    prefill_tok_s: Num = None
    decode_tok_s: Num = None
    source: Optional[str] = None


class GpuMemory(Block):
    """The memory model, GiB throughout."""

    weights_gb: Num = None
    kv_gb_inflight: Num = None
    kv_gb_live: Num = None
    free_gb_per_gpu: Num = None
    gpus_memory_bound: Count = None
    gpus_memory_bound_cached: Count = None


class PlanInference(Block):
    model_config = ConfigDict(title="Inference")  # the published schema name (simulate's Inference is the pool)

    prefill_tok_s: Num = None
    decode_tok_s: Num = None
    #: prefill the GPUs compute: input less measured cache hits
    prefill_tok_s_computed: Num = None
    prefill_tok_s_cached: Num = None
    prefill_decode_ratio: Num = None
    per_gpu: Optional[PerGpu] = None
    #: the GPU catalog entry named by --gpu
    gpu: Optional[str] = None
    context_tokens_mean: Num = None
    #: the turn distribution the mean context is taken over
    context_basis: Optional[str] = None
    utilisation_target: Num = None
    gpus: Count = None
    gpus_cached: Count = None
    binding: Optional[str] = None
    binding_cached: Optional[str] = None
    prefill_gpu_share: Num = None
    decode_gpu_share: Num = None
    gpus_compute_bound: Count = None
    gpus_compute_bound_cached: Count = None
    #: "compute" or "memory"
    bound_by: Optional[str] = None
    bound_by_cached: Optional[str] = None
    memory: Optional[GpuMemory] = None
    replica_gpus: Count = None
    replica_gpus_cached: Count = None
    kv_offload_gb: Num = None


class ByTier(Block):
    reserved: Num = None
    on_demand: Num = None
    spot: Num = None


class CostParts(Block):
    """Cost per passing trajectory by part; a part with no price is null."""

    fleet: Num = None
    inference: Num = None
    trainer: Num = None


class SpotRework(Block):
    """Re-run sandbox-hours spot reclaims add (restart from scratch, plan/rework.py)."""

    interruptions_per_node_h: Num = None
    source: Optional[str] = None
    rework_share: Num = None
    rework_sandbox_hours_per_h: Num = None
    rework_per_h: Num = None
    spot_per_h_with_rework: Num = None
    #: expected reclaims per hold under the same restart model, E[e^{r h} - 1] over the fitted holds
    mean_interruptions_per_hold: Num = None
    #: how the expectations were taken (quadrature over the fit, a closed form), or why they are unbounded
    basis: Optional[str] = None

    @property
    def unbounded(self) -> bool:
        """A reclaim rate is known but its restarts have no finite expected work (no share)."""
        return self.rework_share is None


class Rent(Block):
    """Renting the busy sandbox-hours on one managed-sandbox provider (illustrative list prices)."""

    usd_per_h: Num = None
    usd_per_sandbox_h: Num = None
    usd_per_pass: Num = None
    within_limits: Optional[bool] = None
    limits_hit: Optional[list[str]] = None
    #: a step's batch / the provider's creates per s: the most step time its creation ramp adds, and that share of the step
    ramp_s: Num = None
    ramp_step_share: Num = None
    source: Optional[str] = None
    as_of: Optional[str] = None
    #: the provider's substrate cold start plus per-turn overhead added to each hold, seconds, and
    #: the factor it multiplies the busy sandbox-hours by; null when the substrate catalog lists none
    overhead_s_per_rollout: Num = None
    hold_factor: Num = None
    #: the step time the creation ramp is expected to add over the fitted holds (E[max(i/c + h)] - E[max h]),
    #: and that share of the step: what the fit is judged on (``ramp_s`` is the bound); how it was taken
    ramp_expected_s: Num = None
    ramp_expected_step_share: Num = None
    ramp_basis: Optional[str] = None


class NodesOverTime(Block):
    """The most nodes up at once per pool in equal spans of the replayed history (its chart)."""

    #: each span's start, hours from the first start
    t_h: Optional[list[float]] = None
    reserved: Optional[list[int]] = None
    burst: Optional[list[int]] = None


class CappedBurst(Block):
    """The history replayed ran under a binding cap (``target.censored``): what the replay under-states,
    and the burst pool's limit that covers the demand the plan buys (plan/censored_burst.py)."""

    cap: Count = None
    demand: Count = None
    demand_is_lower_bound: Optional[bool] = None
    #: the burst pool's peak in the replay of the capped history (its starts queued behind the cap)
    burst_peak_replayed: Count = None
    #: sandboxes the demand bought runs beyond the cap the replay saw
    sandboxes_past_cap: Count = None
    #: the fewest sandboxes a node holds of the largest request in the history (every resource)
    sandboxes_per_node_largest: Count = None
    #: the burst pool's limit covering the demand (``method``): "requeued", the burst peak of the history
    #: queued again at its steps' releases on the demand's slots; "bound", the replayed peak plus a node per
    #: ``sandboxes_per_node_largest`` past the cap (no steps to re-queue at); "demand-replayed", the whole
    #: split (R, burst peak, $/h) replayed on that re-queued history, the limit at least the capped peak at R
    burst_limit: Count = None
    method: Optional[str] = None
    basis: Optional[str] = None


class WaitFigure(Block):
    """The time an order's provisioning waits cost against the all-up order (plan/order_wait.py)."""

    #: "steps" (slowdown of the mean synchronous step) or "rollouts" (of the mean rollout: no steps)
    method: Optional[str] = None
    #: the summed lengthening over the summed measured lengths (0.05: 5% longer)
    slowdown: Num = None
    steps: Count = None
    lengthening_s_mean: Num = None
    lengthening_s_max: Num = None


class MixedReplay(Block):
    """The mixed purchase priced by a node replay of the measured history (plan/mixed_replay.py)."""

    rollouts: Count = None
    #: rollouts whose task sets no request: replayed at the plan's request
    rollouts_assumed_request: Count = None
    span_h: Num = None
    #: "pack" (most-allocated) or "spread" (least-allocated)
    placement: Optional[str] = None
    provision_s: Num = None
    scale_down_s: Num = None
    #: nodes at the real mix's peaks: all on one pool, packed, no delays
    peak_nodes: Count = None
    #: $/h of the replay for each reserved count R = 0, 1, ... (the brute force the split is read on;
    #: null at an R a search over a grid did not replay)
    usd_per_h_by_reserved: Optional[list[Optional[float]]] = None
    reserved_node_hours: Num = None
    burst_node_hours: Num = None
    burst_launches: Count = None
    #: billed cpu-hours no sandbox requested, as a share of the billed cpu-hours
    stranded_cpu_share: Num = None
    waited: Count = None
    wait_s_total: Num = None
    wait_s_max: Num = None
    #: the slot-curve split (plan/mixed.py): a lower bound, as it re-packs sandboxes at every moment
    slot_curve_reserved_nodes: Count = None
    slot_curve_usd_per_h: Num = None
    basis: Optional[str] = None
    #: the chosen split's nodes by pool over the replayed history
    nodes_over_time: Optional[NodesOverTime] = None
    #: the history ran under a binding cap: what this replay under-states, and the burst limit covering the demand
    capped: Optional[CappedBurst] = None
    #: the chosen split's provisioning waits in time: the slowdown of the mean step vs all nodes up
    wait: Optional[WaitFigure] = None
    #: the slowdown for each R = 0, 1, ... (as ``usd_per_h_by_reserved``), and the tolerance R was chosen within
    slowdown_by_reserved: Optional[list[Optional[float]]] = None
    tolerance: Num = None


class Mixed(Block):
    """Reserved nodes for the base load and the rest on the cheaper burst tier (plan/mixed.py)."""

    reserved_nodes: Count = None
    burst_nodes: Count = None
    #: "on_demand" or "spot"
    burst_tier: Optional[str] = None
    usd_per_h: Num = None
    reserved_usd_per_node_h: Num = None
    #: per node-hour used; spot's carries its re-runs
    burst_usd_per_node_h: Num = None
    #: reserved / burst price: a node is reserved when the load needs it more than this share of the time
    break_even_share: Num = None
    #: share of the measured span the load needs node k (k = 1..N), the curve the split is read on;
    #: null for a fleet of more than 1,024 nodes
    node_share: Optional[list[float]] = None
    basis: Optional[str] = None
    #: the split priced by replaying the measured rollouts on nodes (plan/mixed_replay.py); when set,
    #: ``reserved_nodes``, ``burst_nodes`` and ``usd_per_h`` above are the replay's
    replay: Optional[MixedReplay] = None


class TierLine(Block):
    """One single tier priced all in (plan/tier.py): the type its prices chose, and its $/h with re-runs."""

    tier: Optional[str] = None
    node_type: Optional[str] = None
    #: sandbox nodes of the CPU pool (the GPU pools are in ``fleet_per_h``)
    nodes: Count = None
    #: the CPU pool plus the GPU pools on this tier, $/h
    fleet_per_h: Num = None
    #: spot: the re-run share at the catalog's reclaim rate, and at ``tier_choice.rate_uncertainty`` x it
    rerun_share: Num = None
    rerun_share_high: Num = None
    #: (fleet + inference + trainer) x (1 + re-run share), $/h; low: without reclaims, high: at the top of the rate range
    all_in_per_h: Num = None
    all_in_per_h_low: Num = None
    all_in_per_h_high: Num = None
    all_in_per_pass: Num = None
    #: spot re-runs unbounded at the catalog's rate: not priced
    unbounded: Optional[bool] = None


class OrderLine(Block):
    """One candidate order priced by replaying the measured rollouts on nodes (plan/order_replay.py)."""

    #: "reserved", "on_demand", "spot" (one tier, all up), "mixed_on_demand" or "mixed_spot" (R reserved + a burst pool)
    order: Optional[str] = None
    #: the headline tier it is priced on: the single tier, or the burst tier of a mixed order
    tier: Optional[str] = None
    node_type: Optional[str] = None
    #: single: the nodes bought (the replayed peak, at least the slot sizing's); mixed: R + the burst pool's peak
    nodes: Count = None
    reserved_nodes: Count = None
    burst_nodes: Count = None
    #: the sandbox nodes by replay plus the GPU pools on ``tier``, $/h (spot's node-hours carry their re-runs)
    fleet_per_h: Num = None
    rerun_share: Num = None
    #: fleet + (GPU pools + inference + trainer) x (1 + re-run share), $/h: what the ranking reads
    all_in_per_h: Num = None
    #: the same order on the slot-curve figures (slot count; the curve's split): a lower bound
    slot_curve_all_in_per_h: Num = None
    #: re-runs unbounded at the catalog's reclaim rate: not priced
    unbounded: Optional[bool] = None
    #: the slowdown of the mean step its provisioning waits cost vs all nodes up (0: a single tier, all up)
    slowdown: Num = None
    #: the slowdown is above the plan's --tolerance: not eligible
    over_tolerance: Optional[bool] = None
    #: the slowdown in words (its method, mean and largest lengthening)
    wait_basis: Optional[str] = None


class TierChoice(Block):
    """How the headline tier was chosen: every priced single tier all in, re-runs included (plan/tier.py)."""

    chosen: Optional[str] = None
    cheapest: Optional[str] = None
    runner_up: Optional[str] = None
    #: the cheapest and the runner-up swap places somewhere in spot's re-run range
    within_rerun_uncertainty: Optional[bool] = None
    #: spot's re-run share is judged from no reclaims up to this multiple of the catalog rate
    rate_uncertainty: Num = None
    #: the reclaim rate above which spot's all-in passes the cheapest other tier (null: spot already dearer)
    spot_breakeven_interruptions_per_node_h: Num = None
    tiers: Optional[list[TierLine]] = None
    basis: Optional[str] = None
    #: every candidate order priced by replaying the measured rollouts (null without telemetry, or for a
    #: chosen target): ``chosen`` and ``basis`` are then the replay's, ``tiers`` the slot-curve lower bound
    replayed: Optional[list[OrderLine]] = None
    #: the order signed: one of ``replayed``'s ``order`` keys (null when no replay ranked the orders)
    order: Optional[str] = None


class Cost(Block):
    tier: Optional[str] = None
    priced: Optional[bool] = None
    reserved_per_h: Num = None
    on_demand_per_h: Num = None
    spot_per_h: Num = None
    per_busy_sandbox_hour: Num = None
    per_passing_trajectory: Num = None
    per_passing_trajectory_by_tier: Optional[ByTier] = None
    exception_waste_per_h: Num = None
    duty: Num = None
    exception_share: Num = None
    inference_per_h: Num = None
    inference_per_h_cached: Num = None
    #: the ``node_pools`` at the plan's tier; null when a pool has no price
    node_pools_per_h: Num = None
    passing_per_h: Num = None
    per_passing_trajectory_all_in: Num = None
    per_passing_trajectory_parts: Optional[CostParts] = None
    spot_rework: Optional[SpotRework] = None
    #: what the cost per passing trajectory includes (on spot: the re-runs)
    per_pass_basis: Optional[str] = None
    #: provider name -> renting instead of buying; and the one-line verdict
    rent: Optional[dict[str, Rent]] = None
    rent_verdict: Optional[str] = None
    #: reserved for the base load, burst for the rest, from the measured concurrency curve
    mixed: Optional[Mixed] = None
    #: every priced single tier all in, and why the headline tier is the one it is
    tier_choice: Optional[TierChoice] = None


class SubstrateLine(Block):
    """One execution substrate's overhead on this workload (illustrative figures, plan/substrates.py)."""

    #: container, kubernetes, hosted or vm
    kind: Optional[str] = None
    provider: Optional[str] = None
    cold_start_s: Num = None
    per_action_s: Num = None
    #: cold start + mean turns x per-action overhead
    overhead_s_per_rollout: Num = None
    added_worker_hours_per_million: Num = None
    #: (mean hold + overhead) x a million rollouts, hours
    worker_hours_per_million: Num = None
    #: at the target's rollout rate
    added_worker_hours_per_h: Num = None
    hold_factor: Num = None
    source: Optional[str] = None
    as_of: Optional[str] = None


class Substrates(Block):
    """Worker-hours per execution substrate for the measured workload, side by side."""

    rollouts_per_h: Num = None
    turns_mean: Num = None
    hold_mean_s: Num = None
    basis: Optional[str] = None
    by_substrate: Optional[dict[str, SubstrateLine]] = None


#: where an assumption's value comes from (plan/assumptions.py says what each means)
Source = Literal["default", "measured", "published", "flag", "catalog"]


class Assumption(Block):
    """One default or carried-over figure the purchase order rests on."""

    name: str
    value: Union[float, int, str, None] = None
    unit: str
    source: Source
    detail: str = ""


class Starts(Block):
    """Peak sandbox creation rate at the target (sizes a warm pool; a provider's creation limit)."""

    #: null when a batch is released at once (no finite rate) or nothing measured gives it
    peak_per_s: Num = None
    batch: Num = None
    release_spread_s: Num = None
    #: the synchronous step a creation ramp is judged against, seconds, and where it came from
    step_s: Num = None
    step_basis: Optional[str] = None
    basis: Optional[str] = None


def _no_quantities() -> list[str]:
    # a Python function, not ``list``: Pydantic reads a default factory's signature to build the
    # validator, and a builtin's is parsed from its text by the tokenizer (~6 ms of plan's start-up)
    return []


class BacktestLine(Block):
    """A backtest's verdict carried into the purchase order (``plan --backtest FILE``)."""

    path: str
    #: predicted / actual - 1 of part B's makespan, calibrated on part A
    makespan_error: Num = None
    within_interval: Optional[bool] = None
    drifted: bool
    drifted_quantities: list[str] = Field(default_factory=_no_quantities)
    line: str


class CreationRampFit(Block):
    """A released batch through the provider's creation bucket (rate, burst), across ``accounts``."""

    batch: Num = None
    creates_per_s: Num = None
    burst: Num = None
    #: the last of the batch starts this late: the most the step can lengthen
    bound_s: Num = None
    #: the mean start delay (closed form): the lengthening if the step's last finisher were any of its
    #: rollouts alike; a lower estimate when holds are narrow
    mean_delay_s: Num = None
    step_s: Num = None
    bound_step_share: Num = None
    mean_step_share: Num = None
    basis: Optional[str] = None
    #: the expected lengthening of the step over the fitted holds (plan/ramp.py, the figure rent vs buy
    #: judges by); None without a hold fit
    expected_lengthening_s: Num = None
    expected_step_share: Num = None


class WarmPoolSizing(Block):
    """The smallest warm pool keeping the released batch's step within ``max_share`` (plan/warm_pool.py)."""

    provider: Optional[str] = None
    #: the pool (sandboxes, over every template): the least that keeps the step within ``max_share``;
    #: null when no size can (the refill rate is short: ``needed`` warm claims a step exceed it) or not sized
    size: Count = None
    needed: Count = None
    batch: Num = None
    step_s: Num = None
    max_share: Num = None
    refill_per_s: Num = None
    refill_per_step: Num = None
    cold_start_s: Num = None
    cold_start_source: Optional[str] = None
    creates_per_s: Num = None
    burst: Num = None
    max_starting: Count = None
    #: the expected lengthening of the step with ``needed`` warm, and with no pool, seconds
    lengthening_s: Num = None
    lengthening_share: Num = None
    lengthening_without_s: Num = None
    basis: Optional[str] = None


class ProviderFit(Block):
    """Does the target fit one provider plan's quotas, and how many accounts it takes."""

    provider: Optional[str] = None
    plan: Optional[str] = None
    rented: Optional[bool] = None
    #: accounts each account-wide quota needs (max_concurrent, account_vcpus, ...)
    accounts_by_quota: Optional[dict[str, int]] = None
    accounts: Count = None
    binding: Optional[str] = None
    #: per-sandbox maxima the request exceeds (no number of accounts helps)
    per_sandbox_hit: Optional[list[str]] = None
    ramp: Optional[CreationRampFit] = None
    max_lifetime_s: Num = None
    sources: Optional[dict[str, str]] = None
    vendor_claimed: Optional[list[str]] = None
    basis: Optional[str] = None


class LintFinding(Block):
    """One lifetime or timeout failure shape the budgets run into."""

    shape: Optional[str] = None
    severity: Optional[str] = None
    message: Optional[str] = None


class PhaseBudget(Block):
    """One phase's budget (s), where it came from, and the share of rollouts it would cut."""

    phase: Optional[str] = None
    budget_s: Num = None
    source: Optional[str] = None
    cut_share: Num = None
    cut_basis: Optional[str] = None


class LifetimeLint(Block):
    """Per phase the budgets in force against the sandbox lifetime and the rollout timeout."""

    phases: Optional[list[PhaseBudget]] = None
    lifetime_s: Num = None
    lifetime_source: Optional[str] = None
    in_lifetime_s: Num = None
    headroom: Num = None
    lifetime_ok: Optional[bool] = None
    rollout_timeout_s: Num = None
    rollout_timeout_covers: Optional[list[str]] = None
    lifetime_cut_share: Num = None
    lifetime_cut_basis: Optional[str] = None
    unused_lifetime_s_per_rollout: Num = None
    unused_lifetime_usd_per_rollout: Num = None
    findings: Optional[list[LintFinding]] = None


class PlanLimits(Block):
    """The plan against provider and harness limits (issue 39; docs/providers.md)."""

    fits: Optional[list[ProviderFit]] = None
    lifetime: Optional[LifetimeLint] = None


class Signal(Block):
    """Groups with signal for a group-based RL step (plan/signal.py; docs/measure.md#rollout-groups-and-signal)."""

    group_size: Count = None
    group_size_basis: Optional[str] = None
    #: B: informative groups a step must train on, and where it came from
    groups_per_batch: Count = None
    groups_per_batch_basis: Optional[str] = None
    confidence: Num = None
    #: the binomial expression over the per-task posteriors and valid rates at ``group_size``
    informative_share: Num = None
    all_pass_share: Num = None
    all_fail_share: Num = None
    too_few_valid_share: Num = None
    #: the measured share of the recorded groups, for comparison (null when none is recorded)
    informative_share_measured: Num = None
    #: N: groups dynamic sampling releases to hold B informative ones with ``confidence``; N / B; 1 / share
    groups_released: Count = None
    oversampling_factor: Num = None
    oversampling_factor_mean: Num = None
    #: rollouts released at once with and without over-sampling (N x G, B x G)
    release_rollouts: Count = None
    release_rollouts_without: Count = None
    #: nodes (the plan's node type) that hold each release at once, and their $/h at the plan's tier
    node_type: Optional[str] = None
    nodes_release: Count = None
    nodes_without: Count = None
    usd_per_h_release: Num = None
    usd_per_h_without: Num = None
    #: G x mean hold / share: what one informative group costs under dynamic sampling
    sandbox_hours_per_informative_group: Num = None
    sandbox_hours_per_informative_group_measured: Num = None
    sandbox_hours_per_pass: Num = None
    usd_per_informative_group: Num = None
    usd_per_pass: Num = None
    #: every exception scored as a zero reward: the share of groups it makes look informative
    exception_zero_flipped_share: Num = None
    exception_zero_flipped_share_measured: Num = None
    #: exception rows the harness scored with a failing reward, and their share of rewarded rows
    exceptions_scored_zero: Count = None
    exceptions_scored_zero_share: Num = None
    bias: Optional[str] = None
    basis: Optional[str] = None


class PlanSummary(Summary):
    """``sandbox-fleet plan --json``."""

    KIND: ClassVar[str] = "plan"
    VERSION: ClassVar[int] = 7  # 7: signal

    input: Optional[Input] = None
    target: Target
    measured: Optional[Measured] = None
    nodes: Nodes
    #: GPU requests, one pool per node type, packed separately (``nodes`` is the CPU pool)
    node_pools: Optional[list[NodePool]] = None
    storage: Optional[Storage] = None
    context: Optional[Context] = None
    caching: Optional[Caching] = None
    inference: Optional[PlanInference] = None
    cost: Optional[Cost] = None
    assumptions: Optional[list[Assumption]] = None
    starts: Optional[Starts] = None
    #: cold start and per-action overhead per execution substrate, in worker-hours for this workload
    substrates: Optional[Substrates] = None
    notes: Optional[list[str]] = None
    #: ``plan --backtest FILE``: how far the simulator was off on this telemetry, and drift
    backtest: Optional[BacktestLine] = None
    #: the order against provider quotas, creation ramps and lifetimes (docs/providers.md)
    limits: Optional[PlanLimits] = None
    #: groups with signal, dynamic sampling's over-sampling and its release (plan/signal.py)
    signal: Optional[Signal] = None
    #: the smallest warm pool keeping a released batch's step within a stated lengthening (plan/warm_pool.py)
    warm_pool: Optional[WarmPoolSizing] = None
