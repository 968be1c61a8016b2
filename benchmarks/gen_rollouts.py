"""Synthetic canonical rollout Parquet shaped like the RST campaign (seeded NumPy).

Steps release batches of 1,024 every 4,600 s, each batch mixing all four models (so
measure reports the models as stepping together, not as a mix of runs); holds are
log-normal (median ~1,332 s, clipped to 3.8..26,571 s); ~73% of rows report tokens growing ~824 * n(n+1)/2 with turns, with
cached_tokens 0; ~29% exceptions; a quarter of rewards null. The eight phase columns are
present and all null (the case the reader must not pay 8 bytes a row for). Written in
1M-row chunks, so the generator itself stays small.

    .venv/bin/python benchmarks/gen_rollouts.py OUT.parquet [--rows 327189] [--seed 0]
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sandbox_fleet.telemetry import conform_rollouts

MODELS = ["qwen35-27b-iter0000161-hf", "Qwen3.5-27B", "Qwen3.6-27B-base", "gpt-oss-120b"]
EXCEPTIONS = ["AgentTimeoutError", "DaytonaError", "VerifierTimeoutError", "ContextLengthExceeded", "RuntimeError"]
T0_US = 1_780_000_000_000_000
BATCH = 1024
PERIOD_S = 4_600
CHUNK = 1 << 20


def _chunk(rng: np.random.Generator, first: int, n: int) -> pa.Table:
    idx = np.arange(first, first + n)
    step = idx // BATCH
    start = T0_US + step * PERIOD_S * 1_000_000 + rng.integers(0, 120_000_000, n)
    hold_s = np.clip(rng.lognormal(np.log(1332.0), 0.9, n), 3.8, 26_571.0)
    finish = start + (hold_s * 1e6).astype(np.int64)
    turns = np.maximum(1, rng.geometric(1 / 12, n))
    has_tok = rng.random(n) < 0.729
    inp = (824 * turns * (turns + 1) / 2 * rng.lognormal(0, 0.2, n)).astype(np.int64)
    out = (370 * turns * rng.lognormal(0, 0.3, n)).astype(np.int64)
    exc = rng.random(n) < 0.2937
    reward = (rng.random(n) < 0.255).astype(np.float64)
    no_reward = rng.random(n) < 0.25
    ts = pa.timestamp("us", tz="UTC")
    table = pa.table({
        "id": pc.cast(pa.array(idx), pa.string()),
        "task_id": pa.DictionaryArray.from_arrays(
            pa.array(rng.integers(0, 37_484, n).astype(np.int32)),
            pa.array([f"task-{i:05d}" for i in range(37_484)])).cast(pa.string()),
        "model": pa.DictionaryArray.from_arrays(
            pa.array(rng.integers(0, len(MODELS), n).astype(np.int32)), pa.array(MODELS)).cast(pa.string()),
        "started_at": pa.array(start, pa.int64()).cast(ts),
        "finished_at": pa.array(finish, pa.int64()).cast(ts),
        "input_tokens": pa.array(inp, mask=~has_tok),
        "output_tokens": pa.array(out, mask=~has_tok),
        "cached_tokens": pa.array(np.zeros(n, dtype=np.int64), mask=~has_tok),
        "turns": pa.array(turns.astype(np.int64), mask=~has_tok),
        "reward": pa.array(reward, mask=no_reward),
        "has_exception": pa.array(exc),
        "exception_type": pa.DictionaryArray.from_arrays(
            pa.array(rng.integers(0, len(EXCEPTIONS), n).astype(np.int32), mask=~exc),
            pa.array(EXCEPTIONS)).cast(pa.string()),
        "has_trajectory": pa.array(rng.random(n) < 0.945),
    })
    return conform_rollouts(table)


def generate(path: str, rows: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    write_chunks(path, (_chunk(rng, first, min(CHUNK, rows - first)) for first in range(0, rows, CHUNK)))


def write_chunks(path: str, tables: Iterable[pa.Table]) -> None:
    """``tables`` (one schema) into one Parquet file with pyarrow's default writer settings."""
    writer = None
    try:
        for t in tables:
            if writer is None:
                writer = pq.ParquetWriter(path, t.schema)
            writer.write_table(t)
    finally:
        if writer is not None:
            writer.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--rows", type=int, default=327_189)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    generate(a.out, a.rows, a.seed)


if __name__ == "__main__":
    main()
