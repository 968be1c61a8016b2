"""Reader for Terminal-Bench run folders: ``results.json`` (a ``results`` list) + ``run_metadata.json``.

A folder of many runs reads each ``<runs>/<run>/results.json``. Terminal-Bench's agent
and test phases map to the canonical agent_execution and verifier phases.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from sandbox_fleet.errors import InputError
from sandbox_fleet.telemetry.jsonfile import load_json, plausible_cap, raw_rows_table, warn_bad_cells, whole_number
from sandbox_fleet.telemetry.options import ReadOptions, warn_once
from sandbox_fleet.telemetry.progress import track
from sandbox_fleet.telemetry.record import Telemetry

#: failure_mode values that mean "no failure".
NO_FAILURE = (None, "unset", "none")

#: The canonical columns a Terminal-Bench trial reports (no cache, turns or trajectory).
_COLUMNS = (
    "id", "task_id", "model", "job", "started_at", "finished_at",
    "agent_execution_started_at", "agent_execution_finished_at", "verifier_started_at", "verifier_finished_at",
    "input_tokens", "output_tokens", "reward", "has_exception", "exception_type",
)

def is_run(path: Path) -> bool:
    return path.is_dir() and (path / "results.json").is_file() and (path / "run_metadata.json").is_file()


def looks_like_runs(path: Path) -> bool:
    return is_run(path) or (path.is_dir() and any(is_run(p.parent) for p in path.glob("*/results.json")))


NO_METADATA = "no run_metadata.json"
UNREADABLE = "unreadable"


def run_dirs(path: Path) -> list[Path]:
    """The run itself, or every sub-folder holding results.json (with or without metadata)."""
    if (path / "results.json").is_file():
        return [path]
    return [p.parent for p in sorted(path.glob("*/results.json"))]


def _trial_count(file: Path) -> int:
    """How many trials a run holds, for counting a run that cannot be used (at least 1)."""
    try:
        data = load_json(file)
    except InputError:
        return 1
    trials = data.get("results") if isinstance(data, dict) else None
    return max(len(trials), 1) if isinstance(trials, list) else 1


def _resolved(value: Any, bad: dict[str, int]) -> float | None:
    if value is None or isinstance(value, bool):
        return None if value is None else float(value)
    bad["is_resolved"] = bad.get("is_resolved", 0) + 1
    return None


def _run_rows(run: Path, tel: Telemetry, bad: dict[str, int]) -> list[dict]:
    """The rows of one run; trials that are not objects are rejected (counted), odd cells read as null."""
    file = run / "results.json"
    data = load_json(file)
    trials = data.get("results") if isinstance(data, dict) else None
    if not isinstance(trials, list):
        raise InputError(f"{file}: expected a JSON object with a 'results' list of trials")
    meta_file = run / "run_metadata.json"
    meta = load_json(meta_file) if meta_file.is_file() else {}
    if not isinstance(meta, dict):
        raise InputError(f"{meta_file}: expected a JSON object")
    run_id = meta.get("run_id")
    job = run_id if isinstance(run_id, str) and run_id else run.name
    cap = meta.get("n_concurrent_trials")
    if plausible_cap(cap):
        tel.caps[job] = cap
    model = meta.get("model_name") or meta.get("agent_name")
    rows = []
    for i, t in enumerate(trials):
        if not isinstance(t, dict):
            tel.reject(UNREADABLE)
            warn_once(tel, f"{file}: results[{i}] is not an object; that trial is rejected ({UNREADABLE})")
            continue
        mode = t.get("failure_mode")
        if not (mode is None or isinstance(mode, str)):
            bad["failure_mode"] = bad.get("failure_mode", 0) + 1
            mode = "unknown"
        rows.append(
            {
                "id": t.get("id") or t.get("trial_name"),
                "task_id": t.get("task_id"),
                "model": model,
                "job": job,
                "started_at": t.get("trial_started_at"),
                "finished_at": t.get("trial_ended_at"),
                "agent_execution_started_at": t.get("agent_started_at"),
                "agent_execution_finished_at": t.get("agent_ended_at"),
                "verifier_started_at": t.get("test_started_at"),
                "verifier_finished_at": t.get("test_ended_at"),
                "input_tokens": whole_number(t.get("total_input_tokens"), "total_input_tokens", bad),
                "output_tokens": whole_number(t.get("total_output_tokens"), "total_output_tokens", bad),
                "reward": _resolved(t.get("is_resolved"), bad),
                "has_exception": mode not in NO_FAILURE,
                "exception_type": None if mode in NO_FAILURE else str(mode),
            }
        )
    return rows


def read_terminal_bench(path: Path, opts: ReadOptions, tel: Telemetry) -> pa.Table:
    """All trials of the run(s) under ``path`` as one canonical-named table."""
    runs = run_dirs(path)
    if not runs:
        raise InputError(f"{path}: no Terminal-Bench results.json found (expected <run>/results.json + run_metadata.json)")
    rows: list[dict] = []
    many = runs != [path]
    lost: dict[str, list[str]] = {}
    bad: dict[str, int] = {}
    for run in track(runs, "reading Terminal-Bench runs", opts.progress, min_items=20):
        # In a folder of runs, a run that cannot be used is counted by reason, not fatal.
        if many and not (run / "run_metadata.json").is_file():
            tel.reject(NO_METADATA, _trial_count(run / "results.json"))
            lost.setdefault(NO_METADATA, []).append(run.name)
            continue
        try:
            rows.extend(_run_rows(run, tel, bad))
        except InputError:
            if not many:
                raise
            tel.reject(UNREADABLE, _trial_count(run / "results.json"))
            lost.setdefault(UNREADABLE, []).append(run.name)
    for reason, names in sorted(lost.items()):
        warn_once(tel, f"{path}: {len(names)} run folder(s) rejected ({reason}): {', '.join(names[:5])}")
    table = raw_rows_table(rows, _COLUMNS, bad)
    warn_bad_cells(tel, path, bad)
    return table
