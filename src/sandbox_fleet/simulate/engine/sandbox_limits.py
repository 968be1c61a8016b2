"""``[fleet.limits]``: a provider's limits in front of one pool (the rules: ``limits_rules.py``).

- ``creates_per_s`` / ``creates_burst``: the creation rate as a token bucket (burst 1 when not given).
- ``max_starting``: at most this many sandboxes in their cold start at once.
- ``cold_start_s``: what a sandbox that is not claimed warm takes to start (added to its build).
- ``warm_pool_size`` / ``warm_pool_refill_per_s``: ready sandboxes a claim takes warm, refilled at that rate.
- ``lifetime_s``: a sandbox's maximum lifetime; a longer hold ends there, killed (an exception of
  phase ``lifetime``, retried only when the workload's ``retry.on`` names ``lifetime``).

Each figure left out is no limit. The lifetime is cut in the drawn holds (``prepare``); the
others place attempts in time, which the admission kernel does (``_admit_kernel.place``, through
``fifo.claim``); an inference pool beside them is refused.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

PosFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class SandboxLimits(BaseModel):
    """A provider's creation bucket, starting cap, cold start, warm pool and lifetime for one pool."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    creates_per_s: PosFloat | None = None
    creates_burst: Annotated[int, Field(ge=1, strict=True)] | None = None
    max_starting: Annotated[int, Field(ge=1, strict=True)] | None = None
    cold_start_s: NonNegFloat = 0.0
    warm_pool_size: Annotated[int, Field(ge=0, strict=True)] = 0
    warm_pool_refill_per_s: PosFloat | None = None
    lifetime_s: PosFloat | None = None

    @model_validator(mode="after")
    def _rules(self) -> SandboxLimits:
        if self.creates_burst is not None and self.creates_per_s is None:
            raise PydanticCustomError("limits_rule", "creates_burst needs creates_per_s (the bucket's rate)")
        if self.warm_pool_size > 0 and self.warm_pool_refill_per_s is None:
            raise PydanticCustomError("limits_rule", "a warm pool (warm_pool_size > 0) needs warm_pool_refill_per_s")
        return self

    @property
    def burst(self) -> int:
        return self.creates_burst if self.creates_burst is not None else 1

    @property
    def places(self) -> bool:
        """Whether the limits move attempts in time (anything but the lifetime)."""
        return (self.creates_per_s is not None or self.max_starting is not None or self.cold_start_s > 0
                or self.warm_pool_size > 0)
