"""Reader for an RST-style release: ``<root>/metadata/trajectories.parquet``.

Columnar end to end (Parquet row groups -> Arrow batches, through the table reader); no per-row Python.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

from sandbox_fleet.errors import InputError
from sandbox_fleet.telemetry.parquet_io import open_parquet
from sandbox_fleet.telemetry.table import read_parquet_columns

TRAJECTORIES = Path("metadata") / "trajectories.parquet"

#: release column -> canonical column
RENAME = {
    "trajectory_id": "id",
    "task_group_id": "task_id",
    "model_name": "model",
    "job": "job",
    "started_at": "started_at",
    "finished_at": "finished_at",
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "cached_tokens": "cached_tokens",
    "episode_count": "turns",
    "reward": "reward",
    "has_exception": "has_exception",
    "exception_type": "exception_type",
    "has_trajectory": "has_trajectory",
}
REQUIRED = ("trajectory_id", "started_at", "finished_at")


def trajectories_file(path: Path) -> Path:
    """The parquet file for a release root or the file itself."""
    return path if path.is_file() else path / TRAJECTORIES


def is_release(path: Path) -> bool:
    return path.is_dir() and (path / TRAJECTORIES).is_file()


def read_rst(path: Path, progress: bool = True, coded: bool = False) -> Iterator[pa.Table]:
    """Yield canonical-named batches (times still raw) from a release or its parquet file.

    Read as any Parquet table is (``table.read_parquet_columns``: the next row group decoded
    on a thread, all-null chunks never decoded, ``coded`` text read as dictionaries), with
    the release's names mapped; its other columns (shard and member paths, ...) are never read.
    """
    file = trajectories_file(path)
    pf = open_parquet(file)
    names = pf.schema_arrow.names
    missing = [c for c in REQUIRED if c not in names]
    if missing:
        raise InputError(
            f"{file}: missing column(s) {', '.join(missing)} (an RST trajectories file has trajectory_id, started_at, finished_at, ...)"
        )
    rename = dict(RENAME)
    if "task_group_id" not in names and "task_id" in names:
        rename["task_id"] = "task_id"  # releases without task groups key rollouts by task
    column_map = {canonical: src for src, canonical in rename.items() if src in names}
    yield from read_parquet_columns(file, column_map, progress, coded)
