"""The id hashes behind duplicate detection (``validate._chunk_hashes``): the C twin
(``_strings.id_hashes``) and the NumPy reference (general and fixed-width passes) both equal a
plain-Python reading of the definition, on strings of every length, nulls, slices and both
offset widths."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from built import require_built
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
def test_both_paths_equal_the_definition(case):
    require_built("telemetry._strings")
    chunk, values = case
    want = spec(values)
    assert validate._reference_chunk_hashes(chunk).tolist() == want
    assert validate._chunk_hashes(chunk).tolist() == want


def test_the_switch_takes_the_reference(monkeypatch):
    require_built("telemetry._strings")
    chunk = pa.array(["a", "bb", None, "ccc"])
    monkeypatch.setenv("SANDBOX_FLEET_PURE_PYTHON", "1")
    calls = []
    real = validate._reference_chunk_hashes
    monkeypatch.setattr(validate, "_reference_chunk_hashes", lambda c: calls.append(1) or real(c))
    assert validate._chunk_hashes(chunk).tolist() == spec(["a", "bb", None, "ccc"]) and calls


def test_offsets_outside_the_data_are_refused():
    fast = require_built("telemetry._strings")
    offsets = np.array([0, 3, 9], dtype=np.int32)  # 9 > the 4 data bytes
    with pytest.raises(ValueError, match="string 1: offsets outside the data buffer"):
        fast.id_hashes(offsets, b"abcd", 0, 2, False, np.empty(2, np.uint64))
    with pytest.raises(ValueError, match="out must hold"):
        fast.id_hashes(offsets, b"abcdefghi", 0, 2, False, np.empty(3, np.uint64))
