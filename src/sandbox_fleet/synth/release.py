"""Write an RST-style release: trajectories metadata, tasks metadata and task shards.

Layout (what the ``measure`` RST reader expects)::

    OUT/trajectories/metadata/trajectories.parquet
    OUT/tasks/metadata/tasks.parquet
    OUT/tasks/data/tasks-00000.tar ...   # <member_prefix>/task.toml + bundle files

Byte-identical for the same inputs: Parquet carries no timestamps, tar headers have
a fixed mtime, uid/gid 0, empty owner names and members in a fixed order. Each
bundle's bulk is one zero-filled file whose bytes are real tar content but written
as a filesystem hole (``seek``), so a 2 GB logical tasks root costs ~200 MB of disk.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sandbox_fleet.synth.population import Population
from sandbox_fleet.synth.tasks import TaskPool, task_toml

#: Simulated second 0 (the campaign ends ~17 days later, before the August 2026 release).
EPOCH = datetime(2026, 7, 10, tzinfo=UTC)
EPOCH_US = int(EPOCH.timestamp()) * 1_000_000
MTIME = int(EPOCH.timestamp())  # every tar member's mtime
TRAJECTORIES_PER_SHARD = 5_000
BLOCK = 512
RECORD = 20 * BLOCK

TS = pa.timestamp("us", tz="UTC")
TRAJECTORY_SCHEMA = pa.schema(
    [
        pa.field("trajectory_id", pa.string(), nullable=False),
        pa.field("task_group_id", pa.string()),
        pa.field("model_name", pa.string()),
        pa.field("status", pa.string()),
        pa.field("has_trajectory", pa.bool_()),
        pa.field("has_exception", pa.bool_()),
        pa.field("reward", pa.float64()),
        pa.field("started_at", TS),
        pa.field("finished_at", TS),
        pa.field("input_tokens", pa.int64()),
        pa.field("output_tokens", pa.int64()),
        pa.field("cached_tokens", pa.int64()),
        pa.field("episode_count", pa.int64()),
        pa.field("shard", pa.string()),
        pa.field("member_prefix", pa.string()),
    ]
)
TASKS_SCHEMA = pa.schema(
    [
        pa.field("task_id", pa.string(), nullable=False),
        pa.field("task_group_id", pa.string()),
        pa.field("shard", pa.string()),
        pa.field("member_prefix", pa.string()),
    ]
)


def _parquet(table: pa.Table, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, compression="zstd", compression_level=3)


# --- trajectories ------------------------------------------------------------------------
def trajectory_table(
    pops: list[Population],
    start_s: list[np.ndarray],
    finish_s: list[np.ndarray],
    task_index: list[np.ndarray],
    pool: TaskPool,
    rng: np.random.Generator,
) -> pa.Table:
    """One row per rollout, sorted by start time (ties: run order, then release order).

    ``start_s[k][i]`` / ``finish_s[k][i]`` place rollout ``i`` of run ``k``;
    ``task_index[k][i]`` is the task it ran.
    """
    cat = np.concatenate
    start_us = EPOCH_US + np.rint(cat(start_s) * 1e6).astype(np.int64)
    finish_us = EPOCH_US + np.rint(cat(finish_s) * 1e6).astype(np.int64)
    run = cat([np.full(len(p), k, dtype=np.int64) for k, p in enumerate(pops)])
    rank = cat([np.arange(len(p), dtype=np.int64) for p in pops])
    order = np.lexsort((rank, run, start_us))
    n = order.size

    def col(attr: str) -> np.ndarray:
        return cat([getattr(p, attr) for p in pops])[order]

    has_tok = col("has_tokens")
    has_traj = col("has_trajectory")
    reward = col("reward")
    # 128 random bits per trajectory as 32 hex digits (uuid-like, reproducible from the seed).
    hexes = np.frombuffer(rng.bytes(16 * n).hex().encode(), dtype="S32")
    ids = pa.array(hexes).cast(pa.string())
    models = pa.DictionaryArray.from_arrays(pa.array(run[order].astype(np.int32)), pa.array([p.model for p in pops])).cast(pa.string())
    groups = pa.array(pool.task_group_id).take(pa.array(cat(task_index)[order]))
    traj_shard = np.char.add("data/trajectories-", np.char.zfill((np.arange(n) // TRAJECTORIES_PER_SHARD).astype(str), 5))
    traj_shard = np.char.add(traj_shard, ".tar")
    no_traj = ~has_traj

    def counts(values: np.ndarray) -> pa.Array:
        return pa.array(values, type=pa.int64(), mask=~has_tok)

    columns = [
        ids,
        groups,
        models,
        pa.array(np.full(n, "completed", dtype=object), pa.string()),
        pa.array(has_traj, pa.bool_()),
        pa.array(col("has_exception"), pa.bool_()),
        pa.array(reward, type=pa.float64(), mask=np.isnan(reward)),
        pa.array(start_us[order], type=pa.int64()).cast(TS),
        pa.array(finish_us[order], type=pa.int64()).cast(TS),
        counts(col("input_tokens")),
        counts(col("output_tokens")),
        counts(np.zeros(n, dtype=np.int64)),  # prefix caching was off: 0, not null, where counted
        counts(col("turns")),
        pa.array(traj_shard, type=pa.string(), mask=no_traj),
        pa.array(hexes, mask=no_traj).cast(pa.string()),
    ]
    return pa.Table.from_arrays(columns, schema=TRAJECTORY_SCHEMA)


def write_trajectories(table: pa.Table, out: Path) -> Path:
    path = out / "trajectories" / "metadata" / "trajectories.parquet"
    _parquet(table, path)
    return path


# --- tasks ---------------------------------------------------------------------------------
# The fixed fields of every header (uid/gid 0, our mtime, empty owner names, ustar magic)
# and their contribution to the checksum, which is the byte sum with the checksum
# field read as eight spaces.
_IDS = b"0000000\x00" * 2
_MTIME_FIELD = b"%011o\x00" % MTIME
_MIDDLE = b"        " + b"0" + bytes(100) + b"ustar\x0000" + bytes(80)
_FIXED_SUM = sum(_IDS) + sum(_MTIME_FIELD) + sum(_MIDDLE)
_MODES = {mode: b"%07o\x00" % mode for mode in (0o644, 0o755)}


def _ustar_header(name: str, size: int, mode: int) -> bytes:
    """A plain ustar header (the format every tar reader and our fast scanner accept).

    Assembled from precomputed pieces: the byte-by-byte version cost ~20 us a
    member, which is most of the time spent writing 187k members at scale 1.
    """
    raw = name.encode()
    prefix = b""
    if len(raw) > 100:
        cut = raw.rindex(b"/", 0, 156)
        prefix, raw = raw[:cut], raw[cut + 1 :]
    mode_field = _MODES.get(mode) or b"%07o\x00" % mode
    size_field = b"%011o\x00" % size
    check = _FIXED_SUM + sum(raw) + sum(prefix) + sum(mode_field) + sum(size_field)
    head = raw.ljust(100, b"\x00") + mode_field + _IDS + size_field + _MTIME_FIELD
    return head + b"%06o\x00 " % check + _MIDDLE[8:] + prefix.ljust(155, b"\x00") + bytes(12)


def _instruction(task_id: str) -> bytes:
    return (
        f"# {task_id}\n\nA synthetic long-horizon terminal task. Work in /app; the verifier runs\n"
        "tests/test.sh against the final state of the workspace.\n"
    ).encode()


_DOCKERFILE = b"FROM ubuntu:24.04\nRUN apt-get update && apt-get install -y --no-install-recommends python3 git make\nWORKDIR /app\nCOPY assets.bin /app/assets.bin\n"
_TEST = b"#!/bin/bash\nset -euo pipefail\ncd /app\npython3 -m pytest -q /tests\n"


def task_members(pool: TaskPool, i: int) -> list[tuple[str, bytes | int, int]]:
    """(name, content or zero-filled size, mode) of task ``i``'s files, summing to its bundle size."""
    p = pool.task_id[i]
    small = [
        (f"{p}/task.toml", task_toml(pool, i), 0o644),
        (f"{p}/instruction.md", _instruction(p), 0o644),
        (f"{p}/environment/Dockerfile", _DOCKERFILE, 0o644),
        (f"{p}/tests/test.sh", _TEST, 0o755),
    ]
    rest = int(pool.bundle_bytes[i]) - sum(len(c) for _, c, _ in small)
    members: list[tuple[str, bytes | int, int]] = list(small)
    if rest > 0:
        members.append((f"{p}/environment/assets.bin", rest, 0o644))
    return members


