"""Duration distributions: each draws a vector of seconds from an explicit Generator.

Every distribution exposes ``sample(rng, n) -> float64 array`` and, where it has one
in closed form, ``mean()``; a mixture also reports which component each draw came
from (``sample_labeled``), so a per-model mixture labels rollouts with their model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from sandbox_fleet.errors import InputError


class Dist:
    """Base class: a non-negative duration distribution in seconds."""

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        raise NotImplementedError

    def sample_labeled(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray | None]:
        """Draws plus per-draw component labels (``None`` when there are no components)."""
        return self.sample(rng, n), None

    def mean(self) -> float:
        raise NotImplementedError


@dataclass(frozen=True)
class Exponential(Dist):
    mean_s: float

    def __post_init__(self) -> None:
        _positive("mean_s", self.mean_s)

    def sample(self, rng, n):
        return rng.exponential(self.mean_s, n)

    def mean(self):
        return self.mean_s


@dataclass(frozen=True)
class Deterministic(Dist):
    value_s: float

    def __post_init__(self) -> None:
        if not self.value_s >= 0:
            raise InputError(f"deterministic value_s must be >= 0, got {self.value_s}")

    def sample(self, rng, n):
        return np.full(n, float(self.value_s))

    def mean(self):
        return float(self.value_s)


@dataclass(frozen=True)
class LogNormal(Dist):
    """Parameterised by its median (``exp(mu)``) and log-space ``sigma``."""

    median_s: float
    sigma: float

    def __post_init__(self) -> None:
        _positive("median_s", self.median_s)
        if not self.sigma >= 0:
            raise InputError(f"lognormal sigma must be >= 0, got {self.sigma}")

    def sample(self, rng, n):
        return rng.lognormal(math.log(self.median_s), self.sigma, n)

    def mean(self):
        return self.median_s * math.exp(self.sigma**2 / 2)


@dataclass(frozen=True)
class Weibull(Dist):
    shape: float
    scale_s: float

    def __post_init__(self) -> None:
        _positive("shape", self.shape)
        _positive("scale_s", self.scale_s)

    def sample(self, rng, n):
        return self.scale_s * rng.weibull(self.shape, n)

    def mean(self):
        return self.scale_s * math.gamma(1 + 1 / self.shape)


@dataclass(frozen=True)
class Clipped(Dist):
    """Another distribution clipped into ``[lo_s, hi_s]`` (e.g. a floor on hold time)."""

    base: Dist
    lo_s: float = 0.0
    hi_s: float = math.inf

    def __post_init__(self) -> None:
        if not (self.lo_s >= 0 and self.hi_s > 0 and self.lo_s <= self.hi_s):
            raise InputError(f"clip bounds need 0 <= min_s <= max_s and max_s > 0, got [{self.lo_s}, {self.hi_s}]")

    def sample(self, rng, n):
        return np.clip(self.base.sample(rng, n), self.lo_s, self.hi_s)

    def sample_labeled(self, rng, n):
        v, lab = self.base.sample_labeled(rng, n)
        return np.clip(v, self.lo_s, self.hi_s), lab

    def mean(self):
        raise NotImplementedError("a clipped distribution has no closed-form mean here")


@dataclass(frozen=True)
class Mixture(Dist):
    """Draw a component by weight, then a value from it; labels name the component.

    A per-model mixture uses one component per model, so ``labels[i]`` is the model
    of rollout ``i``. ``exceptions[k]`` marks component ``k`` as measured exception
    rollouts: a draw from it ends as an agent-phase exception (bootstrap by outcome).
    """

    components: tuple[Dist, ...]
    weights: tuple[float, ...]
    labels: tuple[str, ...] = ()
    exceptions: tuple[bool, ...] = ()

    def __post_init__(self) -> None:
        if not self.components or len(self.components) != len(self.weights):
            raise InputError("mixture needs one weight per component and at least one component")
        if any(not w >= 0 for w in self.weights) or sum(self.weights) <= 0:
            raise InputError(f"mixture weights must be >= 0 with a positive sum, got {list(self.weights)}")
        if self.labels and len(self.labels) != len(self.components):
            raise InputError("mixture labels must name every component")
        if self.exceptions and len(self.exceptions) != len(self.components):
            raise InputError("mixture exceptions must flag every component")

    @property
    def probs(self) -> np.ndarray:
        w = np.asarray(self.weights, dtype=float)
        return w / w.sum()

    def sample_labeled(self, rng, n):
        comp = rng.choice(len(self.components), size=n, p=self.probs)
        return self.sample_given(rng, comp), comp

    def sample_given(self, rng, comp: np.ndarray) -> np.ndarray:
        """One draw per entry of ``comp`` from the component it names (in component order, so a
        retry that keeps its rollout's component draws the same stream as a first sample would)."""
        out = np.empty(len(comp))
        for k, dist in enumerate(self.components):
            idx = np.flatnonzero(comp == k)
            if idx.size:
                out[idx] = dist.sample(rng, idx.size)
        return out

    def sample(self, rng, n):
        return self.sample_labeled(rng, n)[0]

    def mean(self):
        return float(sum(p * d.mean() for p, d in zip(self.probs, self.components)))

    def clipped(self, lo_s: float = 0.0, hi_s: float = math.inf) -> Mixture:
        """The same mixture with every component clipped: draws equal clipping the
        mixture's draws (clipping is pointwise), and labels and exception flags stay."""
        return Mixture(tuple(Clipped(c, lo_s, hi_s) for c in self.components), self.weights, self.labels, self.exceptions)


@dataclass(frozen=True, eq=False)
class Empirical(Dist):
    """Bootstrap: resample measured values with replacement."""

    values: np.ndarray = field(repr=False)

    def __post_init__(self) -> None:
        v = np.asarray(self.values, dtype=float)
        if v.size == 0 or not np.all(np.isfinite(v)) or np.any(v < 0):
            raise InputError("empirical distribution needs at least one finite, non-negative value")
        object.__setattr__(self, "values", v)

    def sample(self, rng, n):
        return self.values[rng.integers(0, self.values.size, n)]

    def mean(self):
        return float(self.values.mean())


def clip(dist: Dist, lo_s: float = 0.0, hi_s: float = math.inf) -> Dist:
    """Clip ``dist`` into ``[lo_s, hi_s]``; a mixture stays a mixture (clipped per component)."""
    if isinstance(dist, Mixture):
        return dist.clipped(lo_s, hi_s)
    return Clipped(dist, lo_s, hi_s)


def mixture_of(dist: Dist | None) -> Mixture | None:
    """The per-component view of ``dist``: the mixture itself, a ``Clipped`` mixture with
    its clip pushed into the components, or ``None`` when ``dist`` is not a mixture.

    The engine reads labels (models) and exception flags through this, so wrapping a
    mixture in ``Clipped`` by hand does not lose them.
    """
    if isinstance(dist, Mixture):
        return dist
    if isinstance(dist, Clipped):
        inner = mixture_of(dist.base)
        return inner.clipped(dist.lo_s, dist.hi_s) if inner is not None else None
    return None


def _positive(name: str, value: float) -> None:
    if not (value > 0 and math.isfinite(value)):
        raise InputError(f"distribution parameter {name} must be a positive number, got {value}")
