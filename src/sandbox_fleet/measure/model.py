"""The measure summary as a typed model: what ``measure`` writes and ``plan``/``report`` read.

Every figure is nullable: null means not measured (or not measurable from this input), never zero.
To add a figure, add a field to the block it belongs to here (a per-model or per-job count or sum:
one entry of ``slice_sums.SLICE_SUMS`` instead, its field comes from there), fill it in the
measurement that computes it, and regenerate ``docs/schemas/measure.schema.json`` (``sandbox-fleet schema measure``).
Definitions of each figure are in docs/measure.md.
"""

from typing import TYPE_CHECKING, ClassVar, Optional, Union

from pydantic import create_model

from sandbox_fleet.contract import Block, Summary
from sandbox_fleet.measure.slice_sums import reported

Num = Optional[float]
Count = Optional[int]


class SelfCheck(Block):
    """The sweep line's own proof: area under the concurrency curve = sum of holds."""

    ok: Optional[bool] = None
    area_s: Num = None
    sum_of_holds_s: Num = None


class Series(Block):
    """The concurrency step function (downsampled to ``bucket_s`` buckets when long)."""

    t_s: Optional[list[float]] = None
    level: Optional[list[int]] = None
    bucket_s: Num = None


class TimeAtLevel(Block):
    """Share of the span the concurrency was at or above each level, on a fixed grid (every level
    1..peak up to 256, else 256 evenly spaced): the curve ``plan`` splits reserved from burst on."""

    levels: Optional[list[int]] = None
    share_at_or_above: Optional[list[float]] = None


# shares contract.ConcurrencyFigures with simulate's SimulatedConcurrency (a docstring here would enter the schema)
class Concurrency(Block):
    rows: Count = None
    span_s: Num = None
    sandbox_s: Num = None
    mean: Num = None
    mean_littles_law: Num = None
    arrival_rate_per_s: Num = None
    hold_mean_s: Num = None
    peak: Count = None
    peak_to_mean: Num = None
    duty: Num = None
    touches: Count = None
    time_at_peak_s: Num = None
    time_at_peak_share: Num = None
    configured_cap: Count = None
    #: the measured peak when it sits below ``configured_cap`` for at least
    #: ``cap_binding.warn_above`` of the span (another limit binds first)
    effective_cap: Count = None
    #: why no effective cap can be told although the peak is below the configured cap (every
    #: rollout ran at once: too few to reach it); null otherwise
    effective_cap_note: Optional[str] = None
    cap_detected: Optional[bool] = None
    cap_rule: Optional[str] = None
    #: the peak is one released batch of synchronous steps (nothing queued), not a cap (measure/batchcap.py)
    peak_is_batch: Optional[bool] = None
    #: why the peak is or is not taken for a cap, in one line
    cap_basis: Optional[str] = None
    self_check: Optional[SelfCheck] = None
    series: Optional[Series] = None
    #: the whole input only (null per job and per model)
    time_at_level: Optional[TimeAtLevel] = None
    #: how ``configured_cap`` was formed when jobs overlap (the sum of the caps of the jobs running
    #: at each moment, measure/fleetcap.py), or where a stated cap came from; null otherwise
    configured_cap_basis: Optional[str] = None
    #: seconds the level sat at the summed cap of the jobs running (jobs overlap only; ``cap_binding``
    #: reads it instead of the time at the peak, which a varying cap need not be)
    time_at_cap_s: Num = None


# shares contract.HoldFigures with simulate's SimulatedHoldStats (a docstring here would enter the schema)
class HoldStats(Block):
    rows: Count = None
    small_sample: Optional[bool] = None
    min: Num = None
    median: Num = None
    mean: Num = None
    p90: Num = None
    p99: Num = None
    max: Num = None


class ByOutcome(Block):
    exception: Optional[HoldStats] = None
    #: rollouts a limit (message, token, time, ...) ended; null when none records one
    limit: Optional[HoldStats] = None
    passed: Optional[HoldStats] = None
    failed: Optional[HoldStats] = None
    no_reward: Optional[HoldStats] = None


class Histogram(Block):
    """Log-spaced hold histogram: ``counts[i]`` holds fall in ``[edges_s[i], edges_s[i+1])``."""

    edges_s: Optional[list[float]] = None
    counts: Optional[list[int]] = None
    zero: Count = None


class Holds(HoldStats):
    rows_with_tokens: Count = None
    mean_with_tokens: Num = None
    rows_without_tokens: Count = None
    mean_without_tokens: Num = None
    by_model: Optional[dict[str, HoldStats]] = None
    by_outcome: Optional[ByOutcome] = None
    histogram: Optional[Histogram] = None


