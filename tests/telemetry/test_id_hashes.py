"""Duplicate ids without DuckDB: the NumPy id hash and the first-kept rule, DuckDB as the oracle."""

from __future__ import annotations

import itertools

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from sandbox_fleet.telemetry.record import Telemetry
from sandbox_fleet.telemetry.validate import DUPLICATE, _id_hashes, drop_duplicates


def test_equal_strings_hash_alike_whatever_the_chunk_type_or_offset():
    words = ["a", "ab", "abcdefgh", "abcdefghi", "abcdefghX", "é" * 9, "x" * 40, "x" * 39 + "y"]
    plain = _id_hashes(pa.chunked_array([pa.array(words)]))
    large = _id_hashes(pa.chunked_array([pa.array(words, pa.large_string())]))
    shifted = _id_hashes(pa.chunked_array([pa.array(["zz"] + words).slice(1)]))
    split = _id_hashes(pa.chunked_array([pa.array(words[:3]), pa.array(words[3:])]))
    assert plain.tolist() == large.tolist() == shifted.tolist() == split.tolist()
    # Strings differing past the first word, or only in length, hash apart here.
    assert len(set(plain.tolist())) == len(words)
    assert len(set(_id_hashes(pa.chunked_array([pa.array(["a", "a\0", "a\0\0"])])).tolist())) == 3


@pytest.mark.parametrize("width", [1, 5, 7, 8, 9, 16, 31, 32, 33, 36])
def test_ids_of_one_width_hash_as_in_a_chunk_of_mixed_widths(width):
    # A chunk whose strings all have one width takes the strided pass; the same ids in a chunk
    # with one longer id take the general one: every id must hash alike (duplicates are found
    # across chunks), sliced at the start, the middle and the very end of the buffer too.
    rng = np.random.default_rng(width)
    ids = ["".join(chr(c) for c in rng.integers(33, 127, width)) for _ in range(777)]
    fixed = pa.array(ids)
    for part in (fixed, fixed.slice(5, 300), fixed.slice(776, 1), pa.array(ids, pa.large_string())):
        alone = _id_hashes(pa.chunked_array([part]))
        mixed = _id_hashes(pa.chunked_array([pa.concat_arrays([part, pa.array(["~" * (width + 3)], part.type)])]))
        assert alone.tolist() == mixed[:-1].tolist()
    assert len(set(_id_hashes(pa.chunked_array([fixed])).tolist())) == len(set(ids))


def test_no_collision_on_a_million_numeric_ids():
    ids = pa.chunked_array([pa.array([str(i) for i in range(500_000)]),
                            pa.array([f"{i:032x}" for i in range(500_000)])])
    assert np.unique(_id_hashes(ids)).size == 1_000_000


@pytest.mark.parametrize("seed", range(6))
def test_first_of_each_id_kept_as_duckdb_says(seed):
    rng = np.random.default_rng(seed)
    pool = [("id-" * int(rng.integers(0, 4))) + str(int(rng.integers(0, 10**rng.integers(1, 12))))
            for _ in range(300)]
    ids = [pool[int(i)] for i in rng.integers(0, len(pool), 1000)]
    cut = int(rng.integers(1, 999))
    table = pa.Table.from_batches([pa.record_batch({"id": ids[:cut], "row": list(range(cut))}),
                                   pa.record_batch({"id": ids[cut:], "row": list(range(cut, 1000))})])
    tel = Telemetry(rollouts=table)
    kept = drop_duplicates(table, tel)
    con = duckdb.connect()
    con.register("t", table)
    want = [r[0] for r in con.execute("SELECT min(row) AS first FROM t GROUP BY id ORDER BY first").fetchall()]
    assert kept.column("row").to_pylist() == want
    assert tel.rejected.get(DUPLICATE, 0) == 1000 - len(want)


