"""A per-model count or sum is one entry of ``slice_sums.SLICE_SUMS`` (issue 43 item 1).

The test adds two figures by that one edit alone, in a fresh interpreter (the slice model takes its
fields from the table when it is imported), and reads them back from ``measure`` in memory and out
of core, from the JSON schema and from the terminal table; the truth is a loop over the rows here,
written from the figures' definitions (docs/measure.md), not from the package's masks or SQL.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

#: The one edit: a summed column over a row rule, and a count-like sum over passing rows.
EDIT = """
import importlib
slice_sums = importlib.import_module("sandbox_fleet.measure.slice_sums")  # before anything imports the model
slice_sums.SLICE_SUMS["cached_in"] = slice_sums.SliceSum("has_tokens", "cached_tokens", key="cached_tokens_sum",
                                                         title="cached tok")
slice_sums.SLICE_SUMS["turns_pass"] = slice_sums.SliceSum("passed", "turns", key="turns_passed")
"""

RUN = EDIT + """
import json, sys
from sandbox_fleet.measure import measure_paths
from sandbox_fleet.measure.model import Slice
path, threshold = sys.argv[1], float(sys.argv[2])
out = {}
for ooc in (False, True):
    s = measure_paths([path], progress=False, out_of_core=ooc, pass_threshold=threshold,
                      memory_budget_gb=8).to_json()
    out["ooc" if ooc else "mem"] = s["by_model"]
out["fields"] = list(Slice.model_json_schema()["properties"])
print(json.dumps(out))
"""


def _rollouts(path: Path, n: int, seed: int) -> dict[str, list]:
    """Canonical rollouts with every case the rules tell apart: null and NaN rewards, null exception
    flags, null token counts, rows reporting 0 and 0 tokens, null cached counts and turns, no model."""
    rng = np.random.default_rng(seed)
    start = 1_700_000_000_000_000 + rng.integers(0, 10_000, n) * 1_000_000
    pick = lambda p, values: [v if u >= p else None for u, v in zip(rng.random(n), values)]  # noqa: E731
    cols = {
        "id": [f"r{i}" for i in range(n)],
        "started_at": start,
        "finished_at": start + rng.integers(0, 900, n) * 1_000_000,
        "model": pick(0.1, rng.choice(["m-b", "m-a", "m-c"], n).tolist()),
        "reward": pick(0.15, [float("nan") if u < 0.05 else float(v)
                              for u, v in zip(rng.random(n), rng.choice([0.0, 0.5, 1.0], n))]),
        "has_exception": pick(0.1, (rng.random(n) < 0.2).tolist()),
        "input_tokens": pick(0.1, [0 if u < 0.1 else int(v) for u, v in zip(rng.random(n), rng.integers(1, 50_000, n))]),
        "output_tokens": pick(0.1, [0 if u < 0.1 else int(v) for u, v in zip(rng.random(n), rng.integers(1, 5_000, n))]),
        "cached_tokens": pick(0.3, rng.integers(0, 40_000, n).tolist()),
        "turns": pick(0.2, rng.integers(1, 60, n).tolist()),
    }
    ts = pa.timestamp("us", tz="UTC")
    pq.write_table(pa.table({
        "id": pa.array(cols["id"], pa.string()),
        "started_at": pa.array(cols["started_at"], ts), "finished_at": pa.array(cols["finished_at"], ts),
        "model": pa.array(cols["model"], pa.string()), "reward": pa.array(cols["reward"], pa.float64()),
        "has_exception": pa.array(cols["has_exception"], pa.bool_()),
        **{k: pa.array(cols[k], pa.int64()) for k in ("input_tokens", "output_tokens", "cached_tokens", "turns")},
    }), path, row_group_size=max(n // 5, 1))
    return cols


def _brute(cols: dict[str, list], threshold: float) -> dict[str, dict[str, int]]:
    """Per model (no model: "(none)"): cached tokens over rows reporting tokens (both counts present,
    not both 0), and turns over rows whose reward is a number at or above the threshold."""
    out: dict[str, dict[str, int]] = {}
    for i, model in enumerate(cols["model"]):
        got = out.setdefault("(none)" if model is None else model, {"cached_tokens_sum": 0, "turns_passed": 0})
        tin, tout, reward = cols["input_tokens"][i], cols["output_tokens"][i], cols["reward"][i]
        if tin is not None and tout is not None and (tin, tout) != (0, 0):
            got["cached_tokens_sum"] += cols["cached_tokens"][i] or 0
        if reward is not None and not math.isnan(reward) and reward >= threshold:
            got["turns_passed"] += cols["turns"][i] or 0
    return out


def _python(code: str, *args: str) -> str:
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_a_figure_added_by_one_entry_is_computed_in_memory_and_out_of_core(tmp_path: Path) -> None:
    path = tmp_path / "rollouts.parquet"
    cols = _rollouts(path, 6_000, 0)
    for threshold in (1.0, 0.5):
        got = json.loads(_python(RUN, str(path), str(threshold)))
        truth = _brute(cols, threshold)
        assert got["fields"][-2:] == ["cached_tokens_sum", "turns_passed"]  # the model's new fields, last
        for side in ("mem", "ooc"):
            assert {m: {k: s[k] for k in ("cached_tokens_sum", "turns_passed")} for m, s in got[side].items()} == truth
            assert list(got[side]) == ["m-a", "m-b", "m-c", "(none)"]
        assert all(v > 0 for per in truth.values() for v in per.values())  # not vacuous


def test_the_added_figure_is_printed_and_the_cli_runs(tmp_path: Path) -> None:
    path = tmp_path / "rollouts.parquet"
    cols = _rollouts(path, 800, 1)
    code = EDIT + "from sandbox_fleet.cli import console_main; import sys; sys.argv = ['sandbox-fleet', 'measure', sys.argv[1]]; console_main()"
    out = _python(code, str(path))
    assert "cached tok" in out
    table = out[out.index("By model"):]
    line = next(row for row in table.splitlines() if row.strip().startswith("m-a"))
    assert line.split()[-1] == f"{_brute(cols, 1.0)['m-a']['cached_tokens_sum']:,}"


def test_without_the_edit_nothing_is_added(tmp_path: Path) -> None:
    """The default table reports no extra key: the committed schema and outputs stay as they were."""
    from sandbox_fleet.measure.model import Slice
    from sandbox_fleet.measure.slice_sums import reported

    assert reported() == {}
    assert list(Slice.model_fields)[-1] == "steps"
