"""Part A (calibrate) and part B (predict): a split of one telemetry table.

``--split-at F``: the first F of the rollouts in start order go to A; when the whole history
has synchronous RL steps (``measure.steps``) the boundary moves to the nearest step boundary, so
no step is cut in two, and otherwise off any run of rollouts that started at the same instant. ``--split-by job|model``: the group that starts last is B, every other
group is A (a history of two jobs is job 1 -> job 2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sandbox_fleet.errors import InputError
from sandbox_fleet.measure.stats import US
from sandbox_fleet.measure.steps import measure_steps

#: fewest rollouts on either side; the bundled Harbor fixture's jobs have 6 each
MIN_ROWS = 5
SPLIT_BY = ("job", "model")


@dataclass
class Split:
    a: pa.Table
    b: pa.Table
    how: str  # "fraction", "job" or "model"
    fraction: float | None = None
    moved_to_step: bool = False
    a_groups: tuple[str, ...] = ()
    b_groups: tuple[str, ...] = ()


def start_us(rollouts: pa.Table) -> np.ndarray:
    return rollouts.column("started_at").cast(pa.int64()).to_numpy(zero_copy_only=False)


def finish_us(rollouts: pa.Table) -> np.ndarray:
    return rollouts.column("finished_at").cast(pa.int64()).to_numpy(zero_copy_only=False)


def split_table(rollouts: pa.Table, *, split_at: float | None = None, split_by: str | None = None,
                min_rows: int = MIN_ROWS) -> Split:
    """A and B of ``rollouts``; InputError (one line) when a side is empty or under ``min_rows``."""
    if min_rows < 1:
        raise InputError(f"`min_rows` must be >= 1, got {min_rows}")
    if split_at is not None and split_by is not None:
        raise InputError("give `split_at` or `split_by`, not both")
    if rollouts.num_rows == 0:
        raise InputError("telemetry has no rollouts with start and finish times to backtest")
    if split_by is not None:
        sp = _by_group(rollouts, split_by)
    else:
        sp = _at_fraction(rollouts, 0.5 if split_at is None else split_at)
    for side, t in (("A (calibration)", sp.a), ("B (prediction)", sp.b)):
        if t.num_rows < min_rows:
            raise InputError(f"the split leaves part {side} {t.num_rows} rollouts; need at least `min_rows` "
                             f"{min_rows} on each side ({rollouts.num_rows} in all); move `split_at` or lower `min_rows`")
    return sp


def _at_fraction(rollouts: pa.Table, fraction: float) -> Split:
    if not 0.0 < fraction < 1.0:
        raise InputError(f"`split_at` must be a fraction strictly between 0 and 1, got {fraction}")
    s, f = start_us(rollouts), finish_us(rollouts)
    order = np.argsort(s, kind="stable")
    k = round(fraction * rollouts.num_rows)
    firsts = step_firsts(s[order], f[order])
    moved = False
    if firsts is not None and firsts.size > 1:
        moved = True
        inner = firsts[1:]  # a cut at index 0 would leave A empty
        k = int(inner[np.argmin(np.abs(inner - k))])
    else:
        k = _off_ties(s[order], k)
    return Split(rollouts.take(order[:k]), rollouts.take(order[k:]), "fraction", fraction=fraction, moved_to_step=moved)


def _off_ties(sorted_start_us: np.ndarray, k: int) -> int:
    """``k`` moved to the nearer edge of the run of equal start times it falls in: rollouts released
    at the same instant stay on one side (and a ``--since`` at B's first start selects exactly B)."""
    n = sorted_start_us.size
    if not 0 < k < n or sorted_start_us[k - 1] != sorted_start_us[k]:
        return k
    lo = int(np.searchsorted(sorted_start_us, sorted_start_us[k], side="left"))
    hi = int(np.searchsorted(sorted_start_us, sorted_start_us[k], side="right"))
    edges = [e for e in (lo, hi) if 0 < e < n]
    if not edges:  # the docs promise a cut never falls inside simultaneous starts: there is no other
        raise InputError(f"`split_at`: all {n:,} rollouts started at the same instant, so no cut keeps "
                         "simultaneous starts on one side; split by `split_by` job or model instead")
    return min(edges, key=lambda e: (abs(e - k), e))


def step_firsts(sorted_start_us: np.ndarray, finish_us_in_start_order: np.ndarray) -> np.ndarray | None:
    """Index (in start order) of each RL step's first rollout, or None when no steps are detected.

    The cut is measure's: a gap between consecutive starts wider than its detected threshold.
    """
    steps = measure_steps(sorted_start_us, finish_us_in_start_order, starts_sorted=sorted_start_us)
    if not steps["detected"]:
        return None
    threshold = max(round(steps["gap_threshold_s"] * US), 1)
    return np.concatenate(([0], np.flatnonzero(np.diff(sorted_start_us) > threshold) + 1))


def _by_group(rollouts: pa.Table, column: str) -> Split:
    if column not in SPLIT_BY:
        raise InputError(f"`split_by` must be one of {', '.join(SPLIT_BY)}, got {column!r}")
    col = rollouts.column(column)
    if col.null_count == len(col):
        raise InputError(f"`split_by` {column}: the telemetry records no {column} for any rollout")
    missing = f"(no {column})"  # the rows that record none: a group of their own, never a real one's
    text = col.cast(pa.string())
    if col.null_count and pc.any(pc.equal(text, missing)).as_py():
        raise InputError(f"`split_by` {column}: a {column} is named {missing!r}, as the rows that record no "
                         f"{column} are grouped; rename it")
    names = pc.fill_null(text, missing).to_numpy(zero_copy_only=False).astype(str)
    s = start_us(rollouts)
    labels, code = np.unique(names, return_inverse=True)
    first = np.full(labels.size, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, code, s)  # each group's first start in one pass over the rows
    order = np.lexsort((np.arange(labels.size), first))  # first start, then name (labels are sorted)
    groups = [str(labels[i]) for i in order]
    if len(groups) < 2:
        raise InputError(f"`split_by` {column}: the telemetry has one {column} ({groups[0]!r}); "
                         f"need two or more to calibrate on one and predict another")
    last = groups[-1]
    in_b = code == order[-1]
    return Split(rollouts.filter(pa.array(~in_b)), rollouts.filter(pa.array(in_b)), column,
                 a_groups=tuple(groups[:-1]), b_groups=(last,))
