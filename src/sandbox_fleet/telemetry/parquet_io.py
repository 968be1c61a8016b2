"""Open Parquet files with errors a user can act on."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from sandbox_fleet.errors import InputError
from sandbox_fleet.telemetry.progress import track


def open_parquet(path: Path) -> pq.ParquetFile:
    """Open ``path``; a missing, empty or corrupt file is an InputError naming it."""
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if path.stat().st_size == 0:
        raise InputError(f"{path}: empty file (expected Parquet)")
    try:
        return pq.ParquetFile(path)
    except (pa.ArrowInvalid, pa.ArrowIOError, OSError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"{path}: not a readable Parquet file ({first})") from exc


def iter_parquet(pf: pq.ParquetFile, path: Path, columns: list[str], progress: bool = True):
    """Yield ``columns`` one row group at a time so big files stream within memory."""
    try:
        for i in track(range(pf.num_row_groups), f"reading {path.name}", progress, min_items=4):
            yield pf.read_row_group(i, columns=columns)
    except (pa.ArrowInvalid, pa.ArrowIOError, OSError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"{path}: corrupt Parquet data ({first})") from exc
