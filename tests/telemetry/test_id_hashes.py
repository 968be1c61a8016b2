"""Duplicate ids without DuckDB: the NumPy id hash and the first-kept rule, DuckDB as the oracle."""

from __future__ import annotations

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
