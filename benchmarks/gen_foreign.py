"""A foreign RST-layout trajectories file: what another team's PyArrow job would write (issue 28.2).

Not the project's canonical layout (``gen_rollouts.py`` writes that, with dictionary-coded text
and measure's own column names). This one has the 16 columns of an RST release's
``metadata/trajectories.parquet`` as a producer outside this project would write them:

- ``trajectory_id``: unique 32-character hex strings (random 128-bit, as uuid4().hex);
- ``task_group_id``, ``model_name``, ``job``, ``exception_type``: plain strings (names, not codes);
- ``shard`` and ``member``: path strings (``data/trajectories-00042.tar`` and
  ``trajectories-00042/<id>.json``: the member is unique per row);
- ``started_at``, ``finished_at``: timestamps (``--time-unit us|ns``, UTC);
- ``input_tokens``, ``output_tokens``, ``cached_tokens``, ``episode_count``: nullable int64;
- ``reward`` nullable float64, ``has_exception`` and ``has_trajectory`` bool.

Rows are in job-then-step order, not start order (three concurrent jobs with their own
models, step sizes and periods), so nothing arrives sorted by time. Written with
``pyarrow.parquet.ParquetWriter`` and its defaults (snappy, dictionary encoding with its
fallback to plain on large dictionaries, default row-group size), one ``write_table`` per
million rows so the generator's memory stays small.

    .venv/bin/python benchmarks/gen_foreign.py OUT.parquet [--rows 2400000] [--seed 0] [--time-unit us]
"""

from __future__ import annotations

import argparse

import numpy as np
import pyarrow as pa

from gen_rollouts import write_chunks

CHUNK = 1_000_000
T0_US = 1_765_000_000_000_000
ROWS_PER_SHARD = 4_096
#: (model names, rows per step low..high, step period s) per job; jobs run side by side.
JOBS = [
    ("grpo-swe-qwen35-27b-r3", ["Qwen3.5-27B", "qwen35-27b-iter0000161-hf"], (512, 2_048), 3_900),
    ("grpo-tb-oss-120b", ["gpt-oss-120b"], (256, 1_024), 5_400),
    ("eval-sweep-2026-03", ["Qwen3.6-27B-base", "Llama-4-Scout-17B-16E", "claude-lab-distill-8b"], (64, 768), 2_700),
]
EXCEPTIONS = ["AgentTimeoutError", "DaytonaError", "VerifierTimeoutError", "ContextLengthExceededError",
              "SandboxOOMKilled", "RuntimeError", "NonZeroAgentExitCodeError", "RewardFileNotFoundError"]
DATASETS = ["swe-smith", "swe-gym", "terminal-bench-2", "nl2bash", "r2e-gym"]
N_TASKS = 52_311
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


def _task_names(rng: np.random.Generator) -> pa.Array:
    ds = rng.integers(0, len(DATASETS), N_TASKS)
    return pa.array([f"{DATASETS[d]}/{'repo' if d < 2 else 'task'}-{rng.integers(0, 9_999):04d}__{i:06d}"
                     for i, d in enumerate(ds)])


def _fixed_strings(parts: list[np.ndarray]) -> pa.Array:
    """Row-wise concatenation of fixed-width uint8 matrices as one StringArray (no Python per row)."""
    data = np.ascontiguousarray(np.concatenate(parts, axis=1))
    n, width = data.shape
    offsets = np.arange(n + 1, dtype=np.int32) * width
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data.tobytes()))


def _literal(text: str, n: int) -> np.ndarray:
    return np.broadcast_to(np.frombuffer(text.encode(), dtype=np.uint8), (n, len(text)))