class Phase(Block):
    rows: Count = None
    invalid: Count = None
    small_sample: Optional[bool] = None
    median_s: Num = None
    p99_s: Num = None
    mean_s: Num = None
    share_of_hold: Num = None


class Steps(Block):
    """RL step structure of one run; the top-level block also says how runs were told apart."""

    detected: Optional[bool] = None
    reason: Optional[str] = None
    rows: Count = None
    steps: Count = None
    batch_size: Num = None
    batch_size_min: Count = None
    batch_size_max: Count = None
    burst_size: Num = None
    burst_share: Num = None
    step_period_s: Num = None
    release_spread_s: Num = None
    step_makespan_s: Num = None
    straggler_tail_s: Num = None
    gap_threshold_s: Num = None
    break_ratio: Num = None
    #: median share of a step's rollouts still running when the next step opens (under
    #: ``MAX_CARRYOVER``: steps drain; a refilled queue carries (k - 1) / k of k slots)
    carryover_share: Num = None
    runs_by: Optional[str] = None
    runs: Count = None
    runs_with_steps: Optional[list[str]] = None
    mixed: Optional[bool] = None
    note: Optional[str] = None
    #: median over steps of the starts before the step's first finish (rollouts running together at
    #: its opening; under ``MIN_TOGETHER``: a serial run in sittings, not steps)
    opening_concurrency: Num = None
    #: whether two or more runs were ever running at once (first start to last finish); null with one run
    runs_overlap: Optional[bool] = None


class Tokens(Block):
    rows: Count = None
    small_sample: Optional[bool] = None
    sandbox_s: Num = None
    hold_mean_s: Num = None
    input: Count = None
    output: Count = None
    cached: Count = None
    cached_rows: Count = None
    output_per_rollout: Num = None
    prefill_per_sandbox_s: Num = None
    decode_per_sandbox_s: Num = None
    prefill_decode_ratio: Num = None
    cached_fraction: Num = None
    #: rows reporting 0 input and 0 output tokens: an agent that does not count, left out of
    #: every token figure (not measured, never a rate of 0)
    zero_token_rows: Count = None
    turns_rows: Count = None
    turns_median: Num = None
    turns_p90: Num = None
    #: keyed by turn count (as a string)
    turns_histogram: Optional[dict[str, int]] = None
    median_input_by_turns: Optional[dict[str, float]] = None
    median_input_rows_by_turns: Optional[dict[str, int]] = None
    #: the turn-curve fit uses only turn counts with at least this many rows (``--min-turn-rows``)
    min_turn_rows: Count = None
    fit_rows: Count = None
    fit_points: Count = None
    turn_tokens: Num = None
    r2_quadratic: Num = None
    r2_linear: Num = None
    linear_intercept: Num = None
    linear_slope: Num = None
    model_error_by_turns: Optional[dict[str, float]] = None


# shares contract.OutcomeFigures with simulate's SimulatedOutcomes (a docstring here would enter the schema)
class Outcomes(Block):
    rows: Count = None
    threshold: Num = None
    exception_rate: Num = None
    pass_rate: Num = None
    pass_rate_clean: Num = None
    pass_rate_exception: Num = None
    exceptions: Count = None
    clean: Count = None
    rewarded: Count = None
    passed: Count = None
    failed: Count = None
    no_reward: Count = None
    passed_clean: Count = None
    passed_exception: Count = None
    sandbox_hours: Num = None
    sandbox_hours_per_pass: Num = None
    exception_sandbox_hours: Num = None
    exception_sandbox_share: Num = None
    exception_rate_rows: Count = None
    exception_rate_ci95: Optional[list[float]] = None
    pass_rate_rows: Count = None
    pass_rate_ci95: Optional[list[float]] = None
    pass_rate_clean_rows: Count = None
    pass_rate_clean_ci95: Optional[list[float]] = None
    pass_rate_exception_rows: Count = None
    pass_rate_exception_ci95: Optional[list[float]] = None
    small_sample: Optional[list[str]] = None
    #: rollouts a limit ended (``limit_type`` set, no exception), outside the exception rate; the
    #: limit figures are null when no row records a limit
    limits: Count = None
    limit_rate: Num = None
    limits_by_type: Optional[dict[str, int]] = None
    passed_limit: Count = None
    pass_rate_limit: Num = None
    pass_rate_limit_ci95: Optional[list[float]] = None
    limit_sandbox_hours: Num = None
    limit_sandbox_share: Num = None
    #: rewarded rows whose reward is neither 0 nor 1 (0: every reward is 0/1; null: none rewarded)
    reward_fractional_rows: Count = None
    #: with fractional rewards only (measure/rewards.py): distinct rewards, quantiles
    #: (min, p10, p25, median, p75, p90, max) and the natural break (Otsu) as a suggested threshold
    reward_distinct: Count = None
    reward_quantiles: Optional[dict[str, float]] = None
    suggested_pass_threshold: Num = None
    suggested_pass_rate: Num = None


