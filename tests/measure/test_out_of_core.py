"""measure out of core (issue 43.2): the figures it fills are the in-memory path's, byte for byte.

Forced mode (``out_of_core=True``) on the repo's real fixtures and on synthetic inputs with the
cases that break a sweep (ties of a finish and a start, zero holds, duplicate ids, rows without a
model); the in-memory run of the same input is the peer, and a brute-force sweep and sort (here,
not the package's) is the independent truth for the headline figures. One run under a small
address-space limit in a subprocess: the input is over the budget there, so ``measure`` goes out of
core by itself and completes.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sandbox_fleet.measure import measure_paths
from sandbox_fleet.measure.out_of_core import NOT_MEASURED, needs_out_of_core

ROOT = Path(__file__).resolve().parents[2]
REAL = Path("/work/shared/fixtures/real")
FIXTURES = [
    ROOT / "tests" / "fixtures" / "harbor" / "oracle-n2",
    ROOT / "tests" / "fixtures" / "harbor" / "terminus2-n3",
    ROOT / "tests" / "fixtures" / "inspect" / "mock-local.eval",
    REAL / "miniswe_gemini3" / "containers.csv",
    REAL / "ccb_harbor" / "jobs",
]
TOP = ("rows", "first_started_at", "last_finished_at", "span_s", "sandbox_s", "sandbox_hours")


def _dump(value) -> str:
    return json.dumps(value, sort_keys=False)


def assert_same_figures(ooc: dict, mem: dict) -> int:
    """Every figure the out-of-core run filled equals the in-memory one as JSON text; every block it
    left null is named in ``coverage.not_measured``. Returns how many leaves were compared."""
    compared = 0
    for key in TOP:
        assert _dump(ooc[key]) == _dump(mem[key]), key
        compared += 1
    for block in ("concurrency", "hold_s"):
        for key, value in ooc[block].items():
            if value is not None:
                assert _dump(value) == _dump(mem[block][key]), f"{block}.{key}"
                compared += 1
    if ooc["by_model"] is not None:  # every slice figure but the histogram and the steps (null, stated)
        assert list(ooc["by_model"]) == list(mem["by_model"])
        for name, got in ooc["by_model"].items():
            for key, value in got.items():
                if key in ("hold_histogram", "steps"):
                    assert value is None and f"by_model.{key}" in ooc["coverage"]["not_measured"]
                else:
                    assert _dump(value) == _dump(mem["by_model"][name][key]), f"by_model.{name}.{key}"
                    compared += 1
    not_measured = ooc["coverage"]["not_measured"]
    for block in ("phases", "steps", "tokens", "outcomes", "exceptions", "by_job", "limits"):
        assert ooc[block] is None and block in not_measured, block
    assert ooc["coverage"]["rejected"] == mem["coverage"]["rejected"]
    return compared


def _both(paths, **kw) -> tuple[dict, dict]:
    ooc = measure_paths(paths, progress=False, out_of_core=True, **kw).to_json()
    mem = measure_paths(paths, progress=False, out_of_core=False, **kw).to_json()
    return ooc, mem


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_fixtures_byte_identical(path: Path) -> None:
    if not path.exists():
        pytest.skip(f"{path} not on this machine")
    ooc, mem = _both([str(path)])
    compared = assert_same_figures(ooc, mem)
    # Not vacuous: the headline concurrency and hold figures are among those compared.
    for key in ("peak", "touches", "time_at_peak_s", "mean", "series", "time_at_level", "self_check"):
        assert ooc["concurrency"][key] is not None, key
    for key in ("min", "median", "mean", "p90", "p99", "max", "by_model"):
        assert ooc["hold_s"][key] is not None, key
    assert ooc["by_model"]  # the per-model slices' figures are among those compared
    assert compared >= 40


def _synthetic(path: Path, rows: int, seed: int) -> dict:
    """Canonical rollouts with ties, zero holds, duplicate ids and null models; returns the columns kept
    after de-duplication (first of each id) for the brute-force oracle."""
    rng = np.random.default_rng(seed)
    t0 = 1_700_000_000_000_000
    start = t0 + rng.integers(0, 50_000, rows) * 1_000_000  # whole seconds: many ties
    hold = rng.integers(0, 400, rows) * 1_000_000  # a finish often lands on another's start; some 0
    ids = np.arange(rows).astype(str).astype(object)
    ids[rng.integers(0, rows, rows // 50)] = "dup"  # duplicates: only the first "dup" counts
    models = rng.choice(np.array(["b-model", "a-model", None], dtype=object), rows, p=[0.5, 0.3, 0.2])
    table = pa.table({
        "id": pa.array(ids, pa.string()),
        "started_at": pa.array(start, pa.timestamp("us", tz="UTC")),
        "finished_at": pa.array(start + hold, pa.timestamp("us", tz="UTC")),
        "model": pa.array(models, pa.string()),
    })
    pq.write_table(table, path, row_group_size=max(rows // 7, 1))  # several batches: carries across them
    first = np.ones(rows, dtype=bool)
    dup = np.flatnonzero(ids == "dup")
    first[dup[1:]] = False
    return {"start": start[first], "finish": (start + hold)[first], "model": models[first]}


def _brute(start: np.ndarray, finish: np.ndarray) -> dict:
    """Peak and time at peak by walking every instant (finishes before starts at one instant)."""
    events = sorted([(int(t), -1) for t in finish] + [(int(t), 1) for t in start])
    level = peak = 0
    at_peak_us = 0
    last_t = None
    for t, d in events:
        if last_t is not None and level == peak and t > last_t:
            at_peak_us += t - last_t
        level += d
        if level > peak:
            peak, at_peak_us = level, 0
        last_t = t
    return {"peak": peak, "time_at_peak_s": at_peak_us / 1e6}


@pytest.mark.parametrize("seed", [0, 1])
def test_synthetic_byte_identical_and_brute_force(tmp_path: Path, seed: int) -> None:
    path = tmp_path / "rollouts.parquet"
    kept = _synthetic(path, 20_000, seed)
    ooc, mem = _both([str(path)])
    assert_same_figures(ooc, mem)
    assert ooc["coverage"]["rejected"]["duplicate id"] == 20_000 - kept["start"].size
    brute = _brute(kept["start"], kept["finish"])
    assert ooc["concurrency"]["peak"] == brute["peak"]
    holds = np.sort(kept["finish"] - kept["start"])
    assert ooc["hold_s"]["median"] == float(np.median(holds)) / 1e6
    assert ooc["hold_s"]["p99"] == float(np.percentile(holds, 99)) / 1e6
    assert ooc["sandbox_s"] == int(holds.sum()) / 1e6
    # Per model, rows without one as "(none)" (last), as in memory.
    assert list(ooc["hold_s"]["by_model"]) == ["a-model", "b-model", "(none)"]
    a = np.sort((kept["finish"] - kept["start"])[kept["model"] == "a-model"])
    assert ooc["hold_s"]["by_model"]["a-model"]["p90"] == float(np.percentile(a, 90)) / 1e6


def test_filters_and_cap_pass_through(tmp_path: Path) -> None:
    path = tmp_path / "rollouts.parquet"
    _synthetic(path, 5_000, 2)
    ooc, mem = _both([str(path)], models=["a-model"], since="2023-11-14T22:30:00Z", cap=40)
    assert_same_figures(ooc, mem)
    assert ooc["concurrency"]["configured_cap"] == 40
    assert ooc["concurrency"]["cap_detected"] == mem["concurrency"]["cap_detected"]


def test_budget_decides(tmp_path: Path) -> None:
    path = tmp_path / "rollouts.parquet"
    _synthetic(path, 10_000, 3)
    assert needs_out_of_core([str(path)], 0.001)  # 10,000 rows x 190 B > 1 MiB
    assert not needs_out_of_core([str(path)], 1.0)
    assert set(NOT_MEASURED) >= {"steps", "outcomes", "tokens"}


def test_spill_folder_is_removed_and_never_next_to_the_input(tmp_path: Path) -> None:
    inputs, out = tmp_path / "in", tmp_path / "o'ut"  # a quote in the path: DuckDB's setting is quoted
    inputs.mkdir()
    out.mkdir()
    path = inputs / "rollouts.parquet"
    _synthetic(path, 2_000, 4)
    measure_paths([str(path)], progress=False, out_of_core=True, temp_parent=str(out))
    assert sorted(p.name for p in inputs.iterdir()) == ["rollouts.parquet"]
    assert list(out.iterdir()) == []


def test_cli_text_names_what_was_not_measured(tmp_path: Path, run_cli) -> None:
    path = tmp_path / "rollouts.parquet"
    _synthetic(path, 3_000, 6)
    r = run_cli("measure", path, "--out-of-core")
    assert r.code == 0, r.err
    assert "Not measured (out of core" in r.out and "steps: no burst structure" not in r.out
    assert "measured out of core" in r.err  # the warning line
    j = run_cli("measure", path, "--out-of-core", "--json")
    assert json.loads(j.out)["coverage"]["not_measured"]["steps"]


def test_bad_budget_is_one_line(tmp_path: Path, run_cli) -> None:
    path = tmp_path / "rollouts.parquet"
    _synthetic(path, 100, 7)
    r = run_cli("measure", path, "--memory-budget-gb", "-1")
    assert r.code == 2 and r.err.count("\n") == 1 and "--memory-budget-gb -1" in r.err, r.err


#: Address space of the child, as the hostile battery sets it: imports map ~1 GiB of it and opening
#: DuckDB ~650 MB more, so the budget (75% of the room left) is ~1.2 GiB.
LIMIT_BYTES = 2 << 30
#: Over that budget at ``IN_MEMORY_BYTES_PER_ROW`` (1.3 GiB in memory by the estimate).
ROWS_UNDER_LIMIT = 7_500_000


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_BYTES, LIMIT_BYTES))


def test_over_budget_under_rlimit_goes_out_of_core(tmp_path: Path) -> None:
    """Under a 2 GiB address-space limit 7.5M rows are over the budget: ``measure`` (no flag) goes out
    of core by itself, completes, and its figures are the unlimited in-memory run's. Starts and holds
    on a coarse grid (few distinct instants) keep the run short; the rows are all there."""
    path = tmp_path / "big.parquet"
    rng = np.random.default_rng(5)
    start = 1_700_000_000_000_000 + rng.integers(0, 20_000, ROWS_UNDER_LIMIT) * 60_000_000
    finish = start + rng.integers(0, 600, ROWS_UNDER_LIMIT) * 1_000_000
    pq.write_table(pa.table({
        "id": pa.array(np.arange(ROWS_UNDER_LIMIT).astype(str)),
        "started_at": pa.array(start, pa.timestamp("us", tz="UTC")),
        "finished_at": pa.array(finish, pa.timestamp("us", tz="UTC")),
    }), path, row_group_size=1 << 20)
    del start, finish
    proc = subprocess.run([sys.executable, "-m", "sandbox_fleet.cli", "measure", str(path), "--json",
                           "-o", str(tmp_path / "out" / "summary.json")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600, preexec_fn=_limit)
    assert proc.returncode == 0, proc.stderr[-2000:]
    ooc = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert ooc["coverage"]["out_of_core"] is not None  # chosen by the budget, not forced
    mem = measure_paths([str(path)], progress=False, out_of_core=False).to_json()
    assert_same_figures(ooc, mem)


def test_progress_bar_draws_on_a_terminal_only_when_asked(tmp_path: Path, monkeypatch) -> None:
    import io

    from rich.console import Console

    from sandbox_fleet.telemetry import progress as bars

    buf = io.StringIO()
    monkeypatch.setattr(bars, "_console", Console(file=buf, force_terminal=True, width=100))
    path = tmp_path / "rollouts.parquet"
    _synthetic(path, 2_000, 8)
    measure_paths([str(path)], progress=False, out_of_core=True)
    assert buf.getvalue() == ""
    measure_paths([str(path)], progress=True, out_of_core=True)
    assert "measuring out of core" in buf.getvalue()
