"""Builders for telemetry tests: small, real-shaped inputs written to tmp_path."""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HARBOR = FIXTURES / "harbor"
TBENCH = FIXTURES / "terminal_bench"


def add_member(tf: tarfile.TarFile, name: str, data: bytes, **kw) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    for k, v in kw.items():
        setattr(info, k, v)
    tf.addfile(info, io.BytesIO(data))


TOML_1CPU = b"""version = "1.0"

[metadata]
difficulty = "easy"
tags = ["bash"]

[verifier]
timeout_sec = 600.0

[agent]
timeout_sec = 1800.0

[environment]
build_timeout_sec = 900.0
cpus = 1
memory_mb = 2048
storage_mb = 6144
"""

TOML_LEGACY = b"""[environment]
cpus = 2
memory = "4G"
storage = "10G"
gpus = 1

[agent]
timeout_sec = 3600
"""


def build_release(root: Path) -> Path:
    """A tiny RST-style release: trajectories + tasks metadata + two tar shards."""
    (root / "metadata").mkdir(parents=True)
    (root / "data").mkdir()
    with tarfile.open(root / "data" / "shard-000.tar", "w") as tf:
        add_member(tf, "tg-a/task.toml", TOML_1CPU)
        add_member(tf, "tg-a/instruction.md", b"x" * 100)
        add_member(tf, "tg-a/tests/test.sh", b"y" * 23)
        add_member(tf, "tg-b/task.toml", TOML_LEGACY)
    with tarfile.open(root / "data" / "shard-001.tar", "w") as tf:
        add_member(tf, "./tg-c/task.toml", TOML_1CPU)
        add_member(tf, "./tg-c/environment/Dockerfile", b"FROM ubuntu\n")
    pq.write_table(
        pa.table(
            {
                "task_id": ["task-a", "task-b", "task-c"],
                "task_group_id": ["tg-a", "tg-b", "tg-c"],
                "shard": ["data/shard-000.tar", "data/shard-000.tar", "data/shard-001.tar"],
                "member_prefix": ["tg-a", "tg-b", "tg-c/"],
                "difficulty": ["easy", "hard", "easy"],
            }
        ),
        root / "metadata" / "tasks.parquet",
    )
    ts = pa.timestamp("ns")  # naive nanoseconds, as some exports write them
    t = lambda *a: datetime(2025, 3, 1, *a)  # noqa: E731
    pq.write_table(
        pa.table(
            {
                "trajectory_id": ["r1", "r2", "r3", "r4"],
                "task_group_id": ["tg-a", "tg-b", "tg-c", "tg-a"],
                "model_name": ["Qwen3.5-27B", "gpt-oss-120b", "Qwen3.5-27B", "gpt-oss-120b"],
                "status": ["completed"] * 4,
                "has_trajectory": [True, False, True, True],
                "has_exception": [False, True, False, False],
                "reward": [1.0, None, 0.0, 1.0],
                "started_at": pa.array([t(0, 0, 0), t(0, 0, 10), t(0, 1, 0), t(1, 0, 0)], ts),
                "finished_at": pa.array([t(0, 22, 12), t(0, 2, 29), t(0, 1, 0), t(1, 30, 0, 500000)], ts),
                "input_tokens": pa.array([52474, None, 3207, 11760], pa.int64()),
                "output_tokens": pa.array([4085, None, 200, 900], pa.int64()),
                "cached_tokens": pa.array([0, None, 0, 0], pa.int64()),
                "episode_count": pa.array([11, None, 2, 5], pa.int32()),
                "shard": ["data/shard-000.tar", "data/shard-000.tar", "data/shard-001.tar", "data/shard-000.tar"],
                "member_prefix": ["tg-a", "tg-b", "tg-c", "tg-a"],
            }
        ),
        root / "metadata" / "trajectories.parquet",
    )
    return root


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=UTC)


def inspect_samples(path: Path) -> dict:
    """Each sample as inspect_ai itself wrote it, parsed straight from the archive's JSON entries
    with zstd through PyArrow (not through the reader's code)."""
    with zipfile.ZipFile(path) as z:
        out = {}
        for info in z.infolist():
            if info.filename.startswith("samples/"):
                with open(path, "rb") as raw:
                    raw.seek(info.header_offset + 26)
                    name_len, extra_len = int.from_bytes(raw.read(2), "little"), int.from_bytes(raw.read(2), "little")
                    raw.seek(name_len + extra_len, 1)
                    data = pa.Codec("zstd").decompress(raw.read(info.compress_size),
                                                       decompressed_size=info.file_size).to_pybytes()
                s = json.loads(data)
                out[f"{s['id']}/{s['epoch']}"] = s
    return out
