"""A text column encoded to ``record.CODED`` by the C encoder, one dictionary across its chunks.

The reference is ``pyarrow.compute.dictionary_encode`` of the chunks concatenated: codes in
first-seen order, nulls null, empty strings a value like any other. Where the C module is
not built (or ``SANDBOX_FLEET_PURE_PYTHON`` is set) ``column_encoder`` gives None and
readers keep Arrow's own dictionary reading, which yields the same dictionary.
"""

from __future__ import annotations

from types import ModuleType

import pyarrow as pa

from sandbox_fleet.speedups import compiled
from sandbox_fleet.telemetry.record import CODED


class ColumnEncoder:
    """Strings -> ``CODED`` chunks whose dictionary only grows: each chunk carries every
    string seen so far (this chunk's and all before), so the dictionary of a column's last
    chunk is the whole column's and every earlier one is a prefix of it.

    One thread at a time: a reader encodes its row groups in file order.
    """

    def __init__(self, module: ModuleType):
        self._enc = module.Encoder()

    def encode(self, col: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray:
        chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
        indices = [self._indices(c) for c in chunks]
        dictionary = self.dictionary()
        # safe=False: every code is below len(dictionary) by construction (no bounds pass).
        return pa.chunked_array([pa.DictionaryArray.from_arrays(i, dictionary, safe=False) for i in indices],
                                type=CODED)

    def _indices(self, chunk: pa.Array) -> pa.Array:
        if not (pa.types.is_string(chunk.type) or pa.types.is_large_string(chunk.type)):
            raise TypeError(f"ColumnEncoder: expected string or large_string, got {chunk.type}")
        n = len(chunk)
        if n == 0:
            return pa.array([], type=pa.int32())
        validity, offsets, data = chunk.buffers()
        codes, valid, nulls = self._enc.encode(offsets, data, validity if chunk.null_count else None,
                                               chunk.offset, n, pa.types.is_large_string(chunk.type))
        bitmap = pa.py_buffer(valid) if valid is not None else None
        return pa.Array.from_buffers(pa.int32(), n, [bitmap, pa.py_buffer(codes)], null_count=nulls)

    def dictionary(self) -> pa.Array:
        """The distinct strings so far, in code (first-seen) order."""
        offsets, data = self._enc.dictionary()
        count = len(offsets) // 4 - 1  # int32 offsets, one past the last string
        return pa.Array.from_buffers(pa.string(), count, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def column_encoder() -> ColumnEncoder | None:
    """A fresh encoder for one column, or None without the C module (callers read as before)."""
    module = compiled("telemetry._strings")
    return ColumnEncoder(module) if module is not None else None
