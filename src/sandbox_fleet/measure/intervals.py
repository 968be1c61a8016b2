"""Each rollout's interval and request, as the node replay reads them (``plan``'s mixed purchase).

The measure summary keeps the concurrency curve, not the rollouts; a node replay needs every
rollout's start, end and request (cpu, memory, disk). They come from the same telemetry and tasks
``measure`` reads, joined on the same key as ``measure.tasks`` (a rollout names its task group where
the release has groups, else its task). A key whose tasks ask for different requests takes the
largest of each (a node must hold whichever runs), counted in ``mixed_keys``; a rollout whose task
is unknown, or whose task sets no cpu or memory, has a NaN request, counted in ``unknown_request``
(the caller says what it assumes for them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import numpy as np

from sandbox_fleet.errors import InputError

if TYPE_CHECKING:
    import pyarrow as pa

    from sandbox_fleet.telemetry.options import ReadOptions


@dataclass
class RolloutIntervals:
    """Per rollout, in input order: start and end seconds (from the first start) and the request."""

    start_s: np.ndarray
    end_s: np.ndarray
    cpu: np.ndarray
    memory_mb: np.ndarray
    disk_mb: np.ndarray  # 0 where the task sets cpu or memory but no storage
    unknown_request: int = 0
    mixed_keys: int = 0
    sources: list[str] = field(default_factory=list)
    #: the first start, microseconds since the Unix epoch (UTC): what ``start_s`` counts from
    origin_us: Optional[int] = None

    @property
    def count(self) -> int:
        return int(self.start_s.size)


def load_intervals(paths: str | Path | Sequence[str | Path], *, tasks: str | Path | None = None,
                   read: Optional[ReadOptions] = None, progress: bool = False,
                   cache_dir: str | Path | None = None, models: Optional[Sequence[str]] = None,
                   since: Optional[str] = None, until: Optional[str] = None) -> RolloutIntervals:
    """The intervals and requests of the telemetry ``paths`` (with the tasks root ``tasks``), the
    rollouts kept by ``models``, ``since`` and ``until`` as measure keeps them."""
    from sandbox_fleet.telemetry import filter_rollouts, load_telemetry

    given = [str(paths)] if isinstance(paths, (str, Path)) else [str(p) for p in paths]
    tel = load_telemetry(given, tasks=str(tasks) if tasks is not None else None, read=read, progress=progress,
                         cache_dir=str(cache_dir) if cache_dir is not None else None)
    if models or since or until:
        tel = filter_rollouts(tel, models=list(models) if models else None, since=since, until=until)
    out = intervals_of(tel.rollouts, tel.tasks)
    out.sources = list(tel.sources)
    return out


def intervals_of(rollouts: pa.Table, tasks: Optional[pa.Table]) -> RolloutIntervals:
    """``RolloutIntervals`` of a canonical rollout table and its task table (None: requests unknown)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if rollouts.num_rows == 0:
        raise InputError("node replay: the telemetry has no rollouts")
    start = rollouts.column("started_at").cast(pa.int64()).to_numpy(zero_copy_only=False)
    finish = rollouts.column("finished_at").cast(pa.int64()).to_numpy(zero_copy_only=False)
    first = start.min()
    n = start.size
    cpu = np.full(n, np.nan)
    memory = np.full(n, np.nan)
    disk = np.full(n, np.nan)
    mixed = 0
    if tasks is not None and tasks.num_rows and "task_id" in rollouts.column_names:
        keys, req, mixed = _requests_by_key(tasks)
        ids = rollouts.column("task_id").cast(pa.string())
        at = pc.index_in(ids, value_set=pa.array(keys, pa.string())).fill_null(-1).to_numpy(zero_copy_only=False)
        hit = at >= 0
        idx = np.where(hit, at, 0).astype(np.int64)
        cpu = np.where(hit, req[idx, 0], np.nan)
        memory = np.where(hit, req[idx, 1], np.nan)
        disk = np.where(hit, req[idx, 2], np.nan)
    unknown = ~(np.isfinite(cpu) & np.isfinite(memory))
    disk = np.where(np.isfinite(disk), disk, 0.0)
    return RolloutIntervals(start_s=(start - first) / 1e6, end_s=(finish - first) / 1e6, cpu=cpu, memory_mb=memory,
                            disk_mb=disk, unknown_request=int(np.count_nonzero(unknown)), mixed_keys=mixed,
                            origin_us=int(first))


def _requests_by_key(tasks: pa.Table) -> tuple[list[str], np.ndarray, int]:
    """The join key of each task (its group where the table has groups, as ``measure.tasks``) and the
    largest cpu / memory / storage its tasks ask for; how many keys have tasks that ask differently."""
    group = tasks.column("task_group_id").to_pylist() if "task_group_id" in tasks.column_names else None
    ids = tasks.column("task_id").to_pylist()
    cols = [tasks.column(c).to_pylist() for c in ("cpus", "memory_mb", "storage_mb")]
    by_key: dict[str, list[tuple[float, ...]]] = {}
    for row, tid in enumerate(ids):
        k = group[row] if group is not None and group[row] is not None else tid
        if k is None:
            continue
        by_key.setdefault(k, []).append(tuple(np.nan if c[row] is None else float(c[row]) for c in cols))
    keys = list(by_key)
    req = np.full((len(keys), 3), np.nan)
    mixed = 0
    for j, k in enumerate(keys):
        rows = np.array(by_key[k], dtype=float)
        if len({tuple(r) for r in rows.tolist()}) > 1:
            mixed += 1
        with np.errstate(invalid="ignore"):
            req[j] = np.where(np.all(np.isnan(rows), axis=0), np.nan, np.nanmax(np.where(np.isnan(rows), -np.inf, rows), axis=0))
    return keys, req, mixed
