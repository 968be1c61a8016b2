"""Per-node exception counts (by_node): a node column mapped with --map, counted by hand."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from summaries import measure_json, paths_json

from .helpers import telemetry

FIXTURES = Path(__file__).parents[1] / "fixtures"

# (hostname, has_exception): n-b 2 of 4 raised, n-a 0 of 3, n-c 1 of 2 known (one flag unknown),
# two rows on no node (one raised). Listed by node name whatever the row order.
ROWS = [
    ("n-b", "true"), ("n-a", "false"), ("n-c", "true"), ("n-b", "false"), ("", "true"),
    ("n-a", "false"), ("n-b", "true"), ("n-c", ""), ("n-a", "false"), ("n-b", "false"),
    ("", "false"), ("n-c", "false"),
]
EXPECTED = {
    "rows": 12, "nodes": 3, "rows_without_node": 2, "exceptions_without_node": 1, "exceptions": 4,
    "per_node": [
        {"node": "n-a", "rows": 3, "exceptions": 0, "exception_rate": 0.0, "exception_rate_rows": 3},
        {"node": "n-b", "rows": 4, "exceptions": 2, "exception_rate": 0.5, "exception_rate_rows": 4},
        {"node": "n-c", "rows": 3, "exceptions": 1, "exception_rate": 0.5, "exception_rate_rows": 2},
    ],
}
MAP = "id=trial,started_at=start,finished_at=end,node=hostname,has_exception=raised"


def _write_csv(path: Path) -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["trial", "start", "end", "hostname", "raised"])
        for i, (host, raised) in enumerate(ROWS):
            w.writerow([f"t{i}", f"2026-01-01T00:00:{i:02d}Z", f"2026-01-01T00:01:{i:02d}Z", host, raised])
    return path


def test_a_mapped_node_column_is_counted_per_node_from_csv(run_cli, tmp_path):
    out = tmp_path / "m.json"
    res = run_cli("measure", _write_csv(tmp_path / "r.csv"), "--map", MAP, "-o", out)
    assert res.code == 0, res.err
    doc = json.loads(out.read_text())
    assert doc["by_node"] == EXPECTED
    assert doc["schema_version"] == 7


def test_parquet_node_column_read_coded_gives_the_same_counts(tmp_path):
    hosts = [h or None for h, _ in ROWS]
    flags = [{"true": True, "false": False, "": None}[r] for _, r in ROWS]
    table = pa.table({
        "trial": [f"t{i}" for i in range(len(ROWS))],
        "start": pa.array([1_750_000_000 + i for i in range(len(ROWS))], pa.int64()),
        "end": pa.array([1_750_000_060 + i for i in range(len(ROWS))], pa.int64()),
        "hostname": hosts, "raised": flags,
    })
    pq.write_table(table, tmp_path / "r.parquet", use_dictionary=True)
    doc = paths_json([tmp_path / "r.parquet"], column_map=MAP, time_unit="s", progress=False)
    assert doc["by_node"] == EXPECTED


def test_no_node_column_means_no_by_node():
    doc = measure_json(telemetry([0, 1, 2], [5, 6, 7], has_exception=[True, False, False]))
    assert doc["by_node"] is None


def test_harbor_records_no_node():
    """Harbor's result.json / config.json carry no host or node (docs/telemetry.md says so)."""
    doc = paths_json([FIXTURES / "harbor" / "terminus2-n3"], progress=False)
    assert doc["by_node"] is None


@pytest.mark.parametrize("order", [1, -1])
def test_row_order_does_not_change_by_node(order):
    hosts = [h or None for h, _ in ROWS][::order]
    flags = [{"true": True, "false": False, "": None}[r] for _, r in ROWS][::order]
    n = len(ROWS)
    doc = measure_json(telemetry(list(range(n)), [i + 60 for i in range(n)], node=hosts, has_exception=flags))
    assert doc["by_node"] == EXPECTED
