"""The id hashes behind duplicate detection (``validate._chunk_hashes``, NumPy: general and
fixed-width passes) equal a plain-Python reading of the definition, on strings of every length,
nulls, slices and both offset widths."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox_fleet.telemetry import validate

M64 = (1 << 64) - 1
K0, MIX1, MIX2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def spec_hash(data: bytes) -> int:
    """The definition: length * K0; per eight-byte little-endian word (zero past the end)
    xor, multiply by K0, xor the high half in; then splitmix64's finaliser (all mod 2**64)."""
    h = (len(data) * K0) & M64
    for k in range(0, len(data), 8):
        h ^= int.from_bytes(data[k:k + 8], "little")
        h = (h * K0) & M64
        h ^= h >> 32
    h ^= h >> 30
    h = (h * MIX1) & M64
    h ^= h >> 27
    h = (h * MIX2) & M64
    return h ^ (h >> 31)


def spec(values: list[str | None]) -> list[int]:
    return [spec_hash(b"" if v is None else v.encode()) for v in values]


texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)


@st.composite
def chunks(draw):
    if draw(st.booleans()):  # same length: the reference's fixed-width pass (hex ids, uuids)
        width = draw(st.integers(1, 40))
        values = draw(st.lists(st.text("0123456789abcdef", min_size=width, max_size=width), min_size=1, max_size=50))
    else:
        values = draw(st.lists(st.one_of(texts, st.none()), min_size=1, max_size=50))
    kind = draw(st.sampled_from([pa.string(), pa.large_string()]))
    arr = pa.array(values, type=kind)
    start = draw(st.integers(0, len(values) - 1))
    stop = draw(st.integers(start + 1, len(values)))
    return arr.slice(start, stop - start), values[start:stop]


@settings(max_examples=300, deadline=None)
@given(chunks())
def test_hashes_equal_the_definition(case):
    chunk, values = case
    assert validate._chunk_hashes(chunk).tolist() == spec(values)
