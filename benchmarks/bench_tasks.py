"""Benchmark: read a 37,484-task RST tasks root, first (parsing tars) and from the cache.

Generates the root in a temp dir (40 tar shards, 5 members per task, like a real release),
then prints the median of several runs. Targets: first read < 10 s, cached < 1 s.

    .venv/bin/python benchmarks/bench_tasks.py [--tasks 37484] [--shards 40] [--runs 3]
"""

from __future__ import annotations

import argparse
import io
import shutil
import statistics
import tarfile
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from sandbox_fleet.telemetry import read_tasks

TOML = """version = "1.0"

[metadata]
author_name = "bench"
difficulty = "medium"
category = "software-engineering"
tags = ["python", "bash"]

[verifier]
timeout_sec = 900.0

[agent]
timeout_sec = 1800.0

[environment]
build_timeout_sec = 600.0
cpus = {cpus}
memory_mb = {memory_mb}
storage_mb = 6144
"""


def _add(tf: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 1_700_000_000
    tf.addfile(info, io.BytesIO(data))


def build_root(root: Path, n_tasks: int, n_shards: int) -> None:
    (root / "data").mkdir(parents=True)
    (root / "metadata").mkdir()
    ids, groups, shards, prefixes = [], [], [], []
    per = -(-n_tasks // n_shards)
    for s in range(n_shards):
        shard = f"data/shard-{s:03d}.tar"
        with tarfile.open(root / shard, "w") as tf:
            for i in range(s * per, min(n_tasks, (s + 1) * per)):
                prefix = f"task-{i:06d}"
                odd = i % 1500 == 0  # a few tasks ask for more, as in the real corpus
                toml = TOML.format(cpus=2 if odd else 1, memory_mb=4096 if odd else 2048)
                _add(tf, f"{prefix}/task.toml", toml.encode())
                _add(tf, f"{prefix}/instruction.md", b"Fix the failing build.\n" * 20)
                _add(tf, f"{prefix}/environment/Dockerfile", b"FROM python:3.12-slim\nRUN pip install pytest\n")
                _add(tf, f"{prefix}/tests/test.sh", b"#!/bin/bash\npytest /tests\n")
                _add(tf, f"{prefix}/solution/solve.sh", b"#!/bin/bash\nmake\n")
                ids.append(f"t{i}")
                groups.append(f"g{i}")
                shards.append(shard)
                prefixes.append(prefix)
    pq.write_table(
        pa.table({"task_id": ids, "task_group_id": groups, "shard": shards, "member_prefix": prefixes}),
        root / "metadata" / "tasks.parquet",
    )


def _time(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=37_484)
    ap.add_argument("--shards", type=int, default=40)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "tasks"
        build_root(root, args.tasks, args.shards)
        first, cached = [], []
        for _ in range(args.runs):
            cache = Path(tmp) / "cache"
            shutil.rmtree(cache, ignore_errors=True)
            first.append(_time(lambda cache=cache: read_tasks(str(root), progress=False, cache_dir=str(cache))))
            cached.append(_time(lambda cache=cache: read_tasks(str(root), progress=False, cache_dir=str(cache))))
        table = read_tasks(str(root), progress=False, cache_dir=str(Path(tmp) / "cache"))
        assert table.num_rows == args.tasks and table.column("cpus").null_count == 0
    print(f"tasks root: {args.tasks} tasks in {args.shards} tar shards, {args.runs} runs")
    for label, wall in (("first read (parse tars)", first), ("cached read", cached)):
        runs = ", ".join(f"{x:.3f}" for x in wall)
        print(f"{label:24s} median {statistics.median(wall):.3f} s  (runs: {runs})")


if __name__ == "__main__":
    main()
