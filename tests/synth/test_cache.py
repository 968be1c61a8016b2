"""The cached default corpus and the synth command line."""

import json

import pytest
from typer.testing import CliRunner

from sandbox_fleet import __version__
from sandbox_fleet.cli import app
from sandbox_fleet.errors import InputError
from sandbox_fleet.synth import build, cache, synth


def test_default_corpus_builds_once(tmp_path, monkeypatch):
    calls = []
    real = cache.synth

    def counting(*a, **k):
        calls.append(k)
        return real(*a, **k)

    monkeypatch.setattr(cache, "synth", counting)
    first = cache.default_corpus(tmp_path, scale=0.01, seed=2, progress=False)
    again = cache.default_corpus(tmp_path, scale=0.01, seed=2, progress=False)
    assert first == again and len(calls) == 1
    assert (first / "trajectories" / "metadata" / "trajectories.parquet").is_file()
    assert (first / "tasks" / "metadata" / "tasks.parquet").is_file()
    assert __version__ in first.name and "seed2" in first.name
    assert not list(tmp_path.glob("*.tmp-*"))
    other = cache.default_corpus(tmp_path, scale=0.01, seed=3, progress=False)
    assert other != first and len(calls) == 2


def test_refuses_to_write_over_foreign_data(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="not empty"):
        synth(tmp_path, scale=0.01)


def test_rebuild_over_own_release_needs_force_and_drops_stale_shards(tmp_path):
    synth(tmp_path, scale=0.03, seed=1, progress=False)  # 1,125 tasks: 2 shards
    with pytest.raises(InputError, match="pass `force` to replace it"):
        synth(tmp_path, scale=0.01, seed=1, progress=False)
    assert len(list((tmp_path / "tasks" / "data").iterdir())) == 2  # the refused run changed nothing
    synth(tmp_path, scale=0.01, seed=1, progress=False, force=True)  # 375 tasks: 1 shard
    assert [p.name for p in (tmp_path / "tasks" / "data").iterdir()] == ["tasks-00000.tar"]
    assert [p.name for p in tmp_path.parent.iterdir() if p.name.startswith(f".{tmp_path.name}")] == []


@pytest.mark.parametrize("kw", [{"scale": 0}, {"scale": -1}, {"scale": float("nan")}, {"preset": "swe"}, {"seed": -1}])
def test_bad_arguments(kw):
    with pytest.raises(InputError):
        build.check_args(kw.get("preset", "rst"), kw.get("scale", 1.0), kw.get("seed", 1))


def test_cli_json_is_alone_on_stdout(tmp_path):
    res = CliRunner().invoke(app, ["synth", str(tmp_path / "o"), "--scale", "0.01", "--seed", "5", "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["rollouts"] == 3272 and summary["seed"] == 5 and summary["cap"] == 30


def test_cli_bad_scale_exits_2(tmp_path):
    import sys

    from sandbox_fleet.cli import main

    argv = sys.argv
    sys.argv = ["sandbox-fleet", "synth", str(tmp_path / "o"), "--scale", "0"]
    try:
        with pytest.raises(SystemExit) as exc:
            main()
    finally:
        sys.argv = argv
    assert exc.value.code == 2
