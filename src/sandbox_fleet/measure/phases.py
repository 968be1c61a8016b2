"""Harbor's four phases: environment setup/build, agent setup, agent execution, verifier.

Each phase is measured over the rows that carry both its start and its finish; a phase
that finishes before it starts is counted as ``invalid`` and left out. ``share_of_hold``
is the phase's summed time over the summed hold of those same rows.
"""

from __future__ import annotations

import numpy as np
import pyarrow.compute as pc

from sandbox_fleet.measure.columns import Frame
from sandbox_fleet.measure.stats import SMALL_SAMPLE_ROWS, US, quantile_nonempty, ratio
from sandbox_fleet.telemetry.record import PHASES


def measure_phases(fr: Frame) -> dict:
    """Per phase: rows, invalid, median_s, p99_s, mean_s, share_of_hold; {} when none reported."""
    out: dict = {}
    for phase in PHASES:
        a = fr.table.column(f"{phase}_started_at")
        b = fr.table.column(f"{phase}_finished_at")
        if a.null_count == len(a) or b.null_count == len(b):
            continue  # the source does not report this phase
        both = np.asarray(pc.and_(pc.is_valid(a), pc.is_valid(b)).to_numpy(zero_copy_only=False), dtype=bool)
        if not both.any():
            continue
        start = _us(a)
        finish = _us(b)
        dur = finish - start
        ok = both & (dur >= 0)
        d = np.sort(dur[ok])
        n = int(d.size)
        hold_sum = int(fr.hold_us[ok].sum())
        out[phase] = {
            "rows": n,
            "invalid": int((both & (dur < 0)).sum()),
            "small_sample": n < SMALL_SAMPLE_ROWS,
            "median_s": quantile_nonempty(d, 0.5) / US if n else None,
            "p99_s": quantile_nonempty(d, 0.99) / US if n else None,
            "mean_s": int(d.sum()) / n / US if n else None,
            "share_of_hold": ratio(int(d.sum()), hold_sum),
        }
    return out


def _us(col) -> np.ndarray:
    """Timestamp column -> int64 microseconds, nulls as 0 (masked out by the caller)."""
    return np.asarray(pc.fill_null(pc.cast(col, "int64"), 0).to_numpy(), dtype=np.int64)
