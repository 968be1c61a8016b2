"""``load_telemetry(coded=True)``: the text columns measure reads come as dictionaries and
mean exactly what the plain read gives; all-null column chunks are not decoded.

The plain-string read (``coded=False``) and pyarrow's own ``read_table`` are the oracles.
The file mixes what a dictionary read must get right: several row groups, each with its
own dictionary; blanks (read as null) and nulls; a column null in one row group only;
rejected and duplicate rows whose values stay in the dictionaries; a ``--map``ped column.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sandbox_fleet.telemetry import load_telemetry
from sandbox_fleet.telemetry.record import CODED, CODED_COLUMNS
from summaries import measure_json, paths_json

T0_US = 1_780_000_000_000_000
TS = pa.timestamp("us", tz="UTC")


def _file(tmp_path, seed: int, n: int = 600):
    rng = np.random.default_rng(seed)
    start = T0_US + np.sort(rng.integers(0, 50_000_000_000, n))
    finish = start + rng.integers(0, 5_000_000_000, n)
    start_list = [None if rng.random() < 0.02 else int(s) for s in start]  # rejected: no start
    ids = [f"r{int(i)}" for i in rng.integers(0, int(n * 0.95), n)]  # some duplicates

    def text(words, blank=0.05, null=0.05):
        return [None if (u := rng.random()) < null else "" if u < null + blank else words[int(rng.integers(len(words)))]
                for _ in range(n)]

    model = text(["m-a", "m-b", "m-c", "rare"])
    model[n // 3: 2 * n // 3] = [None] * (2 * n // 3 - n // 3)  # all null in the middle row group
    phase = [None] * n
    phase[-5:] = [int(s) + 1 for s in start[-5:]]  # present in the last row group only
    table = pa.table({
        "id": ids,
        "task": text([f"task-{i}" for i in range(40)]),  # mapped to task_id
        "model": model,
        "job": text(["job-1", "job-2"], blank=0.0),
        "started_at": pa.array(start_list, pa.int64()).cast(TS),
        "finished_at": pa.array(finish, pa.int64()).cast(TS),
        "agent_setup_started_at": pa.array(phase, pa.int64()).cast(TS),
        "input_tokens": pa.array([None if rng.random() < 0.2 else int(x) for x in rng.integers(0, 9999, n)], pa.int64()),
        "has_exception": [bool(rng.random() < 0.3) for _ in range(n)],
        "exception_type": text(["Timeout", "OOM", "(none)"], null=0.3),
        "reward": [None if rng.random() < 0.25 else float(rng.random() < 0.5) for _ in range(n)],
    })
    path = tmp_path / f"rollouts-{seed}.parquet"
    pq.write_table(table, path, row_group_size=n // 3)
    return path


@pytest.mark.parametrize("seed", range(4))
def test_coded_read_means_what_the_plain_read_gives(tmp_path, seed):
    path = str(_file(tmp_path, seed))
    plain = load_telemetry([path], column_map="task_id=task", progress=False)
    coded = load_telemetry([path], column_map="task_id=task", progress=False, coded=True)
    assert coded.rejected == plain.rejected and coded.rejected  # some rows were rejected
    assert coded.warnings == plain.warnings
    for name in CODED_COLUMNS:
        col = coded.rollouts.column(name)
        assert col.type == CODED
        assert all(c.dictionary.equals(col.chunk(0).dictionary) for c in col.chunks)  # one dictionary
    decoded = coded.rollouts.cast(plain.rollouts.schema)
    assert decoded.equals(plain.rollouts)
    assert "" not in set(decoded.column("model").to_pylist())  # blanks read as null


@pytest.mark.parametrize("seed", range(3))
def test_measure_of_a_parquet_file_equals_measure_of_its_plain_telemetry(tmp_path, seed):
    path = str(_file(tmp_path, seed))
    plain = load_telemetry([path], column_map="task_id=task", progress=False)
    assert paths_json([path], column_map="task_id=task", progress=False) == measure_json(plain)


def test_all_null_column_chunks_read_as_pyarrow_reads_them(tmp_path):
    path = _file(tmp_path, 11)
    meta = pq.ParquetFile(path).metadata
    nulls = [meta.row_group(g).column(6).statistics.null_count for g in range(meta.num_row_groups)]
    assert nulls[0] == meta.row_group(0).num_rows and nulls[-1] < meta.row_group(2).num_rows  # skipped, then read
    raw = pq.read_table(path)
    keep = pa.array([s is not None for s in raw.column("started_at").to_pylist()])
    got = load_telemetry([str(path)], column_map="task_id=task", progress=False, coded=True).rollouts
    ids_first = {}
    for i, (rid, ok) in enumerate(zip(raw.column("id").to_pylist(), keep.to_pylist())):
        if ok:
            ids_first.setdefault(rid, i)
    rows = sorted(ids_first.values())  # first row of each id, in input order
    for name in ("agent_setup_started_at", "model", "input_tokens"):
        expected = raw.column(name).take(pa.array(rows)).to_pylist()
        if name == "model":
            expected = [None if v == "" else v for v in expected]
        assert got.column(name).to_pylist() == expected
    assert got.column("agent_setup_started_at").type == TS
    assert got.column("verifier_finished_at").null_count == got.num_rows  # absent: null
