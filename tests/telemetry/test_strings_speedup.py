"""The C string encoder (``telemetry/_strings.c``, through ``textcodes.ColumnEncoder``) against
``pyarrow.compute.dictionary_encode`` of the chunks concatenated: the same codes in first-seen
order, the same dictionary, nulls where the input had them. Hypothesis draws several chunks
with nulls, empty strings, NULs and non-ASCII text, sliced arrays and large_string; a narrow
hash mask makes every string's hash equal (only the byte comparison tells them apart) and a
capacity of one forces a rehash at nearly every new string.

Then whole reads: a Parquet file whose task dictionary overflows its page limit reads to the
same table (dictionaries, indices, chunking) and the same ``measure --json`` with and without
``SANDBOX_FLEET_PURE_PYTHON=1`` (which takes Arrow's own dictionary read).

Skips when the module was not built (no C compiler at install); under ``CI=true`` a missing
module fails instead.
"""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from built import require_built
from sandbox_fleet.telemetry import load_telemetry, table
from sandbox_fleet.telemetry.record import CODED
from sandbox_fleet.telemetry.textcodes import ColumnEncoder
from summaries import paths_json

T0_US = 1_780_000_000_000_000
TS = pa.timestamp("us", tz="UTC")


def require_strings():
    return require_built("telemetry._strings", "the C string encoder")


@pytest.fixture(scope="module")
def C():
    return require_strings()


def encoder(C, **options) -> ColumnEncoder:
    enc = ColumnEncoder(C)
    enc._enc = C.Encoder(**options)
    return enc


def check_against_reference(enc: ColumnEncoder, chunks: list[pa.Array]) -> None:
    """Each chunk encoded in turn equals its rows of dictionary_encode over all chunks."""
    got = [enc.encode(c) for c in chunks]
    ref = pc.dictionary_encode(pa.concat_arrays([c.cast(pa.string()) for c in chunks])) if chunks else None
    at = 0
    for col, chunk in zip(got, chunks):
        assert col.type == CODED
        for part in col.chunks:
            part.validate(full=True)
        indices = pa.concat_arrays([p.indices for p in col.chunks]) if col.num_chunks else pa.array([], pa.int32())
        assert indices.to_pylist() == ref.indices[at:at + len(chunk)].to_pylist()
        assert indices.null_count == chunk.null_count
        dictionary = col.chunk(0).dictionary if col.num_chunks else enc.dictionary()
        # Codes only grow: every chunk's dictionary is the start of the final one.
        assert dictionary.equals(ref.dictionary.slice(0, len(dictionary)))
        decoded = col.cast(pa.string()).to_pylist()
        assert decoded == chunk.cast(pa.string()).to_pylist()
        at += len(chunk)
    assert enc.dictionary().equals(ref.dictionary if ref is not None else pa.array([], pa.string()))


#: Few letters, so strings repeat and share prefixes; NUL, accented and CJK letters are bytes
#: a C string function would stop at or split.
WORDS = st.one_of(st.none(), st.text(alphabet=st.sampled_from("ab\x00\u00e9\u4e2d"), max_size=12))


@st.composite
def chunk(draw):
    """A string or large_string array, often a slice of a longer one (offset != 0)."""
    values = draw(st.lists(WORDS, max_size=40))
    head = draw(st.lists(WORDS, max_size=5))
    tail = draw(st.lists(WORDS, max_size=5))
    kind = draw(st.sampled_from([pa.string(), pa.large_string()]))
    arr = pa.array(head + values + tail, kind)
    return arr.slice(len(head), len(values))


OPTIONS = st.sampled_from([{}, {"initial_capacity": 1}, {"hash_mask": 0}, {"hash_mask": 0x3, "initial_capacity": 1}])


@settings(max_examples=300, deadline=None)
@given(chunks=st.lists(chunk(), max_size=6), options=OPTIONS)
def test_encoder_equals_dictionary_encode_of_the_concatenated_chunks(C, chunks, options):
    check_against_reference(encoder(C, **options), chunks)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), options=OPTIONS, distinct=st.sampled_from([1, 700, 5000]))
