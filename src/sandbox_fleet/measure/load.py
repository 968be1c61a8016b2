"""The edge where a stage's measure input comes in: a saved summary read once, or telemetry measured.

``plan``, ``report``, ``check`` and ``optimize`` take a ``MeasureSummary``; ``sandbox-fleet`` gets
it here, from the command's PATHs, and hands the model on. Importing this module loads neither
PyArrow nor DuckDB: a summary is parsed without them; telemetry loads them when it is measured.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from sandbox_fleet import contract
from sandbox_fleet.errors import InputError
from sandbox_fleet.measure.model import MeasureSummary

if TYPE_CHECKING:
    from sandbox_fleet.telemetry.options import ReadOptions

#: JSON files a producer writes inside its telemetry (Harbor's trial and job results): measured, never parsed
TELEMETRY_JSON = ("result.json", "results.json")


def is_summary_file(path: str | Path) -> bool:
    """Whether ``path`` is read as a saved ``measure --json`` summary (else it is telemetry)."""
    p = Path(path)
    return p.suffix.lower() == ".json" and p.exists() and not p.is_dir() and p.name not in TELEMETRY_JSON


def load_measure(paths: str | Path | Sequence[str | Path], *, tasks: str | Path | None = None,
                 read: ReadOptions | None = None, min_turn_rows: int | None = None,
                 cache_dir: str | Path | None = None, progress: bool = True) -> MeasureSummary:
    """The measure summary of ``paths``: one ``.json`` summary file parsed (``contract.load``: another
    kind or a newer version is an InputError), anything else measured now by ``measure_paths`` with
    ``tasks``, the reader options ``read``, ``min_turn_rows`` (None: measure's default), ``cache_dir``
    and ``progress``.
    """
    given = [paths] if isinstance(paths, (str, Path)) else list(paths)
    if not given:
        raise InputError("no input given: expected a measure --json summary or telemetry paths")
    if len(given) == 1 and is_summary_file(given[0]):
        return contract.load(MeasureSummary, given[0])
    if len(given) == 1 and not any(c in str(given[0]) for c in "*?[") and not Path(given[0]).exists():
        raise InputError(f"{given[0]}: input not found; expected a measure summary (.json) or telemetry")
    from sandbox_fleet.measure.run import measure_paths  # PyArrow and DuckDB: only to measure

    extra: dict = {} if min_turn_rows is None else {"min_turn_rows": min_turn_rows}
    return measure_paths([str(p) for p in given], tasks=str(tasks) if tasks is not None else None, read=read,
                         progress=progress, cache_dir=str(cache_dir) if cache_dir is not None else None, **extra)
