"""Open Parquet files with errors a user can act on."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from sandbox_fleet.errors import InputError


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