def test_many_distinct_values_across_rehashes(C, seed, options, distinct):
    rng = np.random.default_rng(seed)
    if options.get("hash_mask") == 0:
        distinct = min(distinct, 700)  # one probe chain for all: quadratic
    names = [f"task-{i}" * int(rng.integers(1, 4)) for i in range(distinct)]
    rows = [None if rng.random() < 0.05 else names[int(i)] for i in rng.integers(0, distinct, 3 * distinct)]
    cuts = sorted(int(c) for c in rng.integers(0, len(rows), 3))
    bounds = [0, *cuts, len(rows)]
    chunks = [pa.array(rows[a:b], pa.large_string() if k % 2 else pa.string()) for k, (a, b) in
              enumerate(itertools.pairwise(bounds))]
    check_against_reference(encoder(C, **options), chunks)


def test_chunked_input_and_all_null_and_empty_chunks(C):
    enc = encoder(C)
    chunks = [pa.array([], pa.string()), pa.array([None, None], pa.string()), pa.array(["", None, "x", ""]),
              pa.array(["x", "é", ""], pa.large_string()).slice(3)]
    check_against_reference(enc, chunks)
    both = encoder(C).encode(pa.chunked_array([pa.array(["b", "a"]), pa.array(["a", None, "c"])]))
    assert both.num_chunks == 2 and both.chunk(0).dictionary.equals(both.chunk(1).dictionary)
    assert both.chunk(1).dictionary.to_pylist() == ["b", "a", "c"]


def test_encoder_refuses_what_is_not_a_string_array(C):
    with pytest.raises(TypeError):
        encoder(C).encode(pa.array([1, 2]))
    raw = C.Encoder()
    offsets = np.array([0, 2, 9], dtype=np.int32)  # past the 4-byte data buffer
    with pytest.raises(ValueError):
        raw.encode(offsets, b"abcd", None, 0, 2, False)
    with pytest.raises(ValueError):
        raw.encode(offsets, b"abcdefghij", None, 0, 3, False)  # 3 rows need 4 offsets
    with pytest.raises(ValueError):
        raw.encode(np.array([0, 1], dtype=np.int64), b"a", b"", 0, 1, True)  # no validity bits
    assert len(raw) == 1 and np.frombuffer(raw.dictionary()[0], np.int32).tolist() == [0, 2]  # the row before the fault stays