def write_shard(path: Path, members: list[tuple[str, bytes | int, int]]) -> None:
    """Write one tar; an ``int`` content is that many zero bytes, left as a hole on disk."""
    buf = bytearray()
    with open(path, "wb") as f:
        for name, content, mode in members:
            size = content if isinstance(content, int) else len(content)
            buf += _ustar_header(name, size, mode)
            padded = -(-size // BLOCK) * BLOCK
            if isinstance(content, int):
                f.write(buf)
                buf.clear()
                f.seek(padded, 1)
            else:
                buf += content
                buf += bytes(padded - size)
        f.write(buf)
        end = f.tell() + 2 * BLOCK
        f.write(bytes(2 * BLOCK + (-end) % RECORD))


def write_tasks(pool: TaskPool, out: Path, progress: Callable[[int], None] | None = None) -> list[Path]:
    """Write ``OUT/tasks/metadata/tasks.parquet`` and the shards; returns the shard paths."""
    root = out / "tasks"
    (root / "data").mkdir(parents=True, exist_ok=True)
    table = pa.table(
        {
            "task_id": pa.array(pool.task_id, pa.string()),
            "task_group_id": pa.array(pool.task_group_id, pa.string()),
            "shard": pa.array(pool.shard, pa.string()),
            "member_prefix": pa.array(pool.task_id, pa.string()),
        },
        schema=TASKS_SCHEMA,
    )
    _parquet(table, root / "metadata" / "tasks.parquet")
    by_shard: dict[str, list[int]] = {}
    for i, s in enumerate(pool.shard):
        by_shard.setdefault(s, []).append(i)
    paths = []
    for shard, idx in by_shard.items():
        members = [m for i in idx for m in task_members(pool, i)]
        path = root / shard
        write_shard(path, members)
        paths.append(path)
        if progress is not None:
            progress(len(idx))
    return paths
