"""What the engine simulates: the fleet (a pool of slots) and a rollout's episode.

Terminal states and exception phases are small integers so the hot loop and the
result arrays stay NumPy-friendly; ``STATE_NAMES`` / ``PHASE_NAMES`` give the words.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, NoReturn

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate.engine.distributions import Dist
from sandbox_fleet.simulate.engine.sandbox_limits import SandboxLimits

if TYPE_CHECKING:
    from sandbox_fleet.simulate.engine.images import ImageCache

# Attempt states. The first four are terminal; RETRIED means the attempt ended early
# and the rollout went back to the queue for another attempt.
COMPLETED, EXCEPTION, TIMEOUT, DROPPED, RETRIED = 0, 1, 2, 3, 4
STATE_NAMES = ("completed", "exception", "timeout", "dropped", "retried")

# Where an attempt's exception happened (0: none).
NO_PHASE, BUILD, AGENT, VERIFIER, PREEMPTION, LIFETIME = 0, 1, 2, 3, 4, 5
PHASE_NAMES = ("", "build", "agent", "verifier", "preemption", "lifetime")
PHASE_CODES = {name: code for code, name in enumerate(PHASE_NAMES) if name}

def _registered_policy(value: object) -> object:
    # the names are the registry's (``policy_registry``: built-ins and policies registered from outside)
    from sandbox_fleet.simulate.engine.policy_registry import check_name

    try:
        return check_name(value)
    except ValueError as exc:
        raise PydanticCustomError("admission", str(exc)) from None


#: An admission policy a pool may use: a name registered in ``policy_registry`` (the built-ins
#: ``fifo``, ``shortest-timeout-first``, ``priority``, ``timeout-ceiling``, and any registered from outside).
Admission = Annotated[str, BeforeValidator(_registered_policy),
                      Field(json_schema_extra={"examples": ["fifo", "shortest-timeout-first", "priority", "timeout-ceiling"]})]
#: which path a run may take (``run.engine``, ``run_workloads(engine=...)``; ``run.place`` dispatches): ``fifo``
#: the one pass where nothing feeds back, ``events`` the admission kernel's event loop, ``auto`` either
Engine = Literal["auto", "fifo", "events"]


#: The largest count a run takes: an int64, what NumPy and Arrow hold (a larger one overflowed later,
#: blamed on another key).
MAX_WHOLE = 2**63 - 1


def _no_bool(value: object) -> object:
    # TOML's true/false are no counts: lax validation read `cap = true` as a cap of 1
    if isinstance(value, bool):
        raise PydanticCustomError("whole_number", "expected a whole number, got {value}", {"value": str(value).lower()})
    if isinstance(value, float) and value.is_integer():  # taken as the count it names, even in strict mode
        value = int(value)
    if isinstance(value, int) and abs(value) > MAX_WHOLE:
        raise PydanticCustomError("whole_number", f"{float(value):.3g} is past the largest count a run takes "
                                  f"({MAX_WHOLE:,})")
    return value


#: A count: a whole number up to ``MAX_WHOLE`` (a whole-valued float is still taken), never a boolean.
Whole = Annotated[int, BeforeValidator(_no_bool)]
PosFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Count = Annotated[Whole, Field(ge=1)]


class FleetNodePool(BaseModel):
    """``[[fleet.node_pools]]``: one node pool of a fleet pool made of nodes (``nodes.NodePoolSpec``'s
    figures, inside the engine): a node type's allocatable cpu, memory and disk (after the system
    reserve), its price and tier, its size limits, its provisioning and scale-down delays, and its
    placement rule (``fast/_node_rules``). A pool's nodes are tried in the order the pools are given."""

    model_config = ConfigDict(extra="forbid")

    name: str = "nodes"
    cpu: PosFloat
    memory_mb: PosFloat
    disk_mb: PosFloat
    usd_per_node_h: NonNegFloat = 0.0
    tier: str = "on_demand"
    min_nodes: Annotated[Whole, Field(ge=0)] = 0
    #: at its max a request that fits no node waits for room (the engine's arrays are sized by it)
    max_nodes: Count
    provision_s: NonNegFloat = 0.0
    scale_down_s: NonNegFloat = 0.0
    placement: Literal["pack", "spread"] = "pack"
    #: spot reclaims per node-hour, Poisson per node: a reclaim ends every sandbox on the node (retried as
    #: the workload's retry policy says for phase ``preemption``); a ``min_nodes`` node is replaced
    reclaim_per_node_h: NonNegFloat = 0.0

    @model_validator(mode="after")
    def _sizes(self) -> FleetNodePool:
        if self.max_nodes < self.min_nodes:
            raise ValueError(f"max_nodes ({self.max_nodes}) must be >= min_nodes ({self.min_nodes})")
        return self