def _overflowing_file(tmp_path, seed: int, n: int = 6000, *, large: bool = False, null_group: bool = False,
                      groups: tuple[int, ...] = ()):
    """Rollouts whose 'task' dictionary passes a 2 KiB page limit within the first row group,
    so most of its pages are PLAIN: what the foreign 10M-row file does at 1 MiB."""
    rng = np.random.default_rng(seed)
    names = [f"org/tâsk-{i:05d}-" + "x" * int(rng.integers(0, 30)) for i in range(1500)]
    task = [None if (u := rng.random()) < 0.03 else "" if u < 0.05 else names[int(rng.zipf(1.3)) % len(names)]
            for _ in range(n)]
    if null_group:
        task[n // 3: 2 * n // 3] = [None] * (2 * n // 3 - n // 3)
    start = T0_US + np.sort(rng.integers(0, 50_000_000_000, n))
    table = pa.table({
        "id": [f"r{i}" for i in rng.integers(0, int(n * 0.97), n)],  # some duplicates
        "task": pa.array(task, pa.large_string() if large else pa.string()),
        "model": [["m-a", "m-b"][int(i)] for i in rng.integers(0, 2, n)],
        "started_at": pa.array(start, pa.int64()).cast(TS),
        "finished_at": pa.array(start + rng.integers(-1_000, 5_000_000_000, n), pa.int64()).cast(TS),  # a few backwards
        "reward": [float(rng.random() < 0.5) for _ in range(n)],
    })
    path = tmp_path / f"overflow-{seed}.parquet"
    pages = {"dictionary_pagesize_limit": 2048, "data_page_size": 2048}
    if not groups:
        pq.write_table(table, path, row_group_size=n // 3, **pages)
        return str(path)
    with pq.ParquetWriter(path, table.schema, **pages) as writer:  # row groups of the sizes given
        at = 0
        for size in groups:
            writer.write_table(table.slice(at, size), row_group_size=size)
            at += size
    return str(path)


def _both(monkeypatch, paths):
    """(reference read, encoder read, their measure JSONs); each read checked to take its path."""
    encoded = []
    real = ColumnEncoder.encode
    monkeypatch.setattr(ColumnEncoder, "encode", lambda self, col: encoded.append(len(col)) or real(self, col))
    monkeypatch.setenv("SANDBOX_FLEET_PURE_PYTHON", "1")
    ref = load_telemetry(paths, column_map="task_id=task", progress=False, coded=True)
    ref_json = paths_json(paths, column_map="task_id=task", progress=False)
    assert not encoded
    monkeypatch.delenv("SANDBOX_FLEET_PURE_PYTHON")
    got = load_telemetry(paths, column_map="task_id=task", progress=False, coded=True)
    assert encoded  # the task column went through the C encoder
    got_json = paths_json(paths, column_map="task_id=task", progress=False)
    return ref, got, ref_json, got_json


def assert_same_read(ref, got) -> None:
    assert got.rejected == ref.rejected and ref.rejected  # backwards rows and duplicates were rejected
    assert got.warnings == ref.warnings
    a, b = ref.rollouts, got.rollouts
    assert b.schema == a.schema and b.equals(a)
    for name in a.column_names:
        x, y = a.column(name), b.column(name)
        assert [len(c) for c in y.chunks] == [len(c) for c in x.chunks]
        if x.type == CODED:
            for cx, cy in zip(x.chunks, y.chunks):
                assert cy.dictionary.equals(cx.dictionary) and cy.indices.equals(cx.indices)


@pytest.mark.parametrize(("seed", "large", "null_group"), [(0, False, False), (1, True, False), (2, False, True)])
def test_overflowing_dictionary_reads_the_same_with_and_without_the_encoder(C, tmp_path, monkeypatch, seed, large,
                                                                            null_group):
    path = _overflowing_file(tmp_path, seed, large=large, null_group=null_group)
    ref, got, ref_json, got_json = _both(monkeypatch, [path])
    assert_same_read(ref, got)
    assert len(got.rollouts.column("task_id").chunk(0).dictionary) > 500  # past the 2 KiB page
    assert got_json == ref_json


def test_streamed_row_groups_encode_in_order(C, tmp_path, monkeypatch):
    """Row groups past 2 * BATCH_ROWS are streamed in batches on the caller's thread, between
    groups decoded ahead on the pool's: the encoder still sees every row in file order."""
    monkeypatch.setattr(table, "BATCH_ROWS", 300)
    groups = (2000, 500, 500, 2000, 500, 2500)  # past 600 rows: streamed in batches of 300
    path = _overflowing_file(tmp_path, 5, n=sum(groups), groups=groups)
    assert [g.num_rows for g in (pq.ParquetFile(path).metadata.row_group(i) for i in range(6))] == list(groups)
    ref, got, ref_json, got_json = _both(monkeypatch, [path])
    assert got.rollouts.column("task_id").num_chunks > len(groups)
    assert_same_read(ref, got)
    assert got_json == ref_json


def test_two_files_each_with_its_encoder_unify_as_before(C, tmp_path, monkeypatch):
    paths = [_overflowing_file(tmp_path, 3), _overflowing_file(tmp_path, 4)]
    ref, got, ref_json, got_json = _both(monkeypatch, paths)
    assert_same_read(ref, got)
    assert got_json == ref_json
