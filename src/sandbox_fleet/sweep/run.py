"""``run_sweep``: the whole what-if sweep, from a scenario file and ``--vary`` axes to a table.

Seeds: replicate ``r`` (0-based) of every variant runs with the variant's
``run.seed + r``, so variants share random numbers (common random numbers make
their differences less noisy) and the output is a pure function of the inputs.
"""

from __future__ import annotations

import math
from pathlib import Path

from sandbox_fleet.contract import has_path
from sandbox_fleet.errors import InputError
from sandbox_fleet.limits import MAX_VARIANTS, check_memory
from sandbox_fleet.simulate.engine.run import preload_kernel_if_pays
from sandbox_fleet.simulate.model import SimulateSummary
from sandbox_fleet.sweep import aggregate, knee
from sandbox_fleet.sweep.backends import run_tasks
from sandbox_fleet.sweep.model import SweepSummary
from sandbox_fleet.sweep.task import simulate_variant
from sandbox_fleet.sweep.values import parse_vary
from sandbox_fleet.sweep.variants import check, describe, expand

#: Memory a run holds until the table is built: its task and its summary (a simulate summary is
#: 2 KB of Python objects for a one-pool scenario, tens of KB with several workloads).
BYTES_PER_RUN = 32 * 1024


def run_sweep(
    scenario: str | Path,
    vary: list[str],
    *,
    seeds: int = 1,
    backend: str = "local",
    workers: int | None = None,
    metrics: list[str] | None = None,
    target: str | None = None,
    within: float | None = 0.01,
    over: str | None = None,
    goal: str | None = None,
    progress: bool = False,
    max_variants: int = MAX_VARIANTS,
    within_abs: float | None = None,
) -> dict:
    """Simulate every variant of ``scenario`` x ``seeds`` and return the results table.

    ``vary``: ``KEY=VALUES`` strings (see ``values.parse_vary``). ``metrics``: extra
    summary keys beyond ``aggregate.DEFAULT_METRICS``. ``target``: a metric whose knee
    over the numeric key ``over`` (default: the first swept ``*.cap``, else the first
numeric swept key) is reported,
    ``within`` a relative tolerance or ``within_abs`` an absolute one (pass ``within=None`` with it),
    ``goal`` min or max (default by metric). A grid of more than ``max_variants`` variants is
    refused before any variant is built.
    """
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise InputError(f"`seeds` {seeds}: expected a positive integer")
    if not vary:
        raise InputError("give at least one `vary` KEY=VALUES, e.g. `vary` fleet.cap=100,200,400")
    if max_variants < 1:
        raise InputError(f"`max_variants` {max_variants}: expected a positive integer")
    axes = [parse_vary(v) for v in vary]
    grid = math.prod(len(vals) for _, vals in axes)
    if grid > max_variants:
        sizes = " x ".join(f"{len(vals):,} {k}" for k, vals in axes)
        raise InputError(f"`vary`: the grid has {grid:,} variants ({sizes}), over `max_variants` {max_variants:,}; "
                         "narrow the ranges or raise `max_variants`")
    if grid * seeds > max_variants:
        # every run is a task and a summary held until the table is built: seeds count as runs
        raise InputError(f"`seeds` {seeds:,}: {grid:,} variant(s) x {seeds:,} seeds is {grid * seeds:,} runs, over "
                         f"`max_variants` {max_variants:,} (which bounds variants x seeds); use fewer seeds or raise it")
    check_memory(grid * seeds * BYTES_PER_RUN, None, f"--vary x --seeds: {grid:,} variant(s) x {seeds:,} seeds",
                 "use fewer variants or seeds")
    keys = [k for k, _ in axes]
    p = Path(scenario)
    variants = expand(p, axes, progress=progress)
    cols = list(aggregate.DEFAULT_METRICS)
    for m in list(metrics or []) + ([target] if target else []):
        if m in keys:
            raise InputError(f"metric {m!r} is a swept key, not a simulator figure")
        if not (has_path(SimulateSummary, m) or m in aggregate.DEFAULT_METRICS):
            # refused before any run: the name is checked against the simulator's model
            raise InputError(f"metric {m!r} is not a number in the simulator summary (no such figure); "
                             f"figures such as {', '.join(aggregate.DEFAULT_METRICS)} "
                             "(all: docs/schemas/simulate.schema.json)")
        if m not in cols:
            cols.append(m)
    if target and over is None:
        numeric = [k for k, vals in axes if all(knee.is_numeric(v) for v in vals)]
        # the usual question is "the smallest fleet", so a cap wins over other numeric keys
        over = next((k for k in numeric if k.endswith(".cap")), numeric[0] if numeric else None)
        if over is None:
            raise InputError(f"`target` {target}: no swept key is numeric; vary one such as fleet.cap")
    tasks = [(v.data, str(p.parent), f"{p} with {describe(v.settings)}", v.seed + r)
             for v in variants for r in range(seeds)]
    _, first = check(variants[0].data, p.parent, tasks[0][2])  # RL and the other kernel runs: one numba load
    preload_kernel_if_pays(first.fleets, first.workloads, first.inference, len(tasks))
    summaries = run_tasks(simulate_variant, tasks, backend=backend, workers=workers, progress=progress,
                          label=f"sweep {len(variants)} variants x {seeds} seeds")
    _check_metrics(cols, summaries, set(aggregate.DEFAULT_METRICS))
    rows = [{"variant": v.index, **aggregate.row(v.settings, summaries[v.index * seeds:(v.index + 1) * seeds], cols),
             "unstable": aggregate.unstable(summaries[v.index * seeds:(v.index + 1) * seeds])}
            for v in variants]
    out = {
        "scenario": p.name,
        "vary": dict(axes),
        "variants": len(variants),
        "seeds": seeds,
        "seed_rule": "replicate r of a variant runs with its run.seed + r",
        "unstable_rule": "unstable: the seeds whose run had no steady state (steady_state.stable false); such a "
                         "variant is infeasible: it is never a knee",
        "metrics": cols,
        "rows": rows,
    }
    if target:
        assert over is not None  # chosen above whenever there is a target
        out["knee"] = knee.find_knee(rows, keys, over, target, within, goal or knee.default_goal(target), within_abs)
    return SweepSummary.build(**out).to_json()


def _check_metrics(cols: list[str], summaries: list[dict], optional: set[str]) -> None:
    for m in cols:
        if m not in optional and all(aggregate.metric(s, m) is None for s in summaries):
            keys = aggregate.numeric_keys(summaries[0])
            raise InputError(f"metric {m!r} is not a number in the simulator summary; numeric keys: {', '.join(keys)}")