def _digits(values: np.ndarray, width: int) -> np.ndarray:
    powers = 10 ** np.arange(width - 1, -1, -1)
    return (b"0"[0] + (values[:, None] // powers) % 10).astype(np.uint8)


def _schedule(rng: np.random.Generator, rows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(job index, model index within the job, start us) for every row, in job-then-step order."""
    share = np.array([0.55, 0.30, 0.15])
    counts = np.floor(share * rows).astype(np.int64)
    counts[0] += rows - counts.sum()
    jobs, models, starts = [], [], []
    for j, (_, names, (lo, hi), period_s) in enumerate(JOBS):
        sizes = rng.integers(lo, hi + 1, counts[j] // lo + 2)
        sizes = sizes[: np.searchsorted(np.cumsum(sizes), counts[j]) + 1]
        step = np.repeat(np.arange(len(sizes)), sizes)[: counts[j]]
        base = T0_US + j * 1_234_000_000 + step * period_s * 1_000_000
        jitter = rng.exponential(40e6, counts[j]).astype(np.int64)
        jobs.append(np.full(counts[j], j, np.int8))
        models.append(rng.integers(0, len(names), counts[j]).astype(np.int8))
        starts.append(base + jitter)
    return np.concatenate(jobs), np.concatenate(models), np.concatenate(starts)


def _chunk(rng: np.random.Generator, tasks: pa.Array, job: np.ndarray, model: np.ndarray, start: np.ndarray,
           first: int, time_type: pa.DataType) -> pa.Table:
    n = len(start)
    exc = rng.random(n) < 0.21
    hold_s = np.clip(rng.lognormal(np.log(900.0), 1.1, n), 1.0, 40_000.0)
    hold_s = np.where(exc & (rng.random(n) < 0.4), 7_200.0, hold_s)  # agent timeouts hit the 2 h limit
    finish = start + (hold_s * 1e6).astype(np.int64)
    ids = _HEX[rng.integers(0, 16, (n, 32), dtype=np.uint8)]
    shard = (first + np.arange(n)) // ROWS_PER_SHARD
    shard_digits = _digits(shard, 5)
    turns = np.maximum(1, rng.geometric(1 / 15, n))
    no_tok = rng.random(n) < 0.16
    inp = (900 * turns * (turns + 1) / 2 * rng.lognormal(0, 0.25, n)).astype(np.int64)
    model_names = [m for _, names, _, _ in JOBS for m in names]
    model_base = np.cumsum([0] + [len(names) for _, names, _, _ in JOBS])[:-1]
    reward = np.where(rng.random(n) < 0.5, (rng.random(n) < 0.3).astype(np.float64), rng.random(n))
    exc_type = rng.integers(0, len(EXCEPTIONS), n)
    ts = pa.array(start, pa.int64()).cast(pa.timestamp("us", tz="UTC")).cast(time_type)
    tf = pa.array(finish, pa.int64()).cast(pa.timestamp("us", tz="UTC")).cast(time_type)
    return pa.table({
        "trajectory_id": _fixed_strings([ids]),
        "task_group_id": tasks.take(pa.array(rng.integers(0, N_TASKS, n))),
        "model_name": pa.array(model_names).take(pa.array(model_base[job] + model)),
        "job": pa.array([name for name, *_ in JOBS]).take(pa.array(job)),
        "started_at": ts,
        "finished_at": tf,
        "input_tokens": pa.array(inp, mask=no_tok),
        "output_tokens": pa.array((420 * turns * rng.lognormal(0, 0.3, n)).astype(np.int64), mask=no_tok),
        "cached_tokens": pa.array((inp * rng.random(n) * 0.8).astype(np.int64), mask=no_tok | (rng.random(n) < 0.3)),
        "episode_count": pa.array(turns.astype(np.int64), mask=no_tok),
        "reward": pa.array(reward, mask=rng.random(n) < 0.12),
        "has_exception": pa.array(exc),
        "exception_type": pa.array(EXCEPTIONS).take(pa.array(exc_type, mask=~exc)),
        "has_trajectory": pa.array(rng.random(n) < 0.97),
        "shard": _fixed_strings([_literal("data/trajectories-", n), shard_digits, _literal(".tar", n)]),
        "member": _fixed_strings([_literal("trajectories-", n), shard_digits, _literal("/", n), ids,
                                  _literal(".json", n)]),
    })


def generate(path: str, rows: int, seed: int = 0, time_unit: str = "us") -> None:
    rng = np.random.default_rng(seed)
    tasks = _task_names(rng)
    job, model, start = _schedule(rng, rows)
    time_type = pa.timestamp(time_unit, tz="UTC")
    write_chunks(path, (_chunk(rng, tasks, job[first:first + CHUNK], model[first:first + CHUNK],
                               start[first:first + CHUNK], first, time_type) for first in range(0, rows, CHUNK)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--rows", type=int, default=2_400_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-unit", choices=["us", "ns"], default="us")
    a = ap.parse_args()
    generate(a.out, a.rows, a.seed, a.time_unit)


if __name__ == "__main__":
    main()
