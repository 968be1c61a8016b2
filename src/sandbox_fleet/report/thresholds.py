"""Check thresholds: the shipped defaults (``data/checks.toml``) merged with a user's TOML file.

Every field is required in the models: the defaults live in one place, the TOML file, and a
user file only overrides the keys it names. Unknown keys are errors, so a typo cannot silently
leave a gate at its default.
"""

import math
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from sandbox_fleet.errors import InputError
from sandbox_fleet.safeparse import load_toml

M = TypeVar("M", bound=BaseModel)


class Section(BaseModel):
    """One check's settings; every check can be switched off.

    ``for_s`` is how long the gate's condition must hold before its Prometheus alert fires
    (``check --prometheus-rules``); it does not change what ``check`` itself reports.
    """

    # defer_build: one validator for the whole Thresholds tree, built on first use, not one per class
    model_config = ConfigDict(extra="forbid", defer_build=True)
    enabled: bool = True
    for_s: float = Field(gt=0, strict=True, allow_inf_nan=False)


class Above(Section):
    """Warn / fail when the value is above a bound (None: bound not applied)."""

    warn_above: float | None = None
    fail_above: float | None = None

    @model_validator(mode="after")
    def _ordered(self) -> "Above":
        if self.warn_above is not None and self.fail_above is not None and self.warn_above > self.fail_above:
            raise ValueError("warn_above must not exceed fail_above")
        return self


class Below(Section):
    """Warn / fail when the value is below a bound."""

    warn_below: float | None = None
    fail_below: float | None = None

    @model_validator(mode="after")
    def _ordered(self) -> "Below":
        if self.warn_below is not None and self.fail_below is not None and self.warn_below < self.fail_below:
            raise ValueError("warn_below must not be below fail_below")
        return self


class SliceRate(Above):
    """A rate checked per slice (model, job); small slices may warn but not fail."""

    min_rows: int


class NodeRate(SliceRate):
    """Per-node exception rate above a bound, counted only when the node's exceptions are more
    than chance at the fleet's own rate (as per task); nodes under ``min_rows`` are not judged."""

    min_rows: int = Field(ge=1)
    max_chance: float = Field(gt=0, le=1)


class TaskRate(Section):
    """Per-task exception rate: warn / fail when a task is AT or above a rate (a task whose
    rollouts all raise sits exactly at 1.0), judged over tasks with at least ``min_rows``."""

    warn_at_or_above: float = Field(ge=0, le=1)
    fail_at_or_above: float = Field(ge=0, le=1)
    min_rows: int = Field(ge=1)
    #: Family-wise chance allowed: a task counts only if so many exceptions at the fleet's own
    #: rate would happen by chance with probability below ``max_chance / tasks judged``.
    max_chance: float = Field(default=0.01, gt=0, le=1)

    @model_validator(mode="after")
    def _ordered(self) -> "TaskRate":
        if self.warn_at_or_above > self.fail_at_or_above:
            raise ValueError("warn_at_or_above must not exceed fail_at_or_above")
        return self


class SmallSample(Section):
    min_rows: int


class PrefixCacheOff(Section):
    unreported: Literal["pass", "warn", "fail"]
    warn_below_cached_fraction: float


class SweepSelfCheck(Section):
    rel_tolerance: float


class TelemetryStale(Section):
    """Alert-only gate (``check --prometheus-rules``): seconds since the last finished rollout."""

    warn_above_s: float | None = Field(default=None, gt=0)
    fail_above_s: float | None = Field(default=None, gt=0)


class BacktestDrift(Above):
    """``check --backtest``: the status when a backtest found drift, and bounds on |makespan error|."""

    drifted: Literal["pass", "warn", "fail"]


class Thresholds(BaseModel):
    """All check thresholds; build with :func:`load_thresholds` or :meth:`Thresholds.default`."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    small_sample: SmallSample
    prefix_cache_off: PrefixCacheOff
    exception_rate: Above
    exception_rate_by_model: SliceRate
    exception_rate_by_job: SliceRate
    exception_rate_by_task: TaskRate
    exception_rate_by_node: NodeRate
    missing_reward: Above
    missing_tokens: Above
    missing_turns: Above
    missing_trajectory: Above
    rejected_rows: Above
    cap_binding: Above
    cap_recorded: Section
    cap_below_configured: Section
    duty_cycle: Below
    hold_tail: Above
    sandbox_hours_per_pass: Above
    build_share: Above
    plan_covers_peak: Section
    sweep_self_check: SweepSelfCheck
    telemetry_stale: TelemetryStale
    backtest_drift: BacktestDrift
    metrics_absent: Section
    lifetime_below_budget: Section
    creation_rate_saturated: Above
    informative_groups: Below
    exceptions_scored_as_rewards: Above

    @classmethod
    def default(cls) -> "Thresholds":
        """The shipped defaults from ``sandbox_fleet/data/checks.toml``."""
        return load_thresholds(None)


def _default_table() -> dict[str, Any]:
    text = resources.files("sandbox_fleet").joinpath("data/checks.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Override ``base`` key by key, descending into tables present in both."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _describe(exc: ValidationError) -> str:
    """First validation error as ``key.path: what was expected``, one line."""
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "(top level)"
    if err["type"] == "extra_forbidden":
        return f"unknown key '{where}'"
    if where.endswith(".for_s"):
        return f"key '{where}': expected a positive number of seconds, got {err.get('input')!r}"
    return f"key '{where}': {err['msg']}"


def _check_finite(table: dict[str, Any], source: str, prefix: str = "") -> None:
    """TOML's nan and inf are no thresholds: a NaN bound makes a gate that can never fire."""
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            _check_finite(value, source, f"{name}.")
        elif isinstance(value, float) and not math.isfinite(value) and key != "for_s":  # for_s: the model's own check
            raise InputError(f"{source}: key '{name}': {value} is not a threshold; expected a finite number")


def _defaults(cls: type[M], table: dict[str, Any]) -> M:
    """``cls`` from the shipped table without building its validator (~50 M instructions of every
    ``check`` and ``plan``): what validating it gives, ints in float fields made floats.
    tests/report/test_thresholds.py holds the result to ``model_validate`` of the same table."""
    values: dict[str, Any] = {}
    for name, field in cls.model_fields.items():
        if name not in table:
            continue
        value, kind = table[name], field.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            value = _defaults(kind, value)
        elif isinstance(value, int) and not isinstance(value, bool) and float in (kind, *get_args(kind)):
            value = float(value)
        values[name] = value
    return cls.model_construct(**values)


def load_thresholds(path: str | Path | None = None) -> Thresholds:
    """Shipped defaults, overridden by the TOML file at ``path`` when given.

    Raises InputError (one line, naming the file and key) for a missing or unparsable
    file, an unknown key, or a value of the wrong type.
    """
    table = _default_table()
    if path is None:  # the shipped file, checked once by the tests
        return _defaults(Thresholds, table)
    user = load_toml(path, "thresholds file")
    _check_finite(user, str(path))
    try:
        return Thresholds.model_validate(_merge(table, user))
    except ValidationError as exc:
        raise InputError(f"{path}: {_describe(exc)}") from None