@pytest.mark.parametrize("seed", range(4))
def test_batches_concatenated_keep_what_duckdb_keeps(seed):
    # Batches as the reader concatenates them (one empty, one of two chunks) must select
    # the same first rows as one GROUP BY over the concatenated table.
    rng = np.random.default_rng(100 + seed)
    pool = [f"task-{int(v)}" * int(rng.integers(1, 3)) for v in rng.integers(0, 10**9, 200)]
    ids = [pool[int(i)] for i in rng.integers(0, len(pool), 900)]
    cuts = sorted(int(c) for c in rng.integers(1, 899, 3))
    bounds = [0, cuts[0], cuts[0], cuts[1], cuts[2], 900]  # the second batch is empty
    batches = []
    for a, b in itertools.pairwise(bounds):
        mid = (a + b) // 2
        batches.append(pa.Table.from_batches(
            [pa.record_batch({"id": pa.array(ids[a:mid], pa.large_string()), "row": pa.array(range(a, mid), pa.int64())}),
             pa.record_batch({"id": pa.array(ids[mid:b], pa.large_string()), "row": pa.array(range(mid, b), pa.int64())})]))
    table = pa.concat_tables(batches)
    tel = Telemetry(rollouts=table)
    kept = drop_duplicates(table, tel)
    con = duckdb.connect()
    con.register("t", table)
    want = [r[0] for r in con.execute("SELECT min(row) AS first FROM t GROUP BY id ORDER BY first").fetchall()]
    assert kept.column("row").to_pylist() == want
    assert tel.rejected.get(DUPLICATE, 0) == 900 - len(want)


def test_load_dedups_across_row_groups(tmp_path):
    # Through the reader: a Parquet file of three row groups with ids repeated across them.
    import pyarrow.parquet as pq

    from sandbox_fleet.telemetry import load_telemetry

    n = 3000
    rng = np.random.default_rng(7)
    ids = [f"r{int(v)}" for v in rng.integers(0, 2000, n)]
    start = np.datetime64("2026-01-01T00:00:00", "us") + np.arange(n).astype("timedelta64[s]")
    table = pa.table({"id": ids, "started_at": pa.array(start, pa.timestamp("us", "UTC")),
                      "finished_at": pa.array(start + np.timedelta64(5, "s"), pa.timestamp("us", "UTC"))})
    path = tmp_path / "dups.parquet"
    pq.write_table(table, path, row_group_size=1000)
    tel = load_telemetry([str(path)], progress=False)
    first = {}
    for i, v in enumerate(ids):
        first.setdefault(v, i)
    want = [ids[i] for i in sorted(first.values())]
    assert tel.rollouts.column("id").to_pylist() == want
    assert tel.rejected.get(DUPLICATE, 0) == n - len(want)


@pytest.mark.parametrize("id_type", [pa.string(), pa.large_string(), pa.int64()])
@pytest.mark.parametrize("row_group_size", [10_000, 700])
def test_rows_rejected_leave_no_hash_behind(tmp_path, id_type, row_group_size):
    # The first KEPT row of each id stays, and a
    # rejected row (blank id, no finish, finished before started) neither stays nor shadows
    # a later valid row with its id. The oracle is a first-seen dict over the valid rows.
    import pyarrow.parquet as pq

    from sandbox_fleet.telemetry import load_telemetry

    n = 3000
    rng = np.random.default_rng(11)
    keys = rng.integers(1, 900, n)
    fault = rng.integers(0, 8, n)  # 0: blank/absent id, 1: no finish, 2: backwards, else valid
    start = np.datetime64("2026-01-01T00:00:00", "us") + np.arange(n).astype("timedelta64[s]")
    finish = start + np.timedelta64(5, "s")
    finish[fault == 2] = start[fault == 2] - np.timedelta64(1, "s")
    if pa.types.is_integer(id_type):
        ids = pa.array([None if f == 0 else int(k) for k, f in zip(keys, fault)], id_type)
    else:
        ids = pa.array(["" if f == 0 else f"r{k}" for k, f in zip(keys, fault)], id_type)
    finished = pa.array(finish, pa.timestamp("us", "UTC"))
    finished = pa.array([None if f == 1 else v for v, f in zip(finished.to_pylist(), fault)],
                        pa.timestamp("us", "UTC"))
    table = pa.table({"id": ids, "started_at": pa.array(start, pa.timestamp("us", "UTC")),
                      "finished_at": finished, "row": pa.array(np.arange(n))})
    path = tmp_path / "rejects.parquet"
    pq.write_table(table, path, row_group_size=row_group_size)
    tel = load_telemetry([str(path)], progress=False)
    first: dict[str, int] = {}
    for i, (k, f) in enumerate(zip(keys, fault)):
        if f > 2:
            first.setdefault(str(k) if pa.types.is_integer(id_type) else f"r{k}", i)
    want = sorted(first.values())
    got = tel.rollouts.column("id").to_pylist()
    assert got == [(str(keys[i]) if pa.types.is_integer(id_type) else f"r{keys[i]}") for i in want]
    assert tel.rejected[DUPLICATE] == int((fault > 2).sum()) - len(want)
    assert sum(tel.rejected.values()) + len(got) == n