class Exceptions(Block):
    rows: Count = None
    by_type: Optional[dict[str, int]] = None
    sandbox_hours_by_type: Optional[dict[str, float]] = None


class Coverage(Block):
    rows: Count = None
    missing_reward: Count = None
    missing_tokens: Count = None
    missing_turns: Count = None
    missing_trajectory: Count = None
    unknown_trajectory: Count = None
    missing_cached_tokens: Count = None
    missing_exception_flag: Count = None
    missing_model: Count = None
    missing_job: Count = None
    #: rows that could not be used, by reason
    rejected: Optional[dict[str, int]] = None
    rejected_total: Count = None
    #: how an out-of-core run (``measure --out-of-core``, or an input over the memory budget) read
    #: the input; null for the in-memory run
    out_of_core: Optional[str] = None
    #: out of core only: each figure block left null, and why
    not_measured: Optional[dict[str, str]] = None


class _DeclaredSlice(Block):
    """One model's or one job's figures; the job-only ones (concurrency, peak, cap) are null for a model."""

    rows: Count = None
    small_sample: Optional[bool] = None
    sandbox_s: Num = None
    exception_rate: Num = None
    exception_rate_rows: Count = None
    hold_median_s: Num = None
    hold_p99_s: Num = None
    hold_mean_s: Num = None
    #: per-model log-spaced hold histogram (``by_model`` only), for hold CDFs without raw rows
    hold_histogram: Optional[Histogram] = None
    rewarded: Count = None
    passed: Count = None
    pass_rate: Num = None
    token_rows: Count = None
    prefill_per_sandbox_s: Num = None
    decode_per_sandbox_s: Num = None
    concurrency: Optional[Concurrency] = None
    peak: Count = None
    mean: Num = None
    duty: Num = None
    touches: Count = None
    time_at_peak_s: Num = None
    cap_detected: Optional[bool] = None
    configured_cap: Count = None
    steps: Optional[Steps] = None


if TYPE_CHECKING:
    Slice = _DeclaredSlice
else:  # the declared figures, then each count or sum ``slice_sums`` reports as is (one entry there adds one)
    Slice = create_model("Slice", __base__=_DeclaredSlice, __doc__=_DeclaredSlice.__doc__,
                         **dict.fromkeys(reported(), (Count, None)))


class TaskHealth(Block):
    task_id: Optional[str] = None
    rows: Count = None
    exceptions: Count = None
    exception_rate: Num = None
    exception_rate_rows: Count = None
    top_exception_type: Optional[str] = None
    top_exception_count: Count = None
    exception_sandbox_hours: Num = None


class ByTask(Block):
    rows: Count = None
    tasks: Count = None
    rows_without_task: Count = None
    exceptions_without_task: Count = None
    exceptions: Count = None
    min_rows: Count = None
    broken_rate: Num = None
    top: Count = None
    tasks_judged: Count = None
    max_exception_rate: Num = None
    tasks_broken: Count = None
    worst: Optional[list[TaskHealth]] = None
    highest_rate: Optional[list[TaskHealth]] = None
    tasks_all_exceptions: Count = None
    tasks_all_exceptions_sandbox_hours: Num = None
    tasks_all_exceptions_share: Num = None


class NodeHealth(Block):
    """One node's exception count (``by_node.per_node``)."""

    node: Optional[str] = None
    rows: Count = None
    exceptions: Count = None
    exception_rate: Num = None
    exception_rate_rows: Count = None


class ByNode(Block):
    """Exceptions per host / Kubernetes node (rows that name a node; ``--map node=COLUMN``)."""

    rows: Count = None
    nodes: Count = None
    rows_without_node: Count = None
    exceptions_without_node: Count = None
    exceptions: Count = None
    #: every node, by name
    per_node: Optional[list[NodeHealth]] = None


