"""Load the report's inputs: JSON summaries, or telemetry measured on the fly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sandbox_fleet.errors import InputError

#: Keys of a `measure --json` summary; a JSON object carrying any of them is taken as one.
_SUMMARY_KEYS = ("schema_version", "rows", "concurrency", "hold_s", "tokens", "outcomes")


def load_json_object(path: str | Path, what: str = "summary") -> dict[str, Any]:
    """A JSON file holding one object; InputError (one line) when missing, unparsable or not an object."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{p}: {what} file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{p}: cannot read {what} file ({exc.__class__.__name__})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{p}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
                         f"expected a {what} object") from None
    if not isinstance(data, dict):
        raise InputError(f"{p}: expected a JSON object ({what}), found {type(data).__name__}")
    return data


def _is_summary(path: Path) -> dict[str, Any] | None:
    if path.suffix.lower() != ".json" or not path.is_file():
        return None
    data = load_json_object(path, "measure summary")
    return data if any(k in data for k in _SUMMARY_KEYS) else None


def load_measure(paths: list[str | Path], **measure_options: Any) -> dict[str, Any]:
    """A measure summary: a single `measure --json` file as is, anything else measured from telemetry.

    Telemetry (Harbor folders, Parquet, a Harbor ``result.json``...) goes through
    ``sandbox_fleet.measure.measure_paths`` with ``measure_options``.
    """
    if not paths:
        raise InputError("no input given: expected a measure --json summary or telemetry paths")
    if len(paths) == 1:
        summary = _is_summary(Path(paths[0]))
        if summary is not None:
            return summary
    try:
        from sandbox_fleet.measure import measure_paths
    except ImportError:
        raise InputError(f"{paths[0]}: not a measure --json summary (expected keys such as "
                         "'schema_version', 'concurrency', 'hold_s')") from None
    return measure_paths([str(p) for p in paths], **measure_options)
