"""Distributions and scenarios calibrated from measured telemetry (``simulate --from``).

Holds are bootstrapped by model and outcome: one empirical component per (model,
exception) group, weighted by its row count, so a simulated rollout keeps the
measured pairing of model, hold and exception. The cap is the measured peak
concurrency; arrivals replay the measured start times.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sandbox_fleet import atomic
from sandbox_fleet.errors import InputError
from sandbox_fleet.measure.concurrency import interval_stats
from sandbox_fleet.measure.stats import arrival_rate_per_s, exception_rate
from sandbox_fleet.simulate.engine.distributions import Empirical, Mixture
from sandbox_fleet.simulate.model import Calibration, InferenceCalibration
from sandbox_fleet.textout import number

if TYPE_CHECKING:
    from sandbox_fleet.telemetry.options import ReadOptions

NO_MODEL = "(none)"


def holds_s(rollouts: pa.Table) -> np.ndarray:
    start = rollouts.column("started_at").cast(pa.int64()).to_numpy(zero_copy_only=False)
    finish = rollouts.column("finished_at").cast(pa.int64()).to_numpy(zero_copy_only=False)
    return np.maximum(finish - start, 0) / 1e6


def empirical_by_model_outcome(rollouts: pa.Table) -> Mixture:
    """One bootstrap component per (model, has_exception) group, weighted by rows.

    Groups are ordered by model name then outcome (clean first), so the mixture is the
    same whatever the row order.
    """
    if rollouts.num_rows == 0:
        raise InputError("telemetry has no rollouts to calibrate from")
    hold = holds_s(rollouts)
    model = pc.fill_null(rollouts.column("model"), NO_MODEL).to_numpy(zero_copy_only=False).astype(str)
    exc = pc.fill_null(rollouts.column("has_exception"), False).to_numpy(zero_copy_only=False).astype(bool)
    names, code = np.unique(model, return_inverse=True)  # names sorted, as the groups are ordered
    group = code.astype(np.int64) * 2 + exc  # (model, outcome), clean first
    order = np.lexsort((hold, group))  # one sort: grouped, each group's holds ascending
    hold, group = hold[order], group[order]
    cuts = np.flatnonzero(np.diff(group)) + 1  # one pass, not a scan of every row per model (quadratic)
    comps, weights, labels, flags = [], [], [], []
    for lo, hi in zip([0, *cuts.tolist()], [*cuts.tolist(), hold.size]):
        g = int(group[lo])
        comps.append(Empirical(hold[lo:hi]))
        weights.append(float(hi - lo))
        labels.append(str(names[g // 2]))
        flags.append(bool(g % 2))
    return Mixture(tuple(comps), tuple(weights), tuple(labels), tuple(flags))


def calibration(rollouts: pa.Table) -> Calibration:
    """Figures a calibrated scenario is built from (``scenario`` and ``inference`` not yet set)."""
    hold = holds_s(rollouts)
    start_us = rollouts.column("started_at").cast(pa.int64()).to_numpy(zero_copy_only=False)
    finish_us = rollouts.column("finished_at").cast(pa.int64()).to_numpy(zero_copy_only=False)
    # measure's sweep on the integer microseconds: a slot handed over at the same microsecond
    # does not count twice.
    conc = interval_stats(start_us, np.maximum(finish_us, start_us))
    flag = rollouts.column("has_exception")
    flagged = len(flag) - flag.null_count
    exceptions = int(pc.sum(pc.cast(pc.fill_null(flag, False), pa.int64())).as_py() or 0)
    return Calibration(
        rollouts=int(rollouts.num_rows),
        peak=int(conc["peak"]),
        touches=int(conc["touches"]),
        mean_concurrency=conc["mean"],
        exception_rate=exception_rate(exceptions, flagged),
        arrival_rate_per_s=arrival_rate_per_s(rollouts.num_rows, conc["span_s"]),
        hold_mean_s=float(hold.mean()),
    )


def scenario_from_telemetry(paths: list[str], out: str | Path, *, seed: int = 1, progress: bool = False,
                            inference: dict | None = None, read: ReadOptions | None = None,
                            models: list[str] | None = None, since: str | None = None,
                            until: str | None = None) -> Calibration:
    """Write a scenario TOML calibrated from measured telemetry; returns its figures (``inference``
    set only with ``inference``: the JSON leaves the block out otherwise).

    cap = measured peak; holds bootstrapped by model and outcome (which carries the
    exception rate); arrivals replay the measured start times. ``inference`` (keyword
    arguments of ``inference.calibrate.inference_calibration``): write ``[turns]`` and
    ``[inference]`` calibrated from the turn curve instead of ``[hold]``. The file is
    written atomically; ``progress`` shows the telemetry read on a terminal; ``read``: the reader
    options (``telemetry.options.make_options``; default: sniffed format, UTC). ``models``, ``since``,
    ``until``: calibrate on the rollouts of these models started in [since, until), as measure keeps
    them; the scenario's ``[filter]`` keeps the same rows when it reads the telemetry again.
    """
    from sandbox_fleet.telemetry import filter_rollouts, load_telemetry

    tel = load_telemetry([str(p) for p in paths], progress=progress, read=read)
    if models or since is not None or until is not None:
        tel = filter_rollouts(tel, models=models or None, since=since, until=until)
    fig = calibration(tel.rollouts)
    out = Path(out)
    src = [str(Path(p).resolve()) for p in paths]
    model_lines, inference_fig = _hold_or_turns(tel.rollouts, src, inference)
    if inference_fig is not None:
        fig.inference = inference_fig
    peak, rollouts = fig.peak or 0, fig.rollouts or 0  # set by ``calibration``
    lines = [
        "# Calibrated by `sandbox-fleet simulate --from` from measured telemetry:",
        *[f"#   {p}" for p in src],
        f"# {rollouts} rollouts; measured peak {peak} reached {fig.touches} times;",
        f"# mean concurrency {fig.mean_concurrency:.1f}; exception rate {_rate(fig.exception_rate)};",
        f"# mean arrival rate {fig.arrival_rate_per_s or 0:.6g}/s; mean hold {fig.hold_mean_s:.1f} s.",
        "# Change [fleet] cap (or the workload) and run `sandbox-fleet simulate` on this file.",
        "",
        "[fleet]",
        f"cap = {max(peak, 1)}  # measured peak concurrency",
        "provision_delay_s = 0.0",
        "",
        "[workload]",
        'kind = "replay"  # the measured start times; or kind = "poisson" with rate_per_s and count:',
        f"# rate_per_s = {fig.arrival_rate_per_s or 1.0:.6g}",
        f"# count = {rollouts}",
        f"telemetry = {_toml_list(src)}",
        "",
        *model_lines,
        *_filter_lines(models or None, since, until),
        "[run]",
        f"seed = {int(seed)}",
        "",
    ]
    atomic.write_text(out, "\n".join(lines))
    fig.scenario = str(out)
    return fig


def _filter_lines(models: list[str] | None, since: str | None, until: str | None) -> list[str]:
    """The ``[filter]`` table keeping the calibrated rows when the scenario reads its telemetry (none: all)."""
    import json

    keys = [f"models = {_toml_list(models)}" if models else None,
            f"since = {json.dumps(since)}" if since is not None else None,
            f"until = {json.dumps(until)}" if until is not None else None]
    if not any(keys):
        return []
    return ["[filter]  # the rollouts calibrated on (--model / --since / --until)", *[k for k in keys if k], ""]


def _rate(x: float | None) -> str:
    return number(x, ".4f", none="not recorded")


def _hold_or_turns(rollouts: pa.Table, src: list[str],
                   inference: dict | None) -> tuple[list[str], InferenceCalibration | None]:
    """The scenario's hold tables, and the inference calibration behind them (None: the measured holds)."""
    if inference is None:
        return [
            "[hold]",
            'dist = "empirical"  # bootstrap by model and outcome (exceptions keep their holds)',
            f"telemetry = {_toml_list(src)}",
            'by = ["model", "outcome"]',
            "",
        ], None
    from sandbox_fleet.simulate.scenario.calibrate_inference import inference_calibration, toml_lines

    cal = inference_calibration(rollouts, **inference)
    # the per-row turns and the fit's flag go into the TOML only
    figures = InferenceCalibration(**{k: v for k, v in cal.items() if k not in ("turns", "turn_fit_all_counts")})
    return toml_lines(cal), figures


def _toml_list(items: list[str]) -> str:
    import json

    return "[" + ", ".join(json.dumps(i) for i in items) + "]"