class TaskRequest(Block):
    """One distinct sandbox request and how many tasks ask for it."""

    cpus: Num = None
    memory_mb: Count = None
    storage_mb: Count = None
    gpus: Count = None
    tasks: Count = None
    #: rollouts that ran this kind's tasks (a group's rollouts split evenly over its tasks, so may be fractional);
    #: null when no rollout names its task
    rollouts: Optional[Union[int, float]] = None
    #: their summed holds, hours; null with ``rollouts``
    sandbox_hours: Num = None


class TaskImage(Block):
    """One base image (a Dockerfile FROM, or task.toml's docker_image) and the tasks that build from it."""

    image: Optional[str] = None
    tasks: Count = None
    #: of the tasks that name an image
    share: Num = None


class Tasks(Block):
    count: Count = None
    distinct_task_ids: Count = None
    requests: Optional[list[TaskRequest]] = None
    bundle_rows: Count = None
    bundle_bytes_median: Num = None
    bundle_bytes_max: Num = None
    #: sum over the ``bundle_rows`` tasks whose bundle size is known
    bundle_bytes_total: Num = None
    small_sample: Optional[bool] = None
    build_timeout_s_rows: Count = None
    build_timeout_s_median: Num = None
    agent_timeout_s_rows: Count = None
    agent_timeout_s_median: Num = None
    verifier_timeout_s_rows: Count = None
    verifier_timeout_s_median: Num = None
    #: tasks whose bundle names a base image (task.toml's docker_image, else a Dockerfile FROM)
    image_rows: Count = None
    distinct_images: Count = None
    images: Optional[list[TaskImage]] = None


class Trajectories(Block):
    """Trajectory record sizes over the rows reporting ``trajectory_bytes`` (null when none do)."""

    rows: Count = None
    bytes_median: Num = None
    bytes_mean: Num = None
    bytes_max: Num = None


class Published(Block):
    """Where a summary's figures come from a publication rather than a measurement."""

    note: Optional[str] = None


class CreationLimit(Block):
    """A creation-rate ceiling the starts show (``measure/limits.py``; docs/providers.md)."""

    detected: Optional[bool] = None
    rule: Optional[str] = None
    basis: Optional[str] = None
    window_s: Num = None
    max_starts: Count = None
    level: Count = None
    plateau_windows: Count = None
    stretches: Count = None
    longest_s: Num = None
    rate_per_s: Num = None


class StartingLimit(Block):
    """A cap on sandboxes starting at once, from the environment-setup phase intervals."""

    detected: Optional[bool] = None
    rule: Optional[str] = None
    basis: Optional[str] = None
    rows: Count = None
    peak: Count = None
    touches: Count = None
    time_at_peak_s: Num = None
    waited_rows: Count = None
    wait_median_s: Num = None


class DurationSpike(Block):
    """Durations piling at one value (a timeout or lifetime kill), with how those rollouts ended."""

    value_s: Num = None
    rows: Count = None
    share: Num = None
    background_per_bin: Num = None
    past_share: Num = None
    ceiling: Optional[bool] = None
    by_outcome: Optional[dict[str, int]] = None
    exception_types: Optional[dict[str, int]] = None
    basis: Optional[str] = None


class Limits(Block):
    """Provider and harness limits the history shows; ``spikes`` by duration (``hold`` or a phase)."""

    creation: Optional[CreationLimit] = None
    starting: Optional[StartingLimit] = None
    spikes: Optional[dict[str, list[DurationSpike]]] = None


class BetaPriorFigures(Block):
    """A Beta(alpha, beta) prior over per-task rates: ``mean`` the corpus rate, ``strength`` alpha + beta."""

    alpha: Num = None
    beta: Num = None
    mean: Num = None
    strength: Num = None
    #: the rate it is a prior of
    of: Optional[str] = None


class TaskSignal(Block):
    """One task's pass probability on its valid rollouts: raw, and shrunk toward the corpus rate."""

    task_id: Optional[str] = None
    #: the run (model or job) it ran in: a pass probability is a policy's
    run: Optional[str] = None
    rows: Count = None
    valid: Count = None
    passed: Count = None
    pass_rate_raw: Num = None
    #: the posterior mean under ``rl_groups.pass_prior``
    pass_prob: Num = None
    pass_prob_ci95: Optional[list[float]] = None


