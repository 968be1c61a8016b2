"""The simulate summary's dynamic-sampling and provider-limits blocks in the report's Simulation section.

Each row is marked ``data-figure="dynamic_sampling.FIELD"`` (``limits.FIELD``) with the summary's raw
value (``report.figures``), so a test reads the page back and compares it with the summary it was built
from; the text goes through ``tables.fmt`` (``numfmt``), as every other simulate figure. A null figure
is left out (``round_groups`` with rounds of the shortfall, ``killed_attempts`` without a lifetime, the
warm-pool figures without a warm pool: the simulate text skips them the same way), and a block the
summary does not carry (null) shows no table at all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sandbox_fleet.report.tables import kv_table
from sandbox_fleet.simulate.model import DynamicSamplingFigures, LimitsFigures, Quantiles, SimulateSummary
from sandbox_fleet.textout import html_escape as escape

#: (label, figure name under the block, read, fmt kind)
_Row = tuple[str, str, Callable[[Any], Any], str]

DYNAMIC_ROWS: tuple[_Row, ...] = (
    ("workload", "workload", lambda d: d.workload, "text"),
    ("informative groups a step trains on (B)", "groups", lambda d: d.groups, "int"),
    ("rollouts a group (G)", "group_size", lambda d: d.group_size, "int"),
    ("release", "release", lambda d: d.release, "text"),
    ("groups a round", "round_groups", lambda d: d.round_groups, "int"),
    ("tasks drawn from", "tasks", lambda d: d.tasks, "int"),
    ("valid rollout rate", "valid_rate", lambda d: d.valid_rate, "pct"),
    ("steps", "steps", lambda d: d.steps, "int"),
    ("groups released", "groups_released", lambda d: d.groups_released, "int"),
    ("groups informative", "groups_informative", lambda d: d.groups_informative, "int"),
    ("informative groups trimmed (past B)", "groups_trimmed", lambda d: d.groups_trimmed, "int"),
    ("informative share", "informative_share", lambda d: d.informative_share, "pct"),
    ("over-sampling factor", "oversampling_factor", lambda d: d.oversampling_factor, "f2"),
    ("over-sampling factor, standard error", "oversampling_factor_se", lambda d: d.oversampling_factor_se, "f3"),
    ("groups released a step, mean", "groups_released_per_step_mean", lambda d: d.groups_released_per_step_mean, "f1"),
    ("groups released a step, max", "groups_released_per_step_max", lambda d: d.groups_released_per_step_max, "int"),
    ("rounds a step, mean", "rounds_per_step_mean", lambda d: d.rounds_per_step_mean, "f2"),
    ("rounds a step, max", "rounds_per_step_max", lambda d: d.rounds_per_step_max, "int"),
    ("rollouts a step, mean", "rollouts_per_step_mean", lambda d: d.rollouts_per_step_mean, "f1"),
    ("rollouts a step, max", "rollouts_per_step_max", lambda d: d.rollouts_per_step_max, "int"),
    ("rollouts the first round releases at once", "first_round_rollouts", lambda d: d.first_round_rollouts, "int"),
    ("peak sandboxes of the workload", "peak", lambda d: d.peak, "int"),
)


def _wait(read: Callable[[Quantiles], Any]) -> Callable[[LimitsFigures], Any]:
    return lambda lim: read(lim.ready_wait_s) if lim.ready_wait_s is not None else None


LIMITS_ROWS: tuple[_Row, ...] = (
    ("first attempts claimed warm", "warm_claims", lambda lim: lim.warm_claims, "int"),
    ("first attempts started cold", "cold_starts", lambda lim: lim.cold_starts, "int"),
    ("ready wait mean", "ready_wait_s.mean", _wait(lambda q: q.mean), "s"),
    ("ready wait p50", "ready_wait_s.p50", _wait(lambda q: q.p50), "s"),
    ("ready wait p99", "ready_wait_s.p99", _wait(lambda q: q.p99), "s"),
    ("sandbox lifetime", "lifetime_s", lambda lim: lim.lifetime_s, "s"),
    ("attempts killed at the lifetime", "killed_attempts", lambda lim: lim.killed_attempts, "int"),
)


def _block_table(block: DynamicSamplingFigures | LimitsFigures, prefix: str, rows: tuple[_Row, ...]) -> str:
    shown = [(label, value, kind) for label, _, read, kind in rows if (value := read(block)) is not None]
    table = kv_table(shown, figures={label: f"{prefix}.{name}" for label, name, _, _ in rows})
    basis = f'<p class="sub">Basis: {escape(block.basis)}</p>' if block.basis else ""
    return table + basis


def dynamic_sampling_html(sim: SimulateSummary) -> str | None:
    """The RL workload's dynamic sampling (groups, rounds, over-sampling); with several such workloads
    (the top-level block null) one table each, marked ``workloads.NAME.dynamic_sampling.FIELD``; None
    without any."""
    if sim.dynamic_sampling is not None:
        return "<h3>Dynamic sampling</h3>" + _block_table(sim.dynamic_sampling, "dynamic_sampling", DYNAMIC_ROWS)
    each = [f"<h3>Dynamic sampling: {escape(name)}</h3>"
            + _block_table(w.dynamic_sampling, f"workloads.{name}.dynamic_sampling", DYNAMIC_ROWS)
            for name, w in (sim.workloads or {}).items() if w.dynamic_sampling is not None]
    return "".join(each) or None


def limits_html(sim: SimulateSummary) -> str | None:
    """The provider's limits in front of the fleet (warm claims, cold starts, ready wait, lifetime kills)."""
    lim = sim.limits
    if lim is None:
        return None
    return "<h3>Provider limits</h3>" + _block_table(lim, "limits", LIMITS_ROWS)
