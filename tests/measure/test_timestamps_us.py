"""measure.columns.timestamps_us: microseconds since the epoch, the same as Arrow's cast and
``to_numpy`` (the slow path it replaced) on chunked, sliced and empty chunks and other units."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox_fleet.measure.columns import timestamps_us

US = pa.timestamp("us", tz="UTC")


def arrow_way(col: pa.ChunkedArray) -> list[int]:
    return pc.cast(col, US).cast(pa.int64()).to_numpy().tolist()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.integers(-(2**53), 2**53), max_size=20), min_size=1, max_size=5),
       st.integers(0, 3), st.sampled_from(["us", "ms", "s"]))
def test_the_same_microseconds_as_arrows_cast(parts, cut, unit):
    kind = pa.timestamp(unit, tz="UTC")
    scale = {"us": 1, "ms": 1000, "s": 1_000_000}[unit]
    chunks = [pa.array([v // scale for v in p], type=pa.int64()).cast(kind) for p in parts]
    chunks = [c.slice(min(cut, len(c))) for c in chunks]
    col = pa.chunked_array(chunks, type=kind)
    got = timestamps_us(col)
    assert got.dtype == np.int64 and got.flags.c_contiguous
    assert got.tolist() == arrow_way(col)


def test_an_empty_column():
    assert timestamps_us(pa.chunked_array([], type=US)).tolist() == []
