"""Scenario files: the TOML schema (Pydantic; an unknown key is an error naming it) and loading.

Smallest form::

    [fleet]
    cap = 10
    [workload]
    kind = "poisson"          # or "sync-rl", "async-rl", "replay", "closed"
    rate_per_s = 7.0
    count = 200000
    [hold]
    dist = "exponential"      # or lognormal (median_s, sigma), deterministic (value_s),
    mean_s = 1.0              #    weibull (shape, scale_s), mixture, empirical
    [run]
    seed = 1

Several pools: ``[[fleets]]`` (each with a ``name``); several workloads:
``[[workloads]]``, each with its own ``hold`` / ``build`` / ... tables and a ``pool``
(name or index). Relative paths are relative to the scenario file. Every table is
shown in ``examples/scenarios/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, ClassVar, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from sandbox_fleet.errors import InputError
from sandbox_fleet.safeparse import load_toml
from sandbox_fleet.simulate.engine.entities import Engine, Fleet, NonNegFloat, PosFloat, Whole

#: A scenario file's tables are validated strictly (README: strict validation): text is no number and
#: no boolean (``cap = "10"``, ``preempt = "yes"`` are refused), a number no boolean; an integer is a float.
STRICT = ConfigDict(extra="forbid", strict=True)


class Strict(BaseModel):
    model_config = STRICT


class _Clip(Strict):
    min_s: NonNegFloat | None = None
    max_s: PosFloat | None = None

    @field_validator("max_s")
    @classmethod
    def _max_not_below_min(cls, v: float | None, info: ValidationInfo) -> float | None:
        lo = info.data.get("min_s")
        if v is not None and lo is not None and lo > v:
            raise PydanticCustomError("clip_bounds", "max_s {hi} is below min_s {lo}; need min_s <= max_s", {"hi": v, "lo": lo})
        return v


class ExponentialSpec(_Clip):
    dist: Literal["exponential"]
    mean_s: PosFloat


class DeterministicSpec(_Clip):
    dist: Literal["deterministic"]
    value_s: NonNegFloat


class LogNormalSpec(_Clip):
    dist: Literal["lognormal"]
    median_s: PosFloat
    sigma: NonNegFloat


class WeibullSpec(_Clip):
    dist: Literal["weibull"]
    shape: PosFloat
    scale_s: PosFloat


class EmpiricalSpec(_Clip):
    """Bootstrap from ``values`` or from measured telemetry (``by`` model and/or outcome)."""

    dist: Literal["empirical"]
    values: Annotated[list[NonNegFloat], Field(min_length=1)] | None = None
    telemetry: list[str] | str | None = None
    by: list[Literal["model", "outcome"]] = []
    model: str | None = None  # keep only this model's rows


class ComponentSpec(Strict):
    weight: NonNegFloat
    label: str | None = None
    exception: bool = False
    hold: DistSpec


class MixtureSpec(_Clip):
    dist: Literal["mixture"]
    components: list[ComponentSpec] = Field(min_length=1)

    @field_validator("components")
    @classmethod
    def _some_weight(cls, v: list[ComponentSpec]) -> list[ComponentSpec]:
        if sum(c.weight for c in v) <= 0:
            raise PydanticCustomError("mixture_weights", "the components' weights must have a positive sum", {})
        return v


DistSpec = Annotated[
    Union[ExponentialSpec, DeterministicSpec, LogNormalSpec, WeibullSpec, EmpiricalSpec, MixtureSpec],
    Field(discriminator="dist"),
]
ComponentSpec.model_rebuild()


class FleetSpec(Fleet):
    """``[fleet]`` / ``[[fleets]]``: the engine's own ``Fleet`` model, validated here once; a file
    must give ``cap = N`` or ``unbounded = true``. Without a ``name``, the builder names it ``pool{i}``."""

    model_config = STRICT
    cap_required: ClassVar[bool] = True
    # pydantic's own __init__: with Fleet's (errors as one InputError line) nested validation would call
    # it and lose the file and the key path ('fleets.1.preempt') that load_scenario words
    __init__ = BaseModel.__init__


class BuildSpec(Strict):
    hit_p: Annotated[float, Field(ge=0, le=1)] = 1.0
    hit: DistSpec | None = None
    miss: DistSpec | None = None


class TurnsSpec(Strict):
    """``model_latency`` (a fixed latency per call), or, with ``[inference]``, the tokens
    per turn (counts keep the ``_s`` parameter names, as ``turns`` does)."""

    turns: DistSpec
    model_latency: DistSpec | None = None
    command: DistSpec | None = None
    prefill_tokens: DistSpec | None = None
    decode_tokens: DistSpec | None = None


Fraction = Annotated[float, Field(gt=0, le=1)]


class InferenceSpec(Strict):
    """The inference pool (one, shared by every workload); see ``simulate.engine.inference``."""

    replicas: Annotated[Whole, Field(ge=1)] | None = None
    gpus: Annotated[Whole, Field(ge=1)] | None = None
    gpus_per_replica: Annotated[Whole, Field(ge=1)] | None = None
    prefill_tok_s: PosFloat | None = None
    decode_tok_s: PosFloat | None = None
    gpu: str | None = None
    gpu_catalog: str | None = None
    model_params_b: PosFloat | None = None
    bytes_per_param: PosFloat = 2.0
    utilisation: Fraction = 0.4
    memory_fraction: Fraction = 0.9
    iteration_base_ms: NonNegFloat | None = None
    max_num_seqs: Annotated[Whole, Field(ge=1)] | None = None
    routing: Literal["sticky", "least-loaded"] = "sticky"
    kv_cache_gb: NonNegFloat | None = None
    kv_bytes_per_token: PosFloat | None = None
    kv_offload_gb: NonNegFloat = 0.0


class ExceptionsSpec(Strict):
    rate_per_s: dict[Literal["build", "agent", "verifier"], NonNegFloat] = {}
    p: dict[Literal["build", "agent", "verifier"], Annotated[float, Field(ge=0, le=1)]] = {}


class RetrySpec(Strict):
    max_retries: Annotated[Whole, Field(ge=0)] = 0
    on: list[Literal["build", "agent", "verifier", "preemption"]] = ["build", "verifier", "preemption"]
    redraw: bool = False


class EpisodeParts(Strict):
    hold: DistSpec | None = None
    turns: TurnsSpec | None = None
    build: BuildSpec | None = None
    verifier: DistSpec | None = None
    exceptions: ExceptionsSpec | None = None
    retry: RetrySpec | None = None
    agent_timeout_s: PosFloat | None = None


class DynamicSamplingSpec(Strict):
    """``dynamic_sampling`` of an RL workload (``simulate.engine.dynamic_sampling``): each step releases
    groups of ``group_size`` rollouts until ``groups`` of them are informative. ``task_pass``: the tasks'
    pass probabilities, or a ``measure --json`` summary (its per-task posterior means and valid rate)."""

    groups: Annotated[Whole, Field(ge=1)]
    group_size: Annotated[Whole, Field(ge=1)]
    task_pass: Annotated[list[Annotated[float, Field(ge=0, le=1)]], Field(min_length=1)] | str
    task_weight: Annotated[list[NonNegFloat], Field(min_length=1)] | None = None
    valid_rate: Annotated[float, Field(ge=0, le=1)] | None = None
    round_groups: Annotated[Whole, Field(ge=1)] | None = None
    max_rounds: Annotated[Whole, Field(ge=1)] | None = None


class RequestSpec(Strict):
    """A workload's ``request``: each sandbox's cpu, memory and disk, placed on a pool made of nodes
    (``[[fleet.node_pools]]``)."""

    cpu: PosFloat
    memory_mb: NonNegFloat = 0.0
    disk_mb: NonNegFloat = 0.0


class WorkloadSpec(EpisodeParts):
    kind: Literal["poisson", "sync-rl", "async-rl", "replay", "closed"]
    name: str | None = None
    pool: str | int = 0
    # a pool with admission = "priority"
    priority: Whole | None = None
    nominal: Annotated[Whole, Field(ge=0)] | None = None
    borrow_limit: Annotated[Whole, Field(ge=0)] | None = None
    # closed (with count)
    population: Annotated[Whole, Field(ge=1)] | None = None
    # poisson
    rate_per_s: PosFloat | None = None
    count: Annotated[Whole, Field(ge=1)] | None = None
    start_s: NonNegFloat = 0.0
    # RL
    batch: Whole | list[Whole] | None = None
    steps: Annotated[Whole, Field(ge=1)] | None = None
    train_s: NonNegFloat = 0.0
    staleness: Annotated[Whole, Field(ge=0)] | None = None
    # replay
    telemetry: list[str] | str | None = None
    arrivals_s: Annotated[list[NonNegFloat], Field(min_length=1)] | None = None
    # RL: dynamic sampling (DAPO)
    dynamic_sampling: DynamicSamplingSpec | None = None
    # a pool made of nodes: each sandbox's request
    request: RequestSpec | None = None

    @field_validator("batch")
    @classmethod
    def _batch_sizes(cls, v: int | list[int] | None) -> int | list[int] | None:
        # Checked here, not with per-member constraints, so the error names 'batch' itself.
        if isinstance(v, list) and not v:
            raise PydanticCustomError("batch_sizes", "give at least one batch size", {})
        if v is not None and min(v if isinstance(v, list) else [v]) < 1:
            raise PydanticCustomError("batch_sizes", "batch sizes must be >= 1, got {v}", {"v": v})
        return v


class ImagesSpec(Strict):
    """``[images]``: the images the tasks build and each node's layer cache (``simulate.engine.images``).

    The catalog: ``tasks`` (task bundles: each task's Dockerfile FROM / image, shares as counted),
    or ``count`` images with a Zipf law of exponent ``zipf_s`` (default 1; 0 is uniform), or explicit
    ``shares`` (one per image, summing to 1).
    """

    tasks: list[str] | str | None = None
    count: Annotated[Whole, Field(ge=1)] | None = None
    zipf_s: NonNegFloat | None = None
    shares: Annotated[list[NonNegFloat], Field(min_length=1)] | None = None
    names: Annotated[list[str], Field(min_length=1)] | None = None
    size_mb: PosFloat | Annotated[list[PosFloat], Field(min_length=1)] | dict[str, PosFloat]
    cache_mb: PosFloat
    pull_mb_per_s: PosFloat | None = None
    prepull: Annotated[Whole, Field(ge=0)] = 0
    whatif_prepull: list[Annotated[Whole, Field(ge=0)]] = []


class SubstrateSpec(Strict):
    """``[substrate]``: an execution substrate of ``data/substrates.toml`` (or ``catalog``) whose cold
    start and per-action overhead are added to every hold; ``turns_per_rollout`` counts the actions of a
    ``[hold]`` workload (a ``[turns]`` workload uses each rollout's own turns)."""

    name: str
    catalog: str | None = None
    turns_per_rollout: PosFloat | None = None


class RunSpec(Strict):
    seed: Annotated[Whole, Field(ge=0)] = 1
    engine: Engine = "auto"
    epoch: str = "2026-01-01T00:00:00+00:00"
    #: share of completed rollouts that pass (the summary's passing_per_hour); none: every completed one
    pass_rate: Annotated[float, Field(gt=0, le=1)] | None = None
    #: a fixed warm-up deleted before the steady window, instead of MSER-5
    warmup_s: NonNegFloat | None = None
    #: modules imported before the fleets are validated: admission policies they register
    #: (``simulate.engine.policy_plugins``; an installed one is found by its entry point without this)
    plugins: list[str] | None = None


class FilterSpec(Strict):
    """``[filter]``: which rollouts of every telemetry file the scenario reads (replay, empirical holds,
    turns) it keeps, as ``--model``, ``--since`` and ``--until`` keep them (``simulate --from`` writes it)."""
    models: list[str] | None = None
    since: str | None = None
    until: str | None = None


class ScenarioSpec(EpisodeParts):
    fleet: FleetSpec | None = None
    fleets: list[FleetSpec] | None = None
    workload: WorkloadSpec | None = None
    workloads: list[WorkloadSpec] | None = None
    inference: InferenceSpec | None = None
    images: ImagesSpec | None = None
    substrate: SubstrateSpec | None = None
    run: RunSpec = RunSpec()
    filter: FilterSpec | None = None


# --- loading ----------------------------------------------------------------------------
def _error_line(path: str, err: ValidationError) -> str:
    e = err.errors()[0]
    loc = ".".join(str(p) for p in e["loc"] if not (isinstance(p, str) and p in _DIST_TAGS))
    if e["type"] == "extra_forbidden":
        return f"{path}: unknown key '{loc}'"
    if e["type"] == "union_tag_invalid":
        return f"{path}: key '{loc}.dist' must be one of {', '.join(sorted(_DIST_TAGS))}"
    if e["type"] == "missing":
        return f"{path}: missing key '{loc}'"
    if e["type"] in _WRONG_TYPE:  # strict: say what was given (text in quotes: `cap = "10"` is no number)
        return f"{path}: key '{loc}': {e['msg']}, got {e['input']!r:.40} ({type(e['input']).__name__})"
    return f"{path}: key '{loc}': {e['msg']}"


_WRONG_TYPE = {"int_type", "float_type", "bool_type", "string_type", "list_type", "dict_type"}


_DIST_TAGS = {"exponential", "deterministic", "lognormal", "weibull", "empirical", "mixture"}


def load_scenario(path: str | Path) -> ScenarioSpec:
    """Parse and validate a scenario file; any problem is one InputError line."""
    p = Path(path)
    return validate_scenario(load_toml(p, "scenario file"), str(p))


def validate_scenario(data: dict, source: str) -> ScenarioSpec:
    """Validate a scenario's parsed tables (a file's, or a sweep variant's): the one place a scenario,
    its fleets included, is validated; any problem is one InputError line starting with ``source``.
    The admission policies it needs from outside the package are loaded first (``policy_plugins``)."""
    from sandbox_fleet.simulate.engine.policy_plugins import load_for

    load_for(data, source)
    try:
        spec = ScenarioSpec.model_validate(data)
    except ValidationError as exc:
        raise InputError(_error_line(source, exc)) from None
    if (spec.fleet is None) == (spec.fleets is None):
        raise InputError(f"{source}: give exactly one of [fleet] or [[fleets]]")
    if (spec.workload is None) == (spec.workloads is None):
        raise InputError(f"{source}: give exactly one of [workload] or [[workloads]]")
    return spec
