"""Where ``--tasks`` caches parsed shards: only where the user asked, or beside the output file.

Reading user files never writes outside the output folder: without ``--cache-dir``,
``$SANDBOX_FLEET_CACHE_DIR`` or ``-o`` nothing is written at all (not in HOME, not in the inputs).
Each command runs in its own process with HOME pointed at an empty folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from sandbox_fleet.telemetry.taskcache import cache_dir_for


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root``: relative path -> (size, mtime in ns)."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def _run(args: list, home: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("SANDBOX_FLEET_CACHE_DIR", "XDG_CACHE_HOME")}
    env["HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "sandbox_fleet.cli", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def _folders(tmp_path: Path) -> tuple[Path, Path]:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    return home, work


def test_measure_with_tasks_and_no_cache_option_writes_nothing(release, tmp_path):
    home, work = _folders(tmp_path)
    before = _tree(release)
    r = _run(["measure", release / "metadata" / "trajectories.parquet", "--tasks", release, "--json"], home, work)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["tasks"]["count"] == 3  # the tasks were read (parsed, not cached)
    assert not any(home.rglob("*")), "nothing written under HOME (no ~/.cache)"
    assert not any(work.rglob("*")), "nothing written in the working folder"
    assert _tree(release) == before, "the input tree is untouched"


def test_measure_caches_beside_its_output_file_and_reads_it_back(release, tmp_path):
    home, work = _folders(tmp_path)
    out = tmp_path / "results" / "measure.json"
    out.parent.mkdir()
    before = _tree(release)
    args = ["measure", release / "metadata" / "trajectories.parquet", "--tasks", release, "-o", out]
    first = _run(args, home, work)
    assert first.returncode == 0, first.stderr
    entries = sorted((out.parent / "cache" / "tasks").glob("*.arrow"))
    assert len(entries) == 2  # one per shard (data/shard-000.tar, data/shard-001.tar)
    assert sorted(p.name for p in out.parent.iterdir()) == ["cache", "measure.json"]
    assert not any(home.rglob("*")) and not any(work.rglob("*")) and _tree(release) == before
    stamps = [p.stat().st_mtime_ns for p in entries]
    again = _run(args, home, work)  # a second read uses the entries and leaves them as they were
    assert again.returncode == 0, again.stderr
    assert [p.stat().st_mtime_ns for p in entries] == stamps
    assert json.loads(out.read_text())["tasks"]["count"] == 3


def test_plan_with_tasks_caches_beside_its_output_file(release, tmp_path):
    home, work = _folders(tmp_path)
    out = tmp_path / "plan" / "plan.json"
    out.parent.mkdir()
    r = _run(["plan", release / "metadata" / "trajectories.parquet", "--tasks", release, "-o", out], home, work)
    assert r.returncode == 0, r.stderr
    assert len(list((out.parent / "cache" / "tasks").glob("*.arrow"))) == 2
    # plan on telemetry replays its rollouts on nodes with the compiled kernel: numba's cache under the
    # user's cache is the one documented exception (README, "Two commands"); nothing else under HOME
    numba_cache = home / ".cache" / "sandbox-fleet" / "numba"
    assert not [p for p in home.rglob("*") if p.is_file() and numba_cache not in p.parents]
    assert not any(work.rglob("*"))


def test_cache_dir_option_and_the_environment_come_before_the_output_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("SANDBOX_FLEET_CACHE_DIR", raising=False)
    out = tmp_path / "o" / "m.json"
    assert cache_dir_for(None, None) is None
    assert cache_dir_for(None, out) == str(tmp_path / "o" / "cache")
    assert cache_dir_for(tmp_path / "mine", out) == str(tmp_path / "mine")
    monkeypatch.setenv("SANDBOX_FLEET_CACHE_DIR", str(tmp_path / "env"))
    assert cache_dir_for(None, out) == str(tmp_path / "env")
    assert cache_dir_for(tmp_path / "mine", None) == str(tmp_path / "mine")


def test_an_output_inside_the_tasks_root_gets_no_cache_there(tmp_path, monkeypatch):
    # the user chose to write -o there; the cache they did not ask for stays out of the input
    monkeypatch.delenv("SANDBOX_FLEET_CACHE_DIR", raising=False)
    tasks = tmp_path / "release"
    assert cache_dir_for(None, tasks / "m.json", tasks) is None
    assert cache_dir_for(None, tmp_path / "m.json", tasks) == str(tmp_path / "cache")
