"""Read a tasks root into TASK_SCHEMA rows.

Two layouts: an RST release (``metadata/tasks.parquet`` + ``data/*.tar`` shards holding
``<member_prefix>/task.toml``), or a plain folder of ``<task>/task.toml`` (Harbor /
Terminal-Bench tasks dir). Parsed shards are cached (see ``taskcache``).
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from sandbox_fleet.errors import InputError
from sandbox_fleet.telemetry import taskcache
from sandbox_fleet.telemetry.dockerfile import task_image
from sandbox_fleet.telemetry.parquet_io import open_parquet
from sandbox_fleet.telemetry.progress import track
from sandbox_fleet.telemetry.record import TASK_SCHEMA, conform_tasks, is_text
from sandbox_fleet.telemetry.tarscan import _escapes, normalize_prefix, rows_to_table, scan_rows
from sandbox_fleet.telemetry.tasktoml import REQUEST_FIELDS, parse_task_toml

TASKS_PARQUET = Path("metadata") / "tasks.parquet"
_NEEDED = ("task_id", "shard", "member_prefix")


def read_tasks(root: str, *, progress: bool = True, cache_dir: str | None = None) -> pa.Table:
    """Tasks under ``root`` as a TASK_SCHEMA table (one row per task, in input order)."""
    return read_tasks_with_warnings(root, progress=progress, cache_dir=cache_dir)[0]


def read_tasks_with_warnings(
    root: str, *, progress: bool = True, cache_dir: str | None = None
) -> tuple[pa.Table, list[str]]:
    """``read_tasks`` plus the warnings it gathered (tasks without task.toml, cache trouble)."""
    base = Path(root)
    if not base.exists():
        raise InputError(f"{root}: no such tasks folder")
    if (base / TASKS_PARQUET).is_file():
        return _release(base, progress, cache_dir)
    if base.is_dir() and ((base / "task.toml").is_file() or any(base.glob("*/task.toml"))):
        return _plain(base)
    raise InputError(f"{root}: not a tasks root (expected metadata/tasks.parquet + data/*.tar, or <task>/task.toml folders)")


def _release(base: Path, progress: bool, cache_dir: str | None) -> tuple[pa.Table, list[str]]:
    meta_file = base / TASKS_PARQUET
    pf = open_parquet(meta_file)
    names = pf.schema_arrow.names
    missing = [c for c in _NEEDED if c not in names]
    if missing:
        raise InputError(f"{meta_file}: missing column(s) {', '.join(missing)} (expected task_id, task_group_id, shard, member_prefix)")
    cols = [c for c in ("task_id", "task_group_id", "shard", "member_prefix") if c in names]
    try:
        meta = pf.read(columns=cols)
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"{meta_file}: corrupt Parquet data ({exc})") from exc
    if meta.num_rows == 0:
        raise InputError(f"{meta_file}: no tasks (empty)")
    for c in ("shard", "member_prefix"):
        if not is_text(meta.column(c).type):
            raise InputError(f"{meta_file}: column '{c}' has type {meta.column(c).type}, expected strings")
    warnings: list[str] = []
    cache = taskcache.cache_root(cache_dir, base)
    shards = sorted(s for s in pc.unique(meta.column("shard")).to_pylist() if s is not None)
    paths = []
    for shard in shards:
        if _escapes(shard):
            raise InputError(f"{meta_file}: shard '{shard}' is not a path inside the tasks root")
        path = base / shard
        if not path.is_file():
            raise InputError(f"{path}: no such shard (named in {meta_file})")
        # Resolved (symlinks included) before the inside-the-root check.
        if not path.resolve().is_relative_to(base.resolve()):
            raise InputError(f"{meta_file}: shard '{shard}' resolves outside the tasks root ({path.resolve()})")
        paths.append(path)
    scanned = []
    for shard, table in zip(shards, _scan_all(paths, shards, cache, warnings, progress)):
        scanned.append(table.append_column("shard", pa.array([shard] * table.num_rows, pa.string())))
    found = pa.concat_tables(scanned) if scanned else None
    prefixes = pa.array([None if p is None else normalize_prefix(p) for p in meta.column("member_prefix").to_pylist()], pa.string())
    keys = pa.table({"_row": pa.array(range(meta.num_rows), pa.int64()), "shard": meta.column("shard"), "member_prefix": prefixes})
    joined = keys.join(found, ["shard", "member_prefix"], join_type="left outer") if found is not None else keys
    joined = joined.sort_by("_row")
    out = {"task_id": meta.column("task_id")}
    if "task_group_id" in names:
        out["task_group_id"] = meta.column("task_group_id")
    for f in (*REQUEST_FIELDS, "bundle_bytes", "image"):
        if f in joined.column_names:
            out[f] = joined.column(f)
    tasks = conform_tasks(pa.table(out), str(meta_file))
    lost = joined.column("bundle_bytes").null_count if "bundle_bytes" in joined.column_names else meta.num_rows
    if lost:
        warnings.append(f"{base}: {lost} task(s) have no task.toml in their shard; their requests are null")
    if "out_of_range" in joined.column_names:
        _range_warning(base, int(pc.sum(joined.column("out_of_range")).as_py() or 0), warnings)
    if "problem" in joined.column_names:
        _problem_warning(base, joined.column("problem").drop_null().to_pylist(), warnings)
    return tasks, warnings


def _problem_warning(base: Path, problems: list[str], warnings: list[str]) -> None:
    """One warning for every task.toml that could not be used, with the first reasons."""
    if problems:
        shown = "; ".join(problems[:3]) + (" ..." if len(problems) > 3 else "")
        warnings.append(f"{base}: {len(problems)} task.toml file(s) cannot be used; those tasks' requests are "
                        f"null ({shown})")


def _range_warning(base: Path, n: int, warnings: list[str]) -> None:
    if n:
        warnings.append(f"{base}: {n} task.toml value(s) out of range (zero, negative, huge or not finite) "
                        "were read as null")


def _scan_all(paths: list[Path], shards: list[str], cache: Path | None, warnings: list[str],
              progress: bool) -> list[pa.Table]:
    """Each shard's scan, from the cache when its key matches, else parsed (in parallel).

    ``cache`` None: every shard parsed, nothing written.
    """
    entries = [None if cache is None else taskcache.entry(cache, p) for p in paths]
    out: list[pa.Table | None] = [taskcache.load(e) if e is not None and e.is_file() else None for e in entries]
    todo = [i for i, t in enumerate(out) if t is None]
    workers = min(len(todo), os.cpu_count() or 1)
    if workers > 1:
        # TOML parsing is CPU-bound pure Python: one process per core.
        with ProcessPoolExecutor(max_workers=workers, mp_context=_mp_context()) as pool:
            results = pool.map(scan_rows, [paths[i] for i in todo], [shards[i] for i in todo])
            for i, rows in zip(todo, _tracked(results, len(todo), progress)):
                out[i] = rows_to_table(rows)
    else:
        for i in _tracked(todo, len(todo), progress):
            out[i] = rows_to_table(scan_rows(paths[i], shards[i]))
    for i in todo:
        entry = entries[i]
        if entry is None:
            continue
        problem = taskcache.store(entry, out[i])
        if problem and problem not in warnings:
            warnings.append(problem)
    return out


def _mp_context():
    # forkserver workers start from a clean, single-threaded process: forking this one
    # (DuckDB and Arrow thread pools running) risks inherited locks. Override via env.
    method = os.environ.get("SANDBOX_FLEET_MP_START", "forkserver")
    return multiprocessing.get_context(method if method in multiprocessing.get_all_start_methods() else None)


def _tracked(items, total: int, progress: bool):
    return track(_KnownLength(items, total), "parsing task shards", progress, min_items=2)


class _KnownLength:
    """An iterator with a known length, so the progress bar can show a total."""

    def __init__(self, items, total: int) -> None:
        self._items, self._total = items, total

    def __iter__(self):
        return iter(self._items)

    def __len__(self) -> int:
        return self._total


def _tree_bytes(folder: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            p = Path(dirpath) / name
            if not p.is_symlink():
                total += p.stat().st_size
    return total


def _plain(base: Path) -> tuple[pa.Table, list[str]]:
    folders = [base] if (base / "task.toml").is_file() else sorted(p.parent for p in base.glob("*/task.toml"))
    rows = []
    for folder in folders:
        toml = folder / "task.toml"
        try:
            req = parse_task_toml(toml.read_bytes(), str(toml))
        except InputError as exc:
            req = {**dict.fromkeys(REQUEST_FIELDS), "out_of_range": 0, "problem": str(exc)}
        image = task_image(folder, req.pop("docker_image", None))
        rows.append({"task_id": folder.name, **req, "bundle_bytes": _tree_bytes(folder), "image": image})
    return _plain_table(base, rows), _plain_warnings(base, rows)


def _plain_warnings(base: Path, rows: list[dict]) -> list[str]:
    warnings: list[str] = []
    _range_warning(base, sum(r.get("out_of_range", 0) for r in rows), warnings)
    _problem_warning(base, [r["problem"] for r in rows if r.get("problem")], warnings)
    return warnings


def _plain_table(base: Path, rows: list[dict]) -> pa.Table:
    rows = [{k: v for k, v in r.items() if k not in ("out_of_range", "problem")} for r in rows]
    return conform_tasks(pa.Table.from_pylist(rows, schema=pa.schema([f.with_nullable(True) for f in TASK_SCHEMA if f.name != "task_group_id"])), str(base))
