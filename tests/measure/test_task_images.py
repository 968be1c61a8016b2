"""Base images of task bundles (``measure --tasks``): Dockerfile FROM lines in Harbor's layout
(``environment/Dockerfile``) and Terminal-Bench's (``Dockerfile`` at the task root), and Harbor's
prebuilt ``[environment] docker_image``; counted and shared over the tasks that name one."""

from __future__ import annotations

import pytest

from sandbox_fleet.measure import measure_paths
from sandbox_fleet.telemetry.dockerfile import from_image
from sandbox_fleet.telemetry.tasks import read_tasks

TOML = '[agent]\ntimeout_sec = 600.0\n[environment]\ncpus = 1\nmemory_mb = 2048\n'

# Terminal-Bench's task Dockerfiles build from its own base images (ghcr.io/laude-institute/t-bench/...)
TB_DOCKERFILE = """\
FROM ghcr.io/laude-institute/t-bench/python-3-13:20250620
WORKDIR /app
RUN apt-get update && apt-get install -y \\
    curl \\
    git
COPY . /app
"""
MULTI_STAGE = """\
# syntax=docker/dockerfile:1
ARG PY=3.12
FROM --platform=linux/amd64 python:3.12-slim AS base
RUN pip install numpy
FROM base AS test
COPY tests /tests
"""


def make_tasks(root):
    def task(name, dockerfile=None, where="Dockerfile", toml=TOML):
        d = root / name
        (d / "environment").mkdir(parents=True)
        (d / "task.toml").write_text(toml)
        if dockerfile is not None:
            (d / where).write_text(dockerfile)
            (d / "docker-compose.yaml").write_text("services:\n  client:\n    build:\n      context: .\n")

    task("tb-a", TB_DOCKERFILE)
    task("tb-b", TB_DOCKERFILE)
    task("tb-c", TB_DOCKERFILE, where="environment/Dockerfile")  # Harbor's layout
    task("multi", MULTI_STAGE, where="environment/Dockerfile")
    task("prebuilt", toml=TOML + 'docker_image = "alexgshaw/code-from-image:20251031"\n')
    task("none")  # no Dockerfile, no image


def test_from_lines():
    assert from_image(TB_DOCKERFILE) == "ghcr.io/laude-institute/t-bench/python-3-13:20250620"
    assert from_image(MULTI_STAGE) == "python:3.12-slim"  # the last stage's base, its alias resolved
    assert from_image("RUN echo\n") is None
    assert from_image("from  ubuntu:24.04\n") == "ubuntu:24.04"  # keywords are case-insensitive


def test_read_tasks_fills_the_image_column(tmp_path):
    make_tasks(tmp_path)
    t = read_tasks(str(tmp_path), progress=False)
    got = dict(zip(t.column("task_id").to_pylist(), t.column("image").to_pylist()))
    assert got == {"multi": "python:3.12-slim", "none": None,
                   "prebuilt": "alexgshaw/code-from-image:20251031",
                   "tb-a": "ghcr.io/laude-institute/t-bench/python-3-13:20250620",
                   "tb-b": "ghcr.io/laude-institute/t-bench/python-3-13:20250620",
                   "tb-c": "ghcr.io/laude-institute/t-bench/python-3-13:20250620"}


def test_measure_counts_distinct_images_and_shares(tmp_path):
    make_tasks(tmp_path / "tasks")
    harbor = "/work/shared/fixtures/harbor/oracle-n2"
    import pathlib

    if not pathlib.Path(harbor).is_dir():
        pytest.skip("the Harbor fixture is not on this machine")
    tasks = measure_paths([harbor], tasks=str(tmp_path / "tasks"), progress=False).to_json()["tasks"]
    assert tasks["count"] == 6 and tasks["image_rows"] == 5 and tasks["distinct_images"] == 3
    assert tasks["images"] == [
        {"image": "ghcr.io/laude-institute/t-bench/python-3-13:20250620", "tasks": 3, "share": 0.6},
        {"image": "alexgshaw/code-from-image:20251031", "tasks": 1, "share": 0.2},
        {"image": "python:3.12-slim", "tasks": 1, "share": 0.2},
    ]


def test_no_image_is_unknown_not_zero():
    import pyarrow as pa

    from sandbox_fleet.measure.tasks import measure_tasks
    from sandbox_fleet.telemetry import conform_tasks

    out = measure_tasks(conform_tasks(pa.table({"task_id": ["a", "b"]})))
    assert (out["image_rows"], out["distinct_images"], out["images"]) == (0, None, None)


def test_a_release_shard_is_read_for_images_too(tmp_path):
    """An RST-style release (metadata/tasks.parquet + tar shards): the images are read in the tar."""
    import io
    import tarfile

    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path / "release"
    (root / "metadata").mkdir(parents=True)
    (root / "data").mkdir()
    members = {"a/task.toml": TOML, "a/Dockerfile": TB_DOCKERFILE,
               "b/task.toml": TOML, "b/environment/Dockerfile": MULTI_STAGE,
               "c/task.toml": TOML + 'docker_image = "alexgshaw/code-from-image:20251031"\n',
               "c/environment/Dockerfile": "FROM ignored:1\n", "d/task.toml": TOML}
    with tarfile.open(root / "data" / "s0.tar", "w") as tf:
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    pq.write_table(pa.table({"task_id": list("abcd"), "shard": ["data/s0.tar"] * 4, "member_prefix": list("abcd")}),
                   root / "metadata" / "tasks.parquet")
    t = read_tasks(str(root), progress=False, cache_dir=str(tmp_path / "cache"))
    want = ["ghcr.io/laude-institute/t-bench/python-3-13:20250620", "python:3.12-slim",
            "alexgshaw/code-from-image:20251031", None]
    assert t.column("image").to_pylist() == want
    again = read_tasks(str(root), progress=False, cache_dir=str(tmp_path / "cache"))  # from the cache
    assert again.column("image").to_pylist() == want


def test_measure_text_lists_the_top_images(tmp_path, run_cli):
    make_tasks(tmp_path / "tasks")
    (tmp_path / "tasks" / "odd" / "environment").mkdir(parents=True)
    (tmp_path / "tasks" / "odd" / "task.toml").write_text(TOML)
    (tmp_path / "tasks" / "odd" / "Dockerfile").write_text("FROM [bold]evil:1\n")  # markup is printed as text
    r = run_cli("measure", "/work/shared/fixtures/harbor/oracle-n2", "--tasks", tmp_path / "tasks")
    assert r.code == 0, r.err
    assert "Base images (4 distinct over 6 tasks)" in r.out
    assert "ghcr.io/laude-institute/t-bench/python-3-13:20250620" in r.out and "50.0%" in r.out
    # ties by name: "[bold]evil:1" sorts before "alexgshaw/..." and is shown as written, not as a style
    assert "[bold]evil:1" in r.out and "others" in r.out and "16.7%" in r.out
