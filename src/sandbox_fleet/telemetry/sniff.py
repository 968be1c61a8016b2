"""Decide which reader a path needs, from what the path holds."""

from __future__ import annotations

import glob as globmod
from pathlib import Path

from sandbox_fleet.errors import InputError
from sandbox_fleet.telemetry import harbor, inspect_log, rst, terminal_bench
from sandbox_fleet.telemetry.parquet_io import open_parquet
from sandbox_fleet.telemetry.table import is_glob, table_kind


def sniff(path: str) -> str:
    """One of "rst", "harbor", "terminal-bench", "table"; InputError when nothing fits."""
    if is_glob(path):
        if not globmod.glob(path, recursive=True):
            raise InputError(f"{path}: no files match this pattern")
        return "table"
    p = Path(path)
    if not p.exists():
        raise InputError(f"{path}: no such file or directory")
    if p.is_file():
        if p.name == "result.json":
            return "harbor"
        if p.name == "results.json":
            return "terminal-bench"
        if inspect_log.is_log(p):
            return "inspect"
        kind = table_kind(path)
        if kind == "parquet" and not p.name.lower().endswith(".gz"):
            # The RST trajectories file passed directly still gets the release mapping.
            names = open_parquet(p).schema_arrow.names
            return "rst" if "trajectory_id" in names else "table"
        if kind is not None:
            return "table"
        raise InputError(f"{path}: unknown file type (expected .parquet, .csv, .jsonl, an Inspect .eval or .json log, result.json or results.json; or use `fmt`)")
    if rst.is_release(p):
        return "rst"
    if terminal_bench.looks_like_runs(p):
        return "terminal-bench"
    if harbor.looks_like_harbor(p):
        return "harbor"
    if inspect_log.looks_like_inspect(p):
        return "inspect"
    raise InputError(
        f"{path}: cannot tell the telemetry format (expected metadata/trajectories.parquet, Harbor result.json "
        "or Terminal-Bench results.json; or use `fmt`)"
    )