class Fleet(BaseModel):
    """One pool of ``cap`` sandbox slots, shared by every workload assigned to it.

    One model for the scenario file's ``[fleet]`` / ``[[fleets]]`` tables (``scenario.spec.FleetSpec``
    is this model with one rule of the file format added) and for the engine, validated once, when
    it is made: the engine and the scenario builder use the instance as it is.

    - ``cap``: slots; ``None`` means unbounded (an M/G/inf pool). ``unbounded = true`` says so
      explicitly (a scenario file must give one of the two).
    - ``provision_delay_s``: a freed slot takes its next rollout only after this delay
      (a saturated pool then leaves and re-touches its cap many times, as a real
      fleet refilling slots does).
    - ``start_cap``: at most this many sandboxes may be in their build phase at once
      (``None``: no separate limit). A rollout is admitted only when both a slot and
      a start slot are free.
    - ``admission``: ``"fifo"`` (default), ``"shortest-timeout-first"`` (smallest
      agent timeout first, FIFO among equals), ``"priority"`` (workload priorities and
      quotas, see ``policies``) or ``"timeout-ceiling"`` (no admission whose timeout
      ceiling would keep the next RL batch from fitting; holds reclaimed at the ceiling).
    - ``preempt`` (``"priority"`` only): a waiting rollout may evict a running rollout
      of a lower priority, or one borrowing beyond its quota; the evicted rollout re-runs.
    - preemption: nodes of ``slots_per_node`` slots are reclaimed at
      ``preempt_rate_per_node_s`` each (a Poisson process); the attempts running on a
      reclaimed node end as retried (when the retry policy allows) and its slots come
      back after ``node_replace_s``.
    - ``queue_timeout_s``: a rollout that waited this long for a slot is dropped.
    - ``limits``: a provider's creation bucket, starting cap, cold start, warm pool and sandbox
      lifetime in front of the pool (``sandbox_limits.SandboxLimits``; ``[fleet.limits]``).

    Made in Python (``Fleet(cap=...)``), a bad value is one ``InputError`` line naming the key.
    """

    model_config = ConfigDict(extra="forbid")  # an unknown key is an error naming it (a typo in a file)

    name: str = "pool"
    cap: Count | None = None
    unbounded: bool = False
    provision_delay_s: NonNegFloat = 0.0
    start_cap: Count | None = None
    admission: Admission = "fifo"
    #: priority admission: a waiting rollout may evict a lower class (or a borrower beyond its quota)
    preempt: bool = False
    slots_per_node: Count = 96
    preempt_rate_per_node_s: NonNegFloat = 0.0
    node_replace_s: NonNegFloat = 0.0
    queue_timeout_s: PosFloat | None = None
    #: a provider's creation bucket, starting cap, cold start, warm pool and lifetime (``sandbox_limits``)
    limits: SandboxLimits | None = None
    #: the pool made of nodes (``FleetNodePool``, in priority order): each workload's ``request`` placed on
    #: them inside the engine (the admission kernel); ``None``: slots only (``cap``)
    node_pools: list[FleetNodePool] | None = None
    #: a pool made of nodes: a reclaim trace (``simulate/engine/reclaim_trace.py``: a CSV ``time,pool``, seconds from
    #: the run's start, or timestamps from its replayed telemetry's first start, and a node pool's name), each row taking one node of that node pool up then (drawn
    #: uniformly) and ending every attempt on it as the Poisson reclaims do; a scenario's path is relative to it
    reclaim_trace: str | None = None

    #: whether a missing cap is an error (a scenario file must say ``unbounded = true``)
    cap_required: ClassVar[bool] = False

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            e = exc.errors()[0]
            raise InputError(f"fleet: key '{'.'.join(str(p) for p in e['loc'])}': {e['msg']}") from None

    @model_validator(mode="after")
    def _rules(self) -> Fleet:
        """The rules between keys; each error is located at the key it names."""
        if self.node_pools is not None:
            _node_rules(self)
        if self.cap_required and self.cap is None and not self.unbounded and self.node_pools is None:
            _refuse("cap", self.cap, "give cap = N, or unbounded = true")
        if self.cap is not None and self.unbounded:
            _refuse("unbounded", self.unbounded, "cap and unbounded = true contradict")
        if self.preempt_rate_per_node_s > 0 and self.cap is None:
            _refuse("preempt_rate_per_node_s", self.preempt_rate_per_node_s,
                    "preemption needs a finite cap (nodes are cap / slots_per_node)")
        if self.reclaim_trace is not None and not self.node_pools:
            _refuse("reclaim_trace", self.reclaim_trace, "a reclaim trace needs a pool made of nodes (node_pools)")
        if self.preempt and self.admission != "priority":
            _refuse("preempt", self.preempt,
                    f"preempt = true needs admission = \"priority\" (this pool admits by {self.admission!r})")
        if self.preempt and self.cap is None and self.node_pools is None:
            _refuse("preempt", self.preempt, "preempt = true needs a finite cap (an unbounded pool has a slot for everyone)")
        return self


