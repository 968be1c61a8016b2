"""Reader for Harbor output: a jobs folder, one job folder, or one trial folder.

Layout: ``<jobs>/<job>/<trial>/result.json``; a job's ``config.json`` holds
``n_concurrent_trials`` (its configured cap). One JSON parse per trial.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from sandbox_fleet.errors import InputError
from sandbox_fleet.telemetry.jsonfile import dig, load_json, raw_rows_table
from sandbox_fleet.telemetry.options import ReadOptions, warn_once
from sandbox_fleet.telemetry.progress import track
from sandbox_fleet.telemetry.record import PHASES, Telemetry

def _is_trial(result: Any) -> bool:
    return isinstance(result, dict) and ("task_name" in result or "trial_name" in result)


def looks_like_harbor(path: Path) -> bool:
    """A trial, job or jobs folder: result.json at depth 0, 1 or 2."""
    if not path.is_dir():
        return False
    return (path / "result.json").is_file() or any(path.glob("*/result.json")) or any(path.glob("*/*/result.json"))


def trial_dirs(path: Path) -> list[Path]:
    """Every trial folder under ``path`` (itself, its children or grandchildren), sorted."""
    if (path / "result.json").is_file() and (path / "config.json").is_file():
        cfg = load_json(path / "config.json")
        if isinstance(cfg, dict) and "trial_name" in cfg:
            return [path]
    found = []
    for pattern in ("*/result.json", "*/*/result.json"):
        for result in sorted(path.glob(pattern)):
            trial = result.parent
            cfg = trial / "config.json"
            # A job folder also has config.json + result.json; a trial's config names the trial.
            if cfg.is_file() and "trial_name" in _peek(cfg):
                found.append(trial)
    if not found and (path / "result.json").is_file():
        return [path]
    return found


def _peek(cfg: Path) -> dict:
    data = load_json(cfg)
    return data if isinstance(data, dict) else {}


def _has_trajectory(trial: Path) -> bool | None:
    # Harbor writes agent/trajectory.json (ATIF) for agents that record one; with the
    # agent/ folder gone (logs stripped, as in shared fixtures) we cannot know.
    agent = trial / "agent"
    if not agent.is_dir():
        return None
    return any(agent.glob("trajectory*.json"))


def _int(value: Any, key: str, file: Path) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise InputError(f"{file}: '{key}' is {value!r}, expected an integer")
    return int(value)


def _model(r: dict) -> str | None:
    return (
        dig(r, "agent_info", "model_info", "name")
        or dig(r, "config", "agent", "model_name")
        or dig(r, "agent_info", "name")
        or dig(r, "config", "agent", "name")
    )


def trial_row(trial: Path, result: dict, reward_key: str) -> tuple[dict, bool]:
    """One canonical row from a trial's result.json; also whether its rewards lacked the key."""
    file = trial / "result.json"
    row: dict[str, Any] = {
        "id": result.get("id") or result.get("trial_name") or trial.name,
        "task_id": result.get("task_name"),
        "model": _model(result),
        "job": trial.parent.name,
        "started_at": result.get("started_at"),
        "finished_at": result.get("finished_at"),
    }
    for phase in PHASES:
        row[f"{phase}_started_at"] = dig(result, phase, "started_at")
        row[f"{phase}_finished_at"] = dig(result, phase, "finished_at")
    agent = result.get("agent_result") or {}
    row["input_tokens"] = _int(agent.get("n_input_tokens"), "agent_result.n_input_tokens", file)
    row["output_tokens"] = _int(agent.get("n_output_tokens"), "agent_result.n_output_tokens", file)
    row["cached_tokens"] = _int(agent.get("n_cache_tokens"), "agent_result.n_cache_tokens", file)
    row["turns"] = _int(dig(agent, "metadata", "n_episodes"), "agent_result.metadata.n_episodes", file)
    rewards = dig(result, "verifier_result", "rewards")
    reward = rewards.get(reward_key) if isinstance(rewards, dict) else None
    if reward is not None and (isinstance(reward, bool) or not isinstance(reward, (int, float))):
        raise InputError(f"{file}: verifier_result.rewards.{reward_key} is {reward!r}, expected a number")
    row["reward"] = None if reward is None else float(reward)
    exc = result.get("exception_info")
    row["has_exception"] = exc is not None
    row["exception_type"] = dig(exc, "exception_type") if exc is not None else None
    row["has_trajectory"] = _has_trajectory(trial)
    lacks_key = isinstance(rewards, dict) and bool(rewards) and reward_key not in rewards
    return row, lacks_key


def _cap(job_dir: Path, tel: Telemetry) -> None:
    cfg = job_dir / "config.json"
    if not cfg.is_file():
        return
    data = load_json(cfg)
    cap = data.get("n_concurrent_trials") if isinstance(data, dict) else None
    if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0:
        tel.caps[job_dir.name] = cap


def read_harbor(path: Path, opts: ReadOptions, tel: Telemetry) -> pa.Table:
    """All trials under ``path`` as one canonical-named table (times still ISO strings)."""
    trials = trial_dirs(path)
    if not trials:
        raise InputError(f"{path}: no Harbor trial result.json found (expected <jobs>/<job>/<trial>/result.json)")
    rows = []
    lacking = 0
    for trial in track(trials, "reading Harbor trials", opts.progress):
        result = load_json(trial / "result.json")
        if not _is_trial(result):
            raise InputError(f"{trial / 'result.json'}: not a Harbor trial result (no task_name)")
        row, lacks = trial_row(trial, result, opts.reward_key)
        rows.append(row)
        lacking += lacks
    for job_dir in sorted({t.parent for t in trials}):
        _cap(job_dir, tel)
    if lacking:
        warn_once(tel, f"{path}: {lacking} trial(s) have rewards without key '{opts.reward_key}' (reward left null; see --reward-key)")
    return raw_rows_table(rows)
