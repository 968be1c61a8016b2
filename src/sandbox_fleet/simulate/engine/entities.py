"""What the engine simulates: the fleet (a pool of slots) and a rollout's episode.

Terminal states and exception phases are small integers so the hot loop and the
result arrays stay NumPy-friendly; ``STATE_NAMES`` / ``PHASE_NAMES`` give the words.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate.engine.distributions import Dist

if TYPE_CHECKING:
    from sandbox_fleet.simulate.engine.images import ImageCache

# Attempt states. The first four are terminal; RETRIED means the attempt ended early
# and the rollout went back to the queue for another attempt.
COMPLETED, EXCEPTION, TIMEOUT, DROPPED, RETRIED = 0, 1, 2, 3, 4
STATE_NAMES = ("completed", "exception", "timeout", "dropped", "retried")

# Where an attempt's exception happened (0: none).
NO_PHASE, BUILD, AGENT, VERIFIER, PREEMPTION = 0, 1, 2, 3, 4
PHASE_NAMES = ("", "build", "agent", "verifier", "preemption")
PHASE_CODES = {name: code for code, name in enumerate(PHASE_NAMES) if name}

#: Admission policies a pool may use (``admission.make_queue`` builds each one's queue).
ADMISSIONS = ("fifo", "shortest-timeout-first", "priority", "timeout-ceiling")


@dataclass
class Fleet:
    """One pool of ``cap`` sandbox slots, shared by every workload assigned to it.

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
    - ``start_cap`` -- ``None`` disables; ``cap=None`` means unbounded (an M/G/inf pool).
    """

    cap: int | None
    provision_delay_s: float = 0.0
    start_cap: int | None = None
    admission: str = "fifo"
    slots_per_node: int = 96
    preempt_rate_per_node_s: float = 0.0
    node_replace_s: float = 0.0
    queue_timeout_s: float | None = None
    name: str = "pool"
    preempt: bool = False

    def __post_init__(self) -> None:
        if self.cap is not None and (int(self.cap) != self.cap or self.cap < 1):
            raise InputError(f"fleet cap must be a positive integer, got {self.cap}")
        if self.start_cap is not None and (int(self.start_cap) != self.start_cap or self.start_cap < 1):
            raise InputError(f"fleet start_cap must be a positive integer, got {self.start_cap}")
        if not self.provision_delay_s >= 0:
            raise InputError(f"fleet provision_delay_s must be >= 0, got {self.provision_delay_s}")
        if self.admission not in ADMISSIONS:
            raise InputError(f"fleet admission must be one of {', '.join(ADMISSIONS)}, got {self.admission!r}")
        if self.preempt and self.admission != "priority":
            raise InputError(f"fleet preempt needs admission = 'priority' (this pool admits by {self.admission!r})")
        if self.preempt and self.cap is None:
            raise InputError("fleet preempt needs a finite cap (an unbounded pool has a slot for everyone)")
        if self.slots_per_node < 1:
            raise InputError(f"fleet slots_per_node must be >= 1, got {self.slots_per_node}")
        if not self.preempt_rate_per_node_s >= 0 or not self.node_replace_s >= 0:
            raise InputError("fleet preempt_rate_per_node_s and node_replace_s must be >= 0")
        if self.preempt_rate_per_node_s > 0 and self.cap is None:
            raise InputError("fleet preemption needs a finite cap (nodes are cap / slots_per_node)")
        if self.queue_timeout_s is not None and not self.queue_timeout_s > 0:
            raise InputError(f"fleet queue_timeout_s must be > 0, got {self.queue_timeout_s}")


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
            raise InputError(f"retry on: unknown phase(s) {bad}; expected build, agent, verifier, preemption")

    @property
    def phase_codes(self) -> frozenset[int]:
        return frozenset(PHASE_CODES[p] for p in self.on)
