"""Reader for Harbor output: a jobs folder, one job folder, or one trial folder.

Layout: ``<jobs>/<job>/<trial>/result.json``; a job's ``config.json`` holds its
configured cap (``job_cap``: every layout Harbor has used). Two JSON parses per trial
(result and config); ``agent/trajectory.json`` (ATIF) is sized always and parsed only
when the result lacks turns or tokens.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from sandbox_fleet.errors import InputError
from sandbox_fleet.telemetry.jsonfile import dig, load_json, plausible_cap, raw_rows_table, warn_bad_cells, whole_number
from sandbox_fleet.telemetry.options import ReadOptions, warn_once
from sandbox_fleet.telemetry.progress import track
from sandbox_fleet.telemetry.record import PHASES, ROLLOUT_COLUMNS, Telemetry

#: Reasons a trial folder the reader saw cannot become a row (counted in ``rejected``).
NO_RESULT = "no result.json"
NO_CONFIG = "no config.json"
UNREADABLE = "unreadable"


def _is_trial(result: Any) -> bool:
    """A trial result names its task or itself (a name that is null or not text names nothing)."""
    return isinstance(result, dict) and any(isinstance(result.get(k), str) and result.get(k)
                                            for k in ("task_name", "trial_name"))


def looks_like_harbor(path: Path) -> bool:
    """A trial, job or jobs folder: result.json at depth 0, 1 or 2."""
    if not path.is_dir():
        return False
    return (path / "result.json").is_file() or any(path.glob("*/result.json")) or any(path.glob("*/*/result.json"))


def _has_files(d: Path) -> bool:
    return (d / "result.json").is_file() or (d / "config.json").is_file()


def _json_or_none(path: Path) -> Any:
    """The parsed file, None when absent, ``...`` when it exists but cannot be read (or is
    JSON ``null``: a file that says nothing is unreadable, not missing)."""
    if not path.is_file():
        return None
    try:
        data = load_json(path)
    except InputError:
        return ...
    return ... if data is None else data


def _is_job(d: Path) -> bool:
    """A job folder: its config names a job, or its sub-folders hold trials."""
    cfg = _json_or_none(d / "config.json")
    if isinstance(cfg, dict) and "trial_name" in cfg:
        return False
    if isinstance(cfg, dict) and "job_name" in cfg:
        return True
    res = _json_or_none(d / "result.json")
    if _is_trial(res):
        return False
    return any(c.is_dir() and _has_files(c) for c in d.iterdir())


def trial_dirs(path: Path) -> list[Path]:
    """Every trial folder under ``path`` (itself, its children or grandchildren), sorted.

    A trial folder is one holding result.json or config.json that is not a job folder;
    it may still lack one of the two or be unreadable (``read_harbor`` rejects those by reason).
    """
    if _has_files(path) and not _is_job(path):
        return [path]
    found = []
    for child in sorted(c for c in path.iterdir() if c.is_dir()):
        if not _has_files(child) and not any(g.is_dir() and _has_files(g) for g in child.iterdir()):
            continue
        if _is_job(child):
            found.extend(sorted(g for g in child.iterdir() if g.is_dir() and _has_files(g) and not _is_job(g)))
        else:
            found.append(child)
    return found


def _has_trajectory(trial: Path) -> bool | None:
    # Harbor writes agent/trajectory.json (ATIF) for agents that record one; with the
    # agent/ folder gone (logs stripped, as in shared fixtures) we cannot know.
    agent = trial / "agent"
    if not agent.is_dir():
        return None
    return any(agent.glob("trajectory*.json"))


def _model(r: dict) -> str | None:
    return (
        dig(r, "agent_info", "model_info", "name")
        or dig(r, "config", "agent", "model_name")
        or dig(r, "agent_info", "name")
        or dig(r, "config", "agent", "name")
    )


def atif_figures(trajectory: Any) -> dict[str, int | None]:
    """Turns (agent steps) and token sums from an ATIF trajectory; None where it says nothing."""
    steps = trajectory.get("steps") if isinstance(trajectory, dict) else None
    if not isinstance(steps, list):
        return {"turns": None, "input_tokens": None, "output_tokens": None, "cached_tokens": None}
    agent = [s for s in steps if isinstance(s, dict) and s.get("source") == "agent"]
    sums: dict[str, int | None] = {"turns": len(agent)}
    for canonical, key in (("input_tokens", "prompt_tokens"), ("output_tokens", "completion_tokens"),
                           ("cached_tokens", "cached_tokens")):
        values = [dig(s, "metrics", key) for s in agent]
        values = [v for v in values if isinstance(v, int) and not isinstance(v, bool)]
        sums[canonical] = sum(values) if values else None
    return sums


def trial_row(trial: Path, result: dict, reward_key: str, bad: dict[str, int] | None = None) -> tuple[dict, bool]:
    """One canonical row from a trial's result.json; also whether its rewards lacked the key.

    Cells that are not what their column needs become null and are counted in ``bad``.
    """
    bad = {} if bad is None else bad
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
    if not isinstance(agent, dict):
        agent = {}
    row["input_tokens"] = whole_number(agent.get("n_input_tokens"), "agent_result.n_input_tokens", bad)
    row["output_tokens"] = whole_number(agent.get("n_output_tokens"), "agent_result.n_output_tokens", bad)
    row["cached_tokens"] = whole_number(agent.get("n_cache_tokens"), "agent_result.n_cache_tokens", bad)
    row["turns"] = whole_number(dig(agent, "metadata", "n_episodes"), "agent_result.metadata.n_episodes", bad)
    rewards = dig(result, "verifier_result", "rewards")
    reward = rewards.get(reward_key) if isinstance(rewards, dict) else None
    if reward is not None and (isinstance(reward, bool) or not isinstance(reward, (int, float))):
        bad[f"verifier_result.rewards.{reward_key}"] = bad.get(f"verifier_result.rewards.{reward_key}", 0) + 1
        reward = None
    row["reward"] = None if reward is None else float(reward)
    exc = result.get("exception_info")
    row["has_exception"] = exc is not None
    row["exception_type"] = dig(exc, "exception_type") if exc is not None else None
    row["limit_type"] = None  # Harbor records an agent timeout as an exception (exception_info)
    row["has_trajectory"] = _has_trajectory(trial)
    _from_trajectory(trial, row)
    lacks_key = isinstance(rewards, dict) and bool(rewards) and reward_key not in rewards
    return row, lacks_key


def _from_trajectory(trial: Path, row: dict) -> None:
    """trajectory_bytes always; turns and tokens from the ATIF steps where the result has none."""
    traj = trial / "agent" / "trajectory.json"
    row["trajectory_bytes"] = traj.stat().st_size if traj.is_file() else None
    needs = [k for k in ("turns", "input_tokens", "output_tokens", "cached_tokens") if row[k] is None]
    if not needs or row["trajectory_bytes"] is None:
        return
    figures = atif_figures(_json_or_none(traj))
    for key in needs:
        row[key] = figures[key]


def job_cap(config: Any) -> int | None:
    """The configured cap of one Harbor job config, from whichever layout it uses.

    Current releases: top-level ``n_concurrent_trials``; older ones:
    ``orchestrator.n_concurrent_trials``. When every agent sets ``n_concurrent``, the job
    cannot run more than their sum at once, so the cap is the smaller of the two.
    """
    if not isinstance(config, dict):
        return None
    cap = _positive(config.get("n_concurrent_trials"))
    if cap is None:
        cap = _positive(dig(config, "orchestrator", "n_concurrent_trials"))
    agents = config.get("agents")
    if isinstance(agents, list) and agents:
        per_agent = [_positive(a.get("n_concurrent")) if isinstance(a, dict) else None for a in agents]
        counts = [v for v in per_agent if v is not None]
        if len(counts) == len(per_agent):
            total = sum(counts)
            cap = total if cap is None else min(cap, total)
    return cap


def _positive(value: Any) -> int | None:
    return value if plausible_cap(value) else None


def _cap(job_dir: Path, tel: Telemetry) -> None:
    config = _json_or_none(job_dir / "config.json")
    if config is ... or (config is not None and not isinstance(config, dict)):
        warn_once(tel, f"{job_dir / 'config.json'}: not a readable job config (expected a JSON object); "
                       "its configured cap is unknown")
        return
    cap = job_cap(config)
    if cap is not None:
        tel.caps[job_dir.name] = cap


def _load_trial(trial: Path) -> tuple[dict | None, str | None]:
    """(result, None) or (None, the reason this trial folder cannot be a row)."""
    result = _json_or_none(trial / "result.json")
    config = _json_or_none(trial / "config.json")
    if result is ... or config is ...:
        return None, UNREADABLE
    if result is None:
        return None, NO_RESULT
    if config is None:
        return None, NO_CONFIG
    if not _is_trial(result):
        return None, UNREADABLE
    return result, None


def read_harbor(path: Path, opts: ReadOptions, tel: Telemetry) -> pa.Table:
    """All trials under ``path`` as one canonical-named table (times still ISO strings).

    Every trial folder seen is a row or a rejection by reason: rows in = used + rejected.
    """
    trials = trial_dirs(path)
    if not trials:
        raise InputError(f"{path}: no Harbor trial result.json found (expected <jobs>/<job>/<trial>/result.json)")
    rows = []
    lacking = 0
    bad: dict[str, int] = {}
    lost: dict[str, list[str]] = {}
    for trial in track(trials, "reading Harbor trials", opts.progress):
        result, reason = _load_trial(trial)
        if reason is not None:
            tel.reject(reason)
            lost.setdefault(reason, []).append(trial.name)
            continue
        assert result is not None  # _load_trial gives a result whenever it gives no reason
        row, lacks = trial_row(trial, result, opts.reward_key, bad)
        rows.append(row)
        lacking += lacks
    for job_dir in sorted({t.parent for t in trials if t != path} or {path.parent}):
        _cap(job_dir, tel)
    for reason, names in sorted(lost.items()):
        shown = ", ".join(names[:5]) + (" ..." if len(names) > 5 else "")
        warn_once(tel, f"{path}: {len(names)} trial folder(s) rejected ({reason}): {shown}")
    for key, n in sorted(bad.items()):
        warn_once(tel, f"{path}: {n} trial(s) have a '{key}' that is not a number; read as null")
    if lacking:
        warn_once(tel, f"{path}: {lacking} trial(s) have rewards without key '{opts.reward_key}' (reward left null; see --reward-key)")
    cells: dict[str, int] = {}
    # Harbor records no host or node for a trial (result.json, config.json): that column stays out.
    table = raw_rows_table(rows, tuple(c for c in ROLLOUT_COLUMNS if c not in ("node", "cap")), cells)
    warn_bad_cells(tel, path, cells)
    return table