class RlGroups(Block):
    """Rollout groups as group-based RL counts them (measure/rl_groups.py; docs/measure.md#rollout-groups-and-signal)."""

    rows: Count = None
    rows_without_task: Count = None
    #: no exception and a reward present
    valid: Count = None
    exceptions: Count = None
    #: no exception and no reward: not valid, counted apart
    no_reward: Count = None
    valid_rate: Num = None
    exception_share_of_invalid: Num = None
    #: exception rows that carry a reward (the harness scored them), and those whose reward fails
    exceptions_scored: Count = None
    exceptions_scored_zero: Count = None
    #: ``exceptions_scored_zero`` over the rows with a reward: the fake zeros a trainer is fed
    exceptions_scored_zero_share: Num = None
    grouped_by: Optional[str] = None
    threshold: Num = None
    #: some group holds two or more rollouts; false: no group structure is recorded
    recorded: Optional[bool] = None
    note: Optional[str] = None
    groups: Count = None
    group_size_median: Num = None
    group_size_min: Count = None
    group_size_max: Count = None
    valid_per_group_mean: Num = None
    informative: Count = None
    all_pass: Count = None
    all_fail: Count = None
    too_few_valid: Count = None
    #: groups with valid passes, no valid fail and an exception: informative if exceptions scored 0
    flipped: Count = None
    informative_share: Num = None
    all_pass_share: Num = None
    all_fail_share: Num = None
    too_few_valid_share: Num = None
    flipped_share: Num = None
    #: all sandbox-hours over the informative groups
    sandbox_hours_per_informative_group: Num = None
    tasks: Count = None
    #: tasks within runs, the unit of the per-task figures (a task's pass probability is one policy's)
    task_units: Count = None
    valid_prior: Optional[BetaPriorFigures] = None
    #: distinct [rows, valid, passed, task units] per task unit: every unit's posterior, compactly
    task_counts: Optional[list[list[int]]] = None
    #: the G the expected shares are for, and why
    group_size: Count = None
    group_size_basis: Optional[str] = None
    note_tasks: Optional[str] = None
    pass_prior: Optional[BetaPriorFigures] = None
    prior_basis: Optional[str] = None
    #: tasks by shrunk pass probability, ten bins of 0.1
    pass_prob_histogram: Optional[list[int]] = None
    lowest: Optional[list[TaskSignal]] = None
    highest: Optional[list[TaskSignal]] = None
    #: tasks whose 95% interval lies below 0.1 / above 0.9
    tasks_almost_never: Count = None
    tasks_almost_always: Count = None
    #: the binomial expression at ``group_size`` over the per-task posteriors
    expected_informative_share: Num = None
    expected_all_pass_share: Num = None
    expected_all_fail_share: Num = None
    expected_too_few_valid_share: Num = None
    expected_flipped_share: Num = None


class SliceCut(Block):
    """How ``by_model`` or ``by_job`` was bounded: the ``top`` groups with most rollouts kept, the rest in one row."""

    top: Count = None
    #: distinct models (jobs) seen
    groups: Count = None
    groups_merged: Count = None
    rows_merged: Count = None
    #: the key of the merged row
    others: Optional[str] = None


class MeasureSummary(Summary):
    """``sandbox-fleet measure --json``."""

    KIND: ClassVar[str] = "measure"
    VERSION: ClassVar[int] = 7  # 6: tasks.image_rows, distinct_images, images; 7: rl_groups

    source: Optional[list[str]] = None
    rows: Count = None
    first_started_at: Optional[str] = None
    last_finished_at: Optional[str] = None
    span_s: Num = None
    sandbox_s: Num = None
    sandbox_hours: Num = None
    pass_threshold: Num = None
    seed: Count = None
    concurrency: Optional[Concurrency] = None
    hold_s: Optional[Holds] = None
    #: Harbor's phases that were recorded, by name (environment_setup, agent_setup, agent_execution, verifier)
    phases: Optional[dict[str, Phase]] = None
    steps: Optional[Steps] = None
    tokens: Optional[Tokens] = None
    outcomes: Optional[Outcomes] = None
    exceptions: Optional[Exceptions] = None
    coverage: Optional[Coverage] = None
    by_model: Optional[dict[str, Slice]] = None
    by_job: Optional[dict[str, Slice]] = None
    by_task: Optional[ByTask] = None
    by_node: Optional[ByNode] = None
    tasks: Optional[Tasks] = None
    trajectories: Optional[Trajectories] = None
    published: Optional[Published] = None
    warnings: Optional[list[str]] = None
    limits: Optional[Limits] = None
    #: rollout groups, signal and per-task pass probabilities (measure/rl_groups.py)
    rl_groups: Optional[RlGroups] = None
    #: by "by_model" / "by_job": set when more than ``columns.TOP_SLICES`` models (jobs) were seen
    slice_cut: Optional[dict[str, SliceCut]] = None
