"""Text columns read as dictionaries (``coded``) give the figures the plain strings give.

Codes are checked against brute force (sorted distinct values, a Python index per row) and
the per-task health of dictionary-typed columns against DuckDB over the plain strings, with
dictionaries that differ per chunk and name values no row uses (as a Parquet dictionary does
once rows were rejected or filtered out).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from sandbox_fleet.measure.columns import codes, dictionary_codes
from sandbox_fleet.measure.tasks_health import measure_task_health

from .test_tasks_health_oracle import _oracle, _table


def _coded(values: list, rng: np.random.Generator, cuts: list[int]) -> pa.ChunkedArray:
    """``values`` as dictionary chunks split at ``cuts``, each with its own shuffled dictionary
    holding the chunk's values plus some no row uses."""
    chunks = []
    for lo, hi in zip([0, *cuts], [*cuts, len(values)]):
        part = values[lo:hi]
        present = sorted({v for v in part if v is not None})
        words = present + [f"unused{int(rng.integers(1000))}" for _ in range(int(rng.integers(0, 4)))]
        words = list(dict.fromkeys(words))
        rng.shuffle(words)
        at = {w: i for i, w in enumerate(words)}
        idx = pa.array([None if v is None else at[v] for v in part], type=pa.int32())
        chunks.append(pa.DictionaryArray.from_arrays(idx, pa.array(words, type=pa.string())))
    return pa.chunked_array(chunks, type=pa.dictionary(pa.int32(), pa.string()))


def _values(rng: np.random.Generator, n: int) -> list:
    names = [f"v{int(x)}" for x in rng.integers(0, 50, int(rng.integers(1, 12)))]
    return [None if rng.random() < 0.1 else names[int(rng.integers(len(names)))] for _ in range(n)]


@pytest.mark.parametrize("seed", range(10))
def test_codes_of_dictionary_and_strings_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    values = _values(rng, int(rng.integers(1, 300)))
    cuts = sorted({int(c) for c in rng.integers(0, len(values), 3)})
    names = sorted({v for v in values if v is not None})
    expected = [-1 if v is None else names.index(v) for v in values]
    for col in (_coded(values, rng, cuts), pa.chunked_array([pa.array(values, pa.string())])):
        got = codes(col)
        assert got.names == names
        assert got.codes.tolist() == expected


@pytest.mark.parametrize("null_last", [False, True])
def test_dictionary_codes_keep_only_used_entries(null_last):
    rng = np.random.default_rng(7)
    values = ["b", None, "a", "b", None, "c"]
    col = _coded(values, rng, [2, 4])
    got, present = dictionary_codes(col, null_last=null_last)
    assert sorted(present.to_pylist()) == ["a", "b", "c"]  # no unused entry survives
    null = len(present) if null_last else -1
    assert [null if v is None else present.to_pylist()[c] for v, c in zip(values, got.tolist())] == \
        [null if v is None else v for v in values]
    assert got.dtype == np.int32


def test_dictionary_codes_of_an_all_null_or_empty_column():
    empty = pa.chunked_array([], type=pa.dictionary(pa.int32(), pa.string()))
    assert dictionary_codes(empty)[0].size == 0
    nulls = pa.chunked_array([pa.nulls(3, pa.dictionary(pa.int32(), pa.string()))])
    got = codes(nulls)
    assert got.names == [] and got.codes.tolist() == [-1, -1, -1]


@pytest.mark.parametrize("seed", range(8))
def test_task_health_of_coded_columns_matches_duckdb(seed):
    t = _table(seed, n=500)
    rng = np.random.default_rng(100 + seed)
    cuts = sorted({int(c) for c in rng.integers(1, t.num_rows, 2)})
    coded = t
    for name in ("task_id", "exception_type"):
        col = _coded(t.column(name).to_pylist(), rng, cuts)
        coded = coded.set_column(coded.column_names.index(name), name, col)
    top, min_rows, rate = (5, 3, 0.5) if seed % 2 else (20, 1, 0.0)
    assert measure_task_health(coded, top=top, min_rows=min_rows, broken_rate=rate) == _oracle(t, top, min_rows, rate)


@pytest.mark.parametrize("seed", range(4))
def test_task_health_from_time_arrays_matches_duckdb(seed):
    """As measure calls it: holds from (start, finish) arrays, no time columns in the table."""
    t = _table(seed, n=300)
    us = [np.array([v.timestamp() * 1e6 for v in t.column(c).to_pylist()]).round().astype(np.int64)
          for c in ("started_at", "finished_at")]
    got = measure_task_health(t.drop_columns(["started_at", "finished_at"]), times=(us[0], us[1]))
    assert got == _oracle(t, 20, 3, 0.5)