def _node_rules(f: Fleet) -> None:
    """A pool made of nodes: its nodes are its cap, their ``provision_s`` its delay and their
    ``reclaim_per_node_h`` its preemption, so the slot keys for those are refused by key; every
    admission policy, start cap, queue timeout and ``[fleet.limits]`` runs (``node_dispatch``)."""
    if not f.node_pools:
        _refuse("node_pools", f.node_pools, "give at least one node pool")
    for key, bad in (("cap", f.cap is not None), ("unbounded", f.unbounded),
                     ("provision_delay_s", f.provision_delay_s > 0),
                     ("preempt_rate_per_node_s", f.preempt_rate_per_node_s > 0)):
        if bad:
            _refuse(key, getattr(f, key), "does not apply to a pool made of nodes (node_pools: its nodes are its "
                    "room, their provision_s its delay, their reclaim_per_node_h its preemption)")


def _refuse(key: str, value: object, message: str) -> NoReturn:
    # a ValidationError located at the key: nested in a scenario it reads 'fleets.1.preempt'
    raise ValidationError.from_exception_data("Fleet", [InitErrorDetails(
        type=PydanticCustomError("fleet_rule", message), loc=(key,), input=value)])


@dataclass
class Build:
    """Image build at the start of a hold: a cache hit with probability ``hit_p``, or, with
    ``images`` (an ``images.ImageCache``), a hit when the task's image is in its node's cache."""

    hit_p: float = 1.0
    hit: Dist | None = None
    miss: Dist | None = None
    images: ImageCache | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.hit_p <= 1.0:
            raise InputError(f"build hit_p must be in [0, 1], got {self.hit_p}")


@dataclass(frozen=True)
class SubstrateCost:
    """An execution substrate's overhead (``data/substrates.toml``): ``cold_start_s`` once per attempt
    (a new sandbox, added to the build) and ``per_action_s`` once per agent turn (added to the agent
    phase). ``turns_mean``: the turns a rollout of a ``[hold]`` workload takes (None: cold start only)."""

    name: str
    cold_start_s: float
    per_action_s: float
    source: str
    as_of: str
    kind: str = ""
    turns_mean: float | None = None


@dataclass
class Turns:
    """Agent phase as ``turns x (model latency + command time)``.

    With an inference pool, ``model_latency`` is ``None`` and each turn's model call is
    served by the pool instead: ``prefill_tokens`` (new prompt tokens per turn) and
    ``decode_tokens`` are drawn per turn and rounded to integers >= 0.
    """

    turns: Dist
    model_latency: Dist | None
    command: Dist | None = None
    prefill_tokens: Dist | None = None
    decode_tokens: Dist | None = None

    @property
    def served(self) -> bool:
        """Whether the model calls go to an inference pool (no fixed latency)."""
        return self.model_latency is None


@dataclass
class Episode:
    """How long one attempt holds its slot, phase by phase.

    The agent phase is ``agent`` (a distribution, or an explicit per-rollout array
    consumed in release order) or ``turns``. Exceptions strike each phase as a
    Poisson process at ``exception_rate_per_s[phase]`` and end the hold there;
    ``exception_p[phase]`` instead fails that phase with a fixed probability, at a
    uniform point inside it. ``agent_timeout_s`` cuts the agent phase (a timeout,
    never retried); the verifier still runs after a timeout, as Harbor does.
    ``exception``: explicit per-rollout flags (the caller decided: the hold is the
    given one and the rollout ends as an agent-phase exception).
    """

    agent: Dist | np.ndarray | None = None
    turns: Turns | None = None
    build: Build | None = None
    verifier: Dist | None = None
    exception_rate_per_s: dict[str, float] = field(default_factory=dict)
    exception_p: dict[str, float] = field(default_factory=dict)
    agent_timeout_s: float | np.ndarray | None = None
    exception: np.ndarray | None = None
    substrate: SubstrateCost | None = None

    def __post_init__(self) -> None:
        if (self.agent is None) == (self.turns is None):
            raise InputError("an episode needs exactly one of a hold (agent) distribution or a turns model")
        for table in (self.exception_rate_per_s, self.exception_p):
            for phase, value in table.items():
                if phase not in ("build", "agent", "verifier"):
                    raise InputError(f"exception phase must be build, agent or verifier, got {phase!r}")
                if not (value >= 0 and math.isfinite(value)):
                    raise InputError(f"exception {phase} must be a finite number >= 0, got {value}")
        for phase, p in self.exception_p.items():
            if p > 1:
                raise InputError(f"exception_p.{phase} must be <= 1, got {p}")


@dataclass
class RetryPolicy:
    """Retry infrastructure errors up to ``max_retries`` times; never agent timeouts.

    ``on``: the exception phases that count as infrastructure errors. A retry re-runs
    the task (same model, agent and verifier durations; fresh build cache hit and
    exception draws); ``redraw=True`` draws every phase afresh instead (the old model).
    """

    max_retries: int = 0
    on: tuple[str, ...] = ("build", "verifier", "preemption")
    redraw: bool = False

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise InputError(f"retry max_retries must be >= 0, got {self.max_retries}")
        bad = [p for p in self.on if p not in PHASE_CODES]
        if bad:
            raise InputError(f"retry on: unknown phase(s) {bad}; expected build, agent, verifier, preemption, lifetime")

    @property
    def phase_codes(self) -> frozenset[int]:
        return frozenset(PHASE_CODES[p] for p in self.on)
