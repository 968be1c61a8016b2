"""The task pool: ids, resource requests, timeouts and bundle sizes of every task.

At scale 1 there are 37,484 tasks, of which 37,459 ask for exactly 1 cpu, 2048 MB of
memory and 6144 MB of storage (the document's count); the 25 others ask for more.
A few tasks are written in the legacy ``memory = "2G"`` / ``storage = "6G"`` form,
which a reader must convert (1G = 1024 MB), so the request they mean is the same.

Bundle sizes (all files of a task folder): median 39.9 kB, max 16.7 MB. A single
lognormal reaching 16.7 MB from a 39.9 kB median in 37k draws needs sigma ~1.5,
whose mean (~120 kB) would make the shards 4.5 GB; task bundles are instead mostly
similar small folders (lognormal, median 39.9 kB, sigma 0.7) plus 0.2% that ship a
dataset or binary (log-uniform 1 MB to 16.7 MB). Stratified draws put the largest
at scale 1 within a few percent of 16.7 MB.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sandbox_fleet import exact
from sandbox_fleet.synth import calibration as cal
from sandbox_fleet.synth.sampling import exact_counts, exact_flags, stratified_uniform, truncated_lognormal

STANDARD = (1, 2048, 6144)
NONSTANDARD_AT_SCALE_1 = 25
#: The larger requests the odd tasks make (cpus, memory_mb, storage_mb, gpus).
NONSTANDARD_REQUESTS = ((2, 4096, 10240, 0), (4, 8192, 10240, 0), (2, 4096, 6144, 0), (8, 16384, 20480, 1))
LEGACY_SHARE = 0.002  # tasks written with memory = "2G" strings
BUNDLE_MEDIAN = cal.PUBLISHED["bundle_median_bytes"]
BUNDLE_SIGMA = 0.7
BUNDLE_MIN = 4_096
BUNDLE_TAIL_SHARE = 0.002
BUNDLE_TAIL_LO = 1_000_000
BUNDLE_MAX = cal.PUBLISHED["bundle_max_bytes"]
BUILD_TIMEOUT_S = 600.0  # the document's median image build budget
AGENT_TIMEOUTS_S = (3_600.0, 7_200.0, 14_400.0, 24_000.0)
AGENT_TIMEOUT_SHARES = (0.35, 0.35, 0.2, 0.1)
VERIFIER_TIMEOUT_S = 900.0
TASKS_PER_SHARD = 1_000


@dataclass
class TaskPool:
    """Column arrays of ``n`` tasks."""

    task_id: list[str]
    task_group_id: list[str]
    cpus: np.ndarray
    memory_mb: np.ndarray
    storage_mb: np.ndarray
    gpus: np.ndarray
    legacy: np.ndarray  # bool: sizes written as "2G" strings
    agent_timeout_s: np.ndarray
    bundle_bytes: np.ndarray
    shard: list[str]

    def __len__(self) -> int:
        return len(self.task_id)


def task_count(scale: float) -> int:
    return max(1, round(cal.PUBLISHED["tasks"] * scale))


def bundle_sizes(rng: np.random.Generator, n: int) -> np.ndarray:
    """Stratified draws from the bundle-size mixture, in bytes."""
    tail = exact_flags(rng, n, BUNDLE_TAIL_SHARE)
    out = np.empty(n)
    body = np.flatnonzero(~tail)
    out[body], _ = truncated_lognormal(stratified_uniform(rng, body.size), BUNDLE_MEDIAN, BUNDLE_SIGMA, BUNDLE_MIN, BUNDLE_TAIL_LO)
    t = np.flatnonzero(tail)
    lo, hi = math.log(BUNDLE_TAIL_LO), math.log(BUNDLE_MAX)
    out[t] = exact.exp(lo + stratified_uniform(rng, t.size) * (hi - lo))
    return np.rint(out).astype(np.int64)


def draw_tasks(rng: np.random.Generator, scale: float) -> TaskPool:
    n = task_count(scale)
    odd_n = min(n - 1, max(1, round(NONSTANDARD_AT_SCALE_1 * scale))) if n > 1 else 0
    req = np.tile(np.asarray(STANDARD + (0,), dtype=np.int64), (n, 1))
    odd = rng.permutation(n)[:odd_n]
    kinds = np.repeat(np.arange(len(NONSTANDARD_REQUESTS)), exact_counts(odd_n, [1.0] * len(NONSTANDARD_REQUESTS)))
    req[odd] = np.asarray(NONSTANDARD_REQUESTS, dtype=np.int64)[kinds]
    width = max(6, len(str(n)))
    ids = [f"rst-{i:0{width}d}" for i in range(n)]
    groups = [f"tg-{i:0{width}d}" for i in range(n)]
    shards = [f"data/tasks-{i // TASKS_PER_SHARD:05d}.tar" for i in range(n)]
    timeouts = np.asarray(AGENT_TIMEOUTS_S)[rng.permutation(np.repeat(np.arange(len(AGENT_TIMEOUTS_S)), exact_counts(n, AGENT_TIMEOUT_SHARES)))]
    return TaskPool(
        task_id=ids,
        task_group_id=groups,
        cpus=req[:, 0],
        memory_mb=req[:, 1],
        storage_mb=req[:, 2],
        gpus=req[:, 3],
        legacy=exact_flags(rng, n, LEGACY_SHARE),
        agent_timeout_s=timeouts,
        bundle_bytes=bundle_sizes(rng, n),
        shard=shards,
    )


def _size_text(mb: int) -> str:
    return f"{mb // 1024}G" if mb % 1024 == 0 else f"{mb}M"


def task_toml(pool: TaskPool, i: int) -> bytes:
    """The task.toml of task ``i`` (Harbor layout)."""
    if pool.legacy[i]:
        sizes = f'memory = "{_size_text(int(pool.memory_mb[i]))}"\nstorage = "{_size_text(int(pool.storage_mb[i]))}"\n'
    else:
        sizes = f"memory_mb = {int(pool.memory_mb[i])}\nstorage_mb = {int(pool.storage_mb[i])}\n"
    return (
        'version = "1.0"\n\n'
        f'[metadata]\nauthor_name = "rst-synth"\ndifficulty = "hard"\ncategory = "software-engineering"\n\n'
        f"[verifier]\ntimeout_sec = {VERIFIER_TIMEOUT_S}\n\n"
        f"[agent]\ntimeout_sec = {float(pool.agent_timeout_s[i])}\n\n"
        f"[environment]\nbuild_timeout_sec = {BUILD_TIMEOUT_S}\ncpus = {int(pool.cpus[i])}\n{sizes}gpus = {int(pool.gpus[i])}\n"
    ).encode()
