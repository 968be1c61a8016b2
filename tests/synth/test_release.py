"""The release writer: tar format (checked with the standard library), task.toml, Parquet schema."""

import io
import os
import tarfile
import tomllib

import numpy as np
import pyarrow.parquet as pq
import pytest

from sandbox_fleet.synth import release
from sandbox_fleet.synth.tasks import STANDARD, draw_tasks, task_count, task_toml


def test_ustar_header_equals_tarfiles_own():
    for name, size, mode in (("rst-000001/task.toml", 265, 0o644), ("a/tests/test.sh", 0, 0o755), ("x" * 60 + "/" + "y" * 90, 12345678, 0o644)):
        ti = tarfile.TarInfo(name)
        ti.size, ti.mode, ti.mtime = size, mode, release.MTIME
        ti.uid = ti.gid = 0
        ti.uname = ti.gname = ""
        assert release._ustar_header(name, size, mode) == ti.tobuf(tarfile.USTAR_FORMAT)


def test_shard_reads_back_with_tarfile_and_holes_are_zeros(tmp_path):
    path = tmp_path / "s.tar"
    release.write_shard(path, [("t/a.txt", b"hello", 0o644), ("t/big.bin", 100_000, 0o644), ("t/z.txt", b"end", 0o644)])
    with tarfile.open(path) as tf:
        names = [(m.name, m.size) for m in tf.getmembers()]
        assert names == [("t/a.txt", 5), ("t/big.bin", 100_000), ("t/z.txt", 3)]
        assert tf.extractfile("t/a.txt").read() == b"hello"
        assert tf.extractfile("t/big.bin").read() == bytes(100_000)
        assert tf.extractfile("t/z.txt").read() == b"end"
    assert os.path.getsize(path) % release.RECORD == 0


def test_task_toml_parses_and_carries_the_request():
    pool = draw_tasks(np.random.default_rng(0), 1.0)
    assert len(pool) == 37_484
    standard = (pool.cpus == STANDARD[0]) & (pool.memory_mb == STANDARD[1]) & (pool.storage_mb == STANDARD[2])
    assert standard.sum() == 37_459
    legacy_seen = modern_seen = False
    for i in np.flatnonzero(pool.legacy)[:3].tolist() + [int(np.flatnonzero(~standard)[0]), 0]:
        doc = tomllib.loads(task_toml(pool, i).decode())
        env = doc["environment"]
        assert env["cpus"] == pool.cpus[i] and env["gpus"] == pool.gpus[i]
        assert doc["agent"]["timeout_sec"] == pool.agent_timeout_s[i]
        if pool.legacy[i]:
            legacy_seen = True
            assert env["memory"] == f"{pool.memory_mb[i] // 1024}G"
        else:
            modern_seen = True
            assert env["memory_mb"] == pool.memory_mb[i] and env["storage_mb"] == pool.storage_mb[i]
    assert legacy_seen and modern_seen


def test_bundle_sizes_follow_the_published_shape():
    pool = draw_tasks(np.random.default_rng(1), 1.0)
    assert np.median(pool.bundle_bytes) == pytest.approx(39_900, rel=0.02)
    assert 14_000_000 <= pool.bundle_bytes.max() <= 16_700_000


def test_members_sum_to_bundle_size():
    pool = draw_tasks(np.random.default_rng(2), 0.01)
    for i in range(len(pool)):
        total = sum(c if isinstance(c, int) else len(c) for _, c, _ in release.task_members(pool, i))
        assert total == pool.bundle_bytes[i]
    assert task_count(0.01) == len(pool) == 375


def test_write_tasks_layout(tmp_path):
    pool = draw_tasks(np.random.default_rng(3), 0.03)
    shards = release.write_tasks(pool, tmp_path)
    meta = pq.read_table(tmp_path / "tasks" / "metadata" / "tasks.parquet")
    assert meta.column_names == ["task_id", "task_group_id", "shard", "member_prefix"]
    assert sorted(set(meta.column("shard").to_pylist())) == sorted(str(p.relative_to(tmp_path / "tasks")) for p in shards)
    with tarfile.open(shards[0]) as tf:
        first = meta.column("member_prefix")[0].as_py()
        assert tomllib.load(io.BytesIO(tf.extractfile(f"{first}/task.toml").read()))["environment"]["cpus"] >= 1
